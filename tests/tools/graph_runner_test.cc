// graph-runner as users run it: real processes, exit statuses and output.
// train a small model, save it, run it on saved test images; and bad input
// (missing file, wrong input name, a misshapen .npy, a corrupt model, an
// unknown model name) gives one "error: ..." line and a non-zero status.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/atomic_file.h"
#include "core/model_io.h"
#include "frontend/data/idx.h"
#include "frontend/data/npy.h"
#include "frontend/onnx/onnx_tensor.h"
#include "models/zoo.h"
#include "tests/test_util.h"
#include "tests/tools/process_util.h"

namespace weir {
namespace {

using Result = testing::ProcessResult;

Result run(const std::string& args) { return testing::run_graph_runner(args); }
void expect_error(const Result& r, const std::string& mentions) { testing::expect_cli_error(r, mentions); }

TEST(GraphRunner, TrainSaveAndRunTheModel) {
  if (!std::filesystem::exists(kFashionMnistDir)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  testing::ScratchDir dir;
  std::string model = (dir / "mlp.weir").string();
  Result train = run("train --model mlp --steps 200 --save " + model + " --save-test-batch " + (dir / "test").string());
  ASSERT_EQ(train.status, 0) << train.output;
  for (const char* line : {"ms_per_step: ", "peak_memory_bytes: ", "test_accuracy: "}) {
    EXPECT_NE(train.output.find(line), std::string::npos) << line << "\n" << train.output;
  }
  Result ran = run("run " + model + " -i x=" + (dir / "test-images.npy").string() + " -o " + (dir / "out").string());
  ASSERT_EQ(ran.status, 0) << ran.output;
  Tensor logits = read_npy(dir / "out" / "logits.npy");
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{16, 10}));
  Tensor labels = read_npy(dir / "test-labels.npy");
  int correct = 0;
  for (int64_t i = 0; i < 16; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < 10; ++c) {
      if (logits.data<float>()[i * 10 + c] > logits.data<float>()[i * 10 + best]) best = c;
    }
    correct += best == labels.data<int64_t>()[i];
  }
  EXPECT_GE(correct, 10) << "200 steps of Adam should classify most of 16 test images";

  // Bad input, each a clean error.
  expect_error(run("run " + (dir / "nope.weir").string()), "nope.weir");
  expect_error(run("run " + model + " -i images=" + (dir / "test-images.npy").string()), "no input 'images'");
  write_npy(dir / "flat.npy", Tensor(DType::kFloat32, {16, 784}));
  expect_error(run("run " + model + " -i x=" + (dir / "flat.npy").string()), "'x'");
  write_npy(dir / "f64.npy", Tensor(DType::kFloat64, {16, 1, 28, 28}));
  expect_error(run("run " + model + " -i x=" + (dir / "f64.npy").string()), "'x'");
  expect_error(run("run " + model), "--random-inputs");
  std::string bytes = read_file(model, 1 << 26);
  write_file_atomically(dir / "cut.weir", bytes.substr(0, bytes.size() / 2));
  expect_error(run("run " + (dir / "cut.weir").string() + " --random-inputs"), "cut.weir");
  Result random = run("run " + model + " --random-inputs -o " + (dir / "random").string());
  EXPECT_EQ(random.status, 0) << random.output;

  Result bench = run("bench " + model + " --warmup 1 --iterations 5");
  ASSERT_EQ(bench.status, 0) << bench.output;
  EXPECT_NE(bench.output.find("latency_ms p50="), std::string::npos) << bench.output;
  EXPECT_NE(bench.output.find(" p99="), std::string::npos) << bench.output;
  expect_error(run("bench " + (dir / "cut.weir").string()), "cut.weir");

