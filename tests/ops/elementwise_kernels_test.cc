// Elementwise CPU kernels against a simple reference on random inputs:
// broadcasting (rank mismatch, size-1 and zero-size axes), every dtype, f16
// and bf16 against the f64 reference within one unit in the last place.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "ops/elementwise/broadcast.h"
#include "tests/test_util.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::count_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

struct ShapePair {
  std::vector<int64_t> a, b, out;
};

const std::vector<ShapePair> kShapePairs = {
    {{2, 3}, {2, 3}, {2, 3}},          {{2, 3}, {3}, {2, 3}},
    {{3}, {2, 3}, {2, 3}},             {{4, 1, 3}, {1, 5, 1}, {4, 5, 3}},
    {{}, {7}, {7}},                    {{6, 1}, {}, {6, 1}},
    {{5, 0, 2}, {1, 2}, {5, 0, 2}},    {{1}, {1}, {1}},
    {{2, 1, 4, 1}, {3, 1, 5}, {2, 3, 4, 5}}, {{6, 7, 8}, {6, 1, 8}, {6, 7, 8}},
    {{1, 33}, {17, 1}, {17, 33}},      {{2, 3, 1}, {2, 1, 1}, {2, 3, 1}},
};

// Two's-complement wrap of an exact integer result into `dtype`.
double wrap(double value, DType dtype) {
  auto bits = static_cast<uint64_t>(static_cast<int64_t>(value));
  switch (dtype) {
    case DType::kInt8: return static_cast<int8_t>(bits);
    case DType::kUInt8: return static_cast<uint8_t>(bits);
    case DType::kInt16: return static_cast<int16_t>(bits);
    case DType::kInt32: return static_cast<int32_t>(bits);
    case DType::kUInt16: return static_cast<uint16_t>(bits);
    case DType::kUInt32: return static_cast<uint32_t>(bits);
    case DType::kUInt64: return static_cast<double>(bits);
    default: return static_cast<double>(static_cast<int64_t>(bits));
  }
}

// Largest error allowed against the f64 reference: exact for f64 and integers,
// half an ulp (correct rounding) for f32, and one ulp for f16/bf16, whose
// kernels compute in f32 and round once more.
double tolerance(DType dtype, double reference) {
  double magnitude = std::max(std::fabs(reference), 1e-30);
  switch (dtype) {
    case DType::kFloat32: return std::ldexp(magnitude, -24);
    case DType::kFloat16: return std::max(std::ldexp(magnitude, -10), std::ldexp(1.0, -24));
    case DType::kBFloat16: return std::ldexp(magnitude, -7);
    default: return 0.0;
  }
}

using BinaryReference = std::function<double(double, double)>;

void check_binary(const std::string& op, DType dtype, const BinaryReference& reference, bool nonzero_b) {
  uint32_t seed = 1;
  for (const ShapePair& pair : kShapePairs) {
    std::vector<double> a = random_values(dtype, count_of(pair.a), seed++);
    std::vector<double> b = random_values(dtype, count_of(pair.b), seed++);
    if (nonzero_b) {
      for (double& value : b) value = value == 0 ? 1 : (std::fabs(value) < 0.25 ? 0.25 + value : value);
    }
    Tensor ta = make_tensor(dtype, a, pair.a);
    Tensor tb = make_tensor(dtype, b, pair.b);
    // The reference reads the values as stored (rounded to f16/bf16).
    a = to_doubles(ta);
    b = to_doubles(tb);
    Tensor out = run_op(op, {ta, tb})[0];
    ASSERT_EQ(out.sizes(), pair.out) << op;
    ASSERT_EQ(out.dtype(), dtype);
    std::vector<double> got = to_doubles(out);
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      double x = a[static_cast<size_t>(testing::broadcast_offset(i, pair.out, pair.a))];
      double y = b[static_cast<size_t>(testing::broadcast_offset(i, pair.out, pair.b))];
      double expected = reference(x, y);
      if (is_integer(dtype)) expected = wrap(expected, dtype);
      ASSERT_LE(std::fabs(got[static_cast<size_t>(i)] - expected), tolerance(dtype, expected))
          << op << " " << dtype_name(dtype) << " element " << i << ": " << x << ", " << y;
    }
  }
}

const DType kNumericTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                               DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                               DType::kInt64,   DType::kUInt16,  DType::kUInt32,  DType::kUInt64};

TEST(ElementwiseKernels, AddSubMulMatchTheReferenceForEveryDtypeAndBroadcast) {
  for (DType dtype : kNumericTypes) {
    check_binary("Add", dtype, std::plus<double>(), false);
    check_binary("Sub", dtype, std::minus<double>(), false);
    check_binary("Mul", dtype, std::multiplies<double>(), false);
  }
}

