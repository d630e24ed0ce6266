// Gradient communication rewrites (passes/collectives/gradient_buckets,
// allreduce_topology) on in-process worlds: buckets fill in the order the
// backward pass produces the gradients and keep their limits; bucketed
// training, on one or several communication streams, is bitwise the
// per-gradient AllReduces'; half-precision communication halves the bytes
// and stays within the mixed-precision tolerance (under AMP by moving AMP's
// casts); hierarchical and 2-D allreduce equal the flat one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "core/collective_group.h"
#include "passes/collectives/gradient_buckets.h"
#include "runtime/in_process_ranks.h"
#include "runtime/session.h"
#include "tests/passes/data_parallel_steps.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::feeds_for;
using testing::mlp_step;
using testing::shares;
using testing::Step;

constexpr int64_t kRankBatch = 4;

Strategy communication(int ranks, const std::function<void(GradientCommunicationStrategy&)>& set = {}) {
  Strategy strategy;
  strategy.data_parallel.ranks = ranks;
  if (set) set(strategy.communication);
  return strategy;
}

// An MLP of three hidden layers of 32 (gradients of 40 B to 8 KiB), one rank's step.
Step step_with(const Strategy& strategy, OptimizerKind kind = OptimizerKind::kAdam) {
  return mlp_step(kRankBatch, 3, 32, 0.0, strategy, kind);
}

struct Trace {
  std::vector<float> losses;
  std::vector<Tensor> parameters;  // rank 0's, after the last step
};

Trace train(const Step& step, int ranks, int steps) {
  InProcessRanks world(step.plan, ranks);
  Trace trace;
  for (int i = 0; i < steps; ++i) {
    auto outputs = world.run(shares(feeds_for(kRankBatch * ranks, i, !step.training.step_input.empty()), ranks));
    trace.losses.push_back(outputs[0][0].data<float>()[0]);
  }
  for (const std::string& name : step.training.parameters) trace.parameters.push_back(world.session(0).state(name));
  return trace;
}

void expect_bitwise(const Trace& got, const Trace& want, const std::string& what) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < got.losses.size(); ++i) EXPECT_EQ(got.losses[i], want.losses[i]) << what << ", step " << i + 1;
  for (size_t i = 0; i < got.parameters.size(); ++i) {
    EXPECT_TRUE(got.parameters[i].bitwise_equal(want.parameters[i])) << what << ", parameter " << i;
  }
}

// The largest relative difference of losses and parameters.
double difference(const Trace& got, const Trace& want) {
  double worst = 0;
  for (size_t i = 0; i < got.losses.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got.losses[i]) - want.losses[i]) / std::fabs(want.losses[i]));
  }
  for (size_t i = 0; i < got.parameters.size(); ++i) {
    worst = std::max(worst, testing::relative_l2(got.parameters[i], want.parameters[i]));
  }
  return worst;
}

