// The elementwise ops on each accelerator against the CPU kernels, f32, f16
// and bf16: the binary ops (Add, Sub, Mul, Div, Pow, Mod) with NumPy
// broadcasting (same shapes, rows, columns, scalars, both sides broadcast,
// odd sizes, a grid larger than one wave, empty); the variadic Sum, Mean,
// Max, Min over one to twenty broadcast inputs; every unary op and
// activation on random values and on edge values (zeros of both signs,
// infinities, NaN, values outside Log's, Sqrt's, Asin's ... domains, values
// that overflow Exp); Clip with and without its bounds; IsNaN, IsInf; and
// PRelu with its slope broadcast; the backward ops (ReluGrad, SigmoidGrad,
// TanhGrad, <Activation>Grad, ClipGrad, PReluGrad).
//
// Tolerances: +, -, *, /, sqrt, comparisons, selects, floor/ceil/rint and
// fmod are correctly rounded on both sides and the device code rounds each
// step as the CPU does (no fused multiply-adds), so ops built only of those
// match bit for bit. The device's transcendental functions (expf, logf,
// sinf, erff, powf, ...) are within 1-4 ulps, glibc's within 1: f32 results
// of those match to a few ulps (2e-6 relative), which can move a 16-bit
// result by one of its own ulps (2e-3 for f16, 1e-2 for bf16).
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/backend_test_inputs.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::random_tensor;
using testing::Tolerance;
using testing::uniform;

class ElementwiseOnBackend : public testing::OnBackend {};

const std::vector<DType> kTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

Tolerance transcendental(DType dtype) {
  return dtype == DType::kFloat32 ? Tolerance{2e-6, 1e-30} : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-5} : Tolerance{1e-2, 1e-5};
}

// A tensor of `dtype` with random values in [low, high).

// Zeros of both signs, +-1, halves (Round's ties), infinities, NaN, tiny
// and huge values, values where Exp, Sinh, Cosh overflow, and values outside
// the domains of Log, Sqrt, Asin, Acos, Acosh, Atanh (the CPU gives NaN or
// infinities there, and so must the GPU).
Tensor edge_values(DType dtype) {
  std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -3.0, 0.999, -0.999, 1.001,
                                kInf, -kInf, kNan, 1e-30, -1e-30, 1e-3, 6.0, -6.0, 20.0, -20.0, 88.0, 89.0, 100.0,
                                -100.0, 1e30, -1e30, 3.14159265, 1.57079632};
  return testing::make_tensor(dtype, values, {static_cast<int64_t>(values.size())});
}

struct BroadcastCase {
  std::vector<int64_t> a, b;
};

const std::vector<BroadcastCase> kBroadcastCases = {
    {{7, 13}, {7, 13}},          // same shape, odd sizes
    {{4, 5, 6}, {6}},            // a row
    {{4, 5, 6}, {4, 5, 1}},      // a column
    {{4, 1, 6}, {1, 5, 1}},      // both sides broadcast
    {{}, {3, 3}},                // a scalar first
    {{2, 3, 4, 5}, {3, 1, 5}},   // rank 4 against rank 3
    {{2, 1, 4, 1}, {1, 3, 1, 5}},  // 4-D, size-1 axes on both sides
    {{1031}, {1}},               // odd length, one-element operand
    {{2, 1, 3, 1, 2, 1, 3}, {1, 2, 1, 3, 1, 2, 1}},  // many alternating axes
    {{300, 1000}, {1000}},       // more elements than one wave of blocks
    {{0, 4}, {4}},               // empty
};

TEST_P(ElementwiseOnBackend, BinaryOpsBroadcastLikeTheCpuBitForBit) {
  // +, -, *, /, fmod, max, min are correctly rounded (or exact) on both
  // sides, f16/bf16 computed in f32 and rounded once: the results are identical.
  uint32_t seed = 1;
  for (DType dtype : kTypes) {
    for (const BroadcastCase& shapes : kBroadcastCases) {
      Tensor a = random_tensor(dtype, shapes.a, seed++);
      Tensor b = random_tensor(dtype, shapes.b, seed++);
      for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
        expect_same_as_cpu(GetParam(), op, {a, b}, {}, Tolerance{});
      }
      expect_same_as_cpu(GetParam(), "Mod", {a, b}, {{"fmod", Attribute(int64_t{1})}}, Tolerance{});
      // Pow of negative bases with fractional exponents is NaN on both sides.
      expect_same_as_cpu(GetParam(), "Pow", {a, b}, {}, transcendental(dtype));
    }
  }
}