TEST(ElementwiseKernels, DivMatchesTheReferenceAndTruncatesIntegers) {
  for (DType dtype : kNumericTypes) {
    bool integer = is_integer(dtype);
    check_binary("Div", dtype, [integer](double x, double y) { return integer ? std::trunc(x / y) : x / y; }, true);
  }
}

TEST(ElementwiseKernels, IntegerEdgeCasesWrapInsteadOfOverflowing) {
  Tensor a = Tensor::from_vector<int32_t>({INT32_MAX, INT32_MIN, -7}, {3});
  Tensor b = Tensor::from_vector<int32_t>({1, -1, 2}, {3});
  EXPECT_EQ(to_doubles(run_op("Add", {a, b})[0]), (std::vector<double>{INT32_MIN, INT32_MAX, -5}));
  EXPECT_EQ(to_doubles(run_op("Div", {a, b})[0]), (std::vector<double>{INT32_MAX, INT32_MIN, -3}));
  EXPECT_EQ(to_doubles(run_op("Neg", {a})[0]), (std::vector<double>{-INT32_MAX, INT32_MIN, 7}));
}

// The unsigned types (ONNX's uint16/32/64): comparisons, Max/Min, Mod and
// BitShift against references on random values, and shifts past the width.
TEST(ElementwiseKernels, UnsignedMaxMinModAndBitShift) {
  for (DType dtype : {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    check_binary("Max", dtype, [](double x, double y) { return std::max(x, y); }, false);
    check_binary("Min", dtype, [](double x, double y) { return std::min(x, y); }, false);
    check_binary("Mod", dtype, [](double x, double y) { return std::fmod(x, y); }, true);
    const double width = static_cast<double>(dtype_size(dtype) * 8);
    Tensor a = make_tensor(dtype, {1, 3, 200, 255, 7}, {5});
    Tensor shifts = make_tensor(dtype, {0, 1, 2, width - 1, width}, {5});
    std::vector<double> left = to_doubles(run_op("BitShift", {a, shifts}, {{"direction", Attribute(std::string("LEFT"))}})[0]);
    std::vector<double> right = to_doubles(run_op("BitShift", {a, shifts}, {{"direction", Attribute(std::string("RIGHT"))}})[0]);
    const double modulus = std::ldexp(1.0, static_cast<int>(width));
    std::vector<double> values = to_doubles(a), amounts = to_doubles(shifts);
    for (size_t i = 0; i < values.size(); ++i) {
      double expected_left = amounts[i] >= width ? 0 : std::fmod(values[i] * std::ldexp(1.0, static_cast<int>(amounts[i])), modulus);
      double expected_right = amounts[i] >= width ? 0 : std::floor(values[i] / std::ldexp(1.0, static_cast<int>(amounts[i])));
      EXPECT_EQ(left[i], expected_left) << dtype_name(dtype) << " element " << i;
      EXPECT_EQ(right[i], expected_right) << dtype_name(dtype) << " element " << i;
    }
    EXPECT_EQ(to_doubles(run_op("Greater", {a, shifts})[0]), (std::vector<double>{1, 1, 1, 1, 0}));
  }
  // BitShift takes unsigned types and a direction of LEFT or RIGHT.
  Tensor ints = Tensor::from_vector<int32_t>({1}, {1});
  EXPECT_THROW(run_op("BitShift", {ints, ints}, {{"direction", Attribute(std::string("LEFT"))}}), Error);
  Tensor bytes = Tensor::from_vector<uint8_t>({1}, {1});
  std::string message = testing::error_of([&] { run_op("BitShift", {bytes, bytes}, {{"direction", Attribute(std::string("UP"))}}); });
  EXPECT_NE(message.find("direction is 'UP'; expected LEFT or RIGHT"), std::string::npos) << message;
}

TEST(ElementwiseKernels, IntegerDivisionByZeroIsAnErrorNamingTheNode) {
  Tensor a = Tensor::from_vector<int64_t>({4, 5}, {2});
  Tensor b = Tensor::from_vector<int64_t>({2, 0}, {2});
  try {
    run_op("Div", {a, b});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), "op");
    EXPECT_NE(std::string(e.what()).find("Div 'op': integer division by zero"), std::string::npos) << e.what();
  }
  // Float division by zero follows IEEE: infinity, not an error.
  Tensor inf = run_op("Div", {Tensor::from_vector<float>({1.0f}, {1}), Tensor::from_vector<float>({0.0f}, {1})})[0];
  EXPECT_TRUE(std::isinf(inf.data<float>()[0]));
}

