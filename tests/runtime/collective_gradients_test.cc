// The gradients of AllGather (a sum ReduceScatter) and of a sum
// ReduceScatter (an AllGather), differentiated by autodiff and run as the 3
// ranks of an in-process world, against the sums over ranks worked out by
// hand; a collective that skips is refused a gradient.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"
#include "passes/autodiff/autodiff.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "tests/test_util.h"

namespace weir {
namespace {

constexpr int kRanks = 3;

// loss = sum(collective(x) * w); outputs d(loss)/dx.
std::shared_ptr<const Plan> gradient_plan(const std::string& op, const Shape& x_shape, const Shape& w_shape) {
  Graph g(op + "_gradient");
  Value* x = g.add_input("x", {DType::kFloat32, x_shape});
  Value* w = g.add_input("w", {DType::kFloat32, w_shape});
  std::map<std::string, Attribute> attrs = {{"group", Attribute(std::vector<int64_t>{0, 1, 2})}, {"tag", Attribute(op)}};
  if (op == "ReduceScatter") attrs["reduction"] = Attribute(std::string("sum"));
  Node* collective = g.add_node(op, {x}, 1, attrs, "collective");
  Node* product = g.add_node("Mul", {collective->output(0), w}, 1, {}, "product");
  Node* loss = g.add_node("ReduceSum", {product->output(0)}, 1, {{"keepdims", Attribute(int64_t{0})}}, "loss");
  infer_graph_types(g, default_op_registry());
  g.add_output(append_backward(g, loss->output(0), {x}, default_op_registry()).front());
  infer_graph_types(g, default_op_registry());
  return compile(g);
}

std::vector<std::vector<float>> run(const std::shared_ptr<const Plan>& plan, const std::vector<int64_t>& x_sizes,
                                    const std::vector<std::vector<float>>& w, const std::vector<int64_t>& w_sizes) {
  InProcessRanks world(plan, kRanks);
  std::vector<std::map<std::string, Tensor>> feeds;
  for (int r = 0; r < kRanks; ++r) {
    feeds.push_back({{"x", Tensor::from_vector(testing::random_floats(static_cast<size_t>(x_sizes[0] * x_sizes[1]), 5 + r), x_sizes)},
                     {"w", Tensor::from_vector(w[static_cast<size_t>(r)], w_sizes)}});
  }
  std::vector<std::vector<float>> grads;
  for (const std::vector<Tensor>& out : world.run(feeds)) {
    grads.emplace_back(out[0].data<float>(), out[0].data<float>() + out[0].num_elements());
  }
  return grads;
}

TEST(CollectiveGradients, AllGatherBacksUpAsASumReduceScatter) {
  std::vector<std::vector<float>> w;
  for (int r = 0; r < kRanks; ++r) w.push_back(testing::random_floats(18, 40 + r));  // [6, 3]: 3 blocks of [2, 3]
  const std::vector<std::vector<float>> grads = run(gradient_plan("AllGather", Shape{2, 3}, Shape{6, 3}), {2, 3}, w, {6, 3});
  for (int s = 0; s < kRanks; ++s) {
    for (int i = 0; i < 6; ++i) {
      float want = 0;
      for (int r = 0; r < kRanks; ++r) want += w[static_cast<size_t>(r)][static_cast<size_t>(s * 6 + i)];
      EXPECT_FLOAT_EQ(grads[static_cast<size_t>(s)][static_cast<size_t>(i)], want) << "rank " << s << " element " << i;
    }
  }
}

TEST(CollectiveGradients, SumReduceScatterBacksUpAsAnAllGather) {
  std::vector<std::vector<float>> w;
  for (int r = 0; r < kRanks; ++r) w.push_back(testing::random_floats(6, 50 + r));  // [2, 3]: rank r's part
  const std::vector<std::vector<float>> grads = run(gradient_plan("ReduceScatter", Shape{6, 3}, Shape{2, 3}), {6, 3}, w, {2, 3});
  for (int s = 0; s < kRanks; ++s) {
    for (int i = 0; i < 18; ++i) {
      EXPECT_EQ(grads[static_cast<size_t>(s)][static_cast<size_t>(i)], w[static_cast<size_t>(i / 6)][static_cast<size_t>(i % 6)])
          << "rank " << s << " element " << i;
    }
  }
}

TEST(CollectiveGradients, SkippingCollectivesAndOtherReductionsHaveNone) {
  Graph g("skip");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{2}});
  Value* skip = g.add_input("skip", {DType::kBool, Shape{}});
  Node* gather = g.add_node("AllGather", {x, skip}, 1, {{"group", Attribute(std::vector<int64_t>{0, 1})}}, "gather");
  Node* loss = g.add_node("ReduceSum", {gather->output(0)}, 1, {{"keepdims", Attribute(int64_t{0})}}, "loss");
  infer_graph_types(g, default_op_registry());
  try {
    append_backward(g, loss->output(0), {x}, default_op_registry());
    FAIL() << "a skipping AllGather was differentiated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has a skip input"), std::string::npos) << e.what();
  }
  Graph h("max");
  Value* y = h.add_input("y", {DType::kFloat32, Shape{4}});
  Node* scatter = h.add_node("ReduceScatter", {y}, 1,
                             {{"group", Attribute(std::vector<int64_t>{0, 1})}, {"reduction", Attribute(std::string("max"))}}, "scatter");
  Node* total = h.add_node("ReduceSum", {scatter->output(0)}, 1, {{"keepdims", Attribute(int64_t{0})}}, "total");
  infer_graph_types(h, default_op_registry());
  EXPECT_THROW(append_backward(h, total->output(0), {y}, default_op_registry()), Error);
}

}  // namespace
}  // namespace weir
