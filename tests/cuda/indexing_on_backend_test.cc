// The indexing ops on each accelerator against the CPU kernels, bit for bit
// (the gradients too: GatherGrad and TileGrad add in the CPU's order and
// element type): Concat, ConcatGrad and Split along every axis with empty
// pieces and rows that move as wide words or as single elements; Slice and
// SliceGrad with negative starts and steps, clamped and sentinel bounds,
// axes in any order; Gather with i32 and i64 indices (negative, repeated,
// scalar, 2-D); GatherGrad with repeated indices, and sizes beyond one
// radix-sort tile; Expand, Tile and TileGrad; ConstantOfShape and ZerosLike.
// Element sizes 1, 2, 4 and 8 bytes and bool throughout.
#include <limits>
#include <string>
#include <vector>

#include "core/shape.h"
#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::error_on;
using testing::expect_outputs_same_as_cpu;
using testing::expect_same_as_cpu;
using testing::Tolerance;
using testing::without_location;

class IndexingOnBackend : public testing::OnBackend {};

const std::vector<DType> kByteSizes = {DType::kUInt8, DType::kFloat16, DType::kFloat32, DType::kInt64, DType::kBool};
// The gradients add: numeric types.
const std::vector<DType> kAddTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                                      DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kInt64};

Tensor i64s(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())});
}

TEST_P(IndexingOnBackend, ConcatConcatGradAndSplitMatchTheCpu) {
  uint32_t seed = 1;
  for (DType dtype : kByteSizes) {
    // Along axis 1 of [2, *, 4] (rows of 4 elements: wide words for 4- and 8-byte types) and
    // of [2, *, 3] (odd rows: element by element), with an empty piece.
    for (int64_t inner : {4, 3}) {
      std::vector<Tensor> pieces = {testing::random_tensor(dtype, {2, 3, inner}, seed++),
                                    testing::random_tensor(dtype, {2, 5, inner}, seed++),
                                    testing::random_tensor(dtype, {2, 0, inner}, seed++),
                                    testing::random_tensor(dtype, {2, 1, inner}, seed++)};
      for (int64_t axis : {1, -2}) {
        expect_same_as_cpu(GetParam(), "Concat", pieces, {{"axis", Attribute(axis)}}, Tolerance{},
                           "axis " + std::to_string(axis) + " inner " + std::to_string(inner));
      }
      Tensor dy = testing::random_tensor(dtype, {2, 9, inner}, seed++);
      std::vector<Tensor> grad_inputs = {dy};
      grad_inputs.insert(grad_inputs.end(), pieces.begin(), pieces.end());
      expect_outputs_same_as_cpu(GetParam(), "ConcatGrad", grad_inputs, {{"axis", Attribute(1)}},
                                 std::vector<Tolerance>(4), "inner " + std::to_string(inner));
      expect_outputs_same_as_cpu(GetParam(), "Split", {dy, i64s({3, 5, 0, 1})}, {{"axis", Attribute(1)}},
                                 std::vector<Tolerance>(4), "split input, inner " + std::to_string(inner));
    }
    // Along the first and last axes; Split into equal parts (the last one short).
    Tensor x = testing::random_tensor(dtype, {7, 6}, seed++);
    expect_same_as_cpu(GetParam(), "Concat", {x, x, testing::random_tensor(dtype, {2, 6}, seed++)}, {{"axis", Attribute(0)}},
                       Tolerance{}, "axis 0");
    expect_same_as_cpu(GetParam(), "Concat", {x, testing::random_tensor(dtype, {7, 1}, seed++)}, {{"axis", Attribute(-1)}},
                       Tolerance{}, "axis -1");
    expect_outputs_same_as_cpu(GetParam(), "Split", {x}, {}, std::vector<Tolerance>(3), "equal parts of 7");
    expect_outputs_same_as_cpu(GetParam(), "Split", {x}, {{"axis", Attribute(-1)}}, std::vector<Tolerance>(4),
                               "equal parts of 6 in 4");
    expect_outputs_same_as_cpu(GetParam(), "Split", {x, i64s({1, 5})}, {{"axis", Attribute(1)}}, std::vector<Tolerance>(2),
                               "split of 6 into 1 and 5");
  }
  // Large: a channel concat of channels-last activations.
  Tensor a = testing::random_tensor(DType::kFloat32, {8, 56, 56, 64}, seed++);
  Tensor b = testing::random_tensor(DType::kFloat32, {8, 56, 56, 32}, seed++);
  expect_same_as_cpu(GetParam(), "Concat", {a, b}, {{"axis", Attribute(3)}}, Tolerance{}, "channels-last");
}

