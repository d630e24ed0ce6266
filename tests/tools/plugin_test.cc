// Custom op plugins: the example SiluGate plugin end to end through
// graph-runner (a model built and saved with the C++ API, run with --plugin,
// checked against a reference), and every way a plugin can be bad — another
// ABI version, no entry symbol, a kernel that reports an error, shape
// inference that rejects an input, not a library at all — each a clear
// error, in-process and from the CLI, with no crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/model_io.h"
#include "frontend/data/npy.h"
#include "ops/plugin/plugin_loader.h"
#include "ops/register_ops.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/test_util.h"
#include "tests/tools/process_util.h"

namespace weir {
namespace {

using Result = testing::ProcessResult;
using testing::run_command;

Result graph_runner(const std::string& args) { return testing::run_graph_runner(args); }

// The built-in CPU kernels only, so that a plugin's CUDA kernels are the
// only CUDA kernels, in builds with the CUDA backend as without.
struct Registries {
  OpRegistry ops;
  KernelRegistry kernels;
  Registries() {
    register_all_ops(ops);
    register_cpu_kernels(kernels);
  }
};

std::string error_of_loading(const std::string& path) {
  Registries r;
  size_t before = r.ops.size();
  try {
    load_plugin(path, r.ops, r.kernels);
  } catch (const Error& e) {
    EXPECT_EQ(r.ops.size(), before) << "a refused plugin registered ops";
    return e.what();
  }
  ADD_FAILURE() << path << " loaded";
  return "";
}

TEST(Plugins, SiluGateRunsThroughGraphRunner) {
  testing::ScratchDir dir;
  Result made = run_command(std::string(WEIR_SILU_GATE_MODEL) + " " + WEIR_SILU_GATE_PLUGIN + " " + dir.path().string());
  ASSERT_EQ(made.status, 0) << made.output;
  Result ran = graph_runner("run " + (dir / "silu_gate.weir").string() + " --plugin " + WEIR_SILU_GATE_PLUGIN +
                            " -i x=" + (dir / "x.npy").string() + " -i gate=" + (dir / "gate.npy").string() + " -o " +
                            (dir / "out").string());
  ASSERT_EQ(ran.status, 0) << ran.output;
  Tensor x = read_npy(dir / "x.npy"), gate = read_npy(dir / "gate.npy");
  std::vector<std::filesystem::path> outputs;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "out")) outputs.push_back(entry.path());
  ASSERT_EQ(outputs.size(), 1u);
  Tensor y = read_npy(outputs[0]);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{4, 8}));
  for (int64_t i = 0; i < 32; ++i) {
    double a = x.data<float>()[i], b = gate.data<float>()[i];
    double expected = std::max(0.0, a / (1 + std::exp(-1.5 * a)) * b) + 0.25;  // Relu(SiluGate(beta 1.5)) + 0.25
    EXPECT_NEAR(y.data<float>()[i], expected, 1e-5 * (1 + std::abs(expected))) << i;
  }
  // Without the plugin the model cannot run, and says which op is missing.
  Result missing = graph_runner("run " + (dir / "silu_gate.weir").string() + " --random-inputs");
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.output.find("SiluGate"), std::string::npos) << missing.output;
  Result inspected = graph_runner("inspect " + (dir / "silu_gate.weir").string() + " --plugin " + WEIR_SILU_GATE_PLUGIN);
  EXPECT_EQ(inspected.status, 0) << inspected.output;
  EXPECT_NE(inspected.output.find("SiluGate=1"), std::string::npos) << inspected.output;
}

TEST(Plugins, BadLibrariesAreRefusedWithAClearError) {
  std::string abi = error_of_loading(WEIR_BAD_ABI_PLUGIN);
  EXPECT_NE(abi.find("ABI version 42"), std::string::npos) << abi;
  EXPECT_NE(abi.find("version 1"), std::string::npos) << abi;
  std::string entry = error_of_loading(WEIR_NO_ENTRY_PLUGIN);
  EXPECT_NE(entry.find("weir_plugin_entry"), std::string::npos) << entry;
  testing::ScratchDir dir;
  write_npy(dir / "not_a_library.so", Tensor(DType::kFloat32, {2}));
  std::string garbage = error_of_loading((dir / "not_a_library.so").string());
  EXPECT_NE(garbage.find("not_a_library.so"), std::string::npos) << garbage;
  std::string missing = error_of_loading((dir / "missing.so").string());
  EXPECT_NE(missing.find("missing.so"), std::string::npos) << missing;
  // The same through the CLI: one error line, no crash.
  for (const char* plugin : {WEIR_BAD_ABI_PLUGIN, WEIR_NO_ENTRY_PLUGIN}) {
    Result r = graph_runner("run nothing.weir --plugin " + std::string(plugin));
    EXPECT_NE(r.status, 0);
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
  }
  // Loading the same plugin twice into one registry is refused by name.
  Registries r;
  load_plugin(WEIR_CHECKED_OPS_PLUGIN, r.ops, r.kernels);
  try {
    load_plugin(WEIR_CHECKED_OPS_PLUGIN, r.ops, r.kernels);
    FAIL() << "loaded twice";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already registered"), std::string::npos) << e.what();
  }
}

