// Builds a model that uses the SiluGate custom op and saves it, loading the
// plugin through the C++ API:
//
//   silu_gate_model PLUGIN.so OUT_DIR
//
// writes OUT_DIR/silu_gate.weir (Y = Relu(SiluGate(x, gate, beta=1.5)) + 0.25)
// and OUT_DIR/x.npy, OUT_DIR/gate.npy, and runs the model once in-process.
#include <cstdio>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "core/model_io.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/data/npy.h"
#include "ops/plugin/plugin_loader.h"
#include "ops/register_ops.h"
#include "runtime/plan.h"
#include "runtime/session.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PLUGIN.so OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    weir::OpRegistry ops;
    weir::register_all_ops(ops);
    weir::KernelRegistry kernels;
    weir::register_all_kernels(kernels);
    weir::LoadedPlugin plugin = weir::load_plugin(argv[1], ops, kernels);
    std::printf("loaded plugin '%s' with %zu op(s)\n", plugin.name.c_str(), plugin.ops.size());

    weir::GraphBuilder b("silu_gate_model", 1, ops);
    weir::Var x = b.input("x", {weir::DType::kFloat32, weir::Shape{4, 8}});
    weir::Var gate = b.input("gate", {weir::DType::kFloat32, weir::Shape{4, 8}});
    weir::Var y = b.op("SiluGate", {x, gate}, {{"beta", weir::Attribute(1.5)}});
    b.output(b.op("Relu", {y}) + 0.25);
    weir::Model model;
    model.graph = b.finish();

    std::filesystem::path out = argv[2];
    std::filesystem::create_directories(out);
    weir::save_model(model, out / "silu_gate.weir");
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
    weir::Tensor xs(weir::DType::kFloat32, {4, 8}), gs(weir::DType::kFloat32, {4, 8});
    for (int i = 0; i < 32; ++i) {
      xs.data<float>()[i] = uniform(rng);
      gs.data<float>()[i] = uniform(rng);
    }
    weir::write_npy(out / "x.npy", xs);
    weir::write_npy(out / "gate.npy", gs);

    weir::CompileOptions options;
    options.ops = &ops;
    options.kernels = &kernels;
    weir::Session session(weir::compile(*model.graph, options));
    weir::Tensor result = session.run({{"x", xs}, {"gate", gs}})[0];
    std::printf("y[0,0..3] = %.5f %.5f %.5f %.5f\n", result.data<float>()[0], result.data<float>()[1],
                result.data<float>()[2], result.data<float>()[3]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
