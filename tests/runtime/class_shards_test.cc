// Classes sharded over ranks (ops/loss/class_shards.h): the split covers
// every class once, as evenly as possible, with one padded width; each rank
// of an in-process world maps a label to its own column or -1, so exactly
// one rank holds each class; outside a world a label is its own column;
// padding columns are masked on the ranks that have them; a label outside
// the classes is refused naming its position.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/loss/class_shards.h"
#include "ops/register_ops.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace weir {
namespace {

TEST(ClassShards, SplitCoversEveryClassOnceAsEvenlyAsPossible) {
  for (int64_t classes : {3, 7, 10, 1000003}) {
    for (int64_t ranks : {1, 2, 3, 4}) {
      if (classes < ranks) continue;
      int64_t next = 0;
      for (int64_t r = 0; r < ranks; ++r) {
        const ClassShard shard = class_shard(classes, ranks, r);
        EXPECT_EQ(shard.start, next) << classes << " over " << ranks << ", rank " << r;
        EXPECT_TRUE(shard.count == classes / ranks || shard.count == classes / ranks + 1);
        EXPECT_EQ(shard.width, (classes + ranks - 1) / ranks);
        EXPECT_LE(shard.count, shard.width);
        next += shard.count;
      }
      EXPECT_EQ(next, classes);
    }
  }
  EXPECT_THROW(class_shard(2, 3, 0), Error);   // a rank without classes
  EXPECT_THROW(class_shard(10, 2, 2), Error);  // not a rank
}

std::shared_ptr<const Plan> shard_labels_plan(int64_t classes, int64_t count) {
  Graph g("shard_labels");
  Value* labels = g.add_input("labels", {DType::kInt64, Shape{count}});
  Node* node = g.add_node("ShardLabels", {labels}, 1, {{"classes", Attribute(classes)}}, "shard");
  g.add_output(node->output(0));
  infer_graph_types(g, default_op_registry());
  return compile(g);
}

TEST(ClassShards, EachRankMapsTheLabelsItHolds) {
  constexpr int64_t kClasses = 10;
  const std::vector<int64_t> labels = {0, 3, 4, 6, 7, 9, 2, 8};
  const Tensor feed = Tensor::from_vector(labels, {static_cast<int64_t>(labels.size())});
  InProcessRanks world(shard_labels_plan(kClasses, static_cast<int64_t>(labels.size())), 3);
  const std::vector<std::vector<Tensor>> out = world.run(std::vector<std::map<std::string, Tensor>>(3, {{"labels", feed}}));
  std::vector<int> holders(labels.size(), 0);
  for (int r = 0; r < 3; ++r) {
    const ClassShard shard = class_shard(kClasses, 3, r);  // 4, 3, 3 classes from 0, 4, 7
    const int64_t* local = out[static_cast<size_t>(r)][0].data<int64_t>();
    for (size_t i = 0; i < labels.size(); ++i) {
      const bool mine = labels[i] >= shard.start && labels[i] < shard.start + shard.count;
      EXPECT_EQ(local[i], mine ? labels[i] - shard.start : -1) << "rank " << r << " label " << labels[i];
      holders[i] += mine;
    }
  }
  for (size_t i = 0; i < labels.size(); ++i) EXPECT_EQ(holders[i], 1) << "label " << labels[i];

  // Outside a world every class is this rank's.
  Session alone(shard_labels_plan(kClasses, static_cast<int64_t>(labels.size())));
  const Tensor local = alone.run({{"labels", feed}})[0];
  for (size_t i = 0; i < labels.size(); ++i) EXPECT_EQ(local.data<int64_t>()[i], labels[i]);
}

TEST(ClassShards, PaddingColumnsAreMaskedOnTheRanksThatHaveThem) {
  for (double fill : {-std::numeric_limits<double>::infinity(), 0.0}) {
    Graph g("mask");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{2, 4}});
    Node* node = g.add_node("MaskShardPadding", {x}, 1, {{"classes", Attribute(int64_t{10})}, {"fill", Attribute(fill)}}, "mask");
    g.add_output(node->output(0));
    infer_graph_types(g, default_op_registry());
    InProcessRanks world(compile(g), 3);  // 4, 3 and 3 classes: shards of width 4
    const Tensor feed = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
    const std::vector<std::vector<Tensor>> out = world.run(std::vector<std::map<std::string, Tensor>>(3, {{"x", feed}}));
    for (int r = 0; r < 3; ++r) {
      for (int64_t i = 0; i < 8; ++i) {
        const bool padding = r > 0 && i % 4 == 3;
        EXPECT_EQ(out[static_cast<size_t>(r)][0].data<float>()[i], padding ? static_cast<float>(fill) : feed.data<float>()[i])
            << "rank " << r << " element " << i;
      }
    }
  }
  // A width other than this world's shard width is refused.
  Graph g("mask");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{2, 3}});
  g.add_output(g.add_node("MaskShardPadding", {x}, 1, {{"classes", Attribute(int64_t{10})}}, "mask")->output(0));
  infer_graph_types(g, default_op_registry());
  Session alone(compile(g));
  try {
    alone.run({{"x", Tensor(DType::kFloat32, {2, 3})}});
    FAIL() << "a width of 3 for 10 classes on one rank was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expects [batch, 10]"), std::string::npos) << e.what();
  }
}

