// The memory planner: buffers are reused and written in place where the
// schedule allows, never where two values can be alive at once, and planned
// runs give the same bits as unplanned ones.
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "ops/graph_evaluator.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace weir {
namespace {

using weir::testing::random_tensor;
using weir::testing::resnet_style_graph;

// The value a view shows (through views that keep the bytes).
const Value* viewed(const Value* value) {
  while (value->producer() != nullptr && value->producer()->num_inputs() > 0 &&
         (value->producer()->op_type() == "Reshape" || value->producer()->op_type() == "Identity")) {
    value = value->producer()->input(0);
  }
  return value;
}

// `piece` placed inside `whole` by design: an input of the Concat that
// produces `whole`, or an output of the Split that reads `whole`.
bool joined_pair(const Value* piece, const Value* whole) {
  const Node* concat = whole->producer();
  if (concat != nullptr && concat->op_type() == "Concat") {
    for (const Value* input : concat->inputs()) {
      if (input != nullptr && viewed(input) == piece) return true;
    }
  }
  const Node* split = piece->producer();
  return split != nullptr && split->op_type() == "Split" && viewed(split->input(0)) == whole;
}

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
      if (in_place_pair || joined_pair(a, b) || joined_pair(b, a)) continue;
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


// The plan's slot for `value` (of the graph compiled), or nullptr.
const BufferSlot* slot_of(const Plan& plan, const Value* value) {
  const Value* compiled = plan.graph().find_value(value->name());
  return compiled != nullptr ? plan.memory().find(compiled) : nullptr;
}

// The bytes of `value`'s slot, as [begin, end) in its arena.
std::pair<int64_t, int64_t> span_of(const Plan& plan, const Value* value) {
  const BufferSlot* slot = slot_of(plan, value);
  if (slot == nullptr) return {-1, -1};
  return {slot->offset, slot->offset + slot->bytes};
}

// Runs `g` planned, with and without joined pieces, and unplanned: the
// same bits.
void expect_runs_alike(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  CompileOptions apart, unplanned;
  apart.join_pieces = false;
  unplanned.plan_memory = false;
  std::vector<Tensor> want = evaluate_graph(g, feeds);
  for (const CompileOptions& options : {CompileOptions{}, apart, unplanned}) {
    Session session(compile(g, options));
    std::vector<Tensor> got = session.run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i].bitwise_equal(want[i])) << "output " << i << (options.join_pieces ? "" : " (pieces apart)")
                                                 << (options.plan_memory ? "" : " (unplanned)");
    }
  }
}

Value* flat(Graph& g, Value* value, int64_t elements, const std::string& name) {
  return g.add_node("Reshape", {value, g.add_constant(name + "/shape", Tensor::from_vector<int64_t>({elements}, {1}))}, 1,
                    {}, name)
      ->output(0);
}

// A bucket: the backward pass's gradients written inside the Concat that
// packs them, at their offsets, so the Concat copies nothing.
TEST(MemoryPlanner, AConcatsInputsAreWrittenInsideItsOutput) {
  Graph g("concat");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4, 4}});
  Value* y = g.add_input("y", {DType::kFloat32, Shape{32}});
  Value* a = g.add_node("Exp", {x}, 1, {}, "a")->output(0);
  Value* b = g.add_node("Neg", {y}, 1, {}, "b")->output(0);
  Value* c = g.add_node("Concat", {flat(g, a, 16, "a_flat"), b}, 1, {{"axis", Attribute(int64_t{0})}}, "c")->output(0);
  // a is read again after the Concat: it stays where it is, inside c.
  Value* later = g.add_node("Sigmoid", {a}, 1, {}, "later")->output(0);
  g.add_output(g.add_node("Exp", {c}, 1, {}, "out")->output(0));
  g.add_output(g.add_node("Neg", {later}, 1, {}, "out2")->output(0));
  infer_graph_types(g, default_op_registry());
  auto plan = compile(g);
  EXPECT_EQ(plan->memory().joined_values, 2);
  const auto [begin, end] = span_of(*plan, c);
  ASSERT_GE(begin, 0);
  EXPECT_EQ(span_of(*plan, a), std::make_pair(begin, begin + 64));
  EXPECT_EQ(span_of(*plan, b), std::make_pair(begin + 64, end));
  expect_no_conflicts(*plan);
  expect_runs_alike(g, {{"x", random_tensor({4, 4}, 11)}, {"y", random_tensor({32}, 12)}});
}