  std::string dot = (dir / "mlp.dot").string();
  Result inspect = run("inspect " + model + " --dot " + dot + " --batch 64 --verbose --opt-level 0");
  ASSERT_EQ(inspect.status, 0) << inspect.output;
  // 784*256 + 256 + 256*10 + 10 parameters; 2 multiply-adds per weight and example.
  EXPECT_NE(inspect.output.find("parameters: 203530 elements, 814120 bytes"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("input  x: f32[N,1,28,28]"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("MatMul=2"), std::string::npos) << inspect.output;
  // At the default level the weights are frozen and each MatMul + bias (+ Relu) is one FusedMatMul.
  Result optimized_inspect = run("inspect " + model);
  EXPECT_NE(optimized_inspect.output.find("ops (opt-level 3): FusedMatMul=2"), std::string::npos) << optimized_inspect.output;
  EXPECT_NE(optimized_inspect.output.find("constants: 203532 elements"), std::string::npos) << optimized_inspect.output;
  EXPECT_NE(inspect.output.find("estimated_flops: "), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("symbolic dims bound to 64"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("cpu:0/compute"), std::string::npos) << "--verbose prints the plan\n" << inspect.output;
  std::string graph = read_file(dot, 1 << 20);
  EXPECT_EQ(graph.rfind("digraph", 0), 0u);
  EXPECT_NE(graph.find("MatMul"), std::string::npos);
  expect_error(run("inspect " + (dir / "nope.weir").string()), "nope.weir");
}

// An ONNX backend node test run from its .pb TensorProto files, with a
// profile and the verbose summary.
TEST(GraphRunner, RunsOnnxWithTensorProtoInputsAndWritesAProfile) {
  const std::filesystem::path test = "/usr/share/libonnx-testdata/data/node/test_relu";
  if (!std::filesystem::exists(test)) GTEST_SKIP() << "libonnx-testdata is not installed";
  testing::ScratchDir dir;
  Result r = run("run " + (test / "model.onnx").string() + " -i x=" + (test / "test_data_set_0/input_0.pb").string() +
                 " -o " + (dir / "out").string() + " --verbose --profile " + (dir / "trace.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("plan: 1 steps"), std::string::npos) << r.output;
  Tensor y = read_npy(dir / "out" / "y.npy");
  Tensor expected = read_onnx_tensor_file((test / "test_data_set_0/output_0.pb").string());
  EXPECT_TRUE(y.bitwise_equal(expected));
  std::string trace = read_file(dir / "trace.json", 1 << 20);
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos) << trace;
  EXPECT_NE(trace.find("Relu"), std::string::npos) << trace;
}

// A Loop that grows a sequence (ONNX's test_loop13_seq), run by the runtime
// at opt-level 3 from its SequenceProto and TensorProto files: the sequence
// output is written one .npy per element, each equal to ONNX's.
TEST(GraphRunner, RunsALoopOverSequencesFromProtoFiles) {
  const std::filesystem::path test = "/usr/share/libonnx-testdata/data/node/test_loop13_seq";
  if (!std::filesystem::exists(test)) GTEST_SKIP() << "libonnx-testdata is not installed";
  testing::ScratchDir dir;
  const std::filesystem::path data = test / "test_data_set_0";
  Result r = run("run " + (test / "model.onnx").string() + " -i trip_count=" + (data / "input_0.pb").string() +
                 " -i cond=" + (data / "input_1.pb").string() + " -i seq_empty=" + (data / "input_2.pb").string() +
                 " -o " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("output seq_res: seq(f32)[5 elements]"), std::string::npos) << r.output;
  TensorType sequence{DType::kFloat32, Shape::unknown_rank()};
  sequence.sequence = true;
  Tensor expected = read_onnx_value_file((data / "output_0.pb").string(), sequence);
  ASSERT_EQ(expected.elements().size(), 5u);
  for (size_t k = 0; k < expected.elements().size(); ++k) {
    Tensor element = read_npy(dir / "out" / ("seq_res." + std::to_string(k) + ".npy"));
    EXPECT_TRUE(element.bitwise_equal(expected.elements()[k])) << "element " << k;
  }
  // A sequence input given a TensorProto file is refused, naming the file.
  Result wrong = run("run " + (test / "model.onnx").string() + " -i trip_count=" + (data / "input_0.pb").string() +
                     " -i cond=" + (data / "input_1.pb").string() + " -i seq_empty=" + (data / "input_0.pb").string() +
                     " -o " + (dir / "out2").string());
  expect_error(wrong, "input_0.pb': sequence '' holds non-tensors (elem_type");
}

// optimize and verify on a model with something for every pass to do: an
// Identity, a constant branch, a duplicated product and a dead branch.
TEST(GraphRunner, OptimizeAndVerify) {
  testing::ScratchDir dir;
  Model model;
  model.graph = std::make_unique<Graph>("cluttered");
  Graph& g = *model.graph;
  Value* x = g.add_input("x", {DType::kFloat32, Shape{2, 3}});
  Value* w = g.add_constant("w", Tensor::from_vector<float>({1, -2, 3, 0.5f, 1, -1, 2, 2, 0.25f}, {3, 3}));
  Value* c = g.add_constant("c", Tensor::from_vector<float>({0.5f, 1, 1.5f}, {3}));
  Value* scale = g.add_node("Tanh", {g.add_node("Mul", {c, c})->output(0)})->output(0);
  Value* p1 = g.add_node("MatMul", {g.add_node("Identity", {x})->output(0), w})->output(0);
  Value* p2 = g.add_node("MatMul", {x, w})->output(0);
  g.add_node("Sigmoid", {p1});  // dead
  Value* y = g.add_node("Mul", {g.add_node("Add", {p1, p2})->output(0), scale}, 1, {}, "y")->output(0);
  g.add_output(y);
  save_model(model, dir / "cluttered.weir");
  std::string in = (dir / "cluttered.weir").string();

  Result optimized = run("optimize " + in + " -o " + (dir / "clean.weirtxt").string() + " --print-after constant_folding");
  ASSERT_EQ(optimized.status, 0) << optimized.output;
  EXPECT_NE(optimized.output.find("# graph after constant_folding"), std::string::npos) << optimized.output;
  EXPECT_NE(optimized.output.find("optimized: 8 nodes -> 3"), std::string::npos) << optimized.output;
  Result plan = run("optimize " + in + " -o " + (dir / "clean.weirplan").string() + " --disable-pass constant_folding");
  ASSERT_EQ(plan.status, 0) << plan.output;

  write_npy(dir / "x.npy", Tensor::from_vector<float>({0.1f, -0.2f, 0.3f, 1.5f, -2, 0.7f}, {2, 3}));
  std::vector<Tensor> results;
  for (const std::string& file : {in, (dir / "clean.weirtxt").string(), (dir / "clean.weirplan").string()}) {
    std::string out = (dir / ("out" + std::to_string(results.size()))).string();
    Result r = run("run " + file + " -i x=" + (dir / "x.npy").string() + " -o " + out + " --opt-level 0");
    ASSERT_EQ(r.status, 0) << r.output;
    results.push_back(read_npy(std::filesystem::path(out) / "y_0.npy"));
  }
  EXPECT_TRUE(results[0].bitwise_equal(results[1]));
  EXPECT_TRUE(results[0].bitwise_equal(results[2]));

  Result verified = run("verify " + in);
  ASSERT_EQ(verified.status, 0) << verified.output;
  for (const char* pass : {"identity_elimination", "constant_folding", "common_subexpression_elimination",
                           "dead_code_elimination"}) {
    EXPECT_NE(verified.output.find(std::string("pass ") + pass), std::string::npos) << verified.output;
  }
  EXPECT_NE(verified.output.find("max_abs_diff=0"), std::string::npos) << verified.output;
  expect_error(run("optimize " + in + " -o " + (dir / "x.weir").string() + " --print-after folding"), "folding");
  expect_error(run("verify " + in + " --disable-pass nope"), "unknown pass 'nope'");
  expect_error(run("optimize " + (dir / "clean.weirplan").string() + " -o " + (dir / "again.weir").string()), "weirplan");
}

// The zoo's LeNet (inference, 1x28x28) saved as DIR/lenet.weir, and an
// input image DIR/x.npy of (i * step) % period / period: the model path and
// the " -i NAME=x.npy" feed to pass.
struct LenetFiles {
  std::string model, feed;
};

LenetFiles write_lenet(const std::filesystem::path& dir, int64_t step, int64_t period) {
  models::ClassifierGraph lenet =
      models::build_classifier("lenet", 1, /*training=*/false, {.classes = 10, .in_channels = 1, .image_size = 28});
  Model model;
  model.graph = std::move(lenet.graph);
  save_model(model, dir / "lenet.weir");
  Tensor x(DType::kFloat32, {1, 1, 28, 28});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = static_cast<float>((i * step) % period) / static_cast<float>(period);
  }
  write_npy(dir / "x.npy", x);
  return {(dir / "lenet.weir").string(), " -i " + lenet.input + "=" + (dir / "x.npy").string()};
}

// A .weirplan written by optimize stores its conv weights packed for this
// machine, and a run of it uses them instead of packing; --no-pack-weights
// writes plain weights only, which the first run packs. Both give the .weir's
// output bit for bit.
TEST(GraphRunner, PlansStoreWeightsPackedForThisMachine) {
  testing::ScratchDir dir;
  const LenetFiles lenet = write_lenet(dir.path(), 29, 97);
  const std::string& in = lenet.model;
  const std::string& feed = lenet.feed;

  Result packed = run("optimize " + in + " -o " + (dir / "packed.weirplan").string());
  ASSERT_EQ(packed.status, 0) << packed.output;
  EXPECT_NE(packed.output.find("packed weights: "), std::string::npos) << packed.output;
  Result plain = run("optimize " + in + " -o " + (dir / "plain.weirplan").string() + " --no-pack-weights");
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_EQ(plain.output.find("packed weights: "), std::string::npos) << plain.output;
  EXPECT_GT(std::filesystem::file_size(dir / "packed.weirplan"), std::filesystem::file_size(dir / "plain.weirplan"));

  std::vector<Tensor> outputs;
  for (const std::string file : {"lenet.weir", "packed.weirplan", "plain.weirplan"}) {
    std::string out = (dir / ("out_" + file)).string();
    Result r = run("run " + (dir / file).string() + feed + " -o " + out + " --verbose");
    ASSERT_EQ(r.status, 0) << r.output;
    if (file == "packed.weirplan") {
      EXPECT_NE(r.output.find(" from the plan file, 0 packed by this run"), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("packed weights: 0 from"), std::string::npos) << r.output;
    } else {
      EXPECT_NE(r.output.find("packed weights: 0 from the plan file"), std::string::npos) << r.output;
    }
    for (const auto& entry : std::filesystem::directory_iterator(out)) outputs.push_back(read_npy(entry.path()));
  }
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_TRUE(outputs[1].bitwise_equal(outputs[0]));
  EXPECT_TRUE(outputs[2].bitwise_equal(outputs[0]));
}

// Inference in bf16: run, bench, optimize and verify take --amp. A small
// convnet (zoo LeNet) saved as .weir: the bf16 run's logits are f32 and
// within bf16's error of the f32 run's; the optimized file holds bf16
// weights; verify checks every pass at the relative bf16 tolerance; a
// precision that does not exist is refused naming the choices.
TEST(GraphRunner, InferenceInBf16) {
  testing::ScratchDir dir;
  const LenetFiles lenet = write_lenet(dir.path(), 37, 101);
  const std::string& in = lenet.model;
  const std::string& feed = lenet.feed;

  std::vector<Tensor> logits;
  for (const std::string amp : {"off", "bf16"}) {
    std::string out = (dir / ("out_" + amp)).string();
    Result r = run("run " + in + feed + " -o " + out + " --amp " + amp);
    ASSERT_EQ(r.status, 0) << r.output;
    for (const auto& entry : std::filesystem::directory_iterator(out)) logits.push_back(read_npy(entry.path()));
  }
  ASSERT_EQ(logits.size(), 2u);
  ASSERT_EQ(logits[1].dtype(), DType::kFloat32);
  ASSERT_EQ(logits[0].sizes(), logits[1].sizes());
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < logits[0].num_elements(); ++i) {
    double d = logits[0].data<float>()[i] - logits[1].data<float>()[i];
    diff += d * d;
    norm += static_cast<double>(logits[0].data<float>()[i]) * logits[0].data<float>()[i];
  }
  EXPECT_GT(diff, 0) << "the bf16 run gave f32's bits: did it run in bf16?";
  EXPECT_LT(std::sqrt(diff / norm), 3e-2);

  Result optimized = run("optimize " + in + " --amp bf16 -o " + (dir / "lenet.bf16.weir").string());
  ASSERT_EQ(optimized.status, 0) << optimized.output;
  Model bf16 = load_model(dir / "lenet.bf16.weir");
  int bf16_constants = 0;
  for (const Value* c : bf16.graph->constants()) bf16_constants += c->dtype() == DType::kBFloat16;
  EXPECT_GE(bf16_constants, 4) << "the conv and matmul weights are stored in bf16";

  Result verified = run("verify " + in + " --amp bf16");
  ASSERT_EQ(verified.status, 0) << verified.output;
  EXPECT_NE(verified.output.find("pass auto_mixed_precision"), std::string::npos) << verified.output;
  EXPECT_NE(verified.output.find("relative L2 change"), std::string::npos) << verified.output;
  // At f32's absolute tolerance, the AMP pass is (rightly) the one that breaks it.
  expect_error(run("verify " + in + " --amp bf16 --tolerance 1e-9"), "auto_mixed_precision");

  Result bench = run("bench " + in + " --amp bf16 --iterations 3 --warmup 1");
  ASSERT_EQ(bench.status, 0) << bench.output;
  EXPECT_NE(bench.output.find("p50="), std::string::npos) << bench.output;
  expect_error(run("run " + in + feed + " --amp int4 -o " + (dir / "bad").string()), "choices: bf16, fp16");
}

// A training-step graph written by train --model, then trained from the file.
TEST(GraphRunner, TrainWithMixedPrecisionAndRecompute) {
  Result amp = run("train --model mlp --data synthetic --steps 3 --amp bf16 --recompute auto --mlp-layers 4");
  ASSERT_EQ(amp.status, 0) << amp.output;
  EXPECT_NE(amp.output.find("amp: bf16, "), std::string::npos) << amp.output;
  EXPECT_NE(amp.output.find("recompute: "), std::string::npos) << amp.output;
  Result fp16 = run("train --model mlp --data synthetic --steps 2 --amp fp16");
  ASSERT_EQ(fp16.status, 0) << fp16.output;
  EXPECT_NE(fp16.output.find("dynamic loss scaling"), std::string::npos) << fp16.output;
  Result budget = run("train --model mlp --data synthetic --steps 2 --mlp-layers 4 --memory-budget 64M");
  ASSERT_EQ(budget.status, 0) << budget.output;
  expect_error(run("train --model mlp --data synthetic --steps 1 --amp int8"), "int8");
  expect_error(run("train --model mlp --data synthetic --steps 1 --memory-budget 1K"), "cannot be met");
  expect_error(run("train --model mlp --data synthetic --steps 1 --memory-budget lots"), "lots");
  expect_error(run("train --model mlp --data synthetic --steps 1 --recompute nope"), "nope");
}

// The "step N loss: X" lines of --print-losses, in order.
std::vector<double> step_losses(const std::string& output) {
  std::vector<double> losses;
  std::istringstream lines(output);
  std::string line;
  int64_t expected_step = 1;
  while (std::getline(lines, line)) {
    const std::string prefix = "step " + std::to_string(expected_step) + " loss: ";
    if (line.rfind(prefix, 0) != 0) continue;
    losses.push_back(std::stod(line.substr(prefix.size())));
    ++expected_step;
  }
  return losses;
}

TEST(GraphRunner, TrainDataParallel) {
  const std::string common =
      "train --model mlp --data synthetic --steps 3 --batch 8 --optimizer sgd --lr 0.1 --mlp-layers 4 --print-losses";
  Result one = run(common);
  ASSERT_EQ(one.status, 0) << one.output;
  testing::ScratchDir dir;
  std::string step = (dir / "step.weir").string();
  Result two = run(common + " --data-parallel 2 --recompute auto --save-training-graph " + step);
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_NE(two.output.find("data parallel: 2 ranks"), std::string::npos) << two.output;
  // Two halves of each batch, gradients averaged: every step's loss is that
  // of one device on the whole batch, up to the order of float sums.
  std::vector<double> whole = step_losses(one.output), halves = step_losses(two.output);
  ASSERT_EQ(whole.size(), 3u) << one.output;
  ASSERT_EQ(halves.size(), 3u) << two.output;
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_NEAR(halves[i], whole[i], 1e-5 * std::abs(whole[i])) << "step " << i + 1 << "\n" << one.output << two.output;
  }
  // Result lines carry 9 significant digits.
  EXPECT_NE(one.output.find("final_loss: " + [&] {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", whole.back());
    return std::string(text);
  }()), std::string::npos) << one.output;
  // The saved step is one rank's program; train --graph runs it on as many
  // ranks as asked (one: its AllReduces average over one rank).
  Result saved = run("train --graph " + step + " --data synthetic --steps 2 --data-parallel 2");
  ASSERT_EQ(saved.status, 0) << saved.output;
  EXPECT_NE(saved.output.find("steps: 2"), std::string::npos) << saved.output;
  Result alone = run("train --graph " + step + " --data synthetic --steps 2");
  ASSERT_EQ(alone.status, 0) << alone.output;
  expect_error(run("train --model mlp --data synthetic --steps 1 --batch 7 --data-parallel 2"), "does not split evenly over 2");
  std::string plain = (dir / "plain.weir").string();
  ASSERT_EQ(run("train --model mlp --data synthetic --steps 1 --save-training-graph " + plain).status, 0);
  expect_error(run("train --graph " + plain + " --data synthetic --steps 1 --data-parallel 2"), "no AllReduce");
}

TEST(GraphRunner, TrainsASavedTrainingGraph) {
  testing::ScratchDir dir;
  std::string step = (dir / "step.weir").string();
  Result made = run("train --model mlp --data synthetic --steps 1 --save-training-graph " + step);
  ASSERT_EQ(made.status, 0) << made.output;
  Result first = run("train --graph " + step + " --data synthetic --steps 20 --lr 0.01 --save " + (dir / "trained.weir").string());
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("steps: 20"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("ms_per_step: "), std::string::npos) << first.output;
  // The trained file starts where the first run stopped: its loss is lower than a fresh start's.
  auto loss_of = [](const std::string& output) {
    size_t at = output.find("final_loss: ");
    return at == std::string::npos ? -1.0 : std::stod(output.substr(at + 12));
  };
  Result fresh = run("train --graph " + step + " --data synthetic --steps 1 --lr 0.01");
  Result resumed = run("train --graph " + (dir / "trained.weir").string() + " --data synthetic --steps 1 --lr 0.01");
  ASSERT_EQ(fresh.status, 0) << fresh.output;
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_LT(loss_of(resumed.output), loss_of(fresh.output)) << fresh.output << resumed.output;
  // An inference model is not a training graph.
  Result inference = run("train --model mlp --data synthetic --steps 1 --save " + (dir / "infer.weir").string());
  ASSERT_EQ(inference.status, 0) << inference.output;
  expect_error(run("train --graph " + (dir / "infer.weir").string() + " --data synthetic --steps 1"), "not a training graph");
  // A GPU that is not there is named with the reason (no CUDA in the build, no GPU, or too few).
  expect_error(run("run " + (dir / "infer.weir").string() + " --random-inputs --device cuda:99"), "--device cuda:99: ");
  expect_error(run("run " + (dir / "infer.weir").string() + " --random-inputs --device tpu"), "tpu");
}

// An input declared far larger than memory: --random-inputs refuses it by
// the per-tensor cap before allocating (it once asked for 800 GB); a size
// past 64 bits is refused when the model loads.
TEST(GraphRunner, RandomInputsOfHugeDeclaredInputsAreRefused) {
  testing::ScratchDir dir;
  for (const auto& [name, dims] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"huge", {int64_t{1} << 20, int64_t{1} << 20, 200}},
           {"overflow", {int64_t{1} << 40, int64_t{1} << 40}}}) {
    Model model;
    model.graph = std::make_unique<Graph>("g");
    std::vector<Dim> shape(dims.begin(), dims.end());
    Value* x = model.graph->add_input("x", {DType::kFloat32, Shape(shape)});
    model.graph->add_output(model.graph->add_node("Relu", {x}, 1, {}, "relu")->output(0));
    save_model(model, dir / (name + ".weir"));
    auto start = std::chrono::steady_clock::now();
    Result r = run("run " + (dir / (name + ".weir")).string() + " --random-inputs");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    if (name == "huge") {
      expect_error(r, "file '" + (dir / "huge.weir").string() +
                          "': --random-inputs input 'x' f32[1048576,1048576,200] needs 879609302220800 bytes, over the limit");
    } else {
      expect_error(r, "graph input 'x' has a shape whose element count overflows 64 bits");  // refused at load
    }
  }
}

