// A program built against an installed Weir (CMakeLists.txt here, or
// pkg-config's weir.pc):
//
//   downstream PLUGIN.so [MODEL_OUT.weir]
//
// 1. loads the SiluGate plugin, builds Y = SiluGate(x, gate, beta=1.5) + 0.25,
//    runs it and compares every element with the formula computed here;
// 2. trains y = 3x - 1 with a Linear layer, Adam and the Trainer-free loop
//    (minimize, then Session::run per step), and checks the loss fell 100-fold;
// 3. saves the trained regression as MODEL_OUT when given.
// Prints "downstream: ok" and exits 0, or says what differed and exits 1.
#include <cmath>
#include <cstdio>
#include <random>

#include "core/model_io.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "frontend/optim/optimizer.h"
#include "frontend/train/trainer.h"
#include "ops/plugin/plugin_loader.h"
#include "ops/register_ops.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace {

bool check_plugin_model(const char* plugin_path) {
  weir::OpRegistry ops;
  weir::register_all_ops(ops);
  weir::KernelRegistry kernels;
  weir::register_all_kernels(kernels);
  weir::LoadedPlugin plugin = weir::load_plugin(plugin_path, ops, kernels);

  weir::GraphBuilder b("silu_gate", 1, ops);
  weir::Var x = b.input("x", {weir::DType::kFloat32, weir::Shape{4, 8}});
  weir::Var gate = b.input("gate", {weir::DType::kFloat32, weir::Shape{4, 8}});
  b.output(b.op("SiluGate", {x, gate}, {{"beta", weir::Attribute(1.5)}}) + 0.25);
  std::unique_ptr<weir::Graph> graph = b.finish();

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  weir::Tensor xs(weir::DType::kFloat32, {4, 8}), gs(weir::DType::kFloat32, {4, 8});
  for (int i = 0; i < 32; ++i) {
    xs.data<float>()[i] = uniform(rng);
    gs.data<float>()[i] = uniform(rng);
  }
  weir::CompileOptions options;
  options.ops = &ops;
  options.kernels = &kernels;
  weir::Session session(weir::compile(*graph, options));
  weir::Tensor y = session.run({{"x", xs}, {"gate", gs}})[0];
  double worst = 0;
  for (int i = 0; i < 32; ++i) {
    const double a = xs.data<float>()[i], g = gs.data<float>()[i];
    const double expected = a / (1.0 + std::exp(-1.5 * a)) * g + 0.25;
    worst = std::max(worst, std::abs(expected - y.data<float>()[i]));
  }
  std::printf("plugin '%s': SiluGate model max_abs_diff=%.3g\n", plugin.name.c_str(), worst);
  return worst < 1e-5;
}

bool train_regression(const char* model_out) {
  weir::GraphBuilder b("regression", 7);
  weir::Var x = b.input("x", {weir::DType::kFloat32, weir::Shape{32, 1}});
  weir::Var target = b.input("y", {weir::DType::kFloat32, weir::Shape{32, 1}});
  weir::nn::Linear fc(b, "fc", 1, 1);
  weir::Var loss = weir::nn::mse(fc(x), target);
  b.output(loss);
  std::unique_ptr<weir::Graph> graph = b.finish();
  const std::string loss_name = graph->outputs()[0]->name();
  weir::TrainingGraph step = weir::minimize(*graph, loss_name, {.kind = weir::OptimizerKind::kAdam});
  weir::Session session(weir::compile(*graph));

  weir::Tensor xs(weir::DType::kFloat32, {32, 1}), ys(weir::DType::kFloat32, {32, 1});
  for (int i = 0; i < 32; ++i) {
    xs.data<float>()[i] = static_cast<float>(i) / 16.0f - 1.0f;
    ys.data<float>()[i] = 3.0f * xs.data<float>()[i] - 1.0f;
  }
  double first = 0, last = 0;
  for (int64_t s = 1; s <= 400; ++s) {
    std::map<std::string, weir::Tensor> feeds{{"x", xs}, {"y", ys}, {step.lr_input, weir::Tensor::scalar<float>(0.05f)}};
    if (!step.step_input.empty()) feeds[step.step_input] = weir::Tensor::scalar<int64_t>(s);
    last = session.run(feeds)[0].data<float>()[0];
    if (s == 1) first = last;
  }
  std::printf("regression: loss %.4g -> %.4g after 400 Adam steps\n", first, last);
  if (model_out != nullptr) {
    weir::GraphBuilder inference("regression", 7);
    weir::Var ix = inference.input("x", {weir::DType::kFloat32, weir::Shape{weir::Dim::symbol("N"), 1}});
    weir::nn::Linear ifc(inference, "fc", 1, 1);
    inference.output(ifc(ix));
    weir::Model model;
    model.graph = inference.finish();
    weir::bake_state(session, *model.graph);
    weir::save_model(model, model_out);
    std::printf("saved %s\n", model_out);
  }
  return last < first / 100;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s PLUGIN.so [MODEL_OUT.weir]\n", argv[0]);
    return 2;
  }
  try {
    const bool plugin_ok = check_plugin_model(argv[1]);
    const bool training_ok = train_regression(argc == 3 ? argv[2] : nullptr);
    if (!plugin_ok || !training_ok) {
      std::fprintf(stderr, "downstream: FAILED (plugin %s, training %s)\n", plugin_ok ? "ok" : "wrong",
                   training_ok ? "ok" : "did not converge");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::printf("downstream: ok\n");
  return 0;
}