TEST_P(IndexingOnBackend, SliceAndSliceGradMatchTheCpu) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;  // empty axes / steps: the input left out
  };
  const std::vector<Case> cases = {
      {{1}, {3}, {}, {}},
      {{0, 1, 1}, {2, 3, 7}, {}, {}},
      {{-1}, {kMin}, {1}, {-1}},              // axis 1 reversed
      {{1, -2}, {kMax, 0}, {2, 0}, {2, -1}},  // axes out of order, negative step
      {{5}, {1}, {-1}, {-2}},
      {{10}, {20}, {0}, {1}},                 // clamped: empty
      {{0, 0}, {kMax, kMax}, {-1, -3}, {3, 1}},
      {{2}, {2}, {1}, {1}},                   // empty
  };
  uint32_t seed = 100;
  for (DType dtype : kByteSizes) {
    Tensor x = testing::random_tensor(dtype, {3, 4, 7}, seed++);
    for (const Case& c : cases) {
      std::vector<Tensor> inputs = {x, i64s(c.starts), i64s(c.ends), Tensor(), Tensor()};
      if (!c.axes.empty()) inputs[3] = i64s(c.axes);
      if (!c.steps.empty()) inputs[4] = i64s(c.steps);
      const std::string label = x.type_string() + " starts " + format_sizes(c.starts) + " ends " + format_sizes(c.ends);
      expect_same_as_cpu(GetParam(), "Slice", inputs, {}, Tolerance{}, label);
      if (dtype == DType::kBool) continue;  // SliceGrad is numeric only
      Tensor y = testing::run_node_on(Device::cpu(), "Slice", inputs)[0];
      std::vector<Tensor> grad_inputs = {testing::random_tensor(dtype, y.sizes(), seed++)};
      grad_inputs.insert(grad_inputs.end(), inputs.begin(), inputs.end());
      expect_same_as_cpu(GetParam(), "SliceGrad", grad_inputs, {}, Tolerance{}, label);
    }
  }
  // i32 parameters, a large input (32-bit offsets), and a long row.
  Tensor big = testing::random_tensor(DType::kFloat32, {64, 128, 130}, 7);
  expect_same_as_cpu(GetParam(), "Slice",
                     {big, Tensor::from_vector<int32_t>({1, 2}, {2}), Tensor::from_vector<int32_t>({-1, 129}, {2}),
                      Tensor::from_vector<int32_t>({1, 2}, {2}), Tensor()},
                     {}, Tolerance{}, "i32 parameters");
}

TEST_P(IndexingOnBackend, GatherMatchesTheCpu) {
  uint32_t seed = 200;
  const Tensor i64_indices = Tensor::from_vector<int64_t>({0, 4, -1, 2, 2, -5}, {2, 3});
  const Tensor i32_indices = Tensor::from_vector<int32_t>({3, -2, 0, 1}, {4});
  const Tensor scalar_index = Tensor::scalar<int64_t>(-2);
  for (DType dtype : kByteSizes) {
    Tensor data = testing::random_tensor(dtype, {5, 6, 5}, seed++);
    for (int64_t axis : {0, 1, -1}) {
      for (const Tensor& indices : {i64_indices, i32_indices, scalar_index}) {
        expect_same_as_cpu(GetParam(), "Gather", {data, indices}, {{"axis", Attribute(axis)}}, Tolerance{},
                           data.type_string() + " axis " + std::to_string(axis) + " indices " + indices.type_string());
      }
    }
    expect_same_as_cpu(GetParam(), "Gather", {data, Tensor(DType::kInt64, {0})}, {}, Tolerance{}, "no indices");
  }
  // An embedding lookup: rows of 256 f32 (16-byte words), many indices.
  Tensor table = testing::random_tensor(DType::kFloat32, {1000, 256}, seed++);
  std::vector<int64_t> tokens(4096);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>((i * 7919) % 1000);
  expect_same_as_cpu(GetParam(), "Gather", {table, Tensor::from_vector<int64_t>(tokens, {8, 512})}, {}, Tolerance{}, "embedding");
}

// An index out of range fails the run with the CPU's message, naming the
// first such index, though the step ran ahead and its check came after the
// device work.
TEST_P(IndexingOnBackend, GatherFailsOnAnIndexOutOfRangeAsTheCpu) {
  Tensor data = testing::random_tensor(DType::kFloat32, {4, 8}, 210);
  for (const Tensor& indices : {Tensor::from_vector<int64_t>({1, 7, -9, 4, 2, 5}, {2, 3}),
                                Tensor::from_vector<int32_t>({0, 3, 5, -5, 1, 6}, {6})}) {
    for (int64_t axis : {0, 1}) {
      if (axis == 1 && indices.dtype() == DType::kInt32) continue;
      const std::string cpu = without_location(error_on(Device::cpu(), "Gather", {data, indices}, {{"axis", Attribute(axis)}}));
      ASSERT_NE(cpu.find("is out of range"), std::string::npos) << cpu;
      EXPECT_EQ(without_location(error_on(GetParam(), "Gather", {data, indices}, {{"axis", Attribute(axis)}})), cpu)
          << indices.type_string() << " axis " << axis;
    }
  }
}

