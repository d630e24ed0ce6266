// The activations and other unary float ops, Clip, IsNaN/IsInf, and the
// binary Pow/Mod and variadic Max/Min, against references written from the
// ONNX definitions on random inputs in every dtype; gradient rules against
// finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>

#include "core/allocator.h"
#include "core/error.h"
#include "ops/kernel.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::broadcast_offset;
using testing::check_gradient;
using testing::count_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

struct Activation {
  std::string op;
  std::map<std::string, Attribute> attrs;
  std::function<double(double)> reference;
  bool differentiable = true;
  double low = -4, high = 4;  // the inputs tested: inside the function's domain
};

double phi(double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }

const std::vector<Activation>& activations() {
  static const std::vector<Activation> list = {
      {"LeakyRelu", {}, [](double x) { return x >= 0 ? x : 0.01 * x; }},
      {"LeakyRelu", {{"alpha", Attribute(0.3)}}, [](double x) { return x >= 0 ? x : 0.3 * x; }},
      {"Elu", {{"alpha", Attribute(0.7)}}, [](double x) { return x > 0 ? x : 0.7 * (std::exp(x) - 1); }},
      {"Selu", {}, [](double x) { return 1.05070102214813232421875 * (x > 0 ? x : 1.67326319217681884765625 * (std::exp(x) - 1)); }},
      {"Gelu", {}, [](double x) { return x * phi(x); }},
      {"Gelu", {{"approximate", Attribute("tanh")}},
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
      {"Erf", {}, [](double x) { return std::erf(x); }},
      {"Softplus", {}, [](double x) { return std::log(1 + std::exp(x)); }},
      {"Softsign", {}, [](double x) { return x / (1 + std::fabs(x)); }},
      {"HardSigmoid", {{"alpha", Attribute(0.3)}, {"beta", Attribute(0.4)}},
       [](double x) { return std::clamp(0.3 * x + 0.4, 0.0, 1.0); }},
      {"HardSwish", {}, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
      {"Sin", {}, [](double x) { return std::sin(x); }},
      {"Cos", {}, [](double x) { return std::cos(x); }},
      {"Reciprocal", {}, [](double x) { return 1 / x; }},
      {"Tan", {}, [](double x) { return std::tan(x); }, true, -1.4, 1.4},
      {"Asin", {}, [](double x) { return std::asin(x); }, true, -0.95, 0.95},
      {"Acos", {}, [](double x) { return std::acos(x); }, true, -0.95, 0.95},
      {"Atan", {}, [](double x) { return std::atan(x); }},
      {"Sinh", {}, [](double x) { return std::sinh(x); }},
      {"Cosh", {}, [](double x) { return std::cosh(x); }},
      {"Asinh", {}, [](double x) { return std::log(x + std::sqrt(x * x + 1)); }},
      {"Acosh", {}, [](double x) { return std::log(x + std::sqrt(x * x - 1)); }, true, 1.1, 4},
      {"Atanh", {}, [](double x) { return 0.5 * std::log((1 + x) / (1 - x)); }, true, -0.95, 0.95},
      {"ThresholdedRelu", {{"alpha", Attribute(0.7)}}, [](double x) { return x > 0.7 ? x : 0; }},
      {"Shrink", {{"bias", Attribute(0.4)}, {"lambd", Attribute(1.1)}},
       [](double x) { return x < -1.1 ? x + 0.4 : (x > 1.1 ? x - 0.4 : 0); }},
      {"Celu", {{"alpha", Attribute(1.5)}},
       [](double x) { return std::max(0.0, x) + std::min(0.0, 1.5 * (std::exp(x / 1.5) - 1)); }},
      {"Floor", {}, [](double x) { return std::floor(x); }, false},
      {"Ceil", {}, [](double x) { return std::ceil(x); }, false},
      {"Round", {}, [](double x) {
         double r = std::round(x);
         return std::fabs(x - std::trunc(x)) == 0.5 ? 2 * std::round(x / 2) : r;  // halves to even
       }, false},
  };
  return list;
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return 1e-13;
    case DType::kFloat32: return 2e-6;
    case DType::kFloat16: return 1e-3;
    default: return 8e-3;
  }
}

TEST(ActivationKernels, MatchTheReferenceInEveryFloatType) {
  uint32_t seed = 1;
  for (const Activation& a : activations()) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
      for (std::vector<int64_t> sizes : {std::vector<int64_t>{37}, {3, 4, 5}, {0, 3}, {}}) {
        std::vector<double> values = random_values(dtype, count_of(sizes), seed++, a.low, a.high);
        if (!values.empty() && a.high > 2.5) values[0] = 2.5;  // a half, for Round
        Tensor x = make_tensor(dtype, values, sizes);
        std::vector<double> in = to_doubles(x);
        std::vector<double> got = to_doubles(run_op(a.op, {x}, a.attrs)[0]);
        ASSERT_EQ(got.size(), in.size());
        for (size_t i = 0; i < in.size(); ++i) {
          double expected = a.reference(in[i]);
          ASSERT_NEAR(got[i], expected, tolerance(dtype) * std::max(1.0, std::fabs(expected)))
              << a.op << " " << dtype_name(dtype) << " at " << in[i];
        }
      }
    }
  }
}

