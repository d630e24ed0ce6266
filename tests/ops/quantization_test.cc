// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// QLinearMatMul, ConvInteger and QLinearConv against references written in
// this file from the ONNX definitions: explicit coordinates, float math, then
// an explicit halves-to-even rounding and saturation. Random inputs over the
// whole i8/u8 ranges, per-tensor and per-axis (per-row, per-column,
// per-channel) parameters, ties, saturation at both ends, 32-bit wrapping,
// and the errors bad shapes and types get.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "core/error.h"
#include "core/verifier.h"
#include "ops/quantization/quantization_common.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::count_of;
using testing::flatten;
using testing::make_tensor;
using testing::to_doubles;
using testing::unflatten;

// Runs one node; an undefined Tensor in `inputs` is an absent optional
// input. `check_graph`: infer types and verify the graph first, as an import
// does (dtype constraints, static shapes); else straight to the kernel.
std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs,
                        std::map<std::string, Attribute> attributes = {}, size_t num_outputs = 1,
                        bool check_graph = true) {
  Graph graph("one_" + op);
  std::vector<Value*> values;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      values.push_back(nullptr);
      continue;
    }
    std::string name = "in" + std::to_string(i);
    values.push_back(graph.add_input(name, {inputs[i].dtype(), inputs[i].shape()}));
    feeds[name] = inputs[i];
  }
  Node* node = graph.add_node(op, values, num_outputs, std::move(attributes), "op");
  for (Value* output : node->outputs()) graph.add_output(output);
  if (check_graph) {
    infer_graph_types(graph, default_op_registry());
    verify_graph(graph, default_op_registry());
  }
  return evaluate_graph(graph, feeds);
}

// The message of the weir::Error running the node throws, or "no error".
std::string error_of(const std::string& op, const std::vector<Tensor>& inputs,
                     std::map<std::string, Attribute> attributes = {}, size_t num_outputs = 1,
                     bool check_graph = true) {
  try {
    run(op, inputs, std::move(attributes), num_outputs, check_graph);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// The kernel's own message, for what a graph check would catch first.
std::string kernel_error_of(const std::string& op, const std::vector<Tensor>& inputs,
                            std::map<std::string, Attribute> attributes = {}) {
  return error_of(op, inputs, std::move(attributes), 1, /*check_graph=*/false);
}

#define EXPECT_ERROR(call, text)                                   \
  do {                                                             \
    std::string message_ = (call);                                 \
    EXPECT_NE(message_.find(text), std::string::npos) << message_; \
  } while (0)

double low_of(DType dtype) { return dtype == DType::kInt8 ? -128 : 0; }
double high_of(DType dtype) { return dtype == DType::kInt8 ? 127 : 255; }

// Integers spread over the whole range of `dtype` (i8, u8, or i32 within ±bound).
std::vector<double> random_ints(DType dtype, int64_t count, uint32_t seed, int bound = 100000) {
  std::mt19937 engine(seed);
  int lo = dtype == DType::kInt32 ? -bound : static_cast<int>(low_of(dtype));
  int hi = dtype == DType::kInt32 ? bound : static_cast<int>(high_of(dtype));
  std::uniform_int_distribution<int> distribution(lo, hi);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = distribution(engine);
  return values;
}

std::vector<double> random_floats(int64_t count, uint32_t seed, double low, double high) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> distribution(low, high);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = distribution(engine);
  return values;
}

// Halves to even, written out: the floor, then up when above the half, or
// at the half when the floor is odd.
double round_half_even(double v) {
  double floor = std::floor(v);
  double rest = v - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return std::fmod(floor, 2.0) == 0 ? floor : floor + 1;
}

double saturate(double v, DType dtype) { return std::min(std::max(v, low_of(dtype)), high_of(dtype)); }

// ONNX's requantization in f32: saturate(round(float(acc) * multiplier) + zero).
double requantize_reference(int64_t acc, float multiplier, double zero, DType dtype) {
  float scaled = static_cast<float>(static_cast<int32_t>(acc)) * multiplier;
  return saturate(round_half_even(scaled) + zero, dtype);
}

std::vector<float> random_scales(int64_t count, uint32_t seed) {
  std::vector<float> scales;
  for (double v : random_floats(count, seed, 0.01, 0.2)) scales.push_back(static_cast<float>(v));
  return scales;
}

Tensor f32_tensor(const std::vector<float>& values, const std::vector<int64_t>& sizes) {
  return Tensor::from_vector<float>(values, sizes);
}

// ---------------------------------------------------------------- QuantizeLinear

TEST(QuantizeLinear, PerTensorAndPerAxisMatchTheReference) {
  const std::vector<int64_t> sizes = {2, 3, 4, 5};
  uint32_t seed = 1;
  for (DType out : {DType::kUInt8, DType::kInt8}) {
    // axis -1 means per tensor below.
    for (int64_t axis : {int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{3}, int64_t{-2}}) {
      bool per_tensor = axis == -1;
      size_t a = static_cast<size_t>(axis < 0 ? axis + 4 : axis);
      int64_t channels = per_tensor ? 1 : sizes[a];
      std::vector<float> scales = random_scales(channels, ++seed);
      std::vector<double> zeros = random_ints(out, channels, ++seed);
      // Wide enough that both ends saturate.
      std::vector<double> x = random_floats(count_of(sizes), ++seed, -40.0, 40.0);
      std::vector<int64_t> param_sizes = per_tensor ? std::vector<int64_t>{} : std::vector<int64_t>{channels};
      std::map<std::string, Attribute> attrs;
      if (!per_tensor) attrs["axis"] = Attribute(axis);
      Tensor y = run("QuantizeLinear",
                     {make_tensor(DType::kFloat32, x, sizes), f32_tensor(scales, param_sizes),
                      make_tensor(out, zeros, param_sizes)},
                     attrs)[0];
      ASSERT_EQ(y.dtype(), out);
      ASSERT_EQ(y.sizes(), sizes);
      std::vector<double> got = to_doubles(y);
      bool low_seen = false, high_seen = false;
      for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
        auto c = static_cast<size_t>(per_tensor ? 0 : unflatten(flat, sizes)[a]);
        float q = static_cast<float>(x[static_cast<size_t>(flat)]) / scales[c];
        double expected = saturate(round_half_even(q) + zeros[c], out);
        low_seen = low_seen || expected == low_of(out);
        high_seen = high_seen || expected == high_of(out);
        ASSERT_EQ(got[static_cast<size_t>(flat)], expected) << "axis " << axis << " element " << flat;
      }
      EXPECT_TRUE(low_seen && high_seen) << "the inputs should reach both ends";
    }
  }
}

TEST(QuantizeLinear, HalvesRoundToEvenAndTheDefaultIsU8) {
  // x / 0.5 lands on every half from -5.5 to 5.5.
  std::vector<double> x;
  for (int i = -11; i <= 11; i += 2) x.push_back(i * 0.25);
  const auto count = static_cast<int64_t>(x.size());
  Tensor y = run("QuantizeLinear",
                 {make_tensor(DType::kFloat32, x, {count}), Tensor::scalar<float>(0.5f), Tensor::scalar<int8_t>(0)})[0];
  std::vector<double> got = to_doubles(y);
  for (size_t i = 0; i < x.size(); ++i) {
    double half = x[i] / 0.5;
    double expected = std::nearbyint(half);
    ASSERT_EQ(std::fmod(expected, 2.0), 0.0) << half << " should round to an even value";
    ASSERT_EQ(got[i], expected) << half;
    ASSERT_EQ(got[i], round_half_even(half)) << half;
  }
  // Without a zero point: u8, zero point 0, so negatives saturate to 0.
  Tensor u =
      run("QuantizeLinear", {make_tensor(DType::kFloat32, {-3, 2.5, 1000}, {3}), Tensor::scalar<float>(1.0f)})[0];
  EXPECT_EQ(u.dtype(), DType::kUInt8);
  EXPECT_EQ(to_doubles(u), (std::vector<double>{0, 2, 255}));
}