TEST(GradientBuckets, BucketsFollowTheBackwardPassAndKeepTheirLimits) {
  // 6 KiB buckets, the first 1 KiB.
  Step step = step_with(communication(4, [](GradientCommunicationStrategy& c) {
                          c.fuse_grad_size_in_MB = 6.0 / 1024;
                          c.first_bucket_MB = 1.0 / 1024;
                        }));
  const Graph& graph = *step.graph.graph;
  const std::vector<GradientBucket>& buckets = step.training.buckets;
  ASSERT_GE(buckets.size(), 3u);
  // Every gradient in exactly one bucket, the buckets in the order the
  // backward pass produces their values.
  std::vector<Node*> order = graph.topological_order();
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::set<std::string> seen;
  size_t last = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const GradientBucket& bucket = buckets[b];
    int64_t bytes = 0, last_bytes = 0;
    for (const std::string& value : bucket.values) {
      EXPECT_TRUE(seen.insert(value).second) << value << " is in two buckets";
      const Value* gradient = graph.find_value(value);
      ASSERT_NE(gradient, nullptr) << value;
      const size_t at = position.at(gradient->producer());
      EXPECT_GE(at, last) << value << " of bucket " << b << " is produced before the previous bucket's values";
      last = at;
      last_bytes = gradient->shape().num_elements() * 4;
      bytes += last_bytes;
    }
    // No padding without a topology; gaps only to start each value at 64 bytes.
    EXPECT_EQ((bucket.elements - bucket.gap_elements) * 4, bytes) << "bucket " << b;
    EXPECT_LT(bucket.gap_elements, 16 * static_cast<int64_t>(bucket.values.size())) << "bucket " << b;
    // It closed on the value that reached its limit (the last may be short).
    const int64_t limit = b == 0 ? 1024 : 6 * 1024;
    EXPECT_LT(bytes - last_bytes, limit) << "bucket " << b;
    if (b + 1 < buckets.size()) {
      EXPECT_GE(bytes, limit) << "bucket " << b;
    }
    EXPECT_EQ(bucket.stream, "comm");
    // Its AllReduce reads the bucket's values alone (a Concat of their 1-D views).
    const Node* allreduce = graph.find_node(bucket.allreduce);
    ASSERT_NE(allreduce, nullptr);
    const Node* pack = allreduce->input(0)->producer();
    if (bucket.values.size() > 1) {
      ASSERT_EQ(pack->op_type(), "Concat");
      // The values' views, each followed by zeros where it does not end at
      // a 64-byte boundary.
      size_t next = 0;
      int64_t offset = 0;
      for (size_t k = 0; k < pack->num_inputs(); ++k) {
        const Value* piece = pack->input(k);
        if (piece->producer() == nullptr) {
          EXPECT_TRUE(piece->is_constant()) << "input " << k << " of " << pack->name();
        } else {
          ASSERT_LT(next, bucket.values.size());
          EXPECT_EQ(piece->producer()->op_type(), "Reshape");
          EXPECT_EQ(piece->producer()->input(0)->name(), bucket.values[next++]);
          EXPECT_EQ(offset % 64, 0) << bucket.values[next - 1] << " starts at byte " << offset;
        }
        offset += piece->shape().num_elements() * 4;
      }
      EXPECT_EQ(next, bucket.values.size());
    }
  }
  EXPECT_EQ(seen.size(), step.training.parameters.size());
  // Each update reads its own bucket's result: Reshape <- Split <- AllReduce.
  std::map<std::string, std::string> bucket_of;  // parameter -> its bucket's AllReduce
  for (const Node* node : graph.nodes()) {
    if (node->op_type() != "Adam") continue;
    const Node* reshape = node->input(1)->producer();
    ASSERT_EQ(reshape->op_type(), "Reshape") << node->name();
    const Node* split = reshape->input(0)->producer();
    const Node* allreduce = split->op_type() == "Split" ? split->input(0)->producer() : split;
    EXPECT_EQ(allreduce->op_type(), "AllReduce") << node->name();
    bucket_of[node->input(0)->name()] = allreduce->name();
  }
  // The last layer's gradients come first: the backward pass starts there.
  EXPECT_EQ(bucket_of.at("fc4/weight"), buckets[0].allreduce);
  EXPECT_EQ(bucket_of.at("fc4/bias"), buckets[0].allreduce);
  EXPECT_EQ(step.training.allreduces, static_cast<int>(buckets.size()) + 1);  // and the loss
}

TEST(GradientBuckets, BucketedTrainingIsBitwiseThePerGradientAllReduces) {
  const int ranks = 4;
  Step separate = step_with(communication(ranks, [](GradientCommunicationStrategy& c) { c.fuse_all_reduce_ops = false; }));
  EXPECT_TRUE(separate.training.buckets.empty());
  const Trace reference = train(separate, ranks, 5);
  Step one_bucket = step_with(communication(ranks));
  EXPECT_EQ(one_bucket.training.buckets.size(), 1u);
  expect_bitwise(train(one_bucket, ranks, 5), reference, "one bucket");
  Step streams = step_with(communication(ranks, [](GradientCommunicationStrategy& c) {
                             c.fuse_grad_size_in_MB = 4.0 / 1024;
                             c.first_bucket_MB = 1.0 / 1024;
                             c.comm_streams = 3;
                           }));
  ASSERT_GE(streams.training.buckets.size(), 4u);
  for (size_t b = 0; b < streams.training.buckets.size(); ++b) {
    const std::string want = b % 3 == 0 ? "comm" : "comm:" + std::to_string(b % 3);
    EXPECT_EQ(streams.training.buckets[b].stream, want);
    EXPECT_EQ(streams.graph.graph->find_node(streams.training.buckets[b].allreduce)->stream(), want);
  }
  expect_bitwise(train(streams, ranks, 5), reference, "buckets on 3 communication streams");
  // The same bytes, but for the zeros that start each value at 64 bytes.
  int64_t gaps = 0;
  for (const GradientBucket& bucket : streams.training.buckets) gaps += bucket.gap_elements * 4;
  EXPECT_EQ(streams.training.allreduce_bytes - gaps, separate.training.allreduce_bytes);
}

