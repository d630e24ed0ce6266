// DepthToSpace (DCR and CRD) and SpaceToDepth against ONNX's definitions
// written as reshape, transpose, reshape, for element sizes 1 to 8 bytes;
// round trips; the gradient rules against finite differences; errors for
// bad shapes and attributes; symbolic dims through shape inference.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/type_inference.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::error_of;
using testing::flatten;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;
using testing::unflatten;

// numpy.transpose(values.reshape(sizes), perm).flatten()
std::vector<double> transposed(const std::vector<double>& values, const std::vector<int64_t>& sizes,
                               const std::vector<size_t>& perm) {
  std::vector<int64_t> out_sizes;
  for (size_t axis : perm) out_sizes.push_back(sizes[axis]);
  std::vector<double> out(values.size());
  for (int64_t flat = 0; flat < count_of(out_sizes); ++flat) {
    std::vector<int64_t> out_index = unflatten(flat, out_sizes), in_index(sizes.size());
    for (size_t k = 0; k < perm.size(); ++k) in_index[perm[k]] = out_index[k];
    out[static_cast<size_t>(flat)] = values[static_cast<size_t>(flatten(in_index, sizes))];
  }
  return out;
}

// ONNX's DepthToSpace of x [n, c, h, w] (as flat values).
std::vector<double> depth_to_space(const std::vector<double>& x, const std::vector<int64_t>& sizes, int64_t b, bool crd) {
  const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
  if (crd) return transposed(x, {n, c / (b * b), b, b, h, w}, {0, 1, 4, 2, 5, 3});
  return transposed(x, {n, b, b, c / (b * b), h, w}, {0, 3, 4, 1, 5, 2});
}

// ONNX's SpaceToDepth of x [n, c, h, w].
std::vector<double> space_to_depth(const std::vector<double>& x, const std::vector<int64_t>& sizes, int64_t b) {
  const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
  return transposed(x, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4});
}

const DType kTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8, DType::kInt64, DType::kBool};

TEST(DepthSpaceKernels, DepthToSpaceMatchesOnnxInBothModes) {
  uint32_t seed = 1;
  for (DType dtype : kTypes) {
    for (int64_t b : {1, 2, 3}) {
      for (const char* mode : {"DCR", "CRD"}) {
        const std::vector<int64_t> sizes = {2, 2 * b * b, 3, 2};
        Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), seed++), sizes);
        std::map<std::string, Attribute> attributes = {{"blocksize", Attribute(b)}};
        if (std::string(mode) == "CRD") attributes.emplace("mode", Attribute(mode));
        Tensor y = run_op("DepthToSpace", {x}, attributes)[0];
        ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 2, 3 * b, 2 * b}));
        EXPECT_EQ(to_doubles(y), depth_to_space(to_doubles(x), sizes, b, std::string(mode) == "CRD"))
            << dtype_name(dtype) << " blocksize " << b << " " << mode;
      }
    }
  }
}

TEST(DepthSpaceKernels, SpaceToDepthMatchesOnnxAndInvertsDcr) {
  uint32_t seed = 20;
  for (DType dtype : kTypes) {
    for (int64_t b : {1, 2, 3}) {
      const std::vector<int64_t> sizes = {2, 3, 2 * b, 3 * b};
      Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), seed++), sizes);
      std::map<std::string, Attribute> attributes = {{"blocksize", Attribute(b)}};
      Tensor y = run_op("SpaceToDepth", {x}, attributes)[0];
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 3 * b * b, 2, 3}));
      EXPECT_EQ(to_doubles(y), space_to_depth(to_doubles(x), sizes, b)) << dtype_name(dtype) << " blocksize " << b;
      EXPECT_EQ(to_doubles(run_op("DepthToSpace", {y}, attributes)[0]), to_doubles(x)) << "round trip";
    }
  }
}

TEST(DepthSpaceKernels, BadShapesAndAttributesFail) {
  Tensor x(DType::kFloat32, {1, 8, 2, 4});
  std::map<std::string, Attribute> two = {{"blocksize", Attribute(int64_t{2})}};
  std::string message = error_of("DepthToSpace", {Tensor(DType::kFloat32, {1, 6, 2, 2})}, two);
  EXPECT_NE(message.find("not a multiple of blocksize^2 = 4"), std::string::npos) << message;
  message = error_of("SpaceToDepth", {Tensor(DType::kFloat32, {1, 2, 3, 4})}, two);
  EXPECT_NE(message.find("multiples of blocksize 2"), std::string::npos) << message;
  message = error_of("DepthToSpace", {Tensor(DType::kFloat32, {8, 2, 4})}, two);
  EXPECT_NE(message.find("4-D input"), std::string::npos) << message;
  message = error_of("DepthToSpace", {x}, {{"blocksize", Attribute(int64_t{0})}});
  EXPECT_NE(message.find("blocksize must be at least 1"), std::string::npos) << message;
  message = error_of("DepthToSpace", {x}, {{"blocksize", Attribute(int64_t{2})}, {"mode", Attribute("RDC")}});
  EXPECT_NE(message.find("mode must be DCR or CRD"), std::string::npos) << message;
  EXPECT_THROW(run_op("SpaceToDepth", {x}), Error);  // blocksize is required
}

TEST(DepthSpaceKernels, SymbolicDimsStaySymbolic) {
  Graph graph("depth_space");
  Value* x = graph.add_input("x", TensorType{DType::kFloat32, Shape{Dim::symbol("batch"), 12, Dim::symbol("height"), 5}});
  Node* node = graph.add_node("DepthToSpace", {x}, 1, {{"blocksize", Attribute(int64_t{2})}}, "d2s");
  graph.add_output(node->output(0));
  infer_graph_types(graph, default_op_registry());
  const Shape& shape = node->output(0)->shape();
  ASSERT_EQ(shape.rank(), 4);
  EXPECT_EQ(shape[0], Dim::symbol("batch"));
  EXPECT_EQ(shape[1], Dim(3));
  EXPECT_FALSE(shape[2].is_static());
  EXPECT_EQ(shape[3], Dim(10));
}

TEST(DepthSpaceGradients, AreTheInverseRearrangements) {
  uint32_t seed = 40;
  for (const char* mode : {"DCR", "CRD"}) {
    Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 2 * 8 * 2 * 3, seed++), {2, 8, 2, 3});
    check_gradient("DepthToSpace", {x}, {0}, {{"blocksize", Attribute(int64_t{2})}, {"mode", Attribute(mode)}});
  }
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 2 * 3 * 4 * 6, seed), {2, 3, 4, 6});
  check_gradient("SpaceToDepth", {x}, {0}, {{"blocksize", Attribute(int64_t{2})}});
}

}  // namespace
}  // namespace weir
