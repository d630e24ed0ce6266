// The shape ops on each accelerator against the CPU kernels, bit for bit:
// Transpose over every permutation of ranks 0 to 4, the tiled 2-D and
// batched cases (NCHW <-> NHWC, square and ragged tiles) and the plain
// strided one, for elements of 1, 2, 4 and 8 bytes; Reshape, Squeeze and
// Unsqueeze with their shape and axes inputs (read from device memory),
// negative axes, 0 and -1 in shapes, and their errors; Shape (with start
// and end) and Size.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/shape.h"
#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

class TensorOpsOnBackend : public testing::OnBackend {};

// One dtype of each element size, and bool.
const std::vector<DType> kByteSizes = {DType::kUInt8, DType::kFloat16, DType::kFloat32, DType::kInt64, DType::kBool,
                                       DType::kFloat64};

Tensor i64s(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())});
}

TEST_P(TensorOpsOnBackend, TransposeMatchesTheCpuForEveryPermutation) {
  uint32_t seed = 1;
  for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{}, {5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 5}, {0, 3, 2}}) {
    std::vector<int64_t> perm(sizes.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      for (DType dtype : kByteSizes) {
        Tensor x = testing::random_tensor(dtype, sizes, seed++);
        expect_same_as_cpu(GetParam(), "Transpose", {x}, {{"perm", Attribute(perm)}}, Tolerance{},
                           x.type_string() + " perm " + format_sizes(perm));
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // No perm: the axes reversed.
  expect_same_as_cpu(GetParam(), "Transpose", {testing::random_tensor(DType::kFloat32, {2, 3, 4}, 99)}, {}, Tolerance{});
}

TEST_P(TensorOpsOnBackend, TransposeMatchesTheCpuOnTiledAndLargeShapes) {
  struct Case {
    std::vector<int64_t> sizes, perm;
  };
  const std::vector<Case> cases = {
      {{64, 96}, {1, 0}},                 // whole tiles
      {{67, 45}, {1, 0}},                 // ragged tiles
      {{3, 40, 33}, {0, 2, 1}},           // a batch of them
      {{2, 33, 7, 9}, {0, 2, 3, 1}},      // NCHW -> NHWC: C = 33 rows of H*W = 63
      {{2, 7, 9, 33}, {0, 3, 1, 2}},      // NHWC -> NCHW
      {{2, 3, 50, 60}, {0, 1, 3, 2}},     // the last two axes of a 4-D tensor
      {{1, 224, 224, 3}, {0, 3, 1, 2}},   // an image's 3 channels: too short for tiles
      {{4, 5, 6, 7, 8, 3}, {5, 0, 4, 1, 3, 2}},
      {{300, 1, 200}, {2, 1, 0}},         // a size-1 axis between the swapped ones
      {{5000, 700}, {1, 0}},              // more tiles than one grid
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    for (DType dtype : kByteSizes) {
      Tensor x = testing::random_tensor(dtype, c.sizes, seed++);
      expect_same_as_cpu(GetParam(), "Transpose", {x}, {{"perm", Attribute(c.perm)}}, Tolerance{},
                         x.type_string() + " perm " + format_sizes(c.perm));
    }
  }
}

TEST_P(TensorOpsOnBackend, ReshapeSqueezeUnsqueezeReadTheirShapeInputsFromTheDevice) {
  uint32_t seed = 200;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kBool}) {
    Tensor x = testing::random_tensor(dtype, {2, 3, 4}, seed++);
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{24}, {4, -1}, {0, 12}, {-1, 3, 0}, {2, 3, 2, 2}, {1, 24, 1}}) {
      expect_same_as_cpu(GetParam(), "Reshape", {x, i64s(shape)}, {}, Tolerance{}, x.type_string() + " to " + format_sizes(shape));
    }
    Tensor empty = testing::random_tensor(dtype, {0, 3}, seed++);
    expect_same_as_cpu(GetParam(), "Reshape", {empty, i64s({3, 0})}, {{"allowzero", Attribute(1)}}, Tolerance{}, "allowzero");

    Tensor ones = testing::random_tensor(dtype, {1, 3, 1, 4, 1}, seed++);
    expect_same_as_cpu(GetParam(), "Squeeze", {ones}, {}, Tolerance{}, "all size-1 axes");
    for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{0}, {-1}, {0, 2}, {-5, -3, 4}}) {
      expect_same_as_cpu(GetParam(), "Squeeze", {ones, i64s(axes)}, {}, Tolerance{}, "axes input " + format_sizes(axes));
      expect_same_as_cpu(GetParam(), "Squeeze", {ones}, {{"axes", Attribute(axes)}}, Tolerance{}, "axes attribute " + format_sizes(axes));
    }
    for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{0}, {-1}, {1, 3}, {-5, 2}, {4, 2}}) {
      expect_same_as_cpu(GetParam(), "Unsqueeze", {x, i64s(axes)}, {}, Tolerance{}, "axes " + format_sizes(axes));
    }
  }
}