// Kernels are keyed by domain as well as op type: a plugin's com.weir.test
// Relu runs its own kernel beside the built-in Relu, and its second
// description, for CUDA, adds a CUDA kernel to the same op. An unknown
// device code is refused naming the op.
TEST(Plugins, KernelsAreKeyedByDomainAndDevice) {
  Registries r;
  size_t schemas = r.ops.size();
  LoadedPlugin plugin = load_plugin(WEIR_DEVICE_OPS_PLUGIN, r.ops, r.kernels);
  EXPECT_EQ(r.ops.size(), schemas + 1) << "one op, described for two devices";
  EXPECT_NE(r.kernels.find(KernelOp("com.weir.test", "Relu"), DeviceType::kCpu, DType::kFloat32), nullptr);
  EXPECT_NE(r.kernels.find(KernelOp("com.weir.test", "Relu"), DeviceType::kCuda, DType::kFloat32), nullptr);
  EXPECT_EQ(r.kernels.find(KernelOp("Relu"), DeviceType::kCuda, DType::kFloat32), nullptr) << "no built-in CUDA Relu";

  Graph g("two_relus");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{3}});
  Node* mine = g.add_node("Relu", {x}, 1, {}, "plugin_relu");
  mine->set_domain("com.weir.test");
  g.add_output(mine->output(0));
  g.add_output(g.add_node("Relu", {x}, 1, {}, "builtin_relu")->output(0));
  CompileOptions options;
  options.ops = &r.ops;
  options.kernels = &r.kernels;
  Session session(compile(g, options));
  std::vector<Tensor> out = session.run({{"x", Tensor::from_vector<float>({-1, 0, 2}, {3})}});
  const float plugin_expected[] = {99, 100, 102}, builtin_expected[] = {0, 0, 2};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[0].data<float>()[i], plugin_expected[i]) << i;
    EXPECT_EQ(out[1].data<float>()[i], builtin_expected[i]) << i;
  }

  // Without the plugin's kernels, the node's kernel is missing, and the
  // message names the domain (the built-in Relu is not taken instead).
  try {
    Registries bare;
    bare.kernels.create(*mine, DeviceType::kCpu);
    FAIL() << "a kernel for an unregistered domain op";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CPU kernel for com.weir.test.Relu with f32 inputs"), std::string::npos) << e.what();
    EXPECT_EQ(e.node(), "plugin_relu");
  }

  std::string device = error_of_loading(WEIR_BAD_DEVICE_PLUGIN);
  EXPECT_NE(device.find("op 'TpuOp': unknown device code 7"), std::string::npos) << device;
}