TEST(QuantizeLinear, Int32InputMatchesTheReference) {
  const std::vector<int64_t> sizes = {3, 7};
  std::vector<double> x = random_ints(DType::kInt32, 21, 11, 3000);
  std::vector<float> scales = random_scales(7, 12);
  for (float& s : scales) s *= 100;
  std::vector<double> zeros = random_ints(DType::kInt8, 7, 13);
  Tensor y = run("QuantizeLinear",
                 {make_tensor(DType::kInt32, x, sizes), f32_tensor(scales, {7}), make_tensor(DType::kInt8, zeros, {7})},
                 {{"axis", Attribute(int64_t{1})}})[0];
  std::vector<double> got = to_doubles(y);
  for (int64_t flat = 0; flat < 21; ++flat) {
    auto c = static_cast<size_t>(flat % 7);
    double expected = saturate(
        round_half_even(x[static_cast<size_t>(flat)] / static_cast<double>(scales[c])) + zeros[c], DType::kInt8);
    ASSERT_EQ(got[static_cast<size_t>(flat)], expected) << flat;
  }
}

// Large enough for the vectorized loops' bodies and tails and for several
// threads: random values mixed with exact halves (x / scale = k + 0.5 with a
// power-of-two scale), values past both ends, infinities and NaN (which
// quantizes to the zero point).
TEST(QuantizeLinear, LargeInputsWithTiesAndSaturationMatchTheReference) {
  const std::vector<int64_t> sizes = {2, 3, 131, 97};
  const int64_t count = count_of(sizes);
  std::mt19937 engine(77);
  std::uniform_int_distribution<int> kind(0, 9), half(-300, 300);
  std::vector<double> random = random_floats(count, 78, -200.0, 200.0);
  for (DType out : {DType::kUInt8, DType::kInt8}) {
    for (int64_t axis : {int64_t{-9}, int64_t{1}, int64_t{3}}) {
      const bool per_tensor = axis == -9;
      const int64_t channels = per_tensor ? 1 : sizes[static_cast<size_t>(axis)];
      std::vector<float> scales(static_cast<size_t>(channels));
      for (size_t c = 0; c < scales.size(); ++c) scales[c] = std::ldexp(1.0f, static_cast<int>(c % 4) - 2);
      std::vector<double> zeros = random_ints(out, channels, 79 + static_cast<uint32_t>(axis));
      std::vector<float> x(static_cast<size_t>(count));
      for (int64_t flat = 0; flat < count; ++flat) {
        auto c = static_cast<size_t>(per_tensor ? 0 : unflatten(flat, sizes)[static_cast<size_t>(axis)]);
        switch (kind(engine)) {
          case 0: x[static_cast<size_t>(flat)] = std::numeric_limits<float>::quiet_NaN(); break;
          case 1: x[static_cast<size_t>(flat)] = (flat % 2 ? 1 : -1) * std::numeric_limits<float>::infinity(); break;
          case 2: case 3: case 4:
            x[static_cast<size_t>(flat)] = (static_cast<float>(half(engine)) + 0.5f) * scales[c];
            break;
          default: x[static_cast<size_t>(flat)] = static_cast<float>(random[static_cast<size_t>(flat)]);
        }
      }
      std::vector<int64_t> param_sizes = per_tensor ? std::vector<int64_t>{} : std::vector<int64_t>{channels};
      std::map<std::string, Attribute> attrs;
      if (!per_tensor) attrs["axis"] = Attribute(axis);
      Tensor y = run("QuantizeLinear",
                     {Tensor::from_vector<float>(x, sizes), f32_tensor(scales, param_sizes),
                      make_tensor(out, zeros, param_sizes)},
                     attrs)[0];
      std::vector<double> got = to_doubles(y);
      int ties = 0;
      for (int64_t flat = 0; flat < count; ++flat) {
        auto c = static_cast<size_t>(per_tensor ? 0 : unflatten(flat, sizes)[static_cast<size_t>(axis)]);
        float q = x[static_cast<size_t>(flat)] / scales[c];
        double expected = std::isnan(q) ? zeros[c] : saturate(round_half_even(q) + zeros[c], out);
        ties += q - std::floor(q) == 0.5f && std::abs(q) < 100;
        ASSERT_EQ(got[static_cast<size_t>(flat)], expected)
            << dtype_name(out) << " axis " << axis << " element " << flat << " x " << x[static_cast<size_t>(flat)];
      }
      EXPECT_GT(ties, 1000) << "the inputs should hold many unsaturated halves";
    }
  }
}

TEST(QuantizeLinear, BadScalesAndZeroPointsAreRefused) {
  Tensor x = make_tensor(DType::kFloat32, random_floats(12, 3, -1, 1), {3, 4});
  const std::map<std::string, Attribute> axis0 = {{"axis", Attribute(int64_t{0})}};
  std::vector<Tensor> other_shapes = {x, f32_tensor({1, 1, 1}, {3}), make_tensor(DType::kUInt8, {0, 0}, {2})};
  // Zero point of another shape than the scale: inference and the kernel say so.
  EXPECT_ERROR(error_of("QuantizeLinear", other_shapes, axis0), "y_zero_point [2] must have the shape of y_scale [3]");
  EXPECT_ERROR(kernel_error_of("QuantizeLinear", other_shapes, axis0),
               "y_zero_point u8[2] must have the shape of y_scale f32[3]");
  // A per-axis scale that does not fit the axis.
  std::vector<Tensor> misfit = {x, f32_tensor({1, 1, 1}, {3}), make_tensor(DType::kUInt8, {0, 0, 0}, {3})};
  EXPECT_ERROR(error_of("QuantizeLinear", misfit), "must have one value per element of axis 1 of x [3,4]");
  EXPECT_ERROR(kernel_error_of("QuantizeLinear", misfit), "must have one value per element of axis 1 of x f32[3,4]");
  // A 2-D scale.
  EXPECT_ERROR(error_of("QuantizeLinear", {x, f32_tensor({1, 1}, {1, 2})}), "y_scale [1,2] must be a scalar or 1-D");
  EXPECT_ERROR(kernel_error_of("QuantizeLinear", {x, f32_tensor({1, 1}, {1, 2})}),
               "y_scale f32[1,2] must be a scalar or 1-D");
  EXPECT_ERROR(error_of("QuantizeLinear", {x, f32_tensor({1, 1, 1}, {3})}, {{"axis", Attribute(int64_t{2})}}),
               "axis 2 is out of range");
  // Wrong dtypes: the zero point (i8 or u8), the scale (f32), x (f32 or i32).
  EXPECT_ERROR(error_of("QuantizeLinear", {x, Tensor::scalar<float>(1), Tensor::scalar<int32_t>(0)}),
               "is i32; T2 allows i8, u8");
  EXPECT_ERROR(kernel_error_of("QuantizeLinear", {x, Tensor::scalar<float>(1), Tensor::scalar<int32_t>(0)}),
               "y_zero_point i32[] must be i8 or u8");
  EXPECT_ERROR(error_of("QuantizeLinear", {x, Tensor::scalar<double>(1)}), "is f64; F allows f32");
  EXPECT_ERROR(kernel_error_of("QuantizeLinear", {x, Tensor::scalar<double>(1)}), "y_scale must be f32, got f64[]");
  EXPECT_ERROR(error_of("QuantizeLinear", {make_tensor(DType::kFloat64, {1}, {1}), Tensor::scalar<float>(1)}),
               "is f64; T1 allows f32, i32");
}

