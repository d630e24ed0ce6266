// Comparison, logical and Where kernels against references with
// broadcasting; Where's gradient against finite differences; Cast between
// every pair of dtypes, including NaN, infinities and out-of-range values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

TEST(LogicKernels, ComparisonsMatchTheReferenceWithBroadcasting) {
  const std::vector<int64_t> a_sizes = {3, 1, 4}, b_sizes = {5, 1}, out = {3, 5, 4};
  struct Comparison {
    const char* op;
    bool (*reference)(double, double);
  };
  const Comparison comparisons[] = {
      {"Equal", [](double a, double b) { return a == b; }}, {"Less", [](double a, double b) { return a < b; }},
      {"Greater", [](double a, double b) { return a > b; }}, {"LessOrEqual", [](double a, double b) { return a <= b; }},
      {"GreaterOrEqual", [](double a, double b) { return a >= b; }}};
  for (DType dtype : {DType::kFloat32, DType::kInt32, DType::kBFloat16, DType::kUInt8}) {
    // Few distinct values, so equal pairs occur.
    std::vector<double> a = random_values(dtype, count_of(a_sizes), 1, -2, 2), b = random_values(dtype, count_of(b_sizes), 2, -2, 2);
    for (double& v : a) v = std::round(std::fmod(v, 3.0));
    for (double& v : b) v = std::round(std::fmod(v, 3.0));
    if (dtype == DType::kUInt8) {
      for (double& v : a) v = std::fabs(v);
      for (double& v : b) v = std::fabs(v);
    }
    for (const Comparison& comparison : comparisons) {
      Tensor result = run_op(comparison.op, {make_tensor(dtype, a, a_sizes), make_tensor(dtype, b, b_sizes)})[0];
      ASSERT_EQ(result.dtype(), DType::kBool);
      ASSERT_EQ(result.sizes(), out);
      for (int64_t i = 0; i < count_of(out); ++i) {
        bool expected = comparison.reference(a[static_cast<size_t>(testing::broadcast_offset(i, out, a_sizes))], b[static_cast<size_t>(testing::broadcast_offset(i, out, b_sizes))]);
        ASSERT_EQ(result.data<bool>()[i], expected) << comparison.op << " " << dtype_name(dtype) << " element " << i;
      }
    }
  }
}

TEST(LogicKernels, LogicalOpsFollowTheirTruthTables) {
  Tensor a = Tensor::from_vector<bool>({false, false, true, true}, {4});
  Tensor b = Tensor::from_vector<bool>({false, true, false, true}, {4});
  EXPECT_EQ(to_doubles(run_op("And", {a, b})[0]), (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(to_doubles(run_op("Or", {a, b})[0]), (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(to_doubles(run_op("Xor", {a, b})[0]), (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(to_doubles(run_op("Not", {a})[0]), (std::vector<double>{1, 1, 0, 0}));
  EXPECT_EQ(to_doubles(run_op("And", {a.reshape({4, 1}), Tensor::from_vector<bool>({true, false}, {2})})[0]),
            (std::vector<double>{0, 0, 0, 0, 1, 0, 1, 0}));
  EXPECT_EQ(to_doubles(run_op("Equal", {a, b})[0]), (std::vector<double>{1, 0, 0, 1}));
}

TEST(LogicKernels, WhereBroadcastsAllThreeOperands) {
  const std::vector<int64_t> c_sizes = {2, 1, 1}, x_sizes = {3, 1}, y_sizes = {4}, out = {2, 3, 4};
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBool}) {
    Tensor condition = Tensor::from_vector<bool>({true, false}, c_sizes);
    std::vector<double> x = random_values(dtype, 3, 3), y = random_values(dtype, 4, 4);
    if (dtype == DType::kBool) x = {1, 0, 1}, y = {0, 1, 1, 0};
    Tensor result = run_op("Where", {condition, make_tensor(dtype, x, x_sizes), make_tensor(dtype, y, y_sizes)})[0];
    ASSERT_EQ(result.sizes(), out);
    std::vector<double> got = to_doubles(result), xs = to_doubles(make_tensor(dtype, x, x_sizes)), ys = to_doubles(make_tensor(dtype, y, y_sizes));
    for (int64_t i = 0; i < count_of(out); ++i) {
      bool c = condition.data<bool>()[testing::broadcast_offset(i, out, c_sizes)];
      double expected = c ? xs[static_cast<size_t>(testing::broadcast_offset(i, out, x_sizes))] : ys[static_cast<size_t>(testing::broadcast_offset(i, out, y_sizes))];
      ASSERT_EQ(got[static_cast<size_t>(i)], expected) << dtype_name(dtype) << " element " << i;
    }
  }
}

TEST(LogicGradients, WhereRoutesTheGradientAndSumsBroadcasts) {
  Tensor condition = Tensor::from_vector<bool>({true, false, false, true, true, false}, {2, 3});
  check_gradient("Where", {condition, make_tensor(DType::kFloat64, random_values(DType::kFloat64, 6, 5), {2, 3}),
                           make_tensor(DType::kFloat64, random_values(DType::kFloat64, 3, 6), {3})},
                 {1, 2});
}

TEST(LogicGradients, ComparisonsContributeNoGradient) {
  Graph g("g");
  Value* a = g.add_input("a", {DType::kFloat32, Shape{2}});
  Node* less = g.add_node("Less", {a, a}, 1, {}, "less");
  infer_graph_types(g, default_op_registry());
  GradientContext ctx(g, *less, {g.add_input("dY", less->output(0)->type())});
  default_op_registry().get("Less").gradient_rule()(ctx);
  EXPECT_EQ(ctx.input_grads(), (std::vector<Value*>{nullptr, nullptr}));
  EXPECT_EQ(g.num_nodes(), 1u);
}

double reference_cast(double x, DType to) {
  auto saturate = [x](double lowest, double highest) {
    if (std::isnan(x)) return 0.0;
    return std::trunc(std::clamp(x, lowest, highest));
  };
  switch (to) {
    case DType::kBool: return x != 0 ? 1 : 0;
    case DType::kFloat64: return x;
    case DType::kFloat32: return static_cast<float>(x);
    case DType::kFloat16: return f16_bits_to_float(float_to_f16_bits(static_cast<float>(x)));
    case DType::kBFloat16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(x)));
    case DType::kInt8: return saturate(-128, 127);
    case DType::kUInt8: return saturate(0, 255);
    case DType::kInt16: return saturate(-32768, 32767);
    case DType::kInt32: return saturate(std::numeric_limits<int32_t>::lowest(), std::numeric_limits<int32_t>::max());
    // int64's limits are not doubles; the ones nearest them saturate to the limits.
    case DType::kInt64: return saturate(-9.223372036854775808e18, 9.223372036854775807e18);
    case DType::kUInt16: return saturate(0, 65535);
    case DType::kUInt32: return saturate(0, std::numeric_limits<uint32_t>::max());
    case DType::kUInt64: return saturate(0, 1.8446744073709551615e19);
    default: return NAN;
  }
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(CastKernel, FromF64ToEveryDtypeSaturatesAndZeroesNaN) {
  const std::vector<double> values = {0, -0.0, 1.5, -2.75, 100.25, 65504, 70000, 1e6, -1e6, 3e9, -3e9, 1e20,
                                      -1e20, 0.1, NAN, INFINITY, -INFINITY, 255.9, -0.5};
  Tensor x = Tensor::from_vector<double>(values, {static_cast<int64_t>(values.size())});
  for (DType to : kAllDTypes) {
    std::vector<double> got = to_doubles(run_op("Cast", {x}, {{"to", Attribute(static_cast<int64_t>(to))}})[0]);
    for (size_t i = 0; i < values.size(); ++i) {
      double expected = reference_cast(values[i], to);
      if (to == DType::kInt64 && std::fabs(values[i]) > 9e18) expected = values[i] > 0 ? 9223372036854775807.0 : -9223372036854775808.0;
      ASSERT_TRUE(same(got[i], expected)) << "f64 " << values[i] << " -> " << dtype_name(to) << ": " << got[i] << " vs " << expected;
    }
  }
}

TEST(CastKernel, BetweenIntegerAndHalfTypes) {
  Tensor ints = Tensor::from_vector<int32_t>({-129, 300, 7, -1}, {4});
  EXPECT_EQ(to_doubles(run_op("Cast", {ints}, {{"to", Attribute(static_cast<int64_t>(DType::kUInt8))}})[0]),
            (std::vector<double>{127, 44, 7, 255}));  // modular, as C++20 defines it
  Tensor halves = make_tensor(DType::kFloat16, {0.5, -3, 1000}, {3});
  EXPECT_EQ(to_doubles(run_op("Cast", {halves}, {{"to", Attribute(static_cast<int64_t>(DType::kBFloat16))}})[0]),
            (std::vector<double>{0.5, -3, 1000}));
  EXPECT_EQ(to_doubles(run_op("Cast", {Tensor::from_vector<bool>({true, false}, {2})}, {{"to", Attribute(static_cast<int64_t>(DType::kFloat32))}})[0]),
            (std::vector<double>{1, 0}));
  // Same dtype: the output is the input itself.
  Tensor same_type = run_op("Cast", {ints}, {{"to", Attribute(static_cast<int64_t>(DType::kInt32))}})[0];
  EXPECT_EQ(same_type.raw_data(), ints.raw_data());
  EXPECT_EQ(to_doubles(run_op("Cast", {ints}, {{"to", Attribute(static_cast<int64_t>(DType::kUInt16))}})[0]),
            (std::vector<double>{65407, 300, 7, 65535}));  // modular
  EXPECT_THROW(run_op("Cast", {ints}, {{"to", Attribute(int64_t{8})}}), Error);  // ONNX's STRING: not a Weir dtype
}

TEST(CastGradient, CastsBackBetweenFloatingTypes) {
  Graph g("g");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{3}});
  Node* cast = g.add_node("Cast", {x}, 1, {{"to", Attribute(static_cast<int64_t>(DType::kFloat64))}}, "cast");
  infer_graph_types(g, default_op_registry());
  Value* dy = g.add_input("dY", cast->output(0)->type());
  GradientContext ctx(g, *cast, {dy});
  default_op_registry().get("Cast").gradient_rule()(ctx);
  ASSERT_NE(ctx.input_grads()[0], nullptr);
  g.add_output(ctx.input_grads()[0]);
  infer_graph_types(g, default_op_registry());
  EXPECT_EQ(ctx.input_grads()[0]->dtype(), DType::kFloat32);
  std::vector<Tensor> out = evaluate_graph(g, {{"x", Tensor(DType::kFloat32, {3})}, {"dY", Tensor::from_vector<double>({0.5, -1, 2}, {3})}});
  EXPECT_EQ(to_doubles(out[0]), (std::vector<double>{0.5, -1, 2}));
}

}  // namespace
}  // namespace weir
