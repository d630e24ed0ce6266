// Dropout: the identity outside training; in training the kept fraction,
// the scaling, the mask, reproducibility by seed and across thread counts;
// the gradient against the mask; and the error when the mask is missing.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "ops/threading.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

TEST(Dropout, IsTheIdentityOutsideTraining) {
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 50, 1), {5, 10});
  std::vector<Tensor> out = run_op("Dropout", {x, Tensor::scalar<float>(0.5f)}, {}, 2);
  EXPECT_EQ(to_doubles(out[0]), to_doubles(x));
  EXPECT_EQ(to_doubles(out[1]), std::vector<double>(50, 1));
}

TEST(Dropout, TrainingKeepsOneMinusRatioAndScales) {
  const int64_t n = 200000;
  std::vector<double> values = random_values(DType::kFloat32, n, 2, 0.5, 2.0);
  Tensor x = make_tensor(DType::kFloat32, values, {n});
  std::map<std::string, Attribute> seeded = {{"seed", Attribute(int64_t{42})}};
  std::vector<Tensor> out = run_op("Dropout", {x, Tensor::scalar<float>(0.3f), Tensor::scalar<bool>(true)}, seeded, 2);
  std::vector<double> y = to_doubles(out[0]), mask = to_doubles(out[1]);
  double kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto k = static_cast<size_t>(i);
    kept += mask[k];
    ASSERT_NEAR(y[k], mask[k] != 0 ? values[k] / 0.7 : 0.0, 1e-5 * std::fabs(values[k]) + 1e-6);
  }
  // Binomial(n, 0.7): the standard deviation of the fraction is ~0.001.
  EXPECT_NEAR(kept / n, 0.7, 0.006);
  // Same seed, fresh kernel: the same mask. Another seed: a different one.
  EXPECT_EQ(to_doubles(run_op("Dropout", {x, Tensor::scalar<float>(0.3f), Tensor::scalar<bool>(true)}, seeded, 2)[1]), mask);
  EXPECT_NE(to_doubles(run_op("Dropout", {x, Tensor::scalar<float>(0.3f), Tensor::scalar<bool>(true)},
                              {{"seed", Attribute(int64_t{7})}}, 2)[1]),
            mask);
  set_intra_op_threads(1);
  std::vector<double> one_thread =
      to_doubles(run_op("Dropout", {x, Tensor::scalar<float>(0.3f), Tensor::scalar<bool>(true)}, seeded, 2)[1]);
  set_intra_op_threads(0);
  EXPECT_EQ(one_thread, mask);
}

TEST(Dropout, GradientFollowsTheMask) {
  Graph g("dropout");
  Value* x = g.add_input("x", {DType::kFloat64, Shape{1000}});
  Value* ratio = g.add_constant("ratio", Tensor::scalar<double>(0.25));
  Value* training = g.add_constant("training", Tensor::scalar<bool>(true));
  Node* node = g.add_node("Dropout", {x, ratio, training}, 2, {{"seed", Attribute(int64_t{3})}}, "drop");
  infer_graph_types(g, default_op_registry());
  Value* dy = g.add_input("dy", node->output(0)->type());
  GradientContext ctx(g, *node, {dy, nullptr});
  default_op_registry().get("Dropout").gradient_rule()(ctx);
  g.add_output(node->output(1));
  g.add_output(ctx.input_grads()[0]);
  infer_graph_types(g, default_op_registry());
  std::vector<double> grads = random_values(DType::kFloat64, 1000, 9);
  std::vector<Tensor> out = evaluate_graph(g, {{"x", make_tensor(DType::kFloat64, random_values(DType::kFloat64, 1000, 8), {1000})},
                                               {"dy", make_tensor(DType::kFloat64, grads, {1000})}});
  std::vector<double> mask = to_doubles(out[0]), dx = to_doubles(out[1]);
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_DOUBLE_EQ(dx[i], mask[i] != 0 ? grads[i] / 0.75 : 0.0);

  Graph bare("bare");
  Node* single = bare.add_node("Dropout", {bare.add_input("x", {DType::kFloat32, Shape{3}})}, 1, {}, "single");
  infer_graph_types(bare, default_op_registry());
  GradientContext missing(bare, *single, {bare.add_input("dy", {DType::kFloat32, Shape{3}})});
  EXPECT_THROW(default_op_registry().get("Dropout").gradient_rule()(missing), Error);
}

}  // namespace
}  // namespace weir