// ---------------------------------------------------------------- DequantizeLinear

TEST(DequantizeLinear, PerTensorAndPerAxisMatchTheReference) {
  const std::vector<int64_t> sizes = {3, 2, 5};
  uint32_t seed = 100;
  for (DType in : {DType::kUInt8, DType::kInt8, DType::kInt32}) {
    for (int64_t axis : {int64_t{-9}, int64_t{0}, int64_t{1}, int64_t{-1}}) {
      bool per_tensor = axis == -9;
      size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      int64_t channels = per_tensor ? 1 : sizes[a];
      std::vector<float> scales = random_scales(channels, ++seed);
      std::vector<double> zeros = in == DType::kInt32 ? std::vector<double>(static_cast<size_t>(channels), 0)
                                                      : random_ints(in, channels, ++seed);
      std::vector<double> x = random_ints(in, count_of(sizes), ++seed);
      std::vector<int64_t> param_sizes = per_tensor ? std::vector<int64_t>{1} : std::vector<int64_t>{channels};
      std::map<std::string, Attribute> attrs;
      if (!per_tensor) attrs["axis"] = Attribute(axis);
      for (bool with_zero : {true, false}) {
        std::vector<Tensor> inputs = {make_tensor(in, x, sizes), f32_tensor(scales, param_sizes)};
        if (with_zero) inputs.push_back(make_tensor(in, zeros, param_sizes));
        Tensor y = run("DequantizeLinear", inputs, attrs)[0];
        ASSERT_EQ(y.dtype(), DType::kFloat32);
        ASSERT_EQ(y.sizes(), sizes);
        const float* got = y.data<float>();
        for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
          auto c = static_cast<size_t>(per_tensor ? 0 : unflatten(flat, sizes)[a]);
          float expected =
              (static_cast<float>(x[static_cast<size_t>(flat)]) - static_cast<float>(with_zero ? zeros[c] : 0)) *
              scales[c];
          ASSERT_EQ(got[flat], expected) << "axis " << axis << " element " << flat;
        }
      }
    }
  }
}

// Large enough for the vectorized loops and several threads.
TEST(DequantizeLinear, LargeInputsMatchTheReference) {
  const std::vector<int64_t> sizes = {2, 5, 113, 61};
  for (DType in : {DType::kUInt8, DType::kInt8}) {
    for (int64_t axis : {int64_t{-9}, int64_t{1}, int64_t{3}}) {
      const bool per_tensor = axis == -9;
      const int64_t channels = per_tensor ? 1 : sizes[static_cast<size_t>(axis)];
      std::vector<float> scales = random_scales(channels, 200 + static_cast<uint32_t>(axis));
      std::vector<double> zeros = random_ints(in, channels, 210 + static_cast<uint32_t>(axis));
      std::vector<double> x = random_ints(in, count_of(sizes), 220);
      std::vector<int64_t> param_sizes = per_tensor ? std::vector<int64_t>{} : std::vector<int64_t>{channels};
      std::map<std::string, Attribute> attrs;
      if (!per_tensor) attrs["axis"] = Attribute(axis);
      Tensor y = run("DequantizeLinear",
                     {make_tensor(in, x, sizes), f32_tensor(scales, param_sizes), make_tensor(in, zeros, param_sizes)},
                     attrs)[0];
      const float* got = y.data<float>();
      for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
        auto c = static_cast<size_t>(per_tensor ? 0 : unflatten(flat, sizes)[static_cast<size_t>(axis)]);
        float expected = static_cast<float>(x[static_cast<size_t>(flat)] - zeros[c]) * scales[c];
        ASSERT_EQ(got[flat], expected) << dtype_name(in) << " axis " << axis << " element " << flat;
      }
    }
  }
}

