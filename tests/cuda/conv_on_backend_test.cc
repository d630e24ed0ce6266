// Conv, ConvTranspose, FusedConv, ConvGradData, ConvGradWeight and ConvGradBias on each
// accelerator against the CPU kernels: groups (depthwise too), strides,
// symmetric and asymmetric pads (explicit and auto_pad), dilations, 1x1
// kernels, batches above 1, odd sizes, 1-D and 3-D problems, an empty
// batch; FusedConv's activations with and without the addend Z, channels
// first and last, and on tensor-core shapes (channels multiples of 8);
// ConvTranspose's gradients (transposed=1); the wide f32 weight and bias
// gradients of f16 and bf16 data; f32, f16 and bf16 (16-bit data run natively on
// tensor cores, with one more rounding where an epilogue follows: see
// epilogue_tolerance_for; and partial sums rounded in data gradients:
// data_gradient_tolerance_for).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ops/wide_output.h"
#include "tests/backend_comparison.h"
#include "tests/cuda/backend_test_inputs.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::ints;
using testing::Tolerance;
using testing::uniform;

using Attributes = std::map<std::string, Attribute>;

// Sums of `terms` products in [-1, 1], formed in different orders on the
// two devices, differ by a few f32 ulps of the partial sums; 16-bit results
// are the same f32 sums rounded once, so they differ by at most an ulp of
// their type where the f32 sums straddle a rounding boundary.
Tolerance tolerance_for(DType dtype, int64_t terms) {
  const double sum_error = 1e-6 * static_cast<double>(std::max<int64_t>(terms, 1));
  switch (dtype) {
    case DType::kFloat16: return {2e-3, 10 * sum_error};
    case DType::kBFloat16: return {1e-2, 10 * sum_error};
    default: return {1e-5, sum_error};
  }
}

// tolerance_for plus, for 16-bit data, `ulps` ulps of the type at the
// bound of a sum of `terms` products of values in [-1, 1]: such a sum has
// standard deviation sqrt(terms) / 3, so 2 sqrt(terms) (six deviations; at
// most `terms`, the exact bound) bounds it on these inputs. For roundings
// of a whole or partial sum to the type that the CPU does not make.
Tolerance with_sum_roundings(DType dtype, int64_t terms, double ulps) {
  Tolerance tolerance = tolerance_for(dtype, terms);
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) return tolerance;
  const double n = static_cast<double>(std::max<int64_t>(terms, 1));
  const int fraction_bits = dtype == DType::kFloat16 ? 10 : 7;
  tolerance.absolute += ulps * std::min(n, 2.0 * std::sqrt(n)) * std::ldexp(1.0, -fraction_bits);
  return tolerance;
}

// Where an epilogue follows the convolution (Conv's and ConvTranspose's
// bias; FusedConv's bias, addend Z and activation), 16-bit results are
// rounded twice on the GPU, once more than on the CPU: cuDNN writes the
// convolution in the data's type (tensor cores, f32 accumulation) and the
// epilogue adds to that rounded value, where the CPU rounds the final f32
// value once. The extra error is half an ulp of the convolution's value,
// at most |conv| * 2^-(p+1) (p fraction bits: 10 for f16, 7 for bf16),
// times the activation's slope (at most 1.13, GELU's: 1.25 with margin).
// It is absolute, so it exceeds the relative tolerance where B or Z
// cancels the convolution: 1.25 half-ulps at |conv|'s bound.
Tolerance epilogue_tolerance_for(DType dtype, int64_t terms) { return with_sum_roundings(dtype, terms, 1.25 * 0.5); }

// The data gradient of 16-bit data: cuDNN's tensor-core backward-data
// kernels may round partial sums to the data's type before adding them, so
// on top of tolerance_for an ulp of the type at the partials' bound. On an
// H100, f16 sums of 288 terms came 2^-8 (an f16 ulp in [4, 8)) off the
// CPU's, whose f32 sums round once.
Tolerance data_gradient_tolerance_for(DType dtype, int64_t terms) { return with_sum_roundings(dtype, terms, 1.0); }

struct ConvCase {
  std::string label;
  std::vector<int64_t> x, w;
  Attributes attributes;
  bool bias = true;
};