// A library cut short (a copy interrupted, a disk full): dlopen would map
// segments past the end of the file and die of SIGBUS on the first touch.
// Every cut is refused with an error naming the file; so is a library for
// another machine.
TEST(Plugins, TruncatedLibrariesAreRefusedNotSigbus) {
  testing::ScratchDir dir;
  const std::string whole = read_file(WEIR_CHECKED_OPS_PLUGIN, size_t{1} << 30);
  ASSERT_GT(whole.size(), 4096u);
  for (size_t length : {size_t{0}, size_t{16}, size_t{64}, size_t{200}, whole.size() / 4, whole.size() / 2,
                        whole.size() * 3 / 4, whole.size() - 1}) {
    const std::filesystem::path cut = dir / ("cut_" + std::to_string(length) + ".so");
    write_file_atomically(cut, std::string_view(whole).substr(0, length));
    std::string error = error_of_loading(cut.string());
    EXPECT_NE(error.find(cut.filename().string()), std::string::npos) << error;
    EXPECT_NE(error.find("cannot load the plugin"), std::string::npos) << error;
  }
  std::string other = whole;
  other[18] = 0x28;  // e_machine: ARM
  write_file_atomically(dir / "arm.so", other);
  std::string error = error_of_loading((dir / "arm.so").string());
  EXPECT_NE(error.find("not this one"), std::string::npos) << error;
  // Through the CLI: an error line and exit status 1, not a signal.
  Result r = graph_runner("run nothing.weir --plugin " + (dir / ("cut_" + std::to_string(whole.size() / 2) + ".so")).string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
}

TEST(Plugins, KernelAndShapeInferenceErrorsNameTheNode) {
  Registries r;
  LoadedPlugin plugin = load_plugin(WEIR_CHECKED_OPS_PLUGIN, r.ops, r.kernels);
  EXPECT_EQ(plugin.ops, (std::vector<std::string>{"CheckedSqrt", "Noise"}));
  CompileOptions options;
  options.ops = &r.ops;
  options.kernels = &r.kernels;
  {
    Graph g("sqrt");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{2, 3}});
    g.add_output(g.add_node("CheckedSqrt", {x}, 1, {}, "root")->output(0));
    Session session(compile(g, options));
    Tensor good = Tensor::from_vector<float>({0, 1, 4, 9, 16, 25}, {2, 3});
    Tensor y = session.run({{"x", good}})[0];
    EXPECT_FLOAT_EQ(y.data<float>()[5], 5.0f);
    Tensor bad = Tensor::from_vector<float>({0, 1, -4, 9, 16, 25}, {2, 3});
    try {
      session.run({{"x", bad}});
      FAIL() << "a failing plugin kernel passed";
    } catch (const Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find("root"), std::string::npos) << message;
      EXPECT_NE(message.find("element 2 is negative"), std::string::npos) << message;
    }
    EXPECT_NO_THROW(session.run({{"x", good}})) << "the session stays usable";
  }
  {
    Graph g("sqrt3d");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{2, 3, 4}});
    g.add_output(g.add_node("CheckedSqrt", {x}, 1, {}, "cube_root")->output(0));
    try {
      compile(g, options);
      FAIL() << "shape inference accepted rank 3";
    } catch (const Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find("cube_root"), std::string::npos) << message;
      EXPECT_NE(message.find("expects a matrix, got rank 3"), std::string::npos) << message;
    }
  }
  // Through graph-runner: a saved model whose plugin kernel fails at run time.
  testing::ScratchDir dir;
  Model model;
  model.graph = std::make_unique<Graph>("sqrt");
  Value* x = model.graph->add_input("x", {DType::kFloat32, Shape{1, 3}});
  model.graph->add_output(model.graph->add_node("CheckedSqrt", {x}, 1, {}, "root")->output(0));
  save_model(model, dir / "sqrt.weir");
  write_npy(dir / "neg.npy", Tensor::from_vector<float>({1, -1, 2}, {1, 3}));
  Result ran = graph_runner("run " + (dir / "sqrt.weir").string() + " --plugin " + WEIR_CHECKED_OPS_PLUGIN + " -i x=" +
                            (dir / "neg.npy").string() + " -o " + (dir / "out").string());
  EXPECT_NE(ran.status, 0);
  EXPECT_EQ(ran.output.rfind("error: ", 0), 0u) << ran.output;
  EXPECT_NE(ran.output.find("element 1 is negative"), std::string::npos) << ran.output;
}

// A plugin op that claims to be pure but is not: CSE merges two of its
// nodes, and verify names that pass as the one that changed the outputs.
TEST(Plugins, VerifyCatchesAPassThatAnImpureOpBreaks) {
  testing::ScratchDir dir;
  Model model;
  model.graph = std::make_unique<Graph>("noisy");
  Value* x = model.graph->add_input("x", {DType::kFloat32, Shape{4}});
  Value* a = model.graph->add_node("Noise", {x})->output(0);
  Value* b = model.graph->add_node("Noise", {x})->output(0);
  model.graph->add_output(model.graph->add_node("Sub", {a, b}, 1, {}, "difference")->output(0));
  save_model(model, dir / "noisy.weir");
  Result r = graph_runner("verify " + (dir / "noisy.weir").string() + " --plugin " + WEIR_CHECKED_OPS_PLUGIN);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("common_subexpression_elimination") , std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pass 'common_subexpression_elimination' changed the outputs"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace weir