TEST(DequantizeLinear, BadInputsAreRefused) {
  Tensor x = make_tensor(DType::kUInt8, {1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<Tensor> other_shapes = {x, f32_tensor({1, 1}, {2}), make_tensor(DType::kUInt8, {0}, {1})};
  const std::map<std::string, Attribute> axis0 = {{"axis", Attribute(int64_t{0})}};
  EXPECT_ERROR(error_of("DequantizeLinear", other_shapes, axis0),
               "x_zero_point [1] must have the shape of x_scale [2]");
  EXPECT_ERROR(kernel_error_of("DequantizeLinear", other_shapes, axis0),
               "x_zero_point u8[1] must have the shape of x_scale f32[2]");
  EXPECT_ERROR(error_of("DequantizeLinear", {x, f32_tensor({1, 1}, {2})}), "one value per element of axis 1");
  EXPECT_ERROR(kernel_error_of("DequantizeLinear", {x, f32_tensor({1, 1}, {2})}), "one value per element of axis 1");
  // The zero point's type must be x's.
  EXPECT_ERROR(error_of("DequantizeLinear", {x, Tensor::scalar<float>(1), Tensor::scalar<int8_t>(0)}),
               "both are type T of DequantizeLinear");
  EXPECT_ERROR(kernel_error_of("DequantizeLinear", {x, Tensor::scalar<float>(1), Tensor::scalar<int8_t>(0)}),
               "x_zero_point i8[] must have the type of its tensor, u8");
  EXPECT_ERROR(error_of("DequantizeLinear",
                        {make_tensor(DType::kInt32, {1}, {1}), Tensor::scalar<float>(1), Tensor::scalar<int32_t>(3)}),
               "an i32 x takes no zero point but 0");
  EXPECT_ERROR(error_of("DequantizeLinear", {make_tensor(DType::kInt16, {1}, {1}), Tensor::scalar<float>(1)}),
               "is i16; T allows i8, u8, i32");
}

// ---------------------------------------------------------------- DynamicQuantizeLinear

TEST(DynamicQuantizeLinear, ScaleZeroPointAndValuesFollowTheDefinition) {
  struct Range {
    double low, high;
  };
  // Mixed signs, all positive (min adjusted to 0), all negative (max adjusted to 0).
  uint32_t seed = 200;
  for (Range range : {Range{-3, 7}, Range{0.5, 4}, Range{-9, -0.25}, Range{-1, 1}}) {
    for (int64_t count : {1, 17, 1000}) {
      std::vector<double> x = random_floats(count, ++seed, range.low, range.high);
      std::vector<Tensor> out = run("DynamicQuantizeLinear", {make_tensor(DType::kFloat32, x, {count})}, {}, 3);
      float low = 0, high = 0;
      for (double v : x) {
        low = std::min(low, static_cast<float>(v));
        high = std::max(high, static_cast<float>(v));
      }
      float scale = (high - low) / 255.0f;
      double zero = saturate(round_half_even(std::clamp(0.0f - low / scale, 0.0f, 255.0f)), DType::kUInt8);
      ASSERT_EQ(out[1].dtype(), DType::kFloat32);
      ASSERT_EQ(out[1].rank(), 0);
      ASSERT_EQ(out[1].data<float>()[0], scale);
      ASSERT_EQ(out[2].dtype(), DType::kUInt8);
      ASSERT_EQ(to_doubles(out[2])[0], zero);
      std::vector<double> got = to_doubles(out[0]);
      for (size_t i = 0; i < x.size(); ++i) {
        double expected = saturate(round_half_even(static_cast<float>(x[i]) / scale) + zero, DType::kUInt8);
        ASSERT_EQ(got[i], expected) << i;
      }
      // The range maps onto [0, 255]: both ends are reached when x holds them.
      if (count > 1 && range.low < 0 && range.high > 0) {
        EXPECT_EQ(*std::min_element(got.begin(), got.end()), 0);
        EXPECT_EQ(*std::max_element(got.begin(), got.end()), 255);
      }
    }
  }
  // All zeros: scale 0, zero point 0, y 0.
  std::vector<Tensor> zeros = run("DynamicQuantizeLinear", {make_tensor(DType::kFloat32, {0, 0, 0}, {3})}, {}, 3);
  EXPECT_EQ(zeros[1].data<float>()[0], 0.0f);
  EXPECT_EQ(to_doubles(zeros[2])[0], 0);
  EXPECT_EQ(to_doubles(zeros[0]), (std::vector<double>{0, 0, 0}));
  EXPECT_ERROR(error_of("DynamicQuantizeLinear", {make_tensor(DType::kFloat64, {1}, {1})}, {}, 3),
               "is f64; T1 allows f32");
}

// ---------------------------------------------------------------- MatMulInteger, QLinearMatMul

// Where an operand's parameter (zero point or scale) lies: per tensor, a 1-D
// vector of rows or columns, or [batch..., M, 1] / [batch..., 1, N].
enum class Layout { kAbsent, kTensor, kVector, kBatched };

struct Operand {
  std::vector<int64_t> sizes;
  DType dtype;
  Layout layout;
};

// The parameter's sizes for an operand whose matrices are rows x columns;
// `per_row`: A's parameter (per row), else B's (per column).
std::vector<int64_t> param_sizes(const Operand& o, bool per_row) {
  std::vector<int64_t> s = o.sizes;
  if (s.size() == 1) s = per_row ? std::vector<int64_t>{1, s[0]} : std::vector<int64_t>{s[0], 1};
  int64_t rows = s[s.size() - 2], columns = s.back();
  switch (o.layout) {
    case Layout::kAbsent:
    case Layout::kTensor:
      return {};
    case Layout::kVector:
      return {per_row ? rows : columns};
    case Layout::kBatched:
      s[s.size() - (per_row ? 1 : 2)] = 1;
      return s;
  }
  return {};
}

// The value of parameter `p` (sizes `ps`) for the operand's element at
// batch index `batch` (right-aligned) and row or column `position`.
double param_at(const std::vector<double>& p, const std::vector<int64_t>& ps, Layout layout,
                const std::vector<int64_t>& batch, int64_t position, bool per_row) {
  if (layout == Layout::kAbsent) return 0;
  if (layout == Layout::kTensor) return p[0];
  if (layout == Layout::kVector) return p[static_cast<size_t>(position)];
  std::vector<int64_t> index(ps.size(), 0);
  size_t batch_rank = ps.size() - 2;
  for (size_t i = 0; i < batch_rank; ++i) {
    int64_t b = batch[batch.size() - batch_rank + i];
    index[i] = ps[i] == 1 ? 0 : b;
  }
  index[ps.size() - (per_row ? 2 : 1)] = position;
  return p[static_cast<size_t>(flatten(index, ps))];
}

struct MatmulCase {
  Operand a, b;
};

std::vector<int64_t> broadcast(std::vector<int64_t> a, std::vector<int64_t> b) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  std::vector<int64_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] == 1 ? b[i] : a[i];
  return out;
}

// Calls fn(out_flat, a_batch_index, b_batch_index, row, column) for every
// output element of NumPy's matmul (1-D operands promoted), and returns the
// output sizes; *k_out is the inner size.
template <typename Fn>
std::vector<int64_t> for_each_product(const MatmulCase& c, int64_t* k_out, Fn&& fn) {
  std::vector<int64_t> as = c.a.sizes, bs = c.b.sizes;
  bool a_vector = as.size() == 1, b_vector = bs.size() == 1;
  if (a_vector) as.insert(as.begin(), 1);
  if (b_vector) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  *k_out = k;
  std::vector<int64_t> a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  std::vector<int64_t> out_batch = broadcast(a_batch, b_batch);
  std::vector<int64_t> out_sizes = out_batch;
  if (!a_vector) out_sizes.push_back(m);
  if (!b_vector) out_sizes.push_back(n);
  int64_t flat = 0;
  for (int64_t item = 0; item < std::max<int64_t>(count_of(out_batch), 1); ++item) {
    std::vector<int64_t> ob = out_batch.empty() ? std::vector<int64_t>{} : unflatten(item, out_batch);
    auto own = [&](const std::vector<int64_t>& sizes) {
      std::vector<int64_t> index(sizes.size());
      for (size_t i = 0; i < sizes.size(); ++i) index[i] = sizes[i] == 1 ? 0 : ob[ob.size() - sizes.size() + i];
      return index;
    };
    std::vector<int64_t> ai = own(a_batch), bi = own(b_batch);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) fn(flat++, ai, bi, i, j);
    }
  }
  return out_sizes;
}

const std::vector<MatmulCase>& matmul_cases() {
  static const std::vector<MatmulCase> cases = {
      {{{4, 3}, DType::kUInt8, Layout::kTensor}, {{3, 2}, DType::kUInt8, Layout::kTensor}},
      {{{5, 33}, DType::kInt8, Layout::kVector}, {{33, 300}, DType::kUInt8, Layout::kVector}},
      {{{2, 3, 7, 9}, DType::kUInt8, Layout::kBatched}, {{9, 6}, DType::kInt8, Layout::kVector}},
      {{{3, 1, 4, 5}, DType::kInt8, Layout::kVector}, {{2, 5, 3}, DType::kInt8, Layout::kBatched}},
      {{{6}, DType::kUInt8, Layout::kTensor}, {{2, 6, 3}, DType::kUInt8, Layout::kVector}},
      {{{2, 4, 6}, DType::kInt8, Layout::kAbsent}, {{6}, DType::kUInt8, Layout::kTensor}},
      {{{9, 70}, DType::kUInt8, Layout::kAbsent}, {{70, 5}, DType::kInt8, Layout::kAbsent}},
      {{{0, 4}, DType::kUInt8, Layout::kTensor}, {{4, 3}, DType::kUInt8, Layout::kTensor}},
      {{{2, 0}, DType::kUInt8, Layout::kTensor}, {{0, 3}, DType::kUInt8, Layout::kTensor}},
  };
  return cases;
}