// Forward problems; w is [K, C/group, kernel...].
std::vector<ConvCase> conv_cases() {
  return {
      {"3x3 pad 1", {2, 3, 9, 11}, {4, 3, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}},
      {"stride 2, no pads, no bias", {1, 4, 10, 10}, {6, 4, 3, 3}, {{"strides", ints({2, 2})}}, false},
      {"groups 2, asymmetric pads", {2, 4, 8, 7}, {6, 2, 3, 3}, {{"group", Attribute(int64_t{2})}, {"pads", ints({1, 0, 0, 2})}}},
      {"depthwise, stride 2", {2, 8, 9, 9}, {8, 1, 3, 3},
       {{"group", Attribute(int64_t{8})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}},
      {"dilation 2", {1, 3, 12, 10}, {5, 3, 3, 3}, {{"dilations", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}}},
      {"1x1", {3, 16, 5, 5}, {8, 16, 1, 1}, {}},
      {"SAME_UPPER, stride 2, even kernel", {2, 3, 9, 8}, {4, 3, 4, 4},
       {{"auto_pad", Attribute("SAME_UPPER")}, {"strides", ints({2, 2})}}},
      {"SAME_LOWER", {1, 2, 7, 7}, {3, 2, 2, 2}, {{"auto_pad", Attribute("SAME_LOWER")}}},
      {"VALID, rectangular kernel", {2, 3, 8, 9}, {2, 3, 2, 4}, {{"auto_pad", Attribute("VALID")}}},
      {"1-D", {2, 3, 17}, {4, 3, 5}, {{"pads", ints({2, 1})}, {"strides", ints({2})}}},
      {"3-D", {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {{"pads", ints({1, 1, 1, 1, 1, 1})}}},
      {"LeNet conv1", {8, 1, 28, 28}, {6, 1, 5, 5}, {{"pads", ints({2, 2, 2, 2})}}},
      {"ResNet-like, odd sizes", {4, 16, 33, 31}, {32, 16, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}},
      {"empty batch", {0, 3, 5, 5}, {4, 3, 3, 3}, {}},
  };
}

int64_t inner_terms(const ConvCase& c) { return testing::count_of(c.w) / c.w[0]; }

class ConvOnBackend : public testing::OnBackend {};

TEST_P(ConvOnBackend, ConvMatchesTheCpu) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const ConvCase& c : conv_cases()) {
      std::vector<Tensor> inputs = {uniform(dtype, c.x, seed), uniform(dtype, c.w, seed + 1)};
      if (c.bias) inputs.push_back(uniform(dtype, {c.w[0]}, seed + 2));
      seed += 3;
      const Tolerance tolerance =
          c.bias ? epilogue_tolerance_for(dtype, inner_terms(c)) : tolerance_for(dtype, inner_terms(c));
      expect_same_as_cpu(GetParam(), "Conv", inputs, c.attributes, tolerance, c.label);
    }
  }
}

TEST_P(ConvOnBackend, ConvTransposeMatchesTheCpu) {
  // W is [C_in, C_out/group, kernel...].
  const std::vector<ConvCase> cases = {
      {"stride 2, pads 1", {2, 4, 5, 6}, {4, 3, 3, 3}, {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}},
      {"groups 2, output_padding, dilation", {1, 4, 4, 5}, {4, 3, 3, 2},
       {{"group", Attribute(int64_t{2})}, {"strides", ints({2, 3})}, {"output_padding", ints({1, 2})},
        {"dilations", ints({2, 1})}}},
      {"output_shape (asymmetric pads)", {1, 3, 5, 6}, {3, 2, 3, 3}, {{"strides", ints({2, 2})}, {"output_shape", ints({10, 12})}}},
      {"1-D, no bias", {2, 3, 7}, {3, 4, 3}, {{"strides", ints({3})}}, false},
  };
  uint32_t seed = 700;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const ConvCase& c : cases) {
      const int64_t group = c.attributes.count("group") ? c.attributes.at("group").i() : 1;
      std::vector<Tensor> inputs = {uniform(dtype, c.x, seed), uniform(dtype, c.w, seed + 1)};
      if (c.bias) inputs.push_back(uniform(dtype, {c.w[1] * group}, seed + 2));
      seed += 3;
      const int64_t terms = (c.w[0] / group) * (testing::count_of(c.w) / (c.w[0] * c.w[1]));
      const Tolerance tolerance = c.bias ? epilogue_tolerance_for(dtype, terms) : tolerance_for(dtype, terms);
      expect_same_as_cpu(GetParam(), "ConvTranspose", inputs, c.attributes, tolerance, c.label);
    }
  }
}

TEST_P(ConvOnBackend, NoInputChannelsLeaveTheBias) {
  expect_same_as_cpu(GetParam(), "Conv",
                     {uniform(DType::kFloat32, {2, 0, 5, 5}, 1), uniform(DType::kFloat32, {4, 0, 3, 3}, 2),
                      uniform(DType::kFloat32, {4}, 3)},
                     {}, Tolerance{});
}