// Gradients as views into their bucket: the memory planner places every
// gradient inside its bucket's Concat, where the backward pass writes it,
// and every piece of the Split inside the AllReduce's output, so neither
// copies; training is bit for bit the copying plan's.
TEST(GradientBuckets, GradientsAreWrittenInsideTheirBucket) {
  const int ranks = 2;
  Step joined = step_with(communication(ranks, [](GradientCommunicationStrategy& c) {
    c.fuse_grad_size_in_MB = 4.0 / 1024;
    c.first_bucket_MB = 1.0 / 1024;
  }));
  const Plan& plan = *joined.plan;
  const MemoryPlan& memory = plan.memory();
  auto viewed = [](const Value* value) {
    while (value->producer() != nullptr && value->producer()->op_type() == "Reshape") value = value->producer()->input(0);
    return value;
  };
  int members = 0;
  for (const GradientBucket& bucket : joined.training.buckets) {
    const Node* allreduce = plan.graph().find_node(bucket.allreduce);
    ASSERT_NE(allreduce, nullptr) << bucket.allreduce;
    const Node* pack = allreduce->input(0)->producer();
    if (bucket.values.size() < 2) continue;
    ASSERT_EQ(pack->op_type(), "Concat");
    const BufferSlot* packed = memory.find(pack->output(0));
    const BufferSlot* reduced = memory.find(allreduce->output(0));
    ASSERT_TRUE(packed != nullptr && reduced != nullptr) << bucket.allreduce;
    const Node* unpack = nullptr;
    for (const Use& use : allreduce->output(0)->uses()) {
      if (use.node != nullptr && use.node->op_type() == "Split") unpack = use.node;
    }
    ASSERT_NE(unpack, nullptr) << bucket.allreduce;
    int64_t offset = 0;
    for (size_t k = 0; k < pack->num_inputs(); ++k) {
      const Value* piece = pack->input(k);
      if (!piece->is_constant()) {
        const BufferSlot* gradient = memory.find(viewed(piece));
        ASSERT_NE(gradient, nullptr) << viewed(piece)->name();
        EXPECT_EQ(gradient->offset, packed->offset + offset) << viewed(piece)->name() << " is not inside " << pack->name();
        const BufferSlot* averaged = memory.find(unpack->output(k));
        ASSERT_NE(averaged, nullptr) << unpack->output(k)->name();
        EXPECT_EQ(averaged->offset, reduced->offset + offset) << unpack->output(k)->name() << " is not inside its bucket";
        ++members;
      }
      offset += piece->shape().num_elements() * 4;
    }
  }
  EXPECT_GE(members, 4);
  EXPECT_GE(memory.joined_values, 2 * members);

  Step apart;
  apart.training = joined.training;
  CompileOptions copying;
  copying.join_pieces = false;
  apart.plan = compile(*joined.graph.graph, copying);
  EXPECT_EQ(apart.plan->memory().joined_values, 0);
  std::printf("planned arena: %lld bytes with the gradients inside their buckets, %lld copied into them\n",
              static_cast<long long>(memory.planned_bytes()), static_cast<long long>(apart.plan->memory().planned_bytes()));
  expect_bitwise(train(joined, ranks, 5), train(apart, ranks, 5), "gradients inside their buckets");
}

