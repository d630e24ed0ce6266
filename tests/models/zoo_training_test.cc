// Every zoo model, small: it builds, learns a fixed batch, and its trained
// inference graph saves as a .weir model and exports as an ONNX model that
// both load and run to the in-memory graph's results. On the asynchronous
// test backend (streams on their own threads, completion by event) each
// model infers and trains on two data-parallel ranks to the CPU
// backend's results bit for bit, and the ranks' parameters stay equal. Under ASan+UBSan (the
// sanitize preset) this is the zoo's sanitizer sweep: training, saving,
// exporting, importing and running each model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "core/model_io.h"
#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "frontend/optim/optimizer.h"
#include "frontend/train/trainer.h"
#include "models/train_classifier.h"
#include "models/zoo.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/async_host_backend.h"
#include "tests/test_util.h"

namespace weir {
namespace {

// Random examples of the model's input for `batch` rows, and labels.
std::pair<Tensor, Tensor> random_batch(const models::ClassifierGraph& model, const models::ZooOptions& zoo, int64_t batch,
                                       uint64_t seed) {
  std::vector<int64_t> sizes = {batch};
  sizes.insert(sizes.end(), model.example_shape.begin(), model.example_shape.end());
  Tensor x(model.input_dtype, sizes);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (model.input_dtype == DType::kInt64) {
      x.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.vocab));
    } else {
      x.data<float>()[i] = static_cast<float>(rng() % 1000) / 1000.0f;
    }
  }
  Tensor y(DType::kInt64, {batch});
  for (int64_t i = 0; i < batch; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.classes));
  return {x, y};
}

// A few steps of Adam on one fixed random batch must lower the loss, and the
// trained inference graph must round-trip through a .weir file and an ONNX export.
void learns_a_fixed_batch_and_saves(const std::string& name, const models::ZooOptions& zoo, int64_t batch) {
  models::ClassifierGraph train = models::build_classifier(name, batch, true, zoo);
  TrainingGraph info = minimize(*train.graph, train.loss, {.kind = OptimizerKind::kAdam});
  Session session(compile(*train.graph));
  if (train.class_centres) models::initialize_class_centres(session, *train.class_centres, 0);
  auto [x, y] = random_batch(train, zoo, batch, 3);
  double first = 0, last = 0;
  for (int64_t step = 1; step <= 8; ++step) {
    std::map<std::string, Tensor> feeds = {{train.input, x},
                                           {train.labels, y},
                                           {info.lr_input, Tensor::scalar<float>(2e-3f)},
                                           {info.step_input, Tensor::scalar<int64_t>(step)}};
    double loss = session.run(feeds)[0].data<float>()[0];
    ASSERT_TRUE(std::isfinite(loss)) << name << " step " << step;
    if (step == 1) first = loss;
    last = loss;
  }
  std::printf("%s: %zu parameters, loss %.4f -> %.4f over 8 steps\n", name.c_str(), info.parameters.size(), first, last);
  EXPECT_LT(last, first) << name;

  models::ClassifierGraph infer = models::build_classifier(name, 0, false, zoo);
  bake_state(session, *infer.graph);
  Model model;
  model.graph = std::move(infer.graph);
  std::vector<Tensor> in_memory = Session(compile(*model.graph)).run({{train.input, x}});
  ASSERT_EQ(in_memory.size(), 1u);
  EXPECT_EQ(in_memory[0].sizes(), (std::vector<int64_t>{batch, zoo.classes}));

  testing::ScratchDir dir;
  save_model(model, dir / (name + ".weir"));
  Model loaded = load_model(dir / (name + ".weir"));
  std::vector<Tensor> from_weir = Session(compile(*loaded.graph)).run({{train.input, x}});
  ASSERT_EQ(from_weir.size(), 1u);
  EXPECT_TRUE(from_weir[0].bitwise_equal(in_memory[0])) << name << ": the .weir model computes other logits";

  export_onnx_model(model, (dir / (name + ".onnx")).string());
  Model imported = import_onnx_model((dir / (name + ".onnx")).string());
  std::vector<Tensor> from_onnx = Session(compile(*imported.graph)).run({{train.input, x}});
  ASSERT_EQ(from_onnx.size(), 1u);
  ASSERT_EQ(from_onnx[0].sizes(), in_memory[0].sizes());
  // The ONNX graph is the same computation, but import may fuse differently.
  const float* expected = in_memory[0].data<float>();
  const float* actual = from_onnx[0].data<float>();
  for (int64_t i = 0; i < in_memory[0].num_elements(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-4 + 1e-4 * std::abs(expected[i])) << name << " ONNX logit " << i;
  }
}

SessionOptions async_backend() {
  SessionOptions options;
  options.make_backend = [](const Device& device, Allocator& allocator) {
    return testing::make_async_host_backend(device, allocator);
  };
  return options;
}