TEST_P(ConvOnBackend, FusedConvAppliesBiasAddendAndActivation) {
  struct Activation {
    std::string name;
    double alpha = 0.0, beta = 0.0;
  };
  const std::vector<Activation> activations = {{"None"},          {"Relu"},    {"LeakyRelu", 0.1}, {"Clip", -0.5, 0.75},
                                               {"Sigmoid"},       {"Tanh"},    {"Silu"},           {"Gelu"},
                                               {"GeluTanh"}};
  const std::vector<int64_t> x_nchw = {2, 6, 9, 8}, w = {4, 3, 3, 3}, y_nchw = {2, 4, 4, 4};
  uint32_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    // Activations' own rounding (oneDNN's vectorised exp, erf and tanh on the CPU) adds a few f32 ulps.
    Tolerance tolerance = epilogue_tolerance_for(dtype, 27);
    if (dtype == DType::kFloat32) tolerance = {2e-5, 1e-5};
    for (const std::string layout : {"NCHW", "NHWC"}) {
      const bool last = layout == "NHWC";
      const std::vector<int64_t> x_sizes = last ? std::vector<int64_t>{2, 9, 8, 6} : x_nchw;
      const std::vector<int64_t> y_sizes = last ? std::vector<int64_t>{2, 4, 4, 4} : y_nchw;
      for (const Activation& activation : activations) {
        for (bool with_z : {false, true}) {
          for (bool with_bias : {true, false}) {
            if (!with_bias && !with_z) continue;
            std::vector<Tensor> inputs = {uniform(dtype, x_sizes, seed), uniform(dtype, w, seed + 1),
                                          with_bias ? uniform(dtype, {4}, seed + 2) : Tensor()};
            if (with_z) inputs.push_back(uniform(dtype, y_sizes, seed + 3));
            seed += 4;
            Attributes attributes = {{"group", Attribute(int64_t{2})},
                                     {"strides", ints({2, 2})},
                                     {"pads", ints({1, 1, 0, 1})},
                                     {"layout", Attribute(layout)},
                                     {"activation", Attribute(activation.name)},
                                     {"activation_alpha", Attribute(activation.alpha)},
                                     {"activation_beta", Attribute(activation.beta)}};
            expect_same_as_cpu(GetParam(), "FusedConv", inputs, attributes, tolerance,
                               layout + " " + activation.name + (with_z ? " + Z" : "") + (with_bias ? " + B" : ""));
          }
        }
      }
    }
  }
}

TEST_P(ConvOnBackend, FusedConvOnTensorCoreShapes) {
  // Channel counts that are multiples of 8, as cuDNN's NHWC tensor-core
  // kernels take them for f16 and bf16 (ResNet's 3x3 and strided 1x1
  // convolutions), both layouts: the native path with no staging at all
  // (symmetric pads) and with Y written in place.
  struct Case {
    std::string label;
    std::vector<int64_t> x_nchw, w;
    Attributes attributes;
  };
  const std::vector<Case> cases = {
      {"3x3 pad 1", {2, 32, 14, 14}, {64, 32, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}},
      {"1x1 stride 2", {2, 64, 14, 14}, {32, 64, 1, 1}, {{"strides", ints({2, 2})}}},
  };
  uint32_t seed = 300;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : cases) {
      for (const std::string layout : {"NCHW", "NHWC"}) {
        const bool last = layout == "NHWC";
        Tensor x_first = uniform(dtype, c.x_nchw, seed), w = uniform(dtype, c.w, seed + 1);
        Tensor bias = uniform(dtype, {c.w[0]}, seed + 2);
        // Y's shape from the CPU's Conv of the channels-first data.
        std::vector<int64_t> y_sizes = testing::run_op("Conv", {x_first, w}, c.attributes)[0].sizes();
        std::vector<int64_t> x_sizes = c.x_nchw;
        if (last) {
          x_sizes = {c.x_nchw[0], c.x_nchw[2], c.x_nchw[3], c.x_nchw[1]};
          y_sizes = {y_sizes[0], y_sizes[2], y_sizes[3], y_sizes[1]};
        }
        Tensor x = uniform(dtype, x_sizes, seed + 3);
        for (bool with_z : {false, true}) {
          std::vector<Tensor> inputs = {x, w, bias};
          if (with_z) inputs.push_back(uniform(dtype, y_sizes, seed + 4));
          Attributes attributes = c.attributes;
          attributes["layout"] = Attribute(layout);
          attributes["activation"] = Attribute("Relu");
          const int64_t terms = c.w[1] * c.w[2] * c.w[3];
          expect_same_as_cpu(GetParam(), "FusedConv", inputs, attributes, epilogue_tolerance_for(dtype, terms),
                             c.label + " " + layout + (with_z ? " + Z" : ""));
        }
        // Without bias, Z or activation cuDNN's result is Y itself: one rounding, as on the CPU.
        Attributes plain = c.attributes;
        plain["layout"] = Attribute(layout);
        expect_same_as_cpu(GetParam(), "FusedConv", {x, w}, plain, tolerance_for(dtype, c.w[1] * c.w[2] * c.w[3]),
                           c.label + " " + layout + ", no epilogue");
        seed += 5;
      }
    }
  }
}