TEST(MatMulInteger, MatchesTheReference) {
  uint32_t seed = 300;
  for (const MatmulCase& c : matmul_cases()) {
    std::vector<double> a = random_ints(c.a.dtype, count_of(c.a.sizes), ++seed);
    std::vector<double> b = random_ints(c.b.dtype, count_of(c.b.sizes), ++seed);
    std::vector<int64_t> azs = param_sizes(c.a, true), bzs = param_sizes(c.b, false);
    std::vector<double> az = random_ints(c.a.dtype, count_of(azs), ++seed);
    std::vector<double> bz = random_ints(c.b.dtype, count_of(bzs), ++seed);
    std::vector<Tensor> inputs = {make_tensor(c.a.dtype, a, c.a.sizes), make_tensor(c.b.dtype, b, c.b.sizes),
                                  c.a.layout == Layout::kAbsent ? Tensor() : make_tensor(c.a.dtype, az, azs),
                                  c.b.layout == Layout::kAbsent ? Tensor() : make_tensor(c.b.dtype, bz, bzs)};
    while (!inputs.back().defined()) inputs.pop_back();
    Tensor y = run("MatMulInteger", inputs)[0];
    ASSERT_EQ(y.dtype(), DType::kInt32);
    std::vector<double> got = to_doubles(y);
    int64_t k = 0;
    std::vector<int64_t> out_sizes = for_each_product(
        c, &k, [&](int64_t flat, const std::vector<int64_t>& ai, const std::vector<int64_t>& bi, int64_t i, int64_t j) {
          std::vector<int64_t> a_full = c.a.sizes.size() == 1 ? std::vector<int64_t>{1, k} : c.a.sizes;
          std::vector<int64_t> b_full = c.b.sizes.size() == 1 ? std::vector<int64_t>{k, 1} : c.b.sizes;
          double za = param_at(az, azs, c.a.layout, ai, i, true);
          double zb = param_at(bz, bzs, c.b.layout, bi, j, false);
          int64_t sum = 0;
          for (int64_t t = 0; t < k; ++t) {
            std::vector<int64_t> ia = ai, ib = bi;
            ia.push_back(i);
            ia.push_back(t);
            ib.push_back(t);
            ib.push_back(j);
            double av = a[static_cast<size_t>(flatten(ia, a_full))];
            double bv = b[static_cast<size_t>(flatten(ib, b_full))];
            sum += static_cast<int64_t>(av - za) * static_cast<int64_t>(bv - zb);
          }
          ASSERT_EQ(got[static_cast<size_t>(flat)], static_cast<double>(sum)) << "element " << flat;
        });
    ASSERT_EQ(y.sizes(), out_sizes);
  }
}

TEST(MatMulInteger, SumsWrapInThirtyTwoBits) {
  // 40000 products of (0 - 255) * (0 - 255) = 65025: 2.6e9 wraps past 2^31.
  const int64_t k = 40000;
  Tensor a = make_tensor(DType::kUInt8, std::vector<double>(k, 0), {1, k});
  Tensor b = make_tensor(DType::kUInt8, std::vector<double>(k, 0), {k, 1});
  Tensor y = run("MatMulInteger", {a, b, Tensor::scalar<uint8_t>(255), Tensor::scalar<uint8_t>(255)})[0];
  auto expected = static_cast<int32_t>(static_cast<uint32_t>(k * 65025));
  EXPECT_EQ(y.data<int32_t>()[0], expected);
}

TEST(QLinearMatMul, MatchesTheReference) {
  uint32_t seed = 400;
  for (const MatmulCase& base : matmul_cases()) {
    for (DType out : {DType::kUInt8, DType::kInt8}) {
      MatmulCase c = base;
      if (c.a.layout == Layout::kAbsent) c.a.layout = Layout::kTensor;
      if (c.b.layout == Layout::kAbsent) c.b.layout = Layout::kTensor;
      std::vector<double> a = random_ints(c.a.dtype, count_of(c.a.sizes), ++seed);
      std::vector<double> b = random_ints(c.b.dtype, count_of(c.b.sizes), ++seed);
      std::vector<int64_t> aps = param_sizes(c.a, true), bps = param_sizes(c.b, false);
      std::vector<double> az = random_ints(c.a.dtype, count_of(aps), ++seed);
      std::vector<double> bz = random_ints(c.b.dtype, count_of(bps), ++seed);
      std::vector<float> as = random_scales(count_of(aps), ++seed), bs = random_scales(count_of(bps), ++seed);
      // An output scale that makes some results saturate and most not.
      const float y_scale = 2.0f;
      const double y_zero = out == DType::kUInt8 ? 100 : -7;
      Tensor y = run("QLinearMatMul",
                     {make_tensor(c.a.dtype, a, c.a.sizes), f32_tensor(as, aps), make_tensor(c.a.dtype, az, aps),
                      make_tensor(c.b.dtype, b, c.b.sizes), f32_tensor(bs, bps), make_tensor(c.b.dtype, bz, bps),
                      Tensor::scalar<float>(y_scale), make_tensor(out, {y_zero}, {})})[0];
      ASSERT_EQ(y.dtype(), out);
      std::vector<double> got = to_doubles(y);
      int64_t k = 0;
      std::vector<int64_t> out_sizes = for_each_product(
          c, &k,
          [&](int64_t flat, const std::vector<int64_t>& ai, const std::vector<int64_t>& bi, int64_t i, int64_t j) {
            std::vector<int64_t> a_full = c.a.sizes.size() == 1 ? std::vector<int64_t>{1, k} : c.a.sizes;
            std::vector<int64_t> b_full = c.b.sizes.size() == 1 ? std::vector<int64_t>{k, 1} : c.b.sizes;
            std::vector<double> as_d(as.begin(), as.end()), bs_d(bs.begin(), bs.end());
            double za = param_at(az, aps, c.a.layout, ai, i, true);
            double zb = param_at(bz, bps, c.b.layout, bi, j, false);
            auto sa = static_cast<float>(param_at(as_d, aps, c.a.layout, ai, i, true));
            auto sb = static_cast<float>(param_at(bs_d, bps, c.b.layout, bi, j, false));
            int64_t sum = 0;
            for (int64_t t = 0; t < k; ++t) {
              std::vector<int64_t> ia = ai, ib = bi;
              ia.push_back(i);
              ia.push_back(t);
              ib.push_back(t);
              ib.push_back(j);
              sum += static_cast<int64_t>(a[static_cast<size_t>(flatten(ia, a_full))] - za) *
                     static_cast<int64_t>(b[static_cast<size_t>(flatten(ib, b_full))] - zb);
            }
            double expected = requantize_reference(sum, sa * sb / y_scale, y_zero, out);
            ASSERT_EQ(got[static_cast<size_t>(flat)], expected) << "element " << flat << " sum " << sum;
          });
      ASSERT_EQ(y.sizes(), out_sizes);
    }
  }
}

TEST(QLinearMatMul, RequantizationRoundsHalvesToEvenAndSaturates) {
  // a = [1, 3, 5, -1], b = 1, scales 1 * 0.5 / 1: sums 1, 3, 5, -1 -> 0.5, 1.5, 2.5, -0.5.
  Tensor a = make_tensor(DType::kInt8, {1, 3, 5, -1, 127, -128}, {6, 1});
  Tensor b = make_tensor(DType::kInt8, {1}, {1, 1});
  Tensor y =
      run("QLinearMatMul", {a, Tensor::scalar<float>(1), Tensor::scalar<int8_t>(0), b, Tensor::scalar<float>(0.5f),
                            Tensor::scalar<int8_t>(0), Tensor::scalar<float>(0.25f), Tensor::scalar<int8_t>(1)})[0];
  // acc * 2 + 1: 3, 7, 11, -1, then 255 and -255 saturate.
  EXPECT_EQ(to_doubles(y), (std::vector<double>{3, 7, 11, -1, 127, -128}));
  Tensor halves =
      run("QLinearMatMul", {a, Tensor::scalar<float>(1), Tensor::scalar<int8_t>(0), b, Tensor::scalar<float>(0.5f),
                            Tensor::scalar<int8_t>(0), Tensor::scalar<float>(1), Tensor::scalar<int8_t>(0)})[0];
  std::vector<double> got = to_doubles(halves);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], round_half_even(to_doubles(a)[i] * 0.5)) << i;
  EXPECT_EQ(got[0], 0);   // 0.5
  EXPECT_EQ(got[1], 2);   // 1.5
  EXPECT_EQ(got[2], 2);   // 2.5
  EXPECT_EQ(got[3], -0);  // -0.5
}