// The CPU kernel decides the view on the GPU too, so its errors are the CPU's.
TEST_P(TensorOpsOnBackend, ReshapeAndSqueezeFailAsOnTheCpu) {
  Tensor x = testing::random_tensor(DType::kFloat32, {2, 3, 4}, 400);
  struct Case {
    std::string op;
    std::vector<Tensor> inputs;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"Reshape", {x, i64s({5, -1})}, "cannot infer the -1"},
      {"Reshape", {x, i64s({-1, -1})}, "more than one -1"},
      {"Reshape", {x, i64s({7, 4})}, "cannot reshape"},
      {"Squeeze", {x, i64s({1})}, "has size 3, not 1"},
      {"Unsqueeze", {x, i64s({0, 0})}, "listed twice"},
  };
  for (const Case& c : cases) {
    const std::string on_cpu = testing::error_of([&] { testing::run_node_on(Device::cpu(), c.op, c.inputs); });
    const std::string on_device = testing::error_of([&] { testing::run_node_on(GetParam(), c.op, c.inputs); });
    EXPECT_NE(on_device.find(c.expected), std::string::npos) << c.op << ": " << on_device;
    EXPECT_NE(on_cpu.find(c.expected), std::string::npos) << c.op << ": " << on_cpu;
  }
}

TEST_P(TensorOpsOnBackend, ShapeAndSizeWriteI64sToTheDevice) {
  uint32_t seed = 500;
  // 19 axes: more values than one launch of the writing kernel takes (16).
  for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{
           {}, {7}, {2, 3, 4}, {0, 5}, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 2}}) {
    Tensor x = testing::random_tensor(DType::kUInt8, sizes, seed++);
    expect_same_as_cpu(GetParam(), "Shape", {x}, {}, Tolerance{}, x.type_string());
    expect_same_as_cpu(GetParam(), "Size", {x}, {}, Tolerance{}, x.type_string());
    for (int64_t start : {-2, 0, 1}) {
      for (int64_t end : {-1, 2, 100}) {
        expect_same_as_cpu(GetParam(), "Shape", {x}, {{"start", Attribute(start)}, {"end", Attribute(end)}}, Tolerance{},
                           x.type_string() + " start " + std::to_string(start) + " end " + std::to_string(end));
      }
    }
  }
}

// Shape inputs that are graph constants: the kernels read the constant's
// host tensor (cuda::host_input) instead of copying the device's back.
TEST_P(TensorOpsOnBackend, ConstantShapeInputsMatchTheCpu) {
  Graph graph("constant_shape_inputs");
  Value* x = graph.add_input("x", {DType::kFloat32, Shape::from_sizes({2, 3, 4})});
  Node* reshape = graph.add_node("Reshape", {x, graph.add_constant("shape", i64s({4, -1}))}, 1, {}, "reshape");
  Node* slice = graph.add_node("Slice",
                               {reshape->output(0), graph.add_constant("starts", i64s({1})), graph.add_constant("ends", i64s({-1})),
                                graph.add_constant("axes", i64s({-1}))},
                               1, {}, "slice");
  Node* unsqueeze = graph.add_node("Unsqueeze", {slice->output(0), graph.add_constant("where", i64s({0}))}, 1, {}, "unsqueeze");
  Node* sum = graph.add_node("ReduceSum", {unsqueeze->output(0), graph.add_constant("sum_axes", i64s({-1}))}, 1,
                             {{"keepdims", Attribute(0)}}, "sum");
  graph.add_output(sum->output(0));
  const std::map<std::string, Tensor> feeds = {{"x", testing::random_tensor(DType::kFloat32, {2, 3, 4}, 600)}};
  auto run_on = [&](const Device& device) {
    CompileOptions options;
    options.default_device = device;
    Session session(compile(graph, options));
    return session.run(feeds);
  };
  std::vector<Tensor> want = run_on(Device::cpu());
  std::vector<Tensor> got = run_on(GetParam());
  ASSERT_EQ(got.size(), 1u);
  testing::expect_close(got[0], want[0], Tolerance{1e-6, 1e-6}, "Reshape -> Slice -> Unsqueeze -> ReduceSum");
}

INSTANTIATE_TEST_SUITE_P(Cuda, TensorOpsOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