// launch starts N ranks with the world's variables, prefixes their lines,
// and when one fails stops the rest at once (their process groups too) and
// names the rank and its exit status.
TEST(GraphRunner, LaunchStartsRanksAndStopsThemWhenOneFails) {
  Result r = run("launch -n 3 --master-port 31000 -- sh -c "
                          "'echo world $WEIR_RANK/$WEIR_WORLD_SIZE local $WEIR_LOCAL_RANK/$WEIR_LOCAL_WORLD_SIZE "
                          "at $WEIR_MASTER_ADDR:$WEIR_MASTER_PORT; echo to stderr >&2'");
  ASSERT_EQ(r.status, 0) << r.output;
  for (int rank = 0; rank < 3; ++rank) {
    std::string rank_text = std::to_string(rank);
    EXPECT_NE(r.output.find("[rank " + rank_text + "] world " + rank_text + "/3 local " + rank_text + "/3 at 127.0.0.1:31000"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("[rank " + rank_text + "] to stderr"), std::string::npos) << r.output;
  }
  // A second host's ranks of a two-host job.
  r = run("launch -n 2 --nnodes 2 --node-rank 1 -- sh -c 'echo $WEIR_RANK of $WEIR_WORLD_SIZE'");
  EXPECT_NE(r.output.find("[rank 3] 3 of 4"), std::string::npos) << r.output;

  auto start = std::chrono::steady_clock::now();
  r = run("launch -n 2 -- sh -c 'if [ $WEIR_RANK = 1 ]; then exit 3; fi; sleep 60'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("error: launch: rank 1 exited with status 3"), std::string::npos) << r.output;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30)) << "rank 0's sleep was not stopped";

  expect_error(run("launch -n 0 -- true"), "-n must be at least 1");
  expect_error(run("launch -n 1 --nnodes 2 --node-rank 2 -- true"), "--node-rank 2");
  r = run("launch -n 1 -- /nonexistent/program");
  EXPECT_NE(r.output.find("cannot run '/nonexistent/program'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 0 exited with status 127"), std::string::npos) << r.output;
}

TEST(GraphRunner, UsageErrors) {
  expect_error(run("train --model vgg --data synthetic --steps 1"), "resnet18");
  Result none = run("");
  EXPECT_NE(none.status, 0);
  Result help = run("train --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--optimizer"), std::string::npos) << help.output;
  Result synthetic = run("train --model bert --data synthetic --steps 3 --layers 1");
  EXPECT_EQ(synthetic.status, 0) << synthetic.output;
  EXPECT_NE(synthetic.output.find("ms_per_step: "), std::string::npos) << synthetic.output;
}

}  // namespace
}  // namespace weir
