// smoke_model: builds a small MLP graph with the core API, checks it with the
// verifier, saves it as .weir and .weirtxt, loads both back, checks that
// nothing changed, and runs the reloaded model on a seeded batch with the CPU
// kernels. The README's demo command runs it until training lands.
//
//   smoke_model [OUTPUT_DIR]      (default: ./smoke-model)
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "core/error.h"
#include "core/logging.h"
#include "core/model_io.h"
#include "core/type_inference.h"
#include "core/verifier.h"
#include "ops/graph_evaluator.h"
#include "ops/register_ops.h"

namespace {

weir::Tensor seeded_normal(std::vector<int64_t> sizes, float stddev, uint32_t seed) {
  weir::Tensor tensor(weir::DType::kFloat32, std::move(sizes));
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  float* data = tensor.data<float>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) data[i] = normal(engine);
  return tensor;
}

// x[N,784] -> Linear(256) -> Relu -> Linear(10) -> Softmax
weir::Model build_mlp() {
  weir::Model model;
  model.metadata = {{"description", "784-256-10 MLP for Fashion-MNIST (untrained)"}};
  model.graph = std::make_unique<weir::Graph>("mlp");
  weir::Graph& g = *model.graph;
  weir::Value* x = g.add_input("image", {weir::DType::kFloat32, weir::Shape{weir::Dim::symbol("N"), 784}});
  weir::Value* hidden = x;
  const std::vector<int64_t> widths = {784, 256, 10};
  for (size_t layer = 0; layer + 1 < widths.size(); ++layer) {
    std::string prefix = "fc" + std::to_string(layer + 1);
    float kaiming = std::sqrt(2.0f / static_cast<float>(widths[layer]));
    weir::Value* weight = g.add_persistent(
        prefix + ".weight", {weir::DType::kFloat32, weir::Shape{widths[layer], widths[layer + 1]}},
        weir::PersistentRole::kParameter, seeded_normal({widths[layer], widths[layer + 1]}, kaiming, 1 + layer));
    weir::Value* bias = g.add_persistent(prefix + ".bias", {weir::DType::kFloat32, weir::Shape{widths[layer + 1]}},
                                         weir::PersistentRole::kParameter, weir::Tensor(weir::DType::kFloat32, {widths[layer + 1]}));
    weir::Node* matmul = g.add_node("MatMul", {hidden, weight}, 1, {}, prefix + ".matmul");
    weir::Node* add = g.add_node("Add", {matmul->output(0), bias}, 1, {}, prefix + ".add");
    hidden = add->output(0);
    if (layer + 2 < widths.size()) hidden = g.add_node("Relu", {hidden}, 1, {}, prefix + ".relu")->output(0);
  }
  weir::Node* softmax = g.add_node("Softmax", {hidden}, 1, {{"axis", weir::Attribute(-1)}}, "probabilities");
  g.add_output(softmax->output(0));
  weir::infer_graph_types(g, weir::default_op_registry());
  return model;
}

void print_summary(const weir::Graph& g) {
  std::map<std::string, int> histogram;
  for (const weir::Node* node : g.nodes()) ++histogram[node->op_type()];
  int64_t parameters = 0;
  for (const weir::Value* value : g.persistents()) parameters += value->shape().num_elements();
  std::printf("graph '%s': %zu nodes, %lld parameters (%.2f MiB)\n", g.name().c_str(), g.num_nodes(),
              static_cast<long long>(parameters), static_cast<double>(parameters) * 4 / (1 << 20));
  for (const auto& [op, count] : histogram) std::printf("  %-8s x%d\n", op.c_str(), count);
  for (const weir::Value* input : g.inputs()) std::printf("  input  %s: %s\n", input->name().c_str(), input->type().to_string().c_str());
  for (const weir::Value* output : g.outputs()) std::printf("  output %s: %s\n", output->name().c_str(), output->type().to_string().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  weir::init_logging_from_env();
  if (argc > 2 || (argc == 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help"))) {
    std::fprintf(stderr, "usage: smoke_model [OUTPUT_DIR]\n");
    return argc > 2 ? 2 : 0;
  }
  std::filesystem::path out = argc == 2 ? argv[1] : "smoke-model";
  try {
    std::filesystem::create_directories(out);
    weir::Model model = build_mlp();
    const weir::OpRegistry& registry = weir::default_op_registry();
    weir::verify_graph(*model.graph, registry, {.require_types = true});
    print_summary(*model.graph);

    std::string reference = weir::model_to_text(model);
    for (const char* name : {"mlp.weir", "mlp.weirtxt"}) {
      weir::save_model(model, out / name);
      weir::Model loaded = weir::load_model(out / name);
      weir::verify_graph(*loaded.graph, registry, {.require_types = true});
      if (weir::model_to_text(loaded) != reference) {
        std::fprintf(stderr, "error: %s did not load back identical\n", (out / name).c_str());
        return 1;
      }
      std::printf("saved and reloaded %s: identical, verified\n", (out / name).c_str());
    }
    // Run the reloaded binary model on 4 seeded images: each row of the
    // softmax output must be a probability distribution.
    weir::Model loaded = weir::load_model(out / "mlp.weir");
    weir::Tensor images = seeded_normal({4, 784}, 1.0f, 42);
    weir::Tensor probabilities = weir::evaluate_graph(*loaded.graph, {{"image", images}})[0];
    for (int64_t row = 0; row < probabilities.sizes()[0]; ++row) {
      const float* p = probabilities.data<float>() + row * 10;
      double sum = 0;
      int best = 0;
      for (int c = 0; c < 10; ++c) {
        sum += p[c];
        if (p[c] > p[best]) best = c;
      }
      std::printf("  image %lld: class %d (p=%.3f), probabilities sum to %.6f\n", static_cast<long long>(row), best,
                  static_cast<double>(p[best]), sum);
      if (std::fabs(sum - 1.0) > 1e-5) {
        std::fprintf(stderr, "error: probabilities of image %lld sum to %f\n", static_cast<long long>(row), sum);
        return 1;
      }
    }
    for (const auto& entry : std::filesystem::directory_iterator(out)) {
      std::printf("  %-40s %10ju bytes\n", entry.path().filename().c_str(),
                  static_cast<uintmax_t>(std::filesystem::file_size(entry.path())));
    }
    std::printf("smoke model: OK\n");
    return 0;
  } catch (const weir::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