// overlap_communication off: every bucket's AllReduce waits (control edges)
// for the producers of all bucketed gradients, the first bucket included,
// which with overlap reads only its own; the training is the same bit for bit.
TEST(GradientBuckets, WithoutOverlapEveryBucketWaitsForTheWholeBackwardPass) {
  const int ranks = 2;
  auto small_buckets = [](bool overlap) {
    return [overlap](GradientCommunicationStrategy& c) {
      c.fuse_grad_size_in_MB = 4.0 / 1024;
      c.first_bucket_MB = 1.0 / 1024;
      c.overlap_communication = overlap;
    };
  };
  Step overlapped = step_with(communication(ranks, small_buckets(true)));
  Step serial = step_with(communication(ranks, small_buckets(false)));
  ASSERT_GE(serial.training.buckets.size(), 3u);
  const Graph& graph = *serial.graph.graph;
  // The last gradient the backward pass produces: the last member of the last bucket.
  const Node* last = graph.find_value(serial.training.buckets.back().values.back())->producer();
  ASSERT_NE(last, nullptr);
  for (const GradientBucket& bucket : serial.training.buckets) {
    const std::vector<Node*>& waits = graph.find_node(bucket.allreduce)->control_inputs();
    EXPECT_NE(std::find(waits.begin(), waits.end(), last), waits.end()) << bucket.allreduce;
  }
  const Node* first = overlapped.graph.graph->find_node(overlapped.training.buckets.front().allreduce);
  EXPECT_TRUE(first->control_inputs().empty());
  expect_bitwise(train(serial, ranks, 3), train(overlapped, ranks, 3), "buckets without overlap");
}

TEST(GradientBuckets, HalfPrecisionCommunicationHalvesTheBytes) {
  const int ranks = 2;
  // SGD: Adam would turn a gradient rounded to zero into a whole step.
  Step f32 = step_with(communication(ranks), OptimizerKind::kSgd);
  const Trace reference = train(f32, ranks, 5);
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const std::string what(dtype_name(dtype));
    Step half =
        step_with(communication(ranks, [&](GradientCommunicationStrategy& c) { c.allreduce_dtype = dtype; }), OptimizerKind::kSgd);
    ASSERT_EQ(half.training.buckets.size(), 1u) << what;
    EXPECT_EQ(half.training.buckets[0].dtype, dtype);
    // Half the bytes, but for the zeros that start each value at 64 bytes.
    const GradientBucket& h = half.training.buckets[0];
    const GradientBucket& f = f32.training.buckets[0];
    const int64_t half_gaps = h.gap_elements * 2, f32_gaps = f.gap_elements * 4;
    EXPECT_EQ((h.bytes() - half_gaps) * 2, f.bytes() - f32_gaps) << what;
    // The loss (4 bytes, averaged where it is computed) stays f32.
    EXPECT_EQ((half.training.allreduce_bytes - 4 - half_gaps) * 2, f32.training.allreduce_bytes - 4 - f32_gaps) << what;
    EXPECT_EQ(half.training.comm_added_casts, static_cast<int>(half.training.parameters.size()) + 1) << what;
    const Trace trained = train(half, ranks, 5);
    // bf16 keeps 8 bits of each averaged gradient, f16 11.
    std::printf("%s communication: largest relative difference from f32 %.3g\n", what.c_str(), difference(trained, reference));
    EXPECT_LT(difference(trained, reference), dtype == DType::kBFloat16 ? 2e-3 : 2e-4) << what;
    EXPECT_GT(difference(trained, reference), 0.0) << what << ": the cast changed nothing";
  }
}