TEST(ActivationKernels, ExtremeInputsStayFinite) {
  Tensor x = Tensor::from_vector<float>({-1000.0f, 1000.0f, -90.0f, 90.0f}, {4});
  std::vector<double> softplus = to_doubles(run_op("Softplus", {x})[0]);
  EXPECT_EQ(softplus[0], 0.0);
  EXPECT_EQ(softplus[1], 1000.0);
  for (const char* op : {"Gelu", "Elu", "Selu", "Softsign", "HardSwish", "Erf"}) {
    for (double v : to_doubles(run_op(op, {x})[0])) EXPECT_TRUE(std::isfinite(v)) << op;
  }
}

TEST(ActivationGradients, MatchFiniteDifferences) {
  uint32_t seed = 100;
  for (const Activation& a : activations()) {
    Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, seed++, a.low, a.high), {4, 6});
    if (a.op == "Reciprocal") x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, seed++, 0.5, 3), {4, 6});
    check_gradient(a.op, {x}, a.differentiable ? std::vector<size_t>{0} : std::vector<size_t>{}, a.attrs);
  }
}

TEST(ClipKernels, ClampsWithOptionalBoundsAndKeepsNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = make_tensor(DType::kFloat32, {-3, -1, 0, 2, 5, nan}, {6});
  Tensor low = Tensor::scalar<float>(-1.5f), high = Tensor::scalar<float>(2.5f);
  std::vector<double> both = to_doubles(run_op("Clip", {x, low, high})[0]);
  EXPECT_EQ(std::vector<double>(both.begin(), both.end() - 1), (std::vector<double>{-1.5, -1, 0, 2, 2.5}));
  EXPECT_TRUE(std::isnan(both.back()));
  std::vector<double> only_max = to_doubles(run_op("Clip", {x, Tensor(), high})[0]);
  EXPECT_EQ(only_max[0], -3);
  EXPECT_EQ(only_max[4], 2.5);
  Tensor ints = make_tensor(DType::kInt32, {-7, 3, 9}, {3});
  EXPECT_EQ(to_doubles(run_op("Clip", {ints, Tensor::scalar<int32_t>(0), Tensor::scalar<int32_t>(5)})[0]),
            (std::vector<double>{0, 3, 5}));
  Tensor x64 = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 12, 5, -3, 3), {3, 4});
  check_gradient("Clip", {x64, Tensor::scalar<double>(-1.0), Tensor::scalar<double>(1.5)}, {0});
}

TEST(ClipKernels, IsNaNAndIsInf) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    Tensor x = make_tensor(dtype, {1.0, -inf, inf, nan, 0.0}, {5});
    EXPECT_EQ(to_doubles(run_op("IsNaN", {x})[0]), (std::vector<double>{0, 0, 0, 1, 0}));
    EXPECT_EQ(to_doubles(run_op("IsInf", {x})[0]), (std::vector<double>{0, 1, 1, 0, 0}));
    EXPECT_EQ(to_doubles(run_op("IsInf", {x}, {{"detect_negative", Attribute(int64_t{0})}})[0]),
              (std::vector<double>{0, 0, 1, 0, 0}));
  }
}

// out[i] = f(a[bcast], b[bcast]) for the binary ops.
void check_binary(const std::string& op, DType dtype, const std::vector<int64_t>& as, const std::vector<int64_t>& bs,
                  const std::function<double(double, double)>& f, std::map<std::string, Attribute> attrs = {},
                  double low = -5, double high = 5) {
  std::vector<double> av = random_values(dtype, count_of(as), 11, low, high);
  std::vector<double> bv = random_values(dtype, count_of(bs), 12, low, high);
  if (is_integer(dtype)) {
    for (double& v : bv) v = v == 0 ? 3 : v;  // no integer division by zero
    for (double& v : av) v = std::fmod(v, 12);
    for (double& v : bv) v = op == "Pow" ? std::fmod(std::fabs(v), 4) : std::fmod(v, 12) == 0 ? 5 : std::fmod(v, 12);
  }
  Tensor a = make_tensor(dtype, av, as), b = make_tensor(dtype, bv, bs);
  av = to_doubles(a);
  bv = to_doubles(b);
  Tensor y = run_op(op, {a, b}, attrs)[0];
  std::vector<double> got = to_doubles(y);
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    double expected = f(av[static_cast<size_t>(broadcast_offset(i, y.sizes(), as))],
                        bv[static_cast<size_t>(broadcast_offset(i, y.sizes(), bs))]);
    if (!is_integer(dtype)) expected = to_doubles(make_tensor(dtype, {expected}, {1}))[0];
    ASSERT_NEAR(got[static_cast<size_t>(i)], expected, tolerance(dtype) * std::max(1.0, std::fabs(expected)) * 4)
        << op << " " << dtype_name(dtype) << " element " << i;
  }
}

