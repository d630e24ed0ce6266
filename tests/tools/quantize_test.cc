// Static post-training quantization (tools/graph-runner/model_quantization.h
// and `graph-runner quantize`): a zoo ResNet becomes a QDQ model whose convs
// qdq_fusion turns into int8 nodes, whose logits stay close to the f32
// model's on inputs it was not calibrated on; percentile ranges clip an
// outlier that min-max keeps; bad calibration files and models without a
// conv or matmul are clean errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "core/model_io.h"
#include "core/type_inference.h"
#include "frontend/data/npy.h"
#include "models/zoo.h"
#include "ops/graph_evaluator.h"
#include "passes/pass_manager.h"
#include "tests/test_util.h"
#include "tests/tools/process_util.h"
#include "tools/graph-runner/model_quantization.h"

namespace weir {
namespace {

Tensor uniform_images(int64_t n, uint64_t seed) {
  Tensor t(DType::kFloat32, {n, 1, 28, 28});
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = unit(rng);
  return t;
}

// A small untrained zoo model on 28x28 images, batch symbolic, saved as .weir.
std::filesystem::path save_zoo_model(const testing::ScratchDir& dir, const std::string& name = "resnet18",
                                     double input_std = 0.3530) {
  models::ZooOptions options;
  options.resnet_width = 8;
  options.input_std = input_std;
  models::ClassifierGraph net = models::build_classifier(name, /*batch=*/0, /*training=*/false, options);
  Model model;
  model.graph = std::move(net.graph);
  std::filesystem::path path = dir / (name + ".weir");
  save_model(model, path);
  return path;
}

Tensor row(const Tensor& batch, int64_t i) {
  std::vector<int64_t> sizes = batch.sizes();
  sizes[0] = 1;
  Tensor out(batch.dtype(), sizes);
  std::copy_n(batch.data<float>() + i * out.num_elements(), out.num_elements(), out.data<float>());
  return out;
}

int64_t argmax(const Tensor& logits) {
  const float* p = logits.data<float>();
  return std::max_element(p, p + logits.num_elements()) - p;
}

double relative_l2(const Tensor& reference, const Tensor& other) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < reference.num_elements(); ++i) {
    const double r = reference.data<float>()[i], o = other.data<float>()[i];
    diff += (r - o) * (r - o);
    norm += r * r;
  }
  return std::sqrt(diff / norm);
}

size_t count_ops(const Graph& graph, const std::string& op) {
  size_t n = 0;
  for (const Node* node : graph.nodes()) n += node->op_type() == op;
  return n;
}

// ResNet-18 (Conv, Conv+Relu, residual Adds) and MobileNetV2 (ReLU6 as
// Clip, depthwise convs), written as .weir and as QDQ .onnx.
TEST(Quantize, ZooModelsBecomeInt8ConvsAndKeepTheirLogits) {
  testing::ScratchDir dir;
  write_npy(dir / "calibration.npy", uniform_images(16, 1));
  std::unique_ptr<tools::OpSet> ops = tools::make_op_set({});
  // Untrained MobileNetV2's features die out at 28x28 (its logits are the
  // classifier's bias whatever the input), so only its structure is
  // checked here; ClipBecomesRelu checks ReLU6's numbers.
  struct Case {
    std::string name;
    std::string extension;
    bool compare_logits;
  };
  for (const auto& [name, extension, compare_logits] :
       std::vector<Case>{{"resnet18", ".weir", true}, {"resnet18", ".onnx", true}, {"mobilenet_v2", ".weir", false}}) {
    SCOPED_TRACE(name + extension);
    const std::filesystem::path model = save_zoo_model(dir, name);
    std::unique_ptr<Graph> reference = tools::load_graph(model, *ops);
    const size_t convs = count_ops(*reference, "Conv");
    ASSERT_GT(convs, 0u);
    const std::string output = (dir / (name + ".int8" + extension)).string();
    tools::QuantizationReport report =
        tools::quantize_model(model.string(), {(dir / "calibration.npy").string()}, output, *ops, {});
    EXPECT_EQ(report.calibration_runs, 16u);  // one row per run: the batch dim is symbolic
    EXPECT_EQ(report.quantized_convs, convs);
    ASSERT_EQ(report.left_f32.size(), 1u);  // the classifier
    EXPECT_NE(report.left_f32[0].find("output layer"), std::string::npos) << report.left_f32[0];

    // The full pipeline fuses every quantized conv (with its Relu or ReLU6) into an int8 one.
    std::unique_ptr<Graph> quantized = tools::load_graph(output, *ops);
    infer_graph_types(*quantized, ops->ops);
    PassContext context(ops->ops, &ops->kernels);
    inference_pipeline(3)->run(*quantized, context);
    EXPECT_EQ(count_ops(*quantized, "QLinearConv") + count_ops(*quantized, "FusedQLinearConv"), convs);
    EXPECT_EQ(count_ops(*quantized, "Conv") + count_ops(*quantized, "FusedConv"), 0u);
    EXPECT_EQ(count_ops(*quantized, "Clip"), 0u);

    if (!compare_logits) continue;
    const Tensor inputs = uniform_images(20, 2);  // not the calibration images
    std::vector<double> errors;
    int agree = 0;
    for (int64_t i = 0; i < 20; ++i) {
      const Tensor x = row(inputs, i);
      const Tensor f32 = evaluate_graph(*reference, {{"x", x}}).at(0);
      const Tensor int8 = evaluate_graph(*quantized, {{"x", x}}, {.kernels = &ops->kernels}).at(0);
      errors.push_back(relative_l2(f32, int8));
      agree += argmax(f32) == argmax(int8);
    }
    std::sort(errors.begin(), errors.end());
    EXPECT_LT(errors[10], 5e-2) << "median relative L2 of the logits";
    EXPECT_GT(errors[10], 0.0) << "int8 convs round: the logits cannot be exact";
    EXPECT_GE(agree, 16) << "top-1 agreement out of 20";
  }
}