// An averaged bucket: the Split's pieces read where the AllReduce wrote them.
TEST(MemoryPlanner, ASplitsOutputsStayInsideItsInput) {
  Graph g("split");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{48}});
  Value* h = g.add_node("Exp", {x}, 1, {}, "h")->output(0);
  Value* sizes = g.add_constant("sizes", Tensor::from_vector<int64_t>({16, 32}, {2}));
  std::vector<Value*> pieces = g.add_node("Split", {h, sizes}, 2, {{"axis", Attribute(int64_t{0})}}, "split")->outputs();
  // Each piece is written over in place afterwards, inside h.
  Value* p = g.add_node("Exp", {pieces[0]}, 1, {}, "p")->output(0);
  Value* q = g.add_node("Neg", {pieces[1]}, 1, {}, "q")->output(0);
  g.add_output(g.add_node("Concat", {p, q}, 1, {{"axis", Attribute(int64_t{0})}}, "out")->output(0));
  infer_graph_types(g, default_op_registry());
  auto plan = compile(g);
  EXPECT_EQ(plan->memory().joined_values, 2);
  const auto [begin, end] = span_of(*plan, h);
  ASSERT_GE(begin, 0);
  EXPECT_EQ(span_of(*plan, pieces[0]), std::make_pair(begin, begin + 64));
  EXPECT_EQ(span_of(*plan, pieces[1]), std::make_pair(begin + 64, end));
  EXPECT_EQ(span_of(*plan, p), span_of(*plan, pieces[0]));
  expect_no_conflicts(*plan);
  expect_runs_alike(g, {{"x", random_tensor({48}, 13)}});
}

