// ONNX export: exported models pass ONNX's own checker, re-import into the
// same graph semantics (the outputs match bit for bit), and graphs with
// Weir-only ops are refused with one error listing them.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "onnx/checker.h"
#include "ops/graph_evaluator.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using testing::random_tensor;

// x[batch,4] -> MatMul -> Add -> Relu -> ReduceSum(axes=[1], keepdims) ->
// Squeeze(axes=[1]) and Softmax(x W + b) as a second output.
Model small_model() {
  Model model;
  model.graph = std::make_unique<Graph>("small");
  Graph& g = *model.graph;
  Value* x = g.add_input("x", TensorType{DType::kFloat32, Shape{Dim::symbol("batch"), 4}});
  Value* w = g.add_constant("w", random_tensor(DType::kFloat32, {4, 3}, 1));
  Value* b = g.add_persistent("b", TensorType{DType::kFloat32, Shape{3}}, PersistentRole::kParameter,
                              random_tensor(DType::kFloat32, {3}, 2));
  Value* h = g.add_node("MatMul", {x, w}, 1, {}, "matmul")->output(0);
  Value* a = g.add_node("Add", {h, b}, 1, {}, "add")->output(0);
  Value* r = g.add_node("Relu", {a}, 1, {}, "relu")->output(0);
  Value* s = g.add_node("ReduceSum", {r}, 1, {{"axes", Attribute(std::vector<int64_t>{1})}}, "sum")->output(0);
  Value* q = g.add_node("Squeeze", {s}, 1, {{"axes", Attribute(std::vector<int64_t>{1})}}, "squeeze")->output(0);
  Value* p = g.add_node("Softmax", {a}, 1, {{"axis", Attribute(int64_t{-1})}}, "softmax")->output(0);
  g.add_output(q);
  g.add_output(p);
  infer_graph_types(g, default_op_registry());
  return model;
}

TEST(OnnxExport, PassesTheOnnxCheckerAndReimportsToTheSameResults) {
  Model model = small_model();
  onnx::ModelProto proto = to_onnx_model(model);
  EXPECT_NO_THROW(onnx::checker::check_model(proto));
  EXPECT_EQ(proto.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");

  const char* root = std::getenv("WEIR_TEST_TMPDIR");
  fs::path dir = fs::path(root != nullptr ? root : fs::temp_directory_path().string());
  fs::create_directories(dir);
  fs::path path = dir / "small_export.onnx";
  export_onnx_model(model, path.string());
  Model reimported = import_onnx_model(path.string());

  Tensor x = random_tensor(DType::kFloat32, {5, 4}, 3);
  std::vector<Tensor> before = evaluate_graph(*model.graph, {{"x", x}});
  std::vector<Tensor> after = evaluate_graph(*reimported.graph, {{"x", x}});
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i].bitwise_equal(after[i])) << "output " << i;
}

TEST(OnnxExport, RefusesWeirOnlyOpsInOneError) {
  Model model = small_model();
  Graph& g = *model.graph;
  Value* y = g.outputs()[1];
  Value* grad = g.add_node("ReluGrad", {y, y}, 1, {}, "relu_grad_1")->output(0);
  Value* grad2 = g.add_node("ReluGrad", {grad, y}, 1, {}, "relu_grad_2")->output(0);
  g.add_output(g.add_node("SumToShape", {grad2, y}, 1, {}, "sum_to_shape")->output(0));
  try {
    to_onnx_model(model);
    FAIL() << "exported Weir-only ops";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
    for (const char* part : {"ReluGrad: no ONNX op; nodes 'relu_grad_1', 'relu_grad_2'", "SumToShape: no ONNX op"}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " missing from: " << message;
    }
  }
}

// Every node-test model Weir imports, exported and imported again, gives
// the same outputs on the test's own inputs.
TEST(OnnxExport, ConformanceModelsRoundTrip) {
  fs::path root = "/usr/share/libonnx-testdata/data/node";
  ASSERT_TRUE(fs::is_directory(root)) << root << " is missing: scripts/setup.sh installs libonnx-testdata";
  int round_tripped = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    Model model;
    try {
      model = import_onnx_model((entry.path() / "model.onnx").string());
    } catch (const Error&) {
      continue;  // not importable: the conformance test reports why
    }
    SCOPED_TRACE(entry.path().filename().string());
    onnx::ModelProto proto = to_onnx_model(model);
    ASSERT_NO_THROW(onnx::checker::check_model(proto));
    Model again = import_onnx_model_from_bytes(proto.SerializeAsString(), entry.path().filename().string());
    std::map<std::string, Tensor> feeds;
    std::vector<Tensor> before, after;
    try {
      for (const Value* input : model.graph->inputs()) {
        feeds[input->name()] = read_onnx_tensor_file((entry.path() / "test_data_set_0" /
                                                      ("input_" + std::to_string(feeds.size()) + ".pb")).string());
      }
      before = evaluate_graph(*model.graph, feeds);
    } catch (const Error&) {
      continue;  // unreadable data, or fails at run time: the conformance test reports it
    }
    after = evaluate_graph(*again.graph, feeds);
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) {
      if (!before[i].bitwise_equal(after[i])) ADD_FAILURE() << "output " << i << " changed in the round trip";
    }
    ++round_tripped;
  }
  std::printf("%d node-test models round-tripped through export\n", round_tripped);
  EXPECT_GT(round_tripped, 650);
}

}  // namespace
}  // namespace weir