// Conv -> Clip(0, 6) -> Conv: the Clip becomes a Relu fused into the int8
// conv (the quantization saturates at the calibrated max, <= 6), and the
// result stays what the f32 graph computes, up to rounding.
TEST(Quantize, Relu6AfterAConvBecomesAFusedRelu) {
  std::unique_ptr<tools::OpSet> ops = tools::make_op_set({});
  auto build = [] {
    auto graph = std::make_unique<Graph>("relu6");
    Value* x = graph->add_input("x", TensorType{DType::kFloat32, Shape{1, 2, 6, 6}});
    std::mt19937_64 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto constant = [&](const std::string& name, std::vector<int64_t> sizes, float stddev = 1.0f) {
      Tensor t(DType::kFloat32, sizes);
      for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = stddev * normal(rng);
      return graph->add_constant(name, t);
    };
    Value* conv = graph->add_node("Conv", {x, constant("w1", {4, 2, 3, 3}, 5.0f), constant("b1", {4})})->output(0);
    Value* clipped = graph->add_node("Clip", {conv, graph->add_constant("lo", Tensor::scalar<float>(0.0f)),
                                              graph->add_constant("hi", Tensor::scalar<float>(6.0f))})
                         ->output(0);
    graph->add_output(graph->add_node("Conv", {clipped, constant("w2", {3, 4, 1, 1})})->output(0));
    return graph;
  };
  std::unique_ptr<Graph> reference = build();
  infer_graph_types(*reference, ops->ops);
  std::unique_ptr<Graph> quantized = build();
  std::vector<Tensor> examples;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int i = 0; i < 8; ++i) {
    Tensor x(DType::kFloat32, {1, 2, 6, 6});
    for (int64_t j = 0; j < x.num_elements(); ++j) x.data<float>()[j] = unit(rng);
    examples.push_back(x);
  }
  tools::QuantizationReport report = tools::quantize_graph(*quantized, examples, *ops, {});
  EXPECT_EQ(report.quantized_convs, 1u);  // the second is the output layer
  EXPECT_EQ(count_ops(*quantized, "Clip"), 0u);
  EXPECT_EQ(count_ops(*quantized, "Relu"), 1u);
  PassContext context(ops->ops, &ops->kernels);
  inference_pipeline(3)->run(*quantized, context);
  EXPECT_EQ(count_ops(*quantized, "FusedQLinearConv"), 1u);
  double clipped = 0;
  for (const Tensor& x : examples) {
    const Tensor f32 = evaluate_graph(*reference, {{"x", x}}).at(0);
    const Tensor int8 = evaluate_graph(*quantized, {{"x", x}}, {.kernels = &ops->kernels}).at(0);
    const double error = relative_l2(f32, int8);
    EXPECT_LT(error, 5e-2);
    EXPECT_GT(error, 0.0);
    clipped += error;
  }
  // The Clip clipped something: without it the f32 graph computes something else.
  std::unique_ptr<Graph> unclipped = build();
  Node* clip = nullptr;
  for (Node* node : unclipped->nodes()) clip = node->op_type() == "Clip" ? node : clip;
  clip->set_input(2, unclipped->add_constant("big", Tensor::scalar<float>(1e6f)));
  infer_graph_types(*unclipped, ops->ops);
  double without = 0;
  for (const Tensor& x : examples) {
    without += relative_l2(evaluate_graph(*reference, {{"x", x}}).at(0), evaluate_graph(*unclipped, {{"x", x}}).at(0));
  }
  EXPECT_GT(without, clipped) << "the test's weights should drive some values above 6";
}

// The scale of the QuantizeLinear on the graph input.
float input_scale(const std::string& path, const tools::OpSet& ops) {
  std::unique_ptr<Graph> graph = tools::load_graph(path, ops);
  for (const Node* node : graph->nodes()) {
    if (node->op_type() == "QuantizeLinear" && node->input(0) == graph->inputs()[0]) {
      return node->input(1)->data().data<float>()[0];
    }
  }
  ADD_FAILURE() << "no QuantizeLinear on the input of " << path;
  return 0;
}

TEST(Quantize, PercentileRangesClipAnOutlierThatMinMaxKeeps) {
  testing::ScratchDir dir;
  const std::filesystem::path model = save_zoo_model(dir, "resnet18", /*input_std=*/0);  // the first conv reads x itself
  Tensor calibration = uniform_images(16, 3);
  calibration.data<float>()[123] = 1000.0f;
  write_npy(dir / "calibration.npy", calibration);
  std::unique_ptr<tools::OpSet> ops = tools::make_op_set({});
  const std::vector<std::string> files = {(dir / "calibration.npy").string()};
  tools::quantize_model(model.string(), files, (dir / "minmax.weir").string(), *ops, {});
  tools::quantize_model(model.string(), files, (dir / "percentile.weir").string(), *ops,
                        {.method = tools::RangeMethod::kPercentile, .percentile = 99.99});
  const float minmax = input_scale((dir / "minmax.weir").string(), *ops);
  const float percentile = input_scale((dir / "percentile.weir").string(), *ops);
  EXPECT_NEAR(minmax, 1000.0f / 255.0f, 1e-3f);
  // 1 value in 12544 is above the 99.99th percentile: the range ends near 1 (one histogram bin above).
  EXPECT_GT(percentile, 0.99f / 255.0f);
  EXPECT_LT(percentile, 1.5f / 255.0f);
}

TEST(Quantize, BadCalibrationFilesAndModelsAreCleanErrors) {
  testing::ScratchDir dir;
  const std::string model = save_zoo_model(dir).string();
  const std::string out = (dir / "out.weir").string();
  auto quantize = [&](const std::string& args) { return testing::run_graph_runner("quantize " + args); };

  write_npy(dir / "calibration.npy", uniform_images(4, 1));
  testing::ProcessResult ok = quantize(model + " --calibration " + (dir / "calibration.npy").string() + "," +
                                       (dir / "calibration.npy").string() + " -o " + out);
  ASSERT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("calibrated on 8 runs"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("quantized: 20 convs"), std::string::npos) << ok.output;
  EXPECT_TRUE(std::filesystem::exists(out));

  testing::expect_cli_error(quantize(model + " --calibration " + (dir / "nope.npy").string() + " -o " + out),
                            "nope.npy");
  write_npy(dir / "flat.npy", Tensor(DType::kFloat32, {4, 784}));
  testing::ProcessResult flat = quantize(model + " --calibration " + (dir / "flat.npy").string() + " -o " + out);
  testing::expect_cli_error(flat, "flat.npy");
  testing::expect_cli_error(flat, "input 'x' needs f32 [N, 1, 28, 28]");
  write_npy(dir / "f64.npy", Tensor(DType::kFloat64, {4, 1, 28, 28}));
  testing::expect_cli_error(quantize(model + " --calibration " + (dir / "f64.npy").string() + " -o " + out), "f64.npy");
  testing::expect_cli_error(
      quantize(model + " --calibration " + (dir / "calibration.npy").string() + " --method kl -o " + out),
      "minmax, percentile");
  testing::expect_cli_error(quantize(model + " -o " + out), "--calibration");

  // A model with nothing to quantize says so.
  Model relu;
  relu.graph = std::make_unique<Graph>("relu");
  Value* x = relu.graph->add_input("x", TensorType{DType::kFloat32, Shape{Dim::symbol("N"), 4}});
  relu.graph->add_output(relu.graph->add_node("Relu", {x})->output(0));
  infer_graph_types(*relu.graph, tools::make_op_set({})->ops);
  save_model(relu, dir / "relu.weir");
  write_npy(dir / "rows.npy", Tensor(DType::kFloat32, {2, 4}));
  testing::expect_cli_error(quantize((dir / "relu.weir").string() + " --calibration " + (dir / "rows.npy").string() +
                                     " -o " + out),
                            "no Conv, MatMul or Gemm");
}

}  // namespace
}  // namespace weir