TEST(ElementwiseKernels, IncompatibleShapesAreAnErrorNamingTheNode) {
  // Shape inference catches static mismatches; the kernel catches them at run time too.
  Graph g("g");
  Value* a = g.add_input("a", {DType::kFloat32, Shape{Dim::symbol("N"), 3}});
  Value* b = g.add_input("b", {DType::kFloat32, Shape{Dim::symbol("M")}});
  g.add_output(g.add_node("Add", {a, b}, 1, {}, "add")->output(0));
  try {
    evaluate_graph(g, {{"a", Tensor(DType::kFloat32, {2, 3})}, {"b", Tensor(DType::kFloat32, {4})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), "add");
    EXPECT_NE(std::string(e.what()).find("cannot broadcast f32[2,3] with f32[4]"), std::string::npos) << e.what();
  }
}

using UnaryReference = std::function<double(double)>;

void check_unary(const std::string& op, DType dtype, const UnaryReference& reference, double low, double high) {
  uint32_t seed = 100;
  for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{}, {1}, {0, 4}, {3, 5}, {2, 3, 33}}) {
    Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), seed++, low, high), sizes);
    std::vector<double> in = to_doubles(x);
    Tensor y = run_op(op, {x})[0];
    ASSERT_EQ(y.sizes(), sizes);
    std::vector<double> got = to_doubles(y);
    for (size_t i = 0; i < got.size(); ++i) {
      double expected = reference(in[i]);
      if (is_integer(dtype)) expected = wrap(expected, dtype);
      // Transcendentals in f32 (std::exp/tanh) are within a few ulps, not correctly rounded.
      double allowed = dtype == DType::kFloat32 ? 4 * tolerance(dtype, expected) + 1e-38
                       : dtype == DType::kFloat64 ? 1e-15 * std::max(1.0, std::fabs(expected))
                                                  : tolerance(dtype, expected) * 1.01;
      ASSERT_LE(std::fabs(got[i] - expected), allowed) << op << " " << dtype_name(dtype) << " of " << in[i];
    }
  }
}

// Neg, Relu, Abs and Sign take the numeric types but u16/u32/u64.
const DType kUnaryNumericTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
                                    DType::kUInt8,   DType::kInt16,   DType::kInt32,   DType::kInt64};

TEST(ElementwiseKernels, UnaryOpsMatchTheReference) {
  for (DType dtype : kUnaryNumericTypes) {
    check_unary("Neg", dtype, [](double x) { return -x; }, -3, 3);
    check_unary("Relu", dtype, [](double x) { return std::max(x, 0.0); }, -3, 3);
  }
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    check_unary("Sigmoid", dtype, [](double x) { return 1 / (1 + std::exp(-x)); }, -12, 12);
    check_unary("Tanh", dtype, [](double x) { return std::tanh(x); }, -5, 5);
    check_unary("Exp", dtype, [](double x) { return std::exp(x); }, -5, 5);
    check_unary("Log", dtype, [](double x) { return std::log(x); }, 0.01, 100);
    check_unary("Sqrt", dtype, [](double x) { return std::sqrt(x); }, 0, 100);
  }
  for (DType dtype : kUnaryNumericTypes) {
    check_unary("Abs", dtype, [](double x) { return std::fabs(x); }, -3, 3);
    check_unary("Sign", dtype, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, -3, 3);
  }
}

TEST(ElementwiseKernels, SigmoidSaturatesWithoutNaN) {
  Tensor y = run_op("Sigmoid", {Tensor::from_vector<float>({-1000.0f, 1000.0f, -88.0f}, {3})})[0];
  EXPECT_EQ(y.data<float>()[0], 0.0f);
  EXPECT_EQ(y.data<float>()[1], 1.0f);
  EXPECT_GT(y.data<float>()[2], 0.0f);
}

TEST(ElementwiseKernels, IdentityReturnsAViewOfItsInput) {
  Tensor x = make_tensor(DType::kBool, {1, 0, 1}, {3});
  Tensor y = run_op("Identity", {x})[0];
  EXPECT_EQ(y.raw_data(), x.raw_data());
}