TEST_P(ConvOnBackend, GradientsMatchTheCpu) {
  uint32_t seed = 500;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const ConvCase& c : conv_cases()) {
      // dY has the forward output's shape: the CPU's Conv gives it.
      Tensor x = uniform(dtype, c.x, seed), w = uniform(dtype, c.w, seed + 1);
      Tensor y = testing::run_op("Conv", {x, w}, c.attributes)[0];
      Tensor dy = uniform(dtype, y.sizes(), seed + 2);
      seed += 3;
      const int64_t data_terms = (c.w[0] / (c.attributes.count("group") ? c.attributes.at("group").i() : 1)) *
                                 (testing::count_of(c.w) / (c.w[0] * c.w[1]));
      const int64_t weight_terms = dy.num_elements() / std::max<int64_t>(dy.sizes()[1], 1);
      expect_same_as_cpu(GetParam(), "ConvGradData", {dy, w, x}, c.attributes,
                         data_gradient_tolerance_for(dtype, data_terms), c.label);
      expect_same_as_cpu(GetParam(), "ConvGradWeight", {dy, x, w}, c.attributes, tolerance_for(dtype, weight_terms),
                         c.label);
      expect_same_as_cpu(GetParam(), "ConvGradBias", {dy}, {}, tolerance_for(dtype, weight_terms), c.label);
    }
  }
}

// The f32 weight and bias gradients of f16 and bf16 data (AMP's): the
// widened data run on TF32 tensor cores, which multiply them exactly, so
// only the f32 sums' order differs from the CPU's. An odd grouped problem,
// and one of tensor-core shapes (ResNet's 3x3, 6272 terms a weight).
TEST_P(ConvOnBackend, WideGradientsOf16BitDataAreF32) {
  struct Case {
    std::vector<int64_t> x, w, dy;
    int64_t group;
  };
  const std::vector<Case> cases = {{{4, 6, 11, 10}, {8, 3, 3, 3}, {4, 8, 11, 10}, 2},
                                   {{8, 32, 28, 28}, {64, 32, 3, 3}, {8, 64, 28, 28}, 1}};
  uint32_t seed = 1;
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    for (const Case& c : cases) {
      Tensor x = uniform(dtype, c.x, seed++), w = uniform(dtype, c.w, seed++);
      Tensor dy = uniform(dtype, c.dy, seed++);
      Attributes attributes = {{"group", Attribute(c.group)},
                               {"pads", ints({1, 1, 1, 1})},
                               {kOutputDtypeAttr, Attribute(static_cast<int64_t>(DType::kFloat32))}};
      const int64_t terms = testing::count_of(c.dy) / c.dy[1];
      const std::string label = std::string(dtype_name(dtype)) + " " + x.type_string();
      expect_same_as_cpu(GetParam(), "ConvGradWeight", {dy, x, w}, attributes, tolerance_for(DType::kFloat32, terms),
                         label);
      expect_same_as_cpu(GetParam(), "ConvGradBias", {dy},
                         {{kOutputDtypeAttr, Attribute(static_cast<int64_t>(DType::kFloat32))}},
                         tolerance_for(DType::kFloat32, terms), label);
    }
  }
}

TEST_P(ConvOnBackend, ConvTransposeGradientsMatchTheCpu) {
  // ConvTranspose of X [2, 4, 5, 6] with W [4, 3/group..., 3, 3], strides 2, pads 1: Y [2, 3, 9, 11].
  uint32_t seed = 900;
  for (int64_t group : {1, 2}) {
    const int64_t out_channels = group == 1 ? 3 : 6;
    Tensor x = uniform(DType::kFloat32, {2, 4, 5, 6}, seed), w = uniform(DType::kFloat32, {4, out_channels / group, 3, 3}, seed + 1);
    Tensor dy = uniform(DType::kFloat32, {2, out_channels, 9, 11}, seed + 2);
    seed += 3;
    Attributes attributes = {{"strides", ints({2, 2})},
                             {"pads", ints({1, 1, 1, 1})},
                             {"group", Attribute(group)},
                             {"transposed", Attribute(int64_t{1})}};
    const std::string label = "group " + std::to_string(group);
    expect_same_as_cpu(GetParam(), "ConvGradData", {dy, w, x}, attributes, tolerance_for(DType::kFloat32, 27), label);
    expect_same_as_cpu(GetParam(), "ConvGradWeight", {dy, x, w}, attributes, tolerance_for(DType::kFloat32, 90), label);
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, ConvOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