double python_mod(double a, double b) {
  double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

TEST(BinaryKernels, PowModMaxMinMatchTheReference) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kInt32, DType::kInt64}) {
    bool integer = is_integer(dtype);
    check_binary("Pow", dtype, {3, 4}, {4}, [](double a, double b) { return std::pow(a, b); }, {}, integer ? -5 : 0.2,
                 integer ? 5 : 3);
    check_binary("Max", dtype, {2, 1, 3}, {4, 1}, [](double a, double b) { return std::max(a, b); });
    check_binary("Min", dtype, {2, 3}, {}, [](double a, double b) { return std::min(a, b); });
    check_binary("Sum", dtype, {2, 1, 3}, {4, 1}, [](double a, double b) { return a + b; });
    if (!integer) check_binary("Mean", dtype, {3, 4}, {4}, [](double a, double b) { return (a + b) / 2; });
    check_binary("Mod", dtype, {5, 3}, {3}, [](double a, double b) { return std::fmod(a, b); }, {{"fmod", Attribute(int64_t{1})}});
    if (integer) check_binary("Mod", dtype, {5, 3}, {1, 3}, python_mod);
  }
  // Three inputs, broadcast together.
  Tensor a = make_tensor(DType::kFloat32, {1, 5, 3}, {3}), b = make_tensor(DType::kFloat32, {4, 0}, {2, 1});
  Tensor c = make_tensor(DType::kFloat32, {2}, {});
  EXPECT_EQ(to_doubles(run_op("Max", {a, b, c})[0]), (std::vector<double>{4, 5, 4, 2, 5, 3}));
  EXPECT_EQ(to_doubles(run_op("Min", {a})[0]), (std::vector<double>{1, 5, 3}));
  EXPECT_EQ(to_doubles(run_op("Sum", {a, b, c})[0]), (std::vector<double>{7, 11, 9, 3, 7, 5}));
  std::vector<double> mean = to_doubles(run_op("Mean", {a, b, c})[0]);
  std::vector<double> expected_mean = {7.0 / 3, 11.0 / 3, 3, 1, 7.0 / 3, 5.0 / 3};
  ASSERT_EQ(mean.size(), expected_mean.size());
  for (size_t i = 0; i < mean.size(); ++i) EXPECT_NEAR(mean[i], expected_mean[i], 1e-6);
  Tensor nan = make_tensor(DType::kFloat32, {std::numeric_limits<double>::quiet_NaN()}, {1});
  EXPECT_TRUE(std::isnan(to_doubles(run_op("Max", {a, nan})[0])[1]));
  EXPECT_TRUE(std::isnan(to_doubles(run_op("Min", {nan, a})[0])[1]));
}

// Sum, Mean, Max and Min fold their inputs left to right into their output
// where the memory planner put it: no temporaries and no output of their
// own (which the run would hold outside the arena).
TEST(BinaryKernels, VariadicOpsFoldIntoThePlannedOutput) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 1}, {2, 3, 4}, {4}, {1, 3, 4}};
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t count = 1;
    for (int64_t size : shapes[i]) count *= size;
    inputs.push_back(make_tensor(DType::kFloat32, random_values(DType::kFloat32, count, 60 + static_cast<uint32_t>(i)), shapes[i]));
  }
  const std::vector<int64_t> out_sizes = {2, 3, 4};
  const std::map<std::string, std::function<double(double, double)>> ops = {
      {"Sum", [](double a, double b) { return a + b; }},
      {"Mean", [](double a, double b) { return a + b; }},
      {"Max", [](double a, double b) { return std::max(a, b); }},
      {"Min", [](double a, double b) { return std::min(a, b); }}};
  for (const auto& [op, fold] : ops) {
    Graph g("variadic");
    std::vector<Value*> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      values.push_back(g.add_input("x" + std::to_string(i), {DType::kFloat32, Shape::from_sizes(inputs[i].sizes())}));
    }
    Node* node = g.add_node(op, values, 1, {}, "variadic");
    std::unique_ptr<OpKernel> kernel = default_kernel_registry().create(*node, DeviceType::kCpu);
    Tensor arena(DType::kFloat32, {64});  // the planner's buffer, with room to spare
    CpuAllocator counted;
    KernelContext ctx(*node, inputs, counted);
    ctx.set_planned_output(0, {arena.raw_data(), arena.nbytes(), false, nullptr});
    kernel->compute(ctx);
    EXPECT_EQ(ctx.output(0).raw_data(), arena.raw_data()) << op;
    EXPECT_EQ(ctx.output(0).sizes(), out_sizes) << op;
    EXPECT_EQ(counted.stats().num_allocations, 0) << op;
    std::vector<double> got = to_doubles(ctx.output(0));
    ASSERT_EQ(got.size(), size_t{24}) << op;
    for (int64_t i = 0; i < 24; ++i) {
      double expected = to_doubles(inputs[0])[static_cast<size_t>(broadcast_offset(i, out_sizes, shapes[0]))];
      for (size_t k = 1; k < inputs.size(); ++k) {
        expected = fold(expected, to_doubles(inputs[k])[static_cast<size_t>(broadcast_offset(i, out_sizes, shapes[k]))]);
      }
      if (op == "Mean") expected /= static_cast<double>(inputs.size());
      EXPECT_NEAR(got[static_cast<size_t>(i)], expected, 1e-5 * std::max(1.0, std::fabs(expected))) << op << " element " << i;
    }
  }
}

