// Gradient rules of the elementwise ops against central finite differences
// in f64, including inputs that were broadcast (their gradients are summed).
#include <gtest/gtest.h>

#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::make_tensor;
using testing::random_values;

Tensor random_f64(const std::vector<int64_t>& sizes, uint32_t seed, double low = -2.0, double high = 2.0) {
  return make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(sizes), seed, low, high), sizes);
}

// Values in [0.5, 2) with random signs: away from zero, for divisors and kinks.
Tensor away_from_zero(const std::vector<int64_t>& sizes, uint32_t seed) {
  std::vector<double> values = random_values(DType::kFloat64, count_of(sizes), seed, 0.5, 2.0);
  std::mt19937 engine(seed);
  for (double& value : values) value *= (engine() & 1) ? 1 : -1;
  return make_tensor(DType::kFloat64, values, sizes);
}

const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kBroadcastPairs = {
    {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{4, 1}, {1, 5}}, {{2, 1, 4}, {3, 1}}, {{}, {2, 2}},
};

TEST(ElementwiseGradients, AddSubMulDivIncludingBroadcastInputs) {
  uint32_t seed = 1;
  for (const auto& [a, b] : kBroadcastPairs) {
    check_gradient("Add", {random_f64(a, seed++), random_f64(b, seed++)}, {0, 1});
    check_gradient("Sub", {random_f64(a, seed++), random_f64(b, seed++)}, {0, 1});
    check_gradient("Mul", {random_f64(a, seed++), random_f64(b, seed++)}, {0, 1});
    check_gradient("Div", {random_f64(a, seed++), away_from_zero(b, seed++)}, {0, 1});
  }
}

TEST(ElementwiseGradients, UnaryOps) {
  check_gradient("Neg", {random_f64({3, 4}, 11)}, {0});
  check_gradient("Relu", {away_from_zero({3, 4}, 12)}, {0});  // away from the kink at 0
  check_gradient("Sigmoid", {random_f64({3, 4}, 13, -6, 6)}, {0});
  check_gradient("Tanh", {random_f64({2, 5}, 14, -3, 3)}, {0});
  check_gradient("Identity", {random_f64({7}, 15)}, {0});
  check_gradient("Exp", {random_f64({3, 4}, 16)}, {0});
  check_gradient("Log", {random_f64({3, 4}, 17, 0.5, 4)}, {0});
  check_gradient("Sqrt", {random_f64({3, 4}, 18, 0.5, 4)}, {0});
  check_gradient("Abs", {away_from_zero({3, 4}, 19)}, {0});
  check_gradient("Sign", {away_from_zero({3, 4}, 20)}, {});  // flat: no gradient flows
}

TEST(ElementwiseGradients, SameShapeInputsNeedNoReduction) {
  // When nothing was broadcast the rule passes dY through without SumToShape.
  Graph g("g");
  Value* a = g.add_input("a", {DType::kFloat32, Shape{Dim::symbol("N"), 3}});
  Value* b = g.add_input("b", {DType::kFloat32, Shape{Dim::symbol("N"), 3}});
  Node* add = g.add_node("Add", {a, b}, 1, {}, "add");
  infer_graph_types(g, default_op_registry());
  Value* dy = g.add_input("dY", add->output(0)->type());
  GradientContext ctx(g, *add, {dy});
  default_op_registry().get("Add").gradient_rule()(ctx);
  EXPECT_EQ(ctx.input_grads()[0], dy);
  EXPECT_EQ(ctx.input_grads()[1], dy);
  EXPECT_EQ(g.num_nodes(), 1u);
}

}  // namespace
}  // namespace weir