TEST(MatMulIntegerErrors, BadShapesAndTypesAreRefused) {
  Tensor a = make_tensor(DType::kUInt8, std::vector<double>(6, 1), {2, 3});
  Tensor b = make_tensor(DType::kInt8, std::vector<double>(12, 1), {3, 4});
  EXPECT_ERROR(error_of("MatMulInteger", {a, make_tensor(DType::kInt8, std::vector<double>(8, 1), {2, 4})}),
               "inner dimensions");
  EXPECT_ERROR(error_of("MatMulInteger", {a, b, make_tensor(DType::kUInt8, {1, 2, 3}, {3})}),
               "a_zero_point u8[3] must be one value or per row: [2] or [..., 2, 1]");
  EXPECT_ERROR(error_of("MatMulInteger", {a, b, Tensor(), make_tensor(DType::kInt8, {1, 2, 3}, {3})}),
               "b_zero_point i8[3] must be one value or per column: [4] or [..., 1, 4]");
  EXPECT_ERROR(error_of("MatMulInteger", {a, b, make_tensor(DType::kUInt8, {1, 2}, {1, 2})}), "per row");
  EXPECT_ERROR(error_of("MatMulInteger", {a, b, Tensor::scalar<int8_t>(0)}), "both are type T1");
  EXPECT_ERROR(kernel_error_of("MatMulInteger", {a, b, Tensor::scalar<int8_t>(0)}),
               "a_zero_point i8[] must have the type of its tensor, u8");
  EXPECT_ERROR(error_of("MatMulInteger", {make_tensor(DType::kInt32, {1, 2, 3}, {1, 3}), b}),
               "is i32; T1 allows i8, u8");
  EXPECT_ERROR(error_of("MatMulInteger", {a, make_tensor(DType::kInt32, {1, 2, 3}, {3, 1})}),
               "is i32; T2 allows i8, u8");
  EXPECT_ERROR(kernel_error_of("MatMulInteger", {a, make_tensor(DType::kInt32, {1, 2, 3}, {3, 1})}),
               "A and B must be i8 or u8, got u8[2,3] and i32[3,1]");
  Tensor s = Tensor::scalar<float>(1);
  EXPECT_ERROR(error_of("QLinearMatMul", {a, f32_tensor({1, 1}, {2}), Tensor::scalar<uint8_t>(0), b, s,
                                          Tensor::scalar<int8_t>(0), s, Tensor::scalar<uint8_t>(0)}),
               "a_zero_point u8[] must have the shape of a_scale f32[2]");
  EXPECT_ERROR(error_of("QLinearMatMul", {a, s, Tensor::scalar<uint8_t>(0), b, s, Tensor::scalar<int8_t>(0),
                                          f32_tensor({1, 1}, {2}), make_tensor(DType::kUInt8, {0, 0}, {2})}),
               "must be one value each");
  EXPECT_ERROR(error_of("QLinearMatMul", {a, s, Tensor::scalar<uint8_t>(0), b, s, Tensor::scalar<int8_t>(0), s,
                                          Tensor::scalar<int32_t>(0)}),
               "is i32; T3 allows i8, u8");
  EXPECT_ERROR(kernel_error_of("QLinearMatMul", {a, s, Tensor::scalar<uint8_t>(0), b, s, Tensor::scalar<int8_t>(0), s,
                                                 Tensor::scalar<int32_t>(0)}),
               "y_zero_point i32[] must be i8 or u8");
}

// ---------------------------------------------------------------- ConvInteger, QLinearConv

struct ConvCase {
  std::vector<int64_t> x, w;
  std::map<std::string, Attribute> attrs;
};

int64_t ints_at(const std::map<std::string, Attribute>& attrs, const char* name, size_t i, int64_t fallback) {
  auto found = attrs.find(name);
  return found == attrs.end() ? fallback : found->second.ints()[i];
}

// The pads begin/end and output size of one spatial axis, auto_pad included.
struct Axis {
  int64_t pad_begin, out;
};

Axis conv_axis(const ConvCase& c, size_t i) {
  size_t rank = c.x.size() - 2;
  int64_t in = c.x[i + 2], k = c.w[i + 2];
  int64_t s = ints_at(c.attrs, "strides", i, 1), d = ints_at(c.attrs, "dilations", i, 1);
  int64_t extent = (k - 1) * d + 1;
  std::string auto_pad = c.attrs.count("auto_pad") ? c.attrs.at("auto_pad").s() : "NOTSET";
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    int64_t out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
    return {auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2, out};
  }
  int64_t begin = auto_pad == "VALID" ? 0 : ints_at(c.attrs, "pads", i, 0);
  int64_t end = auto_pad == "VALID" ? 0 : ints_at(c.attrs, "pads", rank + i, 0);
  return {begin, (in + begin + end - extent) / s + 1};
}

// y[n, m, o...] = sum over c in m's group and taps t of (x[n, c, o*s - p + t*d] - zx) * (w[m, c', t] - zw[m]),
// positions outside x contributing nothing. Returns int64 sums and the output sizes.
std::pair<std::vector<int64_t>, std::vector<int64_t>> conv_reference(const ConvCase& c, const std::vector<double>& x,
                                                                     double zx, const std::vector<double>& w,
                                                                     const std::vector<double>& zw) {
  size_t rank = c.x.size() - 2;
  int64_t group = c.attrs.count("group") ? c.attrs.at("group").i() : 1;
  int64_t in_group = c.x[1] / group, out_group = c.w[0] / group;
  std::vector<int64_t> out_sizes = {c.x[0], c.w[0]};
  std::vector<Axis> axes;
  for (size_t i = 0; i < rank; ++i) {
    axes.push_back(conv_axis(c, i));
    out_sizes.push_back(axes.back().out);
  }
  std::vector<int64_t> kernel(c.w.begin() + 2, c.w.end());
  std::vector<int64_t> y(static_cast<size_t>(count_of(out_sizes)));
  for (int64_t flat = 0; flat < count_of(out_sizes); ++flat) {
    std::vector<int64_t> o = unflatten(flat, out_sizes);
    int64_t n = o[0], m = o[1], g = m / out_group;
    double z = zw.size() == 1 ? zw[0] : zw[static_cast<size_t>(m)];
    int64_t sum = 0;
    for (int64_t cl = 0; cl < in_group; ++cl) {
      for (int64_t t = 0; t < count_of(kernel); ++t) {
        std::vector<int64_t> tap = unflatten(t, kernel);
        std::vector<int64_t> xi = {n, g * in_group + cl};
        bool inside = true;
        for (size_t i = 0; i < rank; ++i) {
          int64_t s = ints_at(c.attrs, "strides", i, 1), d = ints_at(c.attrs, "dilations", i, 1);
          int64_t pos = o[i + 2] * s - axes[i].pad_begin + tap[i] * d;
          inside = inside && pos >= 0 && pos < c.x[i + 2];
          xi.push_back(pos);
        }
        if (!inside) continue;
        std::vector<int64_t> wi = {m, cl};
        wi.insert(wi.end(), tap.begin(), tap.end());
        sum += static_cast<int64_t>(x[static_cast<size_t>(flatten(xi, c.x))] - zx) *
               static_cast<int64_t>(w[static_cast<size_t>(flatten(wi, c.w))] - z);
      }
    }
    y[static_cast<size_t>(flat)] = sum;
  }
  return {y, out_sizes};
}

