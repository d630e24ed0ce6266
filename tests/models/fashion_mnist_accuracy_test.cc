// MLP and LeNet trained on Fashion-MNIST for one epoch (Adam 1e-3, batch
// 64, seeded) against the accuracy targets. Its own binary so CTest runs it
// alone (RUN_SERIAL): its time per step should not depend on what else runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "frontend/data/idx.h"
#include "models/train_classifier.h"

namespace weir {
namespace {

class FashionMnistTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::filesystem::exists(kFashionMnistDir)) data_ = new FashionMnist(load_fashion_mnist());
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  void SetUp() override {
    if (data_ == nullptr) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  static models::ClassifierTrainingResult train(const std::string& model) {
    models::ClassifierTraining options;
    options.model = model;
    options.log = nullptr;
    return models::train_classifier(options, data_->train_images, data_->train_labels, &data_->test_images,
                                    &data_->test_labels);
  }
  static FashionMnist* data_;
};
FashionMnist* FashionMnistTraining::data_ = nullptr;

TEST_F(FashionMnistTraining, MlpReaches084AfterOneEpoch) {
  auto result = train("mlp");
  std::printf("mlp: test_accuracy %.4f, %.3f ms/step, %lld steps\n", result.test_accuracy, result.ms_per_step,
              static_cast<long long>(result.steps));
  EXPECT_EQ(result.steps, 60000 / 64);
  EXPECT_GE(result.test_accuracy, 0.84);
}

TEST_F(FashionMnistTraining, LenetReaches0875AfterOneEpoch) {
  auto result = train("lenet");
  std::printf("lenet: test_accuracy %.4f, %.3f ms/step, peak %lld bytes\n", result.test_accuracy, result.ms_per_step,
              static_cast<long long>(result.peak_memory_bytes));
  EXPECT_GE(result.test_accuracy, 0.875);
}

}  // namespace
}  // namespace weir