void runs_and_trains_on_an_async_backend(const std::string& name, const models::ZooOptions& zoo, int64_t batch) {
  // Inference.
  models::ClassifierGraph infer = models::build_classifier(name, 0, false, zoo);
  auto [x, y] = random_batch(infer, zoo, batch, 5);
  std::shared_ptr<const Plan> inference = compile(*infer.graph);
  std::vector<Tensor> expected = Session(inference).run({{infer.input, x}});
  std::vector<Tensor> got = Session(inference, async_backend()).run({{infer.input, x}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].bitwise_equal(expected[0])) << name << " inference";

  // Three Adam steps, data parallel on two ranks: AllReduce nodes on the
  // communication streams of two ranks' backends (and arcface's head model
  // parallel over them).
  models::ZooOptions two_ranks = zoo;
  two_ranks.head_ranks = 2;
  models::ClassifierGraph train = models::build_classifier(name, batch / 2, true, two_ranks);
  Strategy strategy;
  strategy.data_parallel.ranks = 2;
  if (train.class_centres) strategy.data_parallel.distributed_parameters = {train.class_centres->weight};
  TrainingGraph info = minimize(*train.graph, train.loss, {.kind = OptimizerKind::kAdam}, strategy);
  std::shared_ptr<const Plan> step = compile(*train.graph);
  InProcessRanks cpu(step, 2), async(step, 2, async_backend());
  for (int r = 0; r < 2 && train.class_centres; ++r) {
    models::initialize_class_centres(cpu.session(r), *train.class_centres, r);
    models::initialize_class_centres(async.session(r), *train.class_centres, r);
  }
  for (int64_t number = 1; number <= 3; ++number) {
    std::vector<std::map<std::string, Tensor>> feeds;
    for (int64_t r = 0; r < 2; ++r) {
      feeds.push_back({{train.input, x.slice(r * batch / 2, (r + 1) * batch / 2)},
                       {train.labels, y.slice(r * batch / 2, (r + 1) * batch / 2)},
                       {info.lr_input, Tensor::scalar<float>(2e-3f)},
                       {info.step_input, Tensor::scalar<int64_t>(number)}});
    }
    std::vector<std::vector<Tensor>> a = cpu.run(feeds), b = async.run(feeds);
    for (size_t r = 0; r < 2; ++r) {
      ASSERT_FALSE(a[r].empty());
      ASSERT_EQ(a[r].size(), b[r].size());
      EXPECT_TRUE(b[r][0].bitwise_equal(a[r][0])) << name << " rank " << r << " loss of step " << number << ": "
                                                  << b[r][0].data<float>()[0] << " vs " << a[r][0].data<float>()[0];
    }
  }
  for (const std::string& parameter : info.parameters) {
    for (int r = 0; r < 2; ++r) {
      EXPECT_TRUE(async.session(r).state(parameter).bitwise_equal(cpu.session(r).state(parameter)))
          << name << " rank " << r << " parameter " << parameter;
    }
    const bool sharded = train.class_centres && parameter == train.class_centres->weight;
    EXPECT_EQ(cpu.session(1).state(parameter).bitwise_equal(cpu.session(0).state(parameter)), !sharded)
        << name << " parameter " << parameter << (sharded ? " (each rank's own classes) is the same on both ranks"
                                                          : " differs between the ranks");
  }
}

struct ZooCase {
  std::string name;
  models::ZooOptions options;
  int64_t batch;
};

class Zoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(Zoo, LearnsSavesExportsAndRuns) {
  learns_a_fixed_batch_and_saves(GetParam().name, GetParam().options, GetParam().batch);
}

TEST_P(Zoo, RunsAndTrainsOnAnAsyncBackendBitForBit) {
  runs_and_trains_on_an_async_backend(GetParam().name, GetParam().options, GetParam().batch);
}

// Small enough for the sanitizer suite; images 28x28 grey for the Fashion-MNIST
// models, 32x32 colour for the ImageNet-style ones.
INSTANTIATE_TEST_SUITE_P(
    Models, Zoo,
    ::testing::Values(ZooCase{"mlp", {.classes = 10, .mlp_layers = 2, .mlp_width = 32, .mlp_dropout = 0.1}, 8},
                      ZooCase{"lenet", {.classes = 10}, 4},
                      ZooCase{"resnet18", {.classes = 10, .in_channels = 3, .image_size = 32, .resnet_width = 8}, 4},
                      ZooCase{"resnet50", {.classes = 10, .in_channels = 3, .image_size = 32, .resnet_width = 4}, 2},
                      ZooCase{"mobilenet_v2", {.classes = 10, .in_channels = 3, .image_size = 32}, 2},
                      ZooCase{"squeezenet", {.classes = 10, .in_channels = 3, .image_size = 32}, 2},
                      ZooCase{"bert", {.classes = 3, .layers = 2, .hidden = 32, .heads = 4, .seq = 12, .vocab = 50}, 4},
                      ZooCase{"arcface", {.classes = 7, .image_size = 16, .embedding = 32}, 4}),
    [](const ::testing::TestParamInfo<ZooCase>& zoo_info) { return zoo_info.param.name; });

TEST(ZooNames, EveryModelIsCovered) {
  // A model added to the zoo must be added to the cases above.
  std::vector<std::string> covered = {"mlp", "lenet", "resnet18", "resnet50", "mobilenet_v2", "squeezenet", "bert", "arcface"};
  EXPECT_EQ(models::zoo_names(), covered);
}

TEST(ZooNames, UnknownModelsAreNamed) {
  try {
    models::build_classifier("vgg", 1, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resnet18"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir
