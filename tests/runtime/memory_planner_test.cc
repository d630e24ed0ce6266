// The memory planner: buffers are reused and written in place where the
// schedule allows, never where two values can be alive at once, and planned
// runs give the same bits as unplanned ones.
#include <gtest/gtest.h>

#include "ops/graph_evaluator.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace weir {
namespace {

using weir::testing::random_tensor;
using weir::testing::resnet_style_graph;

// No two values whose memory overlaps may be alive at the same time: for
// any such pair, one's readers all happen before the other's producer.
// Returns how many overlapping pairs it checked.
int expect_no_conflicts(const Plan& plan) {
  const Schedule& schedule = plan.schedule();
  const MemoryPlan& memory = plan.memory();
  std::vector<std::pair<const Value*, BufferSlot>> slots(memory.slots.begin(), memory.slots.end());
  auto last_touch_before = [&](const Value* a, const Value* b) {
    int def_b = schedule.step_of(b->producer());
    auto touches = [&](const Value* v) {
      std::vector<int> t = {schedule.step_of(v->producer())};
      for (const Use& use : v->uses()) {
        if (use.node == nullptr) continue;
        t.push_back(schedule.step_of(use.node));
        // Readers of a view read the viewed buffer too.
        for (const Value* out : use.node->outputs()) {
          if (out != nullptr && default_op_registry().get(use.node->op_type()).has(OpTrait::kViewOfInput)) {
            for (const Use& u : out->uses()) {
              if (u.node != nullptr) t.push_back(schedule.step_of(u.node));
            }
          }
        }
      }
      return t;
    };
    for (int t : touches(a)) {
      if (t != def_b && !schedule.happens_before(t, def_b)) return false;
    }
    return true;
  };
  int checked = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    for (size_t j = i + 1; j < slots.size(); ++j) {
      const auto& [a, sa] = slots[i];
      const auto& [b, sb] = slots[j];
      if (sa.arena != sb.arena) continue;
      bool overlap = sa.offset < sb.offset + sb.bytes && sb.offset < sa.offset + sa.bytes;
      if (!overlap) continue;
      ++checked;
      // In-place pairs share memory by design: b is written by a's reader.
      bool in_place_pair = (sb.in_place && b->producer()->input(0) == a) || (sa.in_place && a->producer()->input(0) == b);
      if (in_place_pair) continue;
      EXPECT_TRUE(last_touch_before(a, b) || last_touch_before(b, a))
          << a->name() << " and " << b->name() << " share memory while both alive";
    }
  }
  return checked;
}

TEST(MemoryPlanner, AChainRunsInPlaceInOneBuffer) {
  Graph g("chain");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{1000}});
  Value* h = g.add_node("Exp", {x})->output(0);  // reads the graph input: a fresh buffer
  for (int i = 0; i < 8; ++i) h = g.add_node(i % 2 ? "Neg" : "Relu", {h})->output(0);
  h = g.add_node("Mul", {h, x})->output(0);
  g.add_output(h);
  infer_graph_types(g, default_op_registry());
  auto plan = compile(g);
  EXPECT_EQ(plan->memory().total_value_bytes, 9 * 4000);
  EXPECT_EQ(plan->memory().planned_bytes(), 4032);  // one 64-byte-aligned buffer
  EXPECT_EQ(plan->memory().in_place_values, 8);
  Tensor input = random_tensor({1000}, 9);
  Session session(plan);
  EXPECT_TRUE(session.run({{"x", input}})[0].bitwise_equal(evaluate_graph(g, {{"x", input}})[0]));
}

TEST(MemoryPlanner, ResNetStylePeakIsWellBelowTheSumOfIntermediates) {
  auto g = resnet_style_graph(8, 16, 32);
  auto plan = compile(*g);
  const MemoryPlan& memory = plan->memory();
  std::cout << "resnet-style graph (8 blocks, 16x32x32): " << memory.planned_values << " values, sum of intermediates "
            << memory.total_value_bytes << " bytes, planned peak " << memory.planned_bytes() << " bytes ("
            << memory.in_place_values << " in place)\n";
  EXPECT_LT(memory.planned_bytes() * 4, memory.total_value_bytes);
  EXPECT_GT(expect_no_conflicts(*plan), 0);

  Tensor x = random_tensor({1, 3, 32, 32}, 4);
  CompileOptions unplanned;
  unplanned.plan_memory = false;
  Session planned_session(plan), unplanned_session(compile(*g, unplanned));
  planned_session.reset_peak_memory();
  std::vector<Tensor> a = planned_session.run({{"x", x}});
  int64_t planned_peak = planned_session.memory_stats(Device::cpu()).stats.peak_bytes;
  unplanned_session.reset_peak_memory();
  std::vector<Tensor> b = unplanned_session.run({{"x", x}});
  int64_t unplanned_peak = unplanned_session.memory_stats(Device::cpu()).stats.peak_bytes;
  std::cout << "measured peak: planned " << planned_peak << " bytes, unplanned " << unplanned_peak << " bytes\n";
  EXPECT_TRUE(a[0].bitwise_equal(b[0]));
  EXPECT_TRUE(a[0].bitwise_equal(evaluate_graph(*g, {{"x", x}})[0]));
  EXPECT_LE(planned_peak, memory.planned_bytes() + 65536);
}

TEST(MemoryPlanner, AViewKeepsTheBufferItViewsAlive) {
  Graph g("views");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4, 6}});
  Value* a = g.add_node("Exp", {x}, 1, {}, "a")->output(0);
  Value* shape = g.add_constant("shape", Tensor::from_vector<int64_t>({6, 4}, {2}));
  Value* view = g.add_node("Reshape", {a, shape}, 1, {}, "view")->output(0);
  // Work between the view and its reader that would like a's memory.
  Value* b = g.add_node("Neg", {x}, 1, {}, "b")->output(0);
  b = g.add_node("Exp", {b}, 1, {}, "b2")->output(0);
  Value* b_view = g.add_node("Reshape", {b, shape}, 1, {}, "b_view")->output(0);
  Value* sum = g.add_node("Add", {view, b_view}, 1, {}, "sum")->output(0);
  g.add_output(sum);
  infer_graph_types(g, default_op_registry());
  auto plan = compile(g);
  expect_no_conflicts(*plan);
  Tensor input = random_tensor({4, 6}, 10);
  Session session(plan);
  EXPECT_TRUE(session.run({{"x", input}})[0].bitwise_equal(evaluate_graph(g, {{"x", input}})[0]));
}

}  // namespace
}  // namespace weir