TEST_P(ElementwiseOnBackend, BinaryOpsOnEdgeValues) {
  for (DType dtype : kTypes) {
    Tensor x = edge_values(dtype);
    const int64_t n = x.num_elements();
    // Every edge value against every other: x as a column, x as a row.
    Tensor column = x.reshape({n, 1});
    Tensor row = x.reshape({1, n});
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
      expect_same_as_cpu(GetParam(), op, {column, row}, {}, Tolerance{}, "edge values");
    }
    expect_same_as_cpu(GetParam(), "Mod", {column, row}, {{"fmod", Attribute(int64_t{1})}}, Tolerance{}, "edge values");
    expect_same_as_cpu(GetParam(), "Pow", {column, row}, {}, transcendental(dtype), "edge values");
  }
}

TEST_P(ElementwiseOnBackend, ModWithoutFmodIsRefusedForFloatsAsOnTheCpu) {
  Tensor a = random_tensor(DType::kFloat32, {4}, 1), b = random_tensor(DType::kFloat32, {4}, 2);
  std::string message = testing::error_of([&] { testing::run_node_on(GetParam(), "Mod", {a, b}); });
  EXPECT_NE(message.find("floating-point inputs need fmod=1"), std::string::npos) << message;
}

TEST_P(ElementwiseOnBackend, VariadicOpsFoldBroadcastInputsLikeTheCpu) {
  // The CPU folds into its output, rounding to the element type after every
  // input; the GPU rounds the same partial results, so even f16 sums match
  // bit for bit.
  const std::vector<std::vector<std::vector<int64_t>>> cases = {
      {{7, 13}},                               // one input (Sum: the input itself; Mean: divided by 1)
      {{7, 13}, {7, 13}},                      // two of one shape
      {{4, 5, 6}, {6}, {4, 5, 1}, {}},         // a row, a column, a scalar
      {{2, 1, 4, 1}, {1, 3, 1, 5}, {2, 3, 1, 1}},  // 4-D, size-1 axes everywhere
      {{1}, {300, 1000}, {1000}},              // the broadcast input first; more than one wave
      {{0, 3}, {3}},                           // empty
  };
  uint32_t seed = 200;
  for (DType dtype : kTypes) {
    for (const auto& shapes : cases) {
      std::vector<Tensor> inputs;
      for (const auto& sizes : shapes) inputs.push_back(random_tensor(dtype, sizes, seed++));
      for (const char* op : {"Sum", "Mean", "Max", "Min"}) expect_same_as_cpu(GetParam(), op, inputs, {}, Tolerance{});
    }
    // More inputs than one pass takes (16): the GPU continues from its output.
    std::vector<Tensor> many;
    for (int i = 0; i < 20; ++i) many.push_back(random_tensor(dtype, i % 3 == 0 ? std::vector<int64_t>{5, 1} : std::vector<int64_t>{5, 9}, seed++));
    for (const char* op : {"Sum", "Mean", "Max", "Min"}) expect_same_as_cpu(GetParam(), op, many, {}, Tolerance{}, "20 inputs");
    // NaN in any input wins Max and Min, wherever it is.
    Tensor edges = edge_values(dtype);
    Tensor reversed = testing::make_tensor(dtype, [&] {
      std::vector<double> v = testing::to_doubles(edges);
      return std::vector<double>(v.rbegin(), v.rend());
    }(), edges.sizes());
    for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
      expect_same_as_cpu(GetParam(), op, {edges, reversed, edges}, {}, Tolerance{}, "edge values");
    }
  }
}

