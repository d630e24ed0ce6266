// The reductions on each accelerator against the CPU kernels: every Reduce*
// op over every subset of axes of a 3-D tensor (negative axes, keepdims on
// and off, axes as the attribute and as the opset-18 input, no axes with
// and without noop_with_empty_axes), long rows and long columns (the block
// per line, the warp per line, the column blocks, and the chunked
// reductions whose partial results a second kernel combines), a global
// reduction of a million elements, empty inputs (identities, a mean of
// none); SumToShape to every broadcast shape, with its f32 wide output for
// bf16 and f16; BroadcastReduced and ReduceExtremumGrad.
//
// Tolerances: both sides accumulate in f64 (integers in i64) and round once
// at the end, so they differ only by the order of f64 additions: f32
// results agree to an ulp or two (1e-6 relative), f16 and bf16 to one of
// their ulps, f64 to 1e-12; integers, max and min exactly.
#include <string>
#include <vector>

#include "core/shape.h"
#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

class ReduceOnBackend : public testing::OnBackend {};

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};

Tolerance tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return {1e-6, 1e-6};
    case DType::kFloat16: return {1e-3, 1e-3};
    case DType::kBFloat16: return {8e-3, 8e-3};
    case DType::kFloat64: return {1e-12, 1e-12};
    default: return {};
  }
}

struct Op {
  const char* name;
  bool integers;  // registered for i32 and i64 too
  bool exact;     // max and min: no arithmetic
};
const std::vector<Op> kOps = {{"ReduceSum", true, false},       {"ReduceMean", true, false},   {"ReduceMax", true, true},
                              {"ReduceMin", true, true},        {"ReduceProd", true, false},   {"ReduceL1", true, false},
                              {"ReduceL2", false, false},       {"ReduceSumSquare", true, false}, {"ReduceLogSum", false, false},
                              {"ReduceLogSumExp", false, false}};

std::vector<DType> types_of(const Op& op) {
  std::vector<DType> types = kFloating;
  if (op.integers) types.insert(types.end(), {DType::kInt32, DType::kInt64});
  return types;
}

Tolerance tolerance_of(const Op& op, DType dtype) { return op.exact ? Tolerance{} : tolerance(dtype); }

TEST_P(ReduceOnBackend, EveryReductionOverEveryAxisSetMatchesTheCpu) {
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {-3, -2}, {1, 2}, {0, 1, 2}};
  uint32_t seed = 1;
  for (const Op& op : kOps) {
    for (DType dtype : types_of(op)) {
      // Positive values for LogSum (a log of a negative sum is NaN on both sides, which would test little).
      const bool positive = std::string(op.name) == "ReduceLogSum";
      Tensor x = testing::make_tensor(dtype, testing::random_values(dtype, 2 * 5 * 7, seed++, positive ? 0.1 : -3.0, 3.0), {2, 5, 7});
      for (const std::vector<int64_t>& axes : axis_sets) {
        for (int64_t keepdims : {0, 1}) {
          std::map<std::string, Attribute> attributes = {{"keepdims", Attribute(keepdims)}};
          if (!axes.empty()) attributes["axes"] = Attribute(axes);
          const std::string label = x.type_string() + " axes " + format_sizes(axes) + " keepdims " + std::to_string(keepdims);
          expect_same_as_cpu(GetParam(), op.name, {x}, attributes, tolerance_of(op, dtype), label);
        }
        // Axes as an input (opset 18); none with noop_with_empty_axes: the input itself.
        expect_same_as_cpu(GetParam(), op.name, {x, Tensor::from_vector<int64_t>(axes, {static_cast<int64_t>(axes.size())})},
                           {{"noop_with_empty_axes", Attribute(1)}}, tolerance_of(op, dtype),
                           x.type_string() + " axes input " + format_sizes(axes));
      }
    }
  }
}

TEST_P(ReduceOnBackend, LongLinesColumnsAndGlobalReductionsMatchTheCpu) {
  struct Case {
    std::vector<int64_t> sizes, axes;
  };
  const std::vector<Case> cases = {
      {{3, 5000}, {1}},              // a block per line, chunked (few lines)
      {{2000, 100}, {1}},            // a warp per line
      {{4000, 300}, {-1}},           // a block per line, many lines
      {{5000, 3}, {0}},              // columns, chunked
      {{300, 2000}, {0}},            // columns, many
      {{1000000}, {}},               // a global reduction: chunks and a second pass
      {{64, 64, 64}, {0, 2}},        // kept axis between reduced ones
      {{8, 49, 512}, {1}},           // a global pool over channels-last data
      {{2, 3, 4, 5, 6}, {0, 2, 4}},  // alternating axes
  };
  uint32_t seed = 100;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceLogSumExp", "ReduceSumSquare", "ReduceL1"}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32}) {
      if (dtype == DType::kInt32 && std::string(op) == "ReduceLogSumExp") continue;
      const bool exact = std::string(op) == "ReduceMax" || std::string(op) == "ReduceMin";
      for (const Case& c : cases) {
        Tensor x = testing::random_tensor(dtype, c.sizes, seed++);
        std::map<std::string, Attribute> attributes = {{"keepdims", Attribute(0)}};
        if (!c.axes.empty()) attributes["axes"] = Attribute(c.axes);
        expect_same_as_cpu(GetParam(), op, {x}, attributes, exact ? Tolerance{} : tolerance(dtype),
                           x.type_string() + " axes " + format_sizes(c.axes));
      }
    }
  }
  // Products of integers wrap, in any order alike.
  expect_same_as_cpu(GetParam(), "ReduceProd", {testing::random_tensor(DType::kInt64, {7, 3000}, 7)}, {{"axes", Attribute(std::vector<int64_t>{1})}},
                     Tolerance{}, "i64 wrapping product");
}

TEST_P(ReduceOnBackend, EmptyInputsGiveTheIdentities) {
  uint32_t seed = 200;
  for (const Op& op : kOps) {
    for (DType dtype : types_of(op)) {
      Tensor x = testing::random_tensor(dtype, {0, 5}, seed++);
      expect_same_as_cpu(GetParam(), op.name, {x}, {{"axes", Attribute(std::vector<int64_t>{0})}}, tolerance_of(op, dtype),
                         x.type_string() + " over the empty axis");
      expect_same_as_cpu(GetParam(), op.name, {x}, {{"axes", Attribute(std::vector<int64_t>{1})}}, tolerance_of(op, dtype),
                         x.type_string() + " no outputs");
      expect_same_as_cpu(GetParam(), op.name, {x}, {}, tolerance_of(op, dtype), x.type_string() + " all axes");
    }
  }
}

TEST_P(ReduceOnBackend, SumToShapeMatchesTheCpu) {
  uint32_t seed = 300;
  const std::vector<std::vector<int64_t>> targets = {{3, 1}, {5}, {1}, {4, 1, 5}, {}, {4, 3, 5}, {1, 3, 5}, {4, 3, 1}};
  for (DType dtype : kFloating) {
    Tensor x = testing::random_tensor(dtype, {4, 3, 5}, seed++);
    for (const std::vector<int64_t>& target : targets) {
      Tensor reference(DType::kFloat32, target);
      expect_same_as_cpu(GetParam(), "SumToShape", {x, reference}, {}, tolerance(dtype), x.type_string() + " to " + format_sizes(target));
      if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
        expect_same_as_cpu(GetParam(), "SumToShape", {x, reference},
                           {{"output_dtype", Attribute(static_cast<int64_t>(DType::kFloat32))}}, tolerance(DType::kFloat32),
                           x.type_string() + " to f32 " + format_sizes(target));
      }
    }
  }
  // A bias gradient: a large batch summed to one row.
  Tensor dy = testing::random_tensor(DType::kFloat32, {4096, 500}, seed++);
  expect_same_as_cpu(GetParam(), "SumToShape", {dy, Tensor(DType::kFloat32, {500})}, {}, tolerance(DType::kFloat32), "bias");
}

TEST_P(ReduceOnBackend, BroadcastReducedAndReduceExtremumGradMatchTheCpu) {
  uint32_t seed = 400;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    // Small integers: ties in max, which every tied element's gradient gets.
    Tensor x = testing::make_tensor(dtype, testing::random_values(DType::kInt8, 3 * 4 * 5, seed++), {3, 4, 5});
    for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{1}, {0, 2}, {-1}, {}}) {
      for (int64_t keepdims : {0, 1}) {
        std::map<std::string, Attribute> attributes = {{"keepdims", Attribute(keepdims)}};
        if (!axes.empty()) attributes["axes"] = Attribute(axes);
        Tensor y = testing::run_node_on(Device::cpu(), "ReduceMax", {x}, attributes)[0];
        Tensor dy = testing::random_tensor(dtype, y.sizes(), seed++);
        const std::string label = x.type_string() + " axes " + format_sizes(axes) + " keepdims " + std::to_string(keepdims);
        expect_same_as_cpu(GetParam(), "ReduceExtremumGrad", {dy, x, y}, attributes, Tolerance{}, label);
        expect_same_as_cpu(GetParam(), "BroadcastReduced", {dy, x}, attributes, Tolerance{}, label);
        attributes["mean"] = Attribute(1);
        expect_same_as_cpu(GetParam(), "BroadcastReduced", {dy, x}, attributes, Tolerance{}, label + " mean");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, ReduceOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