TEST(ElementwiseKernels, SumToShapeSumsOverBroadcastAxes) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
    for (const ShapePair& pair : kShapePairs) {
      // Sum the output-shaped tensor back to each operand's shape.
      for (const std::vector<int64_t>* target : {&pair.a, &pair.b}) {
        Tensor x = make_tensor(dtype, random_values(dtype, count_of(pair.out), 7), pair.out);
        std::vector<double> in = to_doubles(x);
        Tensor y = run_op("SumToShape", {x, Tensor(DType::kFloat32, *target)})[0];
        ASSERT_EQ(y.sizes(), *target);
        std::vector<double> expected(static_cast<size_t>(count_of(*target)), 0.0);
        for (int64_t i = 0; i < count_of(pair.out); ++i) {
          expected[static_cast<size_t>(testing::broadcast_offset(i, pair.out, *target))] += in[static_cast<size_t>(i)];
        }
        std::vector<double> got = to_doubles(y);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_LE(std::fabs(got[i] - expected[i]), tolerance(dtype, expected[i]) + 1e-12) << dtype_name(dtype);
        }
      }
    }
  }
  EXPECT_THROW(run_op("SumToShape", {Tensor(DType::kFloat32, {2, 3}), Tensor(DType::kFloat32, {4})}), Error);
}

TEST(BroadcastPlan, VisitsEveryOutputElementWithTheReferenceOffsets) {
  for (const ShapePair& pair : kShapePairs) {
    ASSERT_EQ(broadcast_sizes(pair.a, pair.b), pair.out);
    BroadcastPlan plan(pair.out, pair.a, pair.b);
    int64_t visited = 0;
    plan.for_each([&](int64_t out_offset, int64_t a_offset, int64_t b_offset, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        EXPECT_EQ(out_offset + i, visited);
        EXPECT_EQ(a_offset + i * plan.inner_stride_a(), testing::broadcast_offset(visited, pair.out, pair.a));
        EXPECT_EQ(b_offset + i * plan.inner_stride_b(), testing::broadcast_offset(visited, pair.out, pair.b));
        ++visited;
      }
    });
    EXPECT_EQ(visited, count_of(pair.out));
  }
  EXPECT_FALSE(broadcast_sizes({2, 3}, {4}).has_value());
}

TEST(KernelRegistry, MissingKernelIsAnErrorNamingNodeOpAndDtype) {
  try {
    run_op("Sigmoid", {Tensor::from_vector<int32_t>({1}, {1})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("no CPU kernel for Sigmoid with i32 inputs"), std::string::npos) << e.what();
  }
  KernelRegistry registry;
  register_all_kernels(registry);
  EXPECT_THROW(register_all_kernels(registry), Error);
}

TEST(GraphEvaluator, ChecksFeedsAgainstDeclaredInputs) {
  Graph g("g");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{Dim::symbol("N"), 3}});
  g.add_output(g.add_node("Relu", {x})->output(0));
  EXPECT_THROW(evaluate_graph(g, {}), Error);                                                // not fed
  EXPECT_THROW(evaluate_graph(g, {{"x", Tensor(DType::kFloat64, {2, 3})}}), Error);          // wrong dtype
  EXPECT_THROW(evaluate_graph(g, {{"x", Tensor(DType::kFloat32, {2, 4})}}), Error);          // wrong size
  EXPECT_THROW(evaluate_graph(g, {{"x", Tensor(DType::kFloat32, {2, 3})}, {"y", Tensor()}}), Error);  // unknown
  EXPECT_EQ(evaluate_graph(g, {{"x", Tensor(DType::kFloat32, {5, 3})}})[0].sizes(), (std::vector<int64_t>{5, 3}));
}

// A one-element input first does not fix the output's shape: the inputs
// that are not one element do (the kernel once took input 0's shape and
// refused the rest).
TEST(FusedElementwiseKernel, AOneElementFirstInputTakesTheOtherInputsShape) {
  Tensor s = make_tensor(DType::kFloat32, {0.75}, {1});
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 12, 5), {3, 4});
  Tensor y = run_op("FusedElementwise", {s, x}, {{"program", Attribute(std::vector<std::string>{"Sub 1 0", "Mul 2 0"})}})[0];
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{3, 4}));
  const std::vector<double> in = to_doubles(x), out = to_doubles(y);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], static_cast<double>((static_cast<float>(in[i]) - 0.75f) * 0.75f)) << i;
  // Shapes that differ among the other inputs are still refused.
  std::string message = testing::error_of([&] {
    run_op("FusedElementwise", {s, x, make_tensor(DType::kFloat32, random_values(DType::kFloat32, 4, 6), {4})},
           {{"program", Attribute(std::vector<std::string>{"Add 1 2"})}});
  });
  EXPECT_NE(message.find("every input has the output's shape [3,4] or one element"), std::string::npos) << message;
}

}  // namespace
}  // namespace weir