TEST_P(ElementwiseOnBackend, VariadicOpsRefuseMismatchedInputs) {
  Tensor a = random_tensor(DType::kFloat32, {4, 5}, 1), b = random_tensor(DType::kFloat32, {3}, 2);
  std::string message = testing::error_of([&] { testing::run_node_on(GetParam(), "Sum", {a, a, b}); });
  EXPECT_NE(message.find("cannot broadcast"), std::string::npos) << message;
}

// The unary ops that are exact on both sides (selects, negation, IEEE
// arithmetic, rounding to integers), and those built on the math library.
const std::vector<const char*> kExactUnary = {"Neg", "Relu", "Abs", "Sign", "Sqrt", "Floor", "Ceil", "Round",
                                              "Reciprocal", "Softsign", "HardSigmoid", "HardSwish",
                                              "LeakyRelu", "ThresholdedRelu", "Shrink"};
const std::vector<const char*> kLibraryUnary = {"Sigmoid", "Tanh", "Exp",   "Log",  "Erf",   "Softplus", "Elu",
                                                "Selu",    "Celu", "Sin",   "Cos",  "Tan",   "Asin",     "Acos",
                                                "Atan",    "Sinh", "Cosh",  "Asinh", "Acosh", "Atanh"};

TEST_P(ElementwiseOnBackend, UnaryOpsMatchTheCpu) {
  uint32_t seed = 100;
  for (DType dtype : kTypes) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{1}, {7, 13}, {3, 5, 1031}, {0, 3}}) {
      // Wide enough for Exp to overflow f16 and for Sigmoid's and Tanh's
      // saturation; half the values outside Log's and Sqrt's domain.
      Tensor x = uniform(dtype, sizes, seed++, -12.0, 12.0);
      // Inside and just outside [-1, 1], for Asin, Acos, Atanh (and Acosh's edge).
      Tensor unit = uniform(dtype, sizes, seed++, -1.2, 1.2);
      const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(sizes);
      for (const char* op : kExactUnary) expect_same_as_cpu(GetParam(), op, {x}, {}, Tolerance{}, label);
      for (const char* op : kLibraryUnary) {
        expect_same_as_cpu(GetParam(), op, {x}, {}, transcendental(dtype), label);
        expect_same_as_cpu(GetParam(), op, {unit}, {}, transcendental(dtype), label + " near [-1, 1]");
      }
    }
  }
}

TEST_P(ElementwiseOnBackend, UnaryOpsOnEdgeValues) {
  for (DType dtype : kTypes) {
    Tensor x = edge_values(dtype);
    const std::string label = std::string(dtype_name(dtype)) + " edge values";
    for (const char* op : kExactUnary) expect_same_as_cpu(GetParam(), op, {x}, {}, Tolerance{}, label);
    for (const char* op : kLibraryUnary) expect_same_as_cpu(GetParam(), op, {x}, {}, transcendental(dtype), label);
  }
}

TEST_P(ElementwiseOnBackend, ReluOfNanAndSignedZeroIsPositiveZero) {
  Tensor x = Tensor::from_vector<float>({kNan, -0.0f, 0.0f, -1.0f, 2.5f, kInf}, {6});
  expect_same_as_cpu(GetParam(), "Relu", {x}, {}, Tolerance{});
}

// The activations' attributes, other than their defaults.
const std::vector<std::pair<const char*, std::map<std::string, Attribute>>> kAttributeCases = {
    {"LeakyRelu", {{"alpha", Attribute(0.3)}}},
    {"Elu", {{"alpha", Attribute(0.7)}}},
    {"Selu", {{"alpha", Attribute(1.5)}, {"gamma", Attribute(0.9)}}},
    {"Celu", {{"alpha", Attribute(2.5)}}},
    {"HardSigmoid", {{"alpha", Attribute(0.3)}, {"beta", Attribute(0.4)}}},
    {"ThresholdedRelu", {{"alpha", Attribute(-0.5)}}},
    {"Shrink", {{"bias", Attribute(0.2)}, {"lambd", Attribute(0.7)}}},
};

