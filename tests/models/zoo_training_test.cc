// The zoo's larger models: ResNet-18/50 and the BERT-style encoder build,
// learn a fixed batch, and save as .weir models that load and run.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/error.h"
#include "core/model_io.h"
#include "frontend/optim/optimizer.h"
#include "frontend/train/trainer.h"
#include "models/zoo.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace weir {
namespace {

// A few steps of Adam on one fixed random batch must lower the loss, and the
// trained inference graph must round-trip through a .weir file.
void learns_a_fixed_batch_and_saves(const std::string& name, const models::ZooOptions& zoo, int64_t batch) {
  models::ClassifierGraph train = models::build_classifier(name, batch, true, zoo);
  TrainingGraph info = minimize(*train.graph, train.loss, {.kind = OptimizerKind::kAdam});
  Session session(compile(*train.graph));
  std::vector<int64_t> sizes = {batch};
  sizes.insert(sizes.end(), train.example_shape.begin(), train.example_shape.end());
  Tensor x(train.input_dtype, sizes);
  std::mt19937_64 rng(3);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (train.input_dtype == DType::kInt64) {
      x.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.vocab));
    } else {
      x.data<float>()[i] = static_cast<float>(rng() % 1000) / 1000.0f;
    }
  }
  Tensor y(DType::kInt64, {batch});
  for (int64_t i = 0; i < batch; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.classes));
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
  testing::ScratchDir dir;
  Model model;
  model.graph = std::move(infer.graph);
  save_model(model, dir / (name + ".weir"));
  Model loaded = load_model(dir / (name + ".weir"));
  Session inference(compile(*loaded.graph));
  std::vector<Tensor> out = inference.run({{train.input, x}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{batch, zoo.classes}));
}

TEST(Zoo, Resnet18LearnsAndSaves) {
  learns_a_fixed_batch_and_saves("resnet18", {.classes = 10, .in_channels = 3, .image_size = 32, .resnet_width = 8}, 4);
}

TEST(Zoo, Resnet50LearnsAndSaves) {
  learns_a_fixed_batch_and_saves("resnet50", {.classes = 10, .in_channels = 3, .image_size = 32, .resnet_width = 4}, 2);
}

TEST(Zoo, BertLearnsAndSaves) {
  learns_a_fixed_batch_and_saves("bert", {.classes = 3, .layers = 2, .hidden = 32, .heads = 4, .seq = 12, .vocab = 50}, 4);
}

TEST(Zoo, UnknownModelsAreNamed) {
  try {
    models::build_classifier("vgg", 1, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resnet18"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir
