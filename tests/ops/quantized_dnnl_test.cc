// The oneDNN int8 paths of QLinearConv, FusedQLinearConv, QLinearMatMul and
// MatMulInteger against the reference int32 loops (forced with
// ScopedQuantizedReference) on the same random inputs: shapes, strides,
// pads, dilations, groups, per-tensor and per-channel weight scales, u8 and
// s8 activations and outputs, zero and nonzero zero points, bias, Relu and
// channels-last data. The results agree exactly but where oneDNN's order
// (zero point added before rounding) meets an exact tie: at most 1 apart,
// on a small counted fraction. Each case also checks that oneDNN did run it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/graph.h"
#include "core/type_inference.h"
#include "core/verifier.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/conv_problem.h"
#include "ops/quantization/dnnl_int8_conv.h"
#include "ops/quantization/dnnl_int8_matmul.h"
#include "ops/quantization/quantization_common.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::count_of;
using testing::make_tensor;
using testing::to_doubles;
using Ints = std::vector<int64_t>;

// Integers over the whole range of i8 or u8.
std::vector<double> random_ints(DType dtype, int64_t count, std::mt19937& engine) {
  std::uniform_int_distribution<int> distribution(dtype == DType::kInt8 ? -128 : 0, dtype == DType::kInt8 ? 127 : 255);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = distribution(engine);
  return values;
}

std::vector<float> random_scales(int64_t count, std::mt19937& engine, float low, float high) {
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = distribution(engine);
  return values;
}

// Runs one node whose inputs are graph inputs (an undefined tensor: absent),
// its types inferred and the graph verified first.
Tensor run_node(const std::string& op, const std::vector<Tensor>& inputs, std::map<std::string, Attribute> attrs) {
  testing::SingleOpGraph single = testing::single_op_graph(op, inputs, std::move(attrs), 1);
  infer_graph_types(*single.graph, default_op_registry());
  verify_graph(*single.graph, default_op_registry());
  return evaluate_graph(*single.graph, single.feeds)[0];
}

// The same node on the reference int32 loops (ScopedQuantizedReference).
Tensor run_reference(const std::string& op, const std::vector<Tensor>& inputs, std::map<std::string, Attribute> attrs) {
  ScopedQuantizedReference forced;
  return run_node(op, inputs, std::move(attrs));
}

// How two quantized results differ: elements apart, and the largest gap.
struct Agreement {
  int64_t differing = 0;
  double largest = 0;
};

Agreement compare(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.sizes(), b.sizes());
  Agreement result;
  if (a.sizes() != b.sizes()) return {a.num_elements(), 1e9};
  std::vector<double> x = to_doubles(a), y = to_doubles(b);
  for (size_t i = 0; i < x.size(); ++i) {
    double gap = std::abs(x[i] - y[i]);
    result.differing += gap != 0;
    result.largest = std::max(result.largest, gap);
  }
  return result;
}

struct ConvCase {
  Ints x, w;
  std::map<std::string, Attribute> attrs;
};

std::vector<ConvCase> conv_cases() {
  return {
      {{1, 8, 9, 9}, {16, 8, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{2, 6, 10, 7}, {12, 3, 3, 3}, {{"group", Attribute(int64_t{2})}, {"strides", Attribute(Ints{2, 2})},
                                       {"pads", Attribute(Ints{1, 0, 1, 2})}}},
      {{1, 16, 8, 8}, {16, 1, 3, 3}, {{"group", Attribute(int64_t{16})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{1, 32, 7, 7}, {24, 32, 1, 1}, {}},
      {{1, 3, 15, 15}, {8, 3, 5, 5}, {{"strides", Attribute(Ints{2, 2})}, {"dilations", Attribute(Ints{2, 2})},
                                      {"pads", Attribute(Ints{2, 2, 2, 2})}}},
      {{1, 64, 14, 14}, {64, 64, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}},
  };
}

// The inputs of a QLinearConv with random data; y_scale puts the results
// over the output range with some saturation at both ends.
std::vector<Tensor> conv_inputs(const ConvCase& c, DType xt, DType yt, bool per_channel, bool bias, bool zero_points,
                                std::mt19937& engine) {
  const int64_t channels = c.w[0];
  const int64_t depth = count_of(c.w) / channels;
  std::vector<float> w_scales = random_scales(per_channel ? channels : 1, engine, 0.002f, 0.02f);
  const float x_scale = 0.03f;
  const float y_scale = x_scale * 0.01f * 74 * 73 * std::sqrt(static_cast<float>(depth)) / 40;
  double x_zero = zero_points ? random_ints(xt, 1, engine)[0] : 0;
  double y_zero = zero_points ? random_ints(yt, 1, engine)[0] : 0;
  Ints scale_sizes = per_channel ? Ints{channels} : Ints{};
  std::vector<Tensor> inputs = {make_tensor(xt, random_ints(xt, count_of(c.x), engine), c.x),
                                Tensor::scalar<float>(x_scale),
                                make_tensor(xt, {x_zero}, {}),
                                make_tensor(DType::kInt8, random_ints(DType::kInt8, count_of(c.w), engine), c.w),
                                Tensor::from_vector<float>(w_scales, scale_sizes),
                                make_tensor(DType::kInt8, std::vector<double>(w_scales.size(), 0), scale_sizes),
                                Tensor::scalar<float>(y_scale),
                                make_tensor(yt, {y_zero}, {})};
  if (bias) {
    std::uniform_int_distribution<int> distribution(-20000, 20000);
    std::vector<double> values(static_cast<size_t>(channels));
    for (double& v : values) v = distribution(engine);
    inputs.push_back(make_tensor(DType::kInt32, values, {channels}));
  }
  return inputs;
}

TEST(QLinearConvDnnl, MatchesTheReferenceLoops) {
  std::mt19937 engine(7);
  int64_t elements = 0, differing = 0;
  int cases = 0;
  for (const ConvCase& c : conv_cases()) {
    for (DType xt : {DType::kUInt8, DType::kInt8}) {
      for (DType yt : {DType::kUInt8, DType::kInt8}) {
        for (int variant = 0; variant < 4; ++variant) {
          bool per_channel = variant & 1, zero_points = variant & 2, bias = (variant + cases) % 3 != 0;
          bool relu = cases % 2 == 1;
          ++cases;
          std::vector<Tensor> inputs = conv_inputs(c, xt, yt, per_channel, bias, zero_points, engine);
          std::map<std::string, Attribute> attrs = c.attrs;
          std::string op = "QLinearConv";
          if (relu) {
            op = "FusedQLinearConv";
            attrs["activation"] = Attribute("Relu");
          }
          Tensor reference = run_reference(op, inputs, attrs);
          Tensor fast = run_node(op, inputs, attrs);
          Agreement agreement = compare(reference, fast);
          EXPECT_LE(agreement.largest, 1) << op << " case " << cases;
          elements += reference.num_elements();
          differing += agreement.differing;

          // The same problem straight through DnnlInt8Conv: oneDNN must have taken it.
          Graph graph("problem");
          Node* node = graph.add_node("QLinearConv", {}, 1, c.attrs, "conv");
          ConvProblem p = conv_problem(*node, ConvKind::kForward, c.x, c.w);
          std::vector<float> multipliers;
          const float x_scale = inputs[1].data<float>()[0], y_scale = inputs[6].data<float>()[0];
          for (int64_t i = 0; i < inputs[4].num_elements(); ++i) {
            multipliers.push_back(x_scale * inputs[4].data<float>()[i] / y_scale);
          }
          int32_t x_zero = static_cast<int32_t>(to_doubles(inputs[2])[0]);
          int32_t y_zero = static_cast<int32_t>(to_doubles(inputs[7])[0]);
          Tensor direct = Tensor::uninitialized(yt, p.out_sizes());
          DnnlInt8Conv conv;
          bool ran = conv.forward(p,
                                  {xt, yt, multipliers, relu, bias, /*channels_last=*/false, x_zero != 0, y_zero != 0},
                                  {inputs[0].raw_data(), x_zero, inputs[3].data<int8_t>(),
                                   bias ? inputs[8].data<int32_t>() : nullptr, y_zero, direct.raw_data()},
                                  /*constant_weights=*/false);
          ASSERT_TRUE(ran) << "oneDNN has no int8 kernel for case " << cases;
          EXPECT_EQ(compare(direct, fast).differing, 0) << "case " << cases;
        }
      }
    }
  }
  // Ties with an odd zero point are the only disagreements: rare.
  EXPECT_LT(static_cast<double>(differing), 1e-3 * static_cast<double>(elements))
      << differing << " of " << elements << " elements 1 apart";
  std::cout << "QLinearConv oneDNN vs reference: " << differing << " of " << elements << " elements 1 apart\n";
}

// Exact halves with an odd output zero point: the one place where the two
// orders of rounding and adding the zero point differ, by 1 at most.
TEST(QLinearConvDnnl, TiesDifferByAtMostOne) {
  std::mt19937 engine(11);
  ConvCase c{{1, 8, 32, 32}, {8, 8, 1, 1}, {}};
  std::vector<Tensor> inputs = conv_inputs(c, DType::kUInt8, DType::kUInt8, false, false, true, engine);
  inputs[1] = Tensor::scalar<float>(0.5f);   // x_scale
  inputs[4] = Tensor::scalar<float>(1.0f);   // w_scale
  inputs[6] = Tensor::scalar<float>(64.0f);  // y_scale: acc / 128, halves common
  inputs[7] = make_tensor(DType::kUInt8, {101}, {});
  Tensor reference = run_reference("QLinearConv", inputs, {});
  Tensor fast = run_node("QLinearConv", inputs, {});
  Agreement agreement = compare(reference, fast);
  EXPECT_LE(agreement.largest, 1);
  std::cout << "ties: " << agreement.differing << " of " << reference.num_elements() << " elements 1 apart\n";
}

// A channels-last FusedQLinearConv equals the channels-first one with its
// input and output transposed, on the oneDNN path and the reference one.
TEST(QLinearConvDnnl, ChannelsLastMatchesChannelsFirst) {
  std::mt19937 engine(13);
  ConvCase c{{2, 8, 9, 7}, {12, 4, 3, 3}, {{"group", Attribute(int64_t{2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}};
  for (bool forced : {false, true}) {
    std::vector<Tensor> inputs = conv_inputs(c, DType::kUInt8, DType::kInt8, true, true, true, engine);
    std::map<std::string, Attribute> attrs = c.attrs;
    attrs["activation"] = Attribute("Relu");
    std::optional<ScopedQuantizedReference> scope;
    if (forced) scope.emplace();
    Tensor first = run_node("FusedQLinearConv", inputs, attrs);
    std::vector<Tensor> last_inputs = inputs;
    last_inputs[0] = run_node("Transpose", {inputs[0]}, {{"perm", Attribute(Ints{0, 2, 3, 1})}});
    attrs["layout"] = Attribute("NHWC");
    Tensor last = run_node("FusedQLinearConv", last_inputs, attrs);
    Tensor back = run_node("Transpose", {last}, {{"perm", Attribute(Ints{0, 3, 1, 2})}});
    EXPECT_EQ(compare(first, back).differing, 0) << (forced ? "reference" : "oneDNN");
  }
}

// A residual addend Z (FusedQLinearConv inputs 9 to 11): oneDNN's sum
// post-op, which must take every case, against the reference loops, on
// channels-first and channels-last data, with and without the Relu.
TEST(QLinearConvDnnl, ResidualAddendMatchesTheReferenceLoops) {
  std::mt19937 engine(19);
  int64_t elements = 0, differing = 0;
  int cases = 0, took = 0;
  for (const ConvCase& c : conv_cases()) {
    for (DType yt : {DType::kUInt8, DType::kInt8}) {
      for (int variant = 0; variant < 4; ++variant) {
        const bool relu = variant & 1, channels_last = variant & 2;
        ++cases;
        std::vector<Tensor> inputs = conv_inputs(c, DType::kUInt8, yt, /*per_channel=*/true, /*bias=*/true,
                                                 /*zero_points=*/true, engine);
        Graph graph("problem");
        ConvProblem p = conv_problem(*graph.add_node("QLinearConv", {}, 1, c.attrs, "conv"), ConvKind::kForward, c.x, c.w);
        Ints y_sizes = p.out_sizes();
        const float y_scale = inputs[6].data<float>()[0], z_scale = y_scale * 0.7f;
        const double z_zero = yt == DType::kUInt8 ? 131 : -9;
        inputs.push_back(make_tensor(yt, random_ints(yt, count_of(y_sizes), engine), y_sizes));
        inputs.push_back(Tensor::scalar<float>(z_scale));
        inputs.push_back(make_tensor(yt, {z_zero}, {}));
        std::map<std::string, Attribute> attrs = c.attrs;
        attrs["activation"] = Attribute(relu ? "Relu" : "None");
        if (channels_last) {
          attrs["layout"] = Attribute("NHWC");
          inputs[0] = run_node("Transpose", {inputs[0]}, {{"perm", Attribute(Ints{0, 2, 3, 1})}});
          inputs[9] = run_node("Transpose", {inputs[9]}, {{"perm", Attribute(Ints{0, 2, 3, 1})}});
        }
        Tensor reference = run_reference("FusedQLinearConv", inputs, attrs);
        Tensor fast = run_node("FusedQLinearConv", inputs, attrs);
        Agreement agreement = compare(reference, fast);
        EXPECT_LE(agreement.largest, 1) << "case " << cases;
        elements += reference.num_elements();
        differing += agreement.differing;

        // Straight through DnnlInt8Conv, y holding Z on entry: oneDNN must have taken it.
        std::vector<float> multipliers;
        const float x_scale = inputs[1].data<float>()[0];
        for (int64_t i = 0; i < inputs[4].num_elements(); ++i) {
          multipliers.push_back(x_scale * inputs[4].data<float>()[i] / y_scale);
        }
        auto x_zero = static_cast<int32_t>(to_doubles(inputs[2])[0]);
        auto y_zero = static_cast<int32_t>(to_doubles(inputs[7])[0]);
        Int8ConvSetup setup{DType::kUInt8, yt, multipliers, relu, true, channels_last, x_zero != 0, y_zero != 0};
        setup.sum = true;
        setup.sum_scale = z_scale / y_scale;
        setup.sum_zero = static_cast<int32_t>(z_zero);
        Tensor direct = inputs[9].clone();
        DnnlInt8Conv conv;
        bool ran = conv.forward(p, setup,
                                {inputs[0].raw_data(), x_zero, inputs[3].data<int8_t>(), inputs[8].data<int32_t>(),
                                 y_zero, direct.raw_data()},
                                /*constant_weights=*/false);
        // Ungrouped convs (ResNet's) must run on oneDNN; its grouped ones
        // with a sum have only a reference kernel for some channel counts.
        if (p.group == 1) {
          ASSERT_TRUE(ran) << "oneDNN has no int8 sum kernel for case " << cases;
        }
        took += ran;
        if (ran) {
          EXPECT_EQ(compare(direct, fast).differing, 0) << "case " << cases;
        }
      }
    }
  }
  EXPECT_GE(took, 40) << "of " << cases;
  EXPECT_LT(static_cast<double>(differing), 1e-3 * static_cast<double>(elements))
      << differing << " of " << elements << " elements 1 apart";
  std::cout << "FusedQLinearConv + Z oneDNN vs reference: " << differing << " of " << elements << " elements 1 apart\n";
}

// Weights oneDNN cannot take (u8, or a nonzero zero point) run the reference loops.
TEST(QLinearConvDnnl, UnsupportedWeightsFallBackToTheReference) {
  std::mt19937 engine(17);
  ConvCase c{{1, 4, 5, 5}, {6, 4, 3, 3}, {}};
  std::vector<Tensor> inputs = conv_inputs(c, DType::kUInt8, DType::kUInt8, true, true, true, engine);
  std::vector<Tensor> shifted = inputs;
  shifted[5] = make_tensor(DType::kInt8, {1, -2, 3, 0, 5, 7}, {6});
  Tensor reference = run_reference("QLinearConv", shifted, {});
  EXPECT_EQ(compare(reference, run_node("QLinearConv", shifted, {})).differing, 0);
  std::vector<Tensor> unsigned_w = inputs;
  unsigned_w[3] = make_tensor(DType::kUInt8, random_ints(DType::kUInt8, count_of(c.w), engine), c.w);
  unsigned_w[5] = make_tensor(DType::kUInt8, std::vector<double>(6, 128), {6});
  reference = run_reference("QLinearConv", unsigned_w, {});
  EXPECT_EQ(compare(reference, run_node("QLinearConv", unsigned_w, {})).differing, 0);
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

struct MatmulCase {
  Ints a, b;
};

// QLinearMatMul and MatMulInteger with a 2-D B (A 1-D, 2-D, or batched):
// oneDNN against the reference loops on the same random inputs, and straight
// through DnnlInt8Matmul to check oneDNN took the problem.
TEST(QLinearMatMulDnnl, MatchesTheReferenceLoops) {
  std::mt19937 engine(23);
  int64_t elements = 0, differing = 0;
  int cases = 0;
  for (const MatmulCase& c : std::vector<MatmulCase>{{{5, 32}, {32, 24}}, {{2, 3, 7, 64}, {64, 40}},
                                                     {{16}, {16, 8}}, {{1, 512}, {512, 100}}}) {
    const int64_t k = c.b[0], n = c.b[1];
    for (DType at : {DType::kUInt8, DType::kInt8}) {
      for (DType yt : {DType::kUInt8, DType::kInt8}) {
        for (int variant = 0; variant < 4; ++variant) {
          ++cases;
          bool per_column = variant & 1, zero_points = variant & 2;
          std::vector<float> b_scales = random_scales(per_column ? n : 1, engine, 0.002f, 0.02f);
          const float a_scale = 0.03f;
          const float y_scale = a_scale * 0.01f * 74 * 73 * std::sqrt(static_cast<float>(k)) / 40;
          double a_zero = zero_points ? random_ints(at, 1, engine)[0] : 0;
          double y_zero = zero_points ? random_ints(yt, 1, engine)[0] : 0;
          Ints scale_sizes = per_column ? Ints{n} : Ints{};
          std::vector<Tensor> inputs = {make_tensor(at, random_ints(at, count_of(c.a), engine), c.a),
                                        Tensor::scalar<float>(a_scale),
                                        make_tensor(at, {a_zero}, {}),
                                        make_tensor(DType::kInt8, random_ints(DType::kInt8, count_of(c.b), engine), c.b),
                                        Tensor::from_vector<float>(b_scales, scale_sizes),
                                        make_tensor(DType::kInt8, std::vector<double>(b_scales.size(), 0), scale_sizes),
                                        Tensor::scalar<float>(y_scale),
                                        make_tensor(yt, {y_zero}, {})};
          std::vector<Tensor> integer_inputs = {inputs[0], inputs[3], inputs[2]};
          Tensor reference = run_reference("QLinearMatMul", inputs, {});
          Tensor integer_reference = run_reference("MatMulInteger", integer_inputs, {});
          Tensor fast = run_node("QLinearMatMul", inputs, {});
          Agreement agreement = compare(reference, fast);
          EXPECT_LE(agreement.largest, 1) << "case " << cases;
          elements += reference.num_elements();
          differing += agreement.differing;
          EXPECT_EQ(compare(integer_reference, run_node("MatMulInteger", integer_inputs, {})).differing, 0)
              << "MatMulInteger case " << cases;

          std::vector<float> multipliers;
          for (float b_scale : b_scales) multipliers.push_back(a_scale * b_scale / y_scale);
          const int64_t rows = count_of(c.a) / k;
          Tensor direct = Tensor::uninitialized(yt, fast.sizes());
          DnnlInt8Matmul matmul;
          bool ran = matmul.run(rows, k, n, {at, yt, multipliers, a_zero != 0, y_zero != 0},
                                {inputs[0].raw_data(), static_cast<int32_t>(a_zero), inputs[3].data<int8_t>(),
                                 static_cast<int32_t>(y_zero), direct.raw_data()},
                                /*constant_b=*/cases % 2 == 0);
          ASSERT_TRUE(ran) << "oneDNN has no int8 matmul for case " << cases;
          EXPECT_EQ(compare(direct, fast).differing, 0) << "case " << cases;
        }
      }
    }
  }
  EXPECT_LT(static_cast<double>(differing), 1e-3 * static_cast<double>(elements))
      << differing << " of " << elements << " elements 1 apart";
  std::cout << "QLinearMatMul oneDNN vs reference: " << differing << " of " << elements << " elements 1 apart\n";
}

// A batched B, per-row A parameters or a nonzero B zero point stay on the
// reference loops, with the same results as forced.
TEST(QLinearMatMulDnnl, OtherFormsRunTheReference) {
  std::mt19937 engine(29);
  Tensor a = make_tensor(DType::kUInt8, random_ints(DType::kUInt8, 2 * 4 * 8, engine), {2, 4, 8});
  Tensor b3 = make_tensor(DType::kInt8, random_ints(DType::kInt8, 2 * 8 * 5, engine), {2, 8, 5});
  Tensor b2 = make_tensor(DType::kInt8, random_ints(DType::kInt8, 8 * 5, engine), {8, 5});
  Tensor a_zero = make_tensor(DType::kUInt8, {7}, {});
  std::vector<std::vector<Tensor>> forms = {
      {a, b3, a_zero},
      {a, b2, make_tensor(DType::kUInt8, {1, 2, 3, 4}, {4})},
      {a, b2, a_zero, make_tensor(DType::kInt8, {1, 0, 0, 0, 2}, {5})},
  };
  for (size_t i = 0; i < forms.size(); ++i) {
    Tensor reference = run_reference("MatMulInteger", forms[i], {});
    EXPECT_EQ(compare(reference, run_node("MatMulInteger", forms[i], {})).differing, 0) << "form " << i;
  }
}

}  // namespace
}  // namespace weir