TEST_P(IndexingOnBackend, GatherGradAddsRepeatedIndicesInTheCpusOrder) {
  uint32_t seed = 300;
  // Repeats, negatives naming the same rows as positives, a row never named.
  const Tensor indices = Tensor::from_vector<int64_t>({1, 3, -4, 1, 0, -1, 1, 3}, {2, 4});
  for (DType dtype : kAddTypes) {
    for (int64_t axis : {0, 1, -1}) {
      std::vector<int64_t> data_sizes = {4, 4, 4};
      std::vector<int64_t> dy_sizes = {4, 4, 4};
      const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      dy_sizes.erase(dy_sizes.begin() + static_cast<int64_t>(a));
      dy_sizes.insert(dy_sizes.begin() + static_cast<int64_t>(a), {2, 4});
      Tensor data = testing::random_tensor(dtype, data_sizes, seed++);
      Tensor dy = testing::random_tensor(dtype, dy_sizes, seed++);
      expect_same_as_cpu(GetParam(), "GatherGrad", {dy, data, indices}, {{"axis", Attribute(axis)}}, Tolerance{},
                         dy.type_string() + " axis " + std::to_string(axis));
    }
  }
  // Thousands of indices into a large table (the sort's several passes and
  // tiles), long runs of one index, i32 indices.
  std::vector<int32_t> tokens(20000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i % 3 == 0 ? 7 : (i * 7919) % 30000);
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Tensor table = testing::random_tensor(dtype, {30000, 16}, seed++);
    Tensor dy = testing::random_tensor(dtype, {20000, 16}, seed++);
    expect_same_as_cpu(GetParam(), "GatherGrad", {dy, table, Tensor::from_vector<int32_t>(tokens, {20000})}, {}, Tolerance{},
                       "embedding gradient " + std::string(dtype_name(dtype)));
  }
}

TEST_P(IndexingOnBackend, ExpandTileAndTileGradMatchTheCpu) {
  uint32_t seed = 400;
  struct ExpandCase {
    std::vector<int64_t> sizes, shape;
  };
  const std::vector<ExpandCase> expands = {
      {{3, 1}, {2, 3, 4}}, {{1}, {5}}, {{2, 1, 4}, {3, 1}}, {{}, {2, 2}}, {{4}, {3, 0, 4}}, {{1, 1, 5}, {1, 300, 5}}};
  for (DType dtype : kByteSizes) {
    for (const ExpandCase& c : expands) {
      Tensor x = testing::random_tensor(dtype, c.sizes, seed++);
      expect_same_as_cpu(GetParam(), "Expand", {x, i64s(c.shape)}, {}, Tolerance{}, x.type_string() + " to " + format_sizes(c.shape));
    }
  }
  struct TileCase {
    std::vector<int64_t> sizes, repeats;
  };
  const std::vector<TileCase> tiles = {{{2, 3}, {2, 3}}, {{2, 1, 3}, {1, 4, 2}}, {{5}, {1}}, {{2, 3}, {0, 2}}, {{3, 8}, {5, 1}}};
  for (const TileCase& c : tiles) {
    for (DType dtype : kByteSizes) {
      Tensor x = testing::random_tensor(dtype, c.sizes, seed++);
      expect_same_as_cpu(GetParam(), "Tile", {x, i64s(c.repeats)}, {}, Tolerance{}, x.type_string() + " repeats " + format_sizes(c.repeats));
    }
    for (DType dtype : kAddTypes) {
      Tensor x = testing::random_tensor(dtype, c.sizes, seed++);
      std::vector<int64_t> tiled = c.sizes;
      for (size_t a = 0; a < tiled.size(); ++a) tiled[a] *= c.repeats[a];
      expect_same_as_cpu(GetParam(), "TileGrad", {testing::random_tensor(dtype, tiled, seed++), x}, {}, Tolerance{},
                         x.type_string() + " repeats " + format_sizes(c.repeats));
    }
  }
}

TEST_P(IndexingOnBackend, ConstantOfShapeAndZerosLikeMatchTheCpu) {
  const std::vector<Tensor> values = {Tensor::scalar<float>(2.5f), Tensor::scalar<int64_t>(-7), Tensor::scalar<uint8_t>(200),
                                      Tensor::scalar<bool>(true), Tensor::scalar<double>(-1e300),
                                      testing::make_tensor(DType::kFloat16, {1.5}, {1})};
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{2, 3}, {0}, {}, {1000, 70}}) {
    expect_same_as_cpu(GetParam(), "ConstantOfShape", {i64s(shape)}, {}, Tolerance{}, "default value " + format_sizes(shape));
    for (const Tensor& value : values) {
      expect_same_as_cpu(GetParam(), "ConstantOfShape", {i64s(shape)}, {{"value", Attribute(value)}}, Tolerance{},
                         value.type_string() + " " + format_sizes(shape));
    }
  }
  uint32_t seed = 500;
  for (DType dtype : kByteSizes) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{3, 5}, {0}, {}}) {
      // Random (nonzero) inputs: zeros must come from the kernel, not the input.
      expect_same_as_cpu(GetParam(), "ZerosLike", {testing::random_tensor(dtype, sizes, seed++)}, {}, Tolerance{}, format_sizes(sizes));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, IndexingOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