TEST_P(ElementwiseOnBackend, ActivationsReadTheirAttributes) {
  uint32_t seed = 300;
  for (DType dtype : kTypes) {
    Tensor x = uniform(dtype, {5, 37}, seed++, -4.0, 4.0);
    for (const auto& [op, attributes] : kAttributeCases) {
      expect_same_as_cpu(GetParam(), op, {x}, attributes, transcendental(dtype), std::string(dtype_name(dtype)));
      expect_same_as_cpu(GetParam(), std::string(op) + "Grad", {uniform(dtype, {5, 37}, seed++, -2.0, 2.0), x},
                         attributes, transcendental(dtype), std::string(dtype_name(dtype)));
    }
  }
}

TEST_P(ElementwiseOnBackend, ClipWithAndWithoutBounds) {
  uint32_t seed = 400;
  for (DType dtype : kTypes) {
    Tensor x = uniform(dtype, {6, 29}, seed++, -5.0, 5.0);
    Tensor edges = edge_values(dtype);
    Tensor low = testing::make_tensor(dtype, {-1.5}, {});
    Tensor high = testing::make_tensor(dtype, {2.25}, {1});  // one element of rank 1 is a bound too
    for (const Tensor& input : {x, edges}) {
      expect_same_as_cpu(GetParam(), "Clip", {input}, {}, Tolerance{}, "no bounds");
      expect_same_as_cpu(GetParam(), "Clip", {input, low}, {}, Tolerance{}, "min only");
      expect_same_as_cpu(GetParam(), "Clip", {input, Tensor(), high}, {}, Tolerance{}, "max only");
      expect_same_as_cpu(GetParam(), "Clip", {input, low, high}, {}, Tolerance{}, "both");
      Tensor dy = uniform(dtype, input.sizes(), seed++, -2.0, 2.0);
      expect_same_as_cpu(GetParam(), "ClipGrad", {dy, input}, {}, Tolerance{}, "no bounds");
      expect_same_as_cpu(GetParam(), "ClipGrad", {dy, input, low, high}, {}, Tolerance{}, "both");
      expect_same_as_cpu(GetParam(), "ClipGrad", {dy, input, Tensor(), high}, {}, Tolerance{}, "max only");
    }
  }
}

TEST_P(ElementwiseOnBackend, ClipRefusesABoundThatIsNotAScalar) {
  Tensor x = random_tensor(DType::kFloat32, {4}, 1);
  std::string message = testing::error_of(
      [&] { testing::run_node_on(GetParam(), "Clip", {x, random_tensor(DType::kFloat32, {2}, 2)}); });
  EXPECT_NE(message.find("min must be a scalar"), std::string::npos) << message;
}

TEST_P(ElementwiseOnBackend, IsNanAndIsInfGiveBools) {
  for (DType dtype : kTypes) {
    Tensor x = edge_values(dtype);
    expect_same_as_cpu(GetParam(), "IsNaN", {x}, {}, Tolerance{});
    expect_same_as_cpu(GetParam(), "IsInf", {x}, {}, Tolerance{});
    expect_same_as_cpu(GetParam(), "IsInf", {x}, {{"detect_negative", Attribute(int64_t{0})}}, Tolerance{}, "positive only");
    expect_same_as_cpu(GetParam(), "IsInf", {x}, {{"detect_positive", Attribute(int64_t{0})}}, Tolerance{}, "negative only");
    expect_same_as_cpu(GetParam(), "IsNaN", {uniform(dtype, {0, 2}, 1, -1.0, 1.0)}, {}, Tolerance{}, "empty");
  }
}

TEST_P(ElementwiseOnBackend, SavedOutputGradientsMatchTheCpuBitForBit) {
  // ReluGrad reads X; SigmoidGrad and TanhGrad read the forward output Y.
  // Products and differences rounded as on the CPU: identical results.
  uint32_t seed = 500;
  for (DType dtype : kTypes) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{1}, {7, 13}, {300, 1000}, {0, 5}}) {
      Tensor dy = uniform(dtype, sizes, seed++, -3.0, 3.0);
      Tensor x = uniform(dtype, sizes, seed++, -3.0, 3.0);
      expect_same_as_cpu(GetParam(), "ReluGrad", {dy, x}, {}, Tolerance{});
      expect_same_as_cpu(GetParam(), "SigmoidGrad", {dy, uniform(dtype, sizes, seed++, 0.0, 1.0)}, {}, Tolerance{});
      expect_same_as_cpu(GetParam(), "TanhGrad", {dy, uniform(dtype, sizes, seed++, -1.0, 1.0)}, {}, Tolerance{});
    }
    Tensor edges = edge_values(dtype);
    expect_same_as_cpu(GetParam(), "ReluGrad", {edges, edges}, {}, Tolerance{}, "edge values");
  }
}