TEST(ClassShards, LabelsOutsideTheClassesAreRefused) {
  Session session(shard_labels_plan(10, 3));
  try {
    session.run({{"labels", Tensor::from_vector(std::vector<int64_t>{1, 10, 2}, {3})}});
    FAIL() << "label 10 of 10 classes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 10 at position 1 is not a class of 10"), std::string::npos) << e.what();
  }
}

// ShardLabels, then PartialFC's sampling and the mask over the sampled
// columns, as the margin head chains them.
std::shared_ptr<const Plan> sampling_plan(int64_t classes, int64_t count, int64_t num_sample) {
  Graph g("sample");
  Value* labels = g.add_input("labels", {DType::kInt64, Shape{count}});
  Node* shard = g.add_node("ShardLabels", {labels}, 1, {{"classes", Attribute(classes)}}, "shard");
  Node* sample = g.add_node("SampleClassCenters", {shard->output(0)}, 2,
                            {{"classes", Attribute(classes)}, {"num_sample", Attribute(num_sample)}, {"seed", Attribute(int64_t{5})}},
                            "sample");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{count, num_sample}});
  Node* mask = g.add_node("MaskShardPadding", {x, sample->output(0)}, 1, {{"classes", Attribute(classes)}}, "mask");
  g.add_output(sample->output(0));
  g.add_output(sample->output(1));
  g.add_output(mask->output(0));
  infer_graph_types(g, default_op_registry());
  return compile(g);
}