TEST(GradientBuckets, UnderMixedPrecisionTheCastsMoveAcrossTheAllReduce) {
  const int ranks = 2;
  auto amp = [](Strategy strategy) {
    strategy.amp.enabled = true;  // bf16
    return strategy;
  };
  Step f32 = step_with(amp(communication(ranks)), OptimizerKind::kSgd);
  Step bf16 = step_with(amp(communication(ranks, [](GradientCommunicationStrategy& c) { c.allreduce_dtype = DType::kBFloat16; })),
                        OptimizerKind::kSgd);
  // Every gradient is AMP's Cast up of a bf16 gradient: each enters the
  // bucket as bf16, and the bucket casts up once.
  EXPECT_EQ(bf16.training.comm_moved_casts, static_cast<int>(bf16.training.parameters.size()));
  EXPECT_EQ(bf16.training.comm_added_casts, 1);
  auto casts = [](const Step& step) {
    int count = 0;
    for (const Node* node : step.graph.graph->nodes()) count += node->op_type() == "Cast";
    return count;
  };
  // With f32 communication the same Casts are folded into the gradient
  // sums instead (F32GradientAccumulation): the bucket's cast back is the
  // only Cast the half-precision bucket adds.
  EXPECT_EQ(f32.training.amp_f32_gradient_sums, bf16.training.comm_moved_casts);
  EXPECT_EQ(casts(bf16), casts(f32) + 1);
  const double apart = difference(train(bf16, ranks, 5), train(f32, ranks, 5));
  std::printf("AMP bf16, bf16 communication: largest relative difference from f32 communication %.3g\n", apart);
  EXPECT_LT(apart, 2e-3);
}

TEST(GradientBuckets, HierarchicalAndTwoDimensionalAllReduceEqualFlat) {
  for (const std::pair<int, int>& grid_size : {std::pair{4, 2}, std::pair{6, 2}, std::pair{6, 3}}) {
    // Plain variables, not a structured binding: the lambdas below capture
    // them, which clang (the sanitizer build) refuses for bindings in C++20.
    const int ranks = grid_size.first, rows = grid_size.second;
    const std::string grid = std::to_string(rows) + " x " + std::to_string(ranks / rows);
    Step flat = step_with(communication(ranks, [](GradientCommunicationStrategy& c) { c.first_bucket_MB = 4.0 / 1024; }));
    const Trace reference = train(flat, ranks, 4);
    Step two_d = step_with(communication(ranks, [&](GradientCommunicationStrategy& c) {
                             c.first_bucket_MB = 4.0 / 1024;
                             c.two_d_allreduce_rows = rows;
                           }));
    Step hierarchical = step_with(communication(ranks, [&](GradientCommunicationStrategy& c) {
                                    c.first_bucket_MB = 4.0 / 1024;
                                    c.use_hierarchical_allreduce = true;
                                    c.hierarchical_allreduce_inter_nranks = ranks / rows;
                                  }));
    const int cols = ranks / rows;
    std::vector<int64_t> last_row, second_column;  // the groups of the last rank along its row, and of rank 1
    for (int c = 0; c < cols; ++c) last_row.push_back(ranks - cols + c);
    for (int r = 0; r < rows; ++r) second_column.push_back(static_cast<int64_t>(r) * cols + 1);
    for (const Step* step : {&two_d, &hierarchical}) {
      EXPECT_EQ(step->training.allreduce_rows, rows) << grid;
      EXPECT_EQ(step->training.allreduce_cols, cols) << grid;
      ASSERT_EQ(step->training.buckets.size(), flat.training.buckets.size()) << grid;
      for (const GradientBucket& bucket : step->training.buckets) {
        EXPECT_EQ(bucket.elements % cols, 0) << grid << ": bucket padded to the row's ranks";
      }
      // Each bucket: reduce-scatter along the row, allreduce along the column, allgather along the row.
      int phases = 0;
      for (const Node* node : step->graph.graph->nodes()) {
        if (node->op_type() == "ReduceScatter" || node->op_type() == "AllGather") {
          EXPECT_EQ(collective_group(*node, ranks - 1, ranks), last_row) << grid;
          ++phases;
        } else if (node->op_type() == "AllReduce" && node->has_attr("group_size")) {
          EXPECT_EQ(collective_group(*node, 1, ranks), second_column) << grid;
          ++phases;
        }
      }
      EXPECT_EQ(phases, 3 * static_cast<int>(flat.training.buckets.size())) << grid;
      EXPECT_LT(difference(train(*step, ranks, 4), reference), 1e-5) << grid;
    }
  }
}

}  // namespace
}  // namespace weir