TEST_P(ElementwiseOnBackend, ActivationGradientsMatchTheCpu) {
  uint32_t seed = 600;
  for (DType dtype : kTypes) {
    Tensor x = uniform(dtype, {3, 5, 67}, seed++, -4.0, 4.0);
    Tensor unit = uniform(dtype, {3, 5, 67}, seed++, -1.2, 1.2);
    Tensor dy = uniform(dtype, {3, 5, 67}, seed++, -2.0, 2.0);
    for (const char* op : {"LeakyRelu", "Elu", "Selu", "Erf", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "Sin",
                           "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                           "ThresholdedRelu", "Shrink", "Celu", "Reciprocal"}) {
      const std::string grad = std::string(op) + "Grad";
      expect_same_as_cpu(GetParam(), grad, {dy, x}, {}, transcendental(dtype), std::string(dtype_name(dtype)));
      expect_same_as_cpu(GetParam(), grad, {dy, unit}, {}, transcendental(dtype), std::string(dtype_name(dtype)) + " near [-1, 1]");
    }
  }
}

TEST_P(ElementwiseOnBackend, PReluAndItsGradientBroadcastTheSlope) {
  // slope * x and dY * slope, dY * x: single products, identical results.
  struct Case {
    std::vector<int64_t> x, slope;
  };
  const std::vector<Case> cases = {
      {{7, 13}, {7, 13}},         // same shape
      {{2, 3, 5, 5}, {3, 1, 1}},  // per channel (NCHW)
      {{2, 3, 5, 5}, {1}},        // one slope
      {{4, 6}, {6}},              // a row
      {{300, 1000}, {1000}},      // more than one wave
      {{0, 4}, {4}},              // empty
  };
  uint32_t seed = 700;
  for (DType dtype : kTypes) {
    for (const Case& c : cases) {
      Tensor x = uniform(dtype, c.x, seed++, -3.0, 3.0);
      Tensor slope = uniform(dtype, c.slope, seed++, -0.5, 0.5);
      Tensor dy = uniform(dtype, c.x, seed++, -2.0, 2.0);
      const std::string label = std::string(dtype_name(dtype)) + " slope " + format_sizes(c.slope);
      expect_same_as_cpu(GetParam(), "PRelu", {x, slope}, {}, Tolerance{}, label);
      testing::expect_outputs_same_as_cpu(GetParam(), "PReluGrad", {dy, x, slope}, {}, {Tolerance{}, Tolerance{}}, label);
    }
    Tensor edges = edge_values(dtype);
    expect_same_as_cpu(GetParam(), "PRelu", {edges, testing::make_tensor(dtype, {0.25}, {1})}, {}, Tolerance{}, "edge values");
  }
  std::string message = testing::error_of([&] {
    testing::run_node_on(GetParam(), "PRelu", {random_tensor(DType::kFloat32, {4}, 1), random_tensor(DType::kFloat32, {2, 4}, 2)});
  });
  EXPECT_NE(message.find("does not broadcast unidirectionally"), std::string::npos) << message;
}

TEST_P(ElementwiseOnBackend, GradientsRefuseInputsOfDifferentShapes) {
  Tensor dy = random_tensor(DType::kFloat32, {4, 5}, 1), x = random_tensor(DType::kFloat32, {5}, 2);
  std::string message = testing::error_of([&] { testing::run_node_on(GetParam(), "ReluGrad", {dy, x}); });
  EXPECT_NE(message.find("inputs must have the same type"), std::string::npos) << message;
  message = testing::error_of([&] { testing::run_node_on(GetParam(), "EluGrad", {dy, x}); });
  EXPECT_NE(message.find("differ in shape"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Cuda, ElementwiseOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