// An output placed over an input the fold reads after writing (input 2
// here) would read its own partial sums: the kernel folds elsewhere.
TEST(BinaryKernels, VariadicOutputOverALaterInputFoldsElsewhere) {
  std::vector<Tensor> inputs;
  for (uint32_t i = 0; i < 3; ++i) inputs.push_back(make_tensor(DType::kFloat32, random_values(DType::kFloat32, 6, 70 + i), {2, 3}));
  std::vector<double> x0 = to_doubles(inputs[0]), x1 = to_doubles(inputs[1]), x2 = to_doubles(inputs[2]);
  Graph g("variadic");
  std::vector<Value*> values;
  for (size_t i = 0; i < 3; ++i) values.push_back(g.add_input("x" + std::to_string(i), {DType::kFloat32, Shape{2, 3}}));
  Node* node = g.add_node("Sum", values, 1, {}, "sum");
  std::unique_ptr<OpKernel> kernel = default_kernel_registry().create(*node, DeviceType::kCpu);
  KernelContext ctx(*node, inputs, cpu_allocator());
  ctx.set_planned_output(0, {inputs[2].raw_data(), inputs[2].nbytes(), true, nullptr});
  kernel->compute(ctx);
  std::vector<double> got = to_doubles(ctx.output(0));
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(got[i], static_cast<float>(static_cast<float>(x0[i] + x1[i]) + x2[i])) << i;
}

TEST(BinaryKernels, ModErrors) {
  Tensor a = make_tensor(DType::kInt32, {4, 5}, {2}), zero = make_tensor(DType::kInt32, {1, 0}, {2});
  EXPECT_THROW(run_op("Mod", {a, zero}), Error);
  Tensor f = make_tensor(DType::kFloat32, {4, 5}, {2});
  EXPECT_THROW(run_op("Mod", {f, f}), Error);  // floats need fmod=1
}

TEST(BinaryGradients, PowMaxMinMatchFiniteDifferences) {
  Tensor base = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 12, 21, 0.5, 2.5), {3, 4});
  Tensor exponent = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 4, 22, -2, 2), {4});
  check_gradient("Pow", {base, exponent}, {0, 1});
  Tensor a = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 12, 23), {3, 4});
  Tensor b = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 4, 24), {4});
  Tensor c = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 3, 25), {3, 1});
  check_gradient("Max", {a, b, c}, {0, 1, 2});
  check_gradient("Min", {a, b}, {0, 1});
  check_gradient("Sum", {a, b, c}, {0, 1, 2});
  check_gradient("Mean", {a, b, c}, {0, 1, 2});
}

TEST(BinaryGradients, ModMatchesFiniteDifferencesAwayFromItsJumps) {
  // fmod jumps where a / b is an integer; keep every quotient's fraction in
  // [0.1, 0.9] so the central difference never straddles a jump.
  std::vector<double> divisors = random_values(DType::kFloat64, 4, 26, 0.5, 2.0);
  divisors[1] = -divisors[1];
  std::vector<double> dividends = random_values(DType::kFloat64, 12, 27, -6, 6);
  for (size_t i = 0; i < dividends.size(); ++i) {
    double b = divisors[i % 4], q = dividends[i] / b;
    double fraction = std::fabs(q - std::trunc(q));
    if (fraction < 0.1 || fraction > 0.9) dividends[i] = (std::trunc(q) + (q < 0 ? -0.5 : 0.5)) * b;
  }
  check_gradient("Mod", {make_tensor(DType::kFloat64, dividends, {3, 4}), make_tensor(DType::kFloat64, divisors, {4})},
                 {0, 1}, {{"fmod", Attribute(int64_t{1})}});
}

}  // namespace
}  // namespace weir