Attribute ints(std::vector<int64_t> values) { return Attribute(std::move(values)); }

std::vector<ConvCase> conv_cases() {
  return {
      {{1, 1, 3, 3}, {1, 1, 2, 2}, {}},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {{"pads", ints({1, 0, 2, 1})}, {"strides", ints({2, 1})}}},
      {{1, 4, 9, 8},
       {6, 2, 3, 2},
       {{"group", Attribute(int64_t{2})}, {"dilations", ints({2, 1})}, {"pads", ints({1, 1, 1, 1})}}},
      {{2, 4, 11},
       {4, 1, 3},
       {{"group", Attribute(int64_t{4})}, {"auto_pad", Attribute("SAME_UPPER")}, {"strides", ints({2})}}},
      {{1, 2, 10}, {3, 2, 4}, {{"auto_pad", Attribute("SAME_LOWER")}, {"strides", ints({3})}}},
      {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, {{"auto_pad", Attribute("VALID")}, {"kernel_shape", ints({2, 3, 2})}}},
      {{1, 16, 12, 12}, {300, 16, 1, 1}, {}},
      {{0, 2, 5, 5}, {2, 2, 3, 3}, {}},
  };
}

TEST(ConvInteger, MatchesTheReference) {
  uint32_t seed = 500;
  for (const ConvCase& c : conv_cases()) {
    for (DType xt : {DType::kUInt8, DType::kInt8}) {
      for (DType wt : {DType::kInt8, DType::kUInt8}) {
        for (int zero_kind : {0, 1, 2}) {  // absent, per tensor, per channel
          std::vector<double> x = random_ints(xt, count_of(c.x), ++seed);
          std::vector<double> w = random_ints(wt, count_of(c.w), ++seed);
          double zx = zero_kind == 0 ? 0 : random_ints(xt, 1, ++seed)[0];
          std::vector<double> zw =
              zero_kind == 0 ? std::vector<double>{0} : random_ints(wt, zero_kind == 1 ? 1 : c.w[0], ++seed);
          std::vector<Tensor> inputs = {make_tensor(xt, x, c.x), make_tensor(wt, w, c.w)};
          if (zero_kind != 0) {
            inputs.push_back(make_tensor(xt, {zx}, {}));
            inputs.push_back(
                make_tensor(wt, zw, zero_kind == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{c.w[0]}));
          }
          Tensor y = run("ConvInteger", inputs, c.attrs)[0];
          auto [expected, sizes] = conv_reference(c, x, zx, w, zw);
          ASSERT_EQ(y.dtype(), DType::kInt32);
          ASSERT_EQ(y.sizes(), sizes);
          const int32_t* got = y.data<int32_t>();
          for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "element " << i;
        }
      }
    }
  }
  // Only a zero point for x: w's is 0.
  ConvCase c = conv_cases()[1];
  std::vector<double> x = random_ints(DType::kUInt8, count_of(c.x), 1), w = random_ints(DType::kInt8, count_of(c.w), 2);
  Tensor y = run("ConvInteger",
                 {make_tensor(DType::kUInt8, x, c.x), make_tensor(DType::kInt8, w, c.w), Tensor::scalar<uint8_t>(9)},
                 c.attrs)[0];
  EXPECT_EQ(std::vector<int64_t>(y.data<int32_t>(), y.data<int32_t>() + y.num_elements()),
            conv_reference(c, x, 9, w, {0}).first);
}

TEST(QLinearConv, MatchesTheReference) {
  uint32_t seed = 600;
  for (const ConvCase& c : conv_cases()) {
    for (DType xt : {DType::kUInt8, DType::kInt8}) {
      for (DType out : {DType::kUInt8, DType::kInt8}) {
        for (bool per_channel : {false, true}) {
          for (bool with_bias : {false, true}) {
            DType wt = per_channel ? DType::kInt8 : xt;
            int64_t channels = per_channel ? c.w[0] : 1;
            std::vector<int64_t> ps = per_channel ? std::vector<int64_t>{channels} : std::vector<int64_t>{};
            std::vector<double> x = random_ints(xt, count_of(c.x), ++seed);
            std::vector<double> w = random_ints(wt, count_of(c.w), ++seed);
            double zx = random_ints(xt, 1, ++seed)[0];
            std::vector<double> zw = random_ints(wt, channels, ++seed);
            std::vector<float> ws = random_scales(channels, ++seed);
            std::vector<double> bias = random_ints(DType::kInt32, c.w[0], ++seed, 20000);
            const float x_scale = 0.05f, y_scale = 0.5f;
            const double y_zero = out == DType::kUInt8 ? 128 : 3;
            std::vector<Tensor> inputs = {make_tensor(xt, x, c.x),
                                          Tensor::scalar<float>(x_scale),
                                          make_tensor(xt, {zx}, {}),
                                          make_tensor(wt, w, c.w),
                                          f32_tensor(ws, ps),
                                          make_tensor(wt, zw, ps),
                                          Tensor::scalar<float>(y_scale),
                                          make_tensor(out, {y_zero}, {})};
            if (with_bias) inputs.push_back(make_tensor(DType::kInt32, bias, {c.w[0]}));
            Tensor y = run("QLinearConv", inputs, c.attrs)[0];
            auto [sums, sizes] = conv_reference(c, x, zx, w, zw);
            ASSERT_EQ(y.dtype(), out);
            ASSERT_EQ(y.sizes(), sizes);
            std::vector<double> got = to_doubles(y);
            int64_t plane = count_of(sizes) == 0 ? 1 : count_of(sizes) / (sizes[0] * sizes[1]);
            for (size_t i = 0; i < sums.size(); ++i) {
              auto m = static_cast<size_t>(static_cast<int64_t>(i) / plane % sizes[1]);
              int64_t sum = sums[i] + (with_bias ? static_cast<int64_t>(bias[m]) : 0);
              float multiplier = x_scale * ws[per_channel ? m : 0] / y_scale;
              ASSERT_EQ(got[i], requantize_reference(sum, multiplier, y_zero, out)) << "element " << i;
            }
          }
        }
      }
    }
  }
}