TEST(ClassCenterSampling, KeepsEveryPositiveAndFillsWithDistinctOthers) {
  constexpr int64_t kClasses = 23, kSample = 6;  // 3 ranks: 8, 8, 7 classes, width 8
  const std::vector<int64_t> labels = {0, 5, 5, 9, 22, 15, 16};
  const int64_t count = static_cast<int64_t>(labels.size());
  std::map<std::string, Tensor> feeds = {{"labels", Tensor::from_vector(labels, {count})},
                                         {"x", Tensor(DType::kFloat32, {count, kSample})}};
  InProcessRanks world(sampling_plan(kClasses, count, kSample), 3);
  std::vector<std::vector<int64_t>> first_samples;
  for (int run = 0; run < 4; ++run) {
    const std::vector<std::vector<Tensor>> out = world.run(std::vector<std::map<std::string, Tensor>>(3, feeds));
    for (int r = 0; r < 3; ++r) {
      const ClassShard shard = class_shard(kClasses, 3, r);
      const Tensor& columns = out[static_cast<size_t>(r)][0];
      const Tensor& sampled = out[static_cast<size_t>(r)][1];
      ASSERT_EQ(columns.num_elements(), kSample);
      std::vector<int64_t> picked(columns.data<int64_t>(), columns.data<int64_t>() + kSample);
      EXPECT_TRUE(std::is_sorted(picked.begin(), picked.end())) << "rank " << r;
      EXPECT_EQ(std::adjacent_find(picked.begin(), picked.end()), picked.end()) << "rank " << r << ": a column twice";
      for (int64_t column : picked) EXPECT_LT(column, shard.count) << "rank " << r << " sampled padding with classes left";
      for (int64_t i = 0; i < count; ++i) {
        const int64_t column = labels[static_cast<size_t>(i)] - shard.start;
        const int64_t position = sampled.data<int64_t>()[i];
        if (column < 0 || column >= shard.count) {
          EXPECT_EQ(position, -1) << "rank " << r << " label " << labels[static_cast<size_t>(i)];
        } else {
          ASSERT_GE(position, 0) << "rank " << r << " dropped the positive " << labels[static_cast<size_t>(i)];
          EXPECT_EQ(picked[static_cast<size_t>(position)], column);
        }
      }
      if (r == 0) first_samples.push_back(picked);
    }
  }
  // A new draw each run (rank 0 holds 2 positives and draws 4 of its other 6).
  EXPECT_NE(first_samples[0], first_samples[1]);
  // The same run counter draws the same sample: a fresh world replays.
  InProcessRanks again(sampling_plan(kClasses, count, kSample), 3);
  const std::vector<std::vector<Tensor>> replay = again.run(std::vector<std::map<std::string, Tensor>>(3, feeds));
  EXPECT_EQ(std::vector<int64_t>(replay[0][0].data<int64_t>(), replay[0][0].data<int64_t>() + kSample), first_samples[0]);
}

TEST(ClassCenterSampling, PadsOnlyWhenTheShardIsSmallerAndMasksThePadding) {
  constexpr int64_t kClasses = 7, kSample = 4;  // 2 ranks: 4 and 3 classes, width 4
  const std::vector<int64_t> labels = {1, 6};
  std::map<std::string, Tensor> feeds = {{"labels", Tensor::from_vector(labels, {2})},
                                         {"x", Tensor::from_vector(std::vector<float>(8, 1.0f), {2, kSample})}};
  InProcessRanks world(sampling_plan(kClasses, 2, kSample), 2);
  const std::vector<std::vector<Tensor>> out = world.run(std::vector<std::map<std::string, Tensor>>(2, feeds));
  for (int r = 0; r < 2; ++r) {
    const Tensor& columns = out[static_cast<size_t>(r)][0];
    const Tensor& masked = out[static_cast<size_t>(r)][2];
    for (int64_t j = 0; j < kSample; ++j) {
      EXPECT_EQ(columns.data<int64_t>()[j], j) << "rank " << r;  // every column: the whole shard
      const bool padding = r == 1 && j == 3;
      for (int64_t b = 0; b < 2; ++b) {
        const float value = masked.data<float>()[b * kSample + j];
        EXPECT_EQ(value, padding ? -std::numeric_limits<float>::infinity() : 1.0f) << "rank " << r << " column " << j;
      }
    }
  }
}

TEST(ClassCenterSampling, MorePositivesThanTheSampleIsAnError) {
  const std::vector<int64_t> labels = {0, 1, 2};
  Session session(sampling_plan(10, 3, 2));
  try {
    session.run({{"labels", Tensor::from_vector(labels, {3})}, {"x", Tensor(DType::kFloat32, {3, 2})}});
    FAIL() << "3 positives fit a sample of 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("names 3 distinct classes of this rank's shard, more than num_sample 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace weir
