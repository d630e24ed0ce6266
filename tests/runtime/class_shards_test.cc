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

}  // namespace
}  // namespace weir