// FusedQLinearConv with a residual addend Z (what qdq_residual_fusion
// makes): saturate(round(activation(float(acc + B) * multiplier + float(Z -
// z_zero) * z_scale / y_scale)) + y_zero), on the reference loops (exact)
// and on oneDNN's sum post-op (1 apart where a tie meets an odd zero point).
TEST(FusedQLinearConv, ResidualAddendMatchesTheReference) {
  uint32_t seed = 900;
  int64_t elements = 0, apart = 0;
  for (const ConvCase& c : conv_cases()) {
    for (DType out : {DType::kUInt8, DType::kInt8}) {
      for (bool relu : {false, true}) {
        for (bool forced : {true, false}) {
          const int64_t channels = c.w[0];
          std::vector<double> x = random_ints(DType::kUInt8, count_of(c.x), ++seed);
          std::vector<double> w = random_ints(DType::kInt8, count_of(c.w), ++seed);
          std::vector<float> ws = random_scales(channels, ++seed);
          std::vector<double> bias = random_ints(DType::kInt32, channels, ++seed, 20000);
          const float x_scale = 0.05f, y_scale = 0.5f, z_scale = 0.3f;
          const double zx = 7, y_zero = out == DType::kUInt8 ? 128 : 3, z_zero = out == DType::kUInt8 ? 120 : -5;
          auto [sums, sizes] = conv_reference(c, x, zx, w, std::vector<double>(static_cast<size_t>(channels), 0));
          std::vector<double> z = random_ints(out, count_of(sizes), ++seed);
          std::vector<Tensor> inputs = {make_tensor(DType::kUInt8, x, c.x),
                                        Tensor::scalar<float>(x_scale),
                                        make_tensor(DType::kUInt8, {zx}, {}),
                                        make_tensor(DType::kInt8, w, c.w),
                                        f32_tensor(ws, {channels}),
                                        make_tensor(DType::kInt8, std::vector<double>(ws.size(), 0), {channels}),
                                        Tensor::scalar<float>(y_scale),
                                        make_tensor(out, {y_zero}, {}),
                                        make_tensor(DType::kInt32, bias, {channels}),
                                        make_tensor(out, z, sizes),
                                        Tensor::scalar<float>(z_scale),
                                        make_tensor(out, {z_zero}, {})};
          std::map<std::string, Attribute> attrs = c.attrs;
          attrs["activation"] = Attribute(relu ? "Relu" : "None");
          Tensor y;
          {
            std::optional<ScopedQuantizedReference> scope;
            if (forced) scope.emplace();
            y = run("FusedQLinearConv", inputs, attrs)[0];
          }
          ASSERT_EQ(y.sizes(), sizes);
          std::vector<double> got = to_doubles(y);
          int64_t plane = count_of(sizes) == 0 ? 1 : count_of(sizes) / (sizes[0] * sizes[1]);
          const float z_multiplier = z_scale / y_scale;
          for (size_t i = 0; i < sums.size(); ++i) {
            auto m = static_cast<size_t>(static_cast<int64_t>(i) / plane % sizes[1]);
            float multiplier = x_scale * ws[m] / y_scale;
            float value = static_cast<float>(sums[i] + static_cast<int64_t>(bias[m])) * multiplier +
                          static_cast<float>(z[i] - z_zero) * z_multiplier;
            if (relu) value = std::max(value, 0.0f);
            double expected = saturate(round_half_even(value) + y_zero, out);
            if (forced) {
              ASSERT_EQ(got[i], expected) << "element " << i;
            } else {
              ASSERT_LE(std::abs(got[i] - expected), 1.0) << "element " << i;
              apart += got[i] != expected;
              ++elements;
            }
          }
        }
      }
    }
  }
  EXPECT_LT(static_cast<double>(apart), 0.01 * static_cast<double>(elements)) << apart << " of " << elements;
  // Z must be y's type and shape, with its scale and zero point.
  ConvCase c = conv_cases()[0];
  std::vector<Tensor> inputs = {make_tensor(DType::kUInt8, {1, 2, 3, 4, 5, 6, 7, 8, 9}, c.x),
                                Tensor::scalar<float>(1),
                                make_tensor(DType::kUInt8, {0}, {}),
                                make_tensor(DType::kInt8, {1, 1, 1, 1}, c.w),
                                Tensor::scalar<float>(1),
                                make_tensor(DType::kInt8, {0}, {}),
                                Tensor::scalar<float>(1),
                                make_tensor(DType::kUInt8, {0}, {}),
                                Tensor(),
                                make_tensor(DType::kUInt8, {1, 2, 3}, {1, 1, 3}),
                                Tensor::scalar<float>(1),
                                make_tensor(DType::kUInt8, {0}, {})};
  EXPECT_ERROR(kernel_error_of("FusedQLinearConv", inputs), "the addend Z u8[1,1,3] must have y's type and shape, u8[1,1,2,2]");
  inputs[9] = make_tensor(DType::kUInt8, {1, 2, 3, 4}, {1, 1, 2, 2});
  inputs[10] = f32_tensor({1, 2}, {2});
  EXPECT_ERROR(kernel_error_of("FusedQLinearConv", inputs), "z_scale f32[2] must be one value");
}

TEST(ConvIntegerErrors, BadShapesAndTypesAreRefused) {
  Tensor x = make_tensor(DType::kUInt8, std::vector<double>(2 * 16, 1), {1, 2, 4, 4});
  Tensor w = make_tensor(DType::kInt8, std::vector<double>(3 * 2 * 4, 1), {3, 2, 2, 2});
  EXPECT_ERROR(error_of("ConvInteger", {x, w, make_tensor(DType::kUInt8, {1, 2}, {2})}),
               "x_zero_point u8[2] must be one value");
  EXPECT_ERROR(error_of("ConvInteger", {x, w, Tensor::scalar<uint8_t>(0), make_tensor(DType::kInt8, {1, 2}, {2})}),
               "w_zero_point i8[2] must be one value or one per output channel (3)");
  EXPECT_ERROR(error_of("ConvInteger", {x, make_tensor(DType::kInt8, std::vector<double>(3 * 3 * 4, 1), {3, 3, 2, 2})}),
               "input channels 2 do not match weight channels 3");
  Tensor float_x = make_tensor(DType::kFloat32, std::vector<double>(32, 1), {1, 2, 4, 4});
  EXPECT_ERROR(error_of("ConvInteger", {float_x, w}), "is f32; T1 allows i8, u8");
  EXPECT_ERROR(
      kernel_error_of("ConvInteger", {x, make_tensor(DType::kFloat32, std::vector<double>(24, 1), {3, 2, 2, 2})}),
      "x and w must be i8 or u8, got u8[1,2,4,4] and f32[3,2,2,2]");
  Tensor s = Tensor::scalar<float>(1);
  std::vector<Tensor> good = {x,
                              s,
                              Tensor::scalar<uint8_t>(0),
                              w,
                              f32_tensor({1, 1, 1}, {3}),
                              make_tensor(DType::kInt8, {0, 0, 0}, {3}),
                              s,
                              Tensor::scalar<uint8_t>(0)};
  EXPECT_EQ(error_of("QLinearConv", good), "no error");
  std::vector<Tensor> bad = good;
  bad[5] = Tensor::scalar<int8_t>(0);
  EXPECT_ERROR(error_of("QLinearConv", bad), "w_zero_point i8[] must have the shape of w_scale f32[3]");
  bad = good;
  bad[4] = f32_tensor({1, 1}, {2});
  EXPECT_ERROR(error_of("QLinearConv", bad), "w_scale f32[2] must be one value or one per output channel (3)");
  bad = good;
  bad[1] = f32_tensor({1, 1}, {2});
  EXPECT_ERROR(error_of("QLinearConv", bad), "x_scale f32[2] must be one value");
  bad = good;
  bad.push_back(make_tensor(DType::kInt32, {1, 2}, {2}));
  EXPECT_ERROR(error_of("QLinearConv", bad), "B i32[2] must be i32 with one value per output channel (3)");
  bad = good;
  bad.push_back(make_tensor(DType::kInt64, {1, 2, 3}, {3}));
  EXPECT_ERROR(error_of("QLinearConv", bad), "is i64; T4 allows i32");
  EXPECT_ERROR(kernel_error_of("QLinearConv", bad), "B i64[3] must be i32 with one value per output channel (3)");
}

}  // namespace
}  // namespace weir