// Where sharing could let one write reach a value still read, or the piece
// is not a byte range at an aligned offset, the pieces keep their own
// memory, and every run is the same.
TEST(MemoryPlanner, PiecesStayApartWhereSharingWouldBeUnsafe) {
  {
    // b would start 40 bytes into c: only a (at 0) joins.
    Graph g("unaligned");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{10}});
    Value* a = g.add_node("Exp", {x}, 1, {}, "a")->output(0);
    Value* b = g.add_node("Neg", {g.add_input("y", {DType::kFloat32, Shape{16}})}, 1, {}, "b")->output(0);
    Value* c = g.add_node("Concat", {a, b}, 1, {{"axis", Attribute(int64_t{0})}}, "c")->output(0);
    g.add_output(g.add_node("Exp", {c}, 1, {}, "out")->output(0));
    infer_graph_types(g, default_op_registry());
    auto plan = compile(g);
    EXPECT_EQ(plan->memory().joined_values, 1);
    EXPECT_EQ(span_of(*plan, a).first, span_of(*plan, c).first);
    expect_no_conflicts(*plan);
    expect_runs_alike(g, {{"x", random_tensor({10}, 14)}, {"y", random_tensor({16}, 15)}});
  }
  {
    // a is written over in place after the Concat (by w, which waits for
    // c's sum): inside c it would change c while c is still read.
    Graph g("written after");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{16}});
    Value* a = g.add_node("Exp", {x}, 1, {}, "a")->output(0);
    Value* b = g.add_node("Neg", {x}, 1, {}, "b")->output(0);
    Value* c = g.add_node("Concat", {a, b}, 1, {{"axis", Attribute(int64_t{0})}}, "c")->output(0);
    Value* total = g.add_node("ReduceSum", {c}, 1, {{"keepdims", Attribute(int64_t{1})}}, "total")->output(0);
    Value* w = g.add_node("Add", {a, total}, 1, {}, "w")->output(0);
    g.add_output(g.add_node("Concat", {w, g.add_node("Exp", {c}, 1, {}, "late")->output(0)}, 1,
                            {{"axis", Attribute(int64_t{0})}}, "out")
                     ->output(0));
    infer_graph_types(g, default_op_registry());
    auto plan = compile(g);
    ASSERT_NE(slot_of(*plan, w), nullptr);
    ASSERT_TRUE(slot_of(*plan, w)->in_place) << "the case needs w written over a";
    const auto [begin, end] = span_of(*plan, c);
    EXPECT_FALSE(span_of(*plan, a).first >= begin && span_of(*plan, a).second <= end) << "a joined c";
    EXPECT_EQ(plan->memory().joined_values, 1);  // b alone
    expect_no_conflicts(*plan);
    expect_runs_alike(g, {{"x", random_tensor({16}, 16)}});
  }
  {
    // h is written over in place after the Split: its pieces keep their own memory.
    Graph g("split input written after");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{32}});
    Value* h = g.add_node("Exp", {x}, 1, {}, "h")->output(0);
    Value* sizes = g.add_constant("sizes", Tensor::from_vector<int64_t>({16, 16}, {2}));
    std::vector<Value*> pieces = g.add_node("Split", {h, sizes}, 2, {{"axis", Attribute(int64_t{0})}}, "split")->outputs();
    Value* total = g.add_node("ReduceSum", {pieces[0]}, 1, {{"keepdims", Attribute(int64_t{1})}}, "total")->output(0);
    Value* u = g.add_node("Add", {h, total}, 1, {}, "u")->output(0);
    Value* later = g.add_node("Exp", {pieces[1]}, 1, {}, "later")->output(0);
    g.add_output(g.add_node("Concat", {u, later}, 1, {{"axis", Attribute(int64_t{0})}}, "out")->output(0));
    infer_graph_types(g, default_op_registry());
    auto plan = compile(g);
    ASSERT_TRUE(slot_of(*plan, u) != nullptr && slot_of(*plan, u)->in_place) << "the case needs u written over h";
    EXPECT_EQ(plan->memory().joined_values, 0);
    expect_no_conflicts(*plan);
    expect_runs_alike(g, {{"x", random_tensor({32}, 17)}});
  }
  {
    // A Cast to another dtype may be a copy, and a graph input is not
    // planned: neither joins. A Concat along a later axis interleaves.
    Graph g("not byte ranges");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{4, 16}});
    Value* i = g.add_input("i", {DType::kInt32, Shape{4, 16}});
    Value* cast = g.add_node("Cast", {i}, 1, {{"to", Attribute(static_cast<int64_t>(DType::kFloat32))}}, "cast")->output(0);
    Value* c = g.add_node("Concat", {cast, x}, 1, {{"axis", Attribute(int64_t{0})}}, "c")->output(0);
    Value* e = g.add_node("Exp", {x}, 1, {}, "e")->output(0);
    Value* d = g.add_node("Concat", {e, e}, 1, {{"axis", Attribute(int64_t{1})}}, "d")->output(0);
    g.add_output(g.add_node("Exp", {c}, 1, {}, "out")->output(0));
    g.add_output(g.add_node("Exp", {d}, 1, {}, "out2")->output(0));
    infer_graph_types(g, default_op_registry());
    auto plan = compile(g);
    EXPECT_EQ(plan->memory().joined_values, 0);
    expect_no_conflicts(*plan);
    Tensor ints(DType::kInt32, {4, 16});
    for (int64_t k = 0; k < 64; ++k) ints.data<int32_t>()[k] = static_cast<int32_t>(k * 7 % 13) - 6;
    expect_runs_alike(g, {{"x", random_tensor({4, 16}, 18)}, {"i", ints}});
  }
}

}  // namespace
}  // namespace weir
