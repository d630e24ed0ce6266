#include "frontend/nn/margin_head.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/splitmix.h"
#include "frontend/nn/functional.h"
#include "ops/loss/class_shards.h"

namespace weir::nn {

namespace {

Attribute ints_attr(std::vector<int64_t> values) { return Attribute(std::move(values)); }

Var l2_normalize_rows(Var x) {
  GraphBuilder& b = *x.builder();
  return x / b.op("ReduceL2", {x}, {{"axes", ints_attr({1})}, {"keepdims", Attribute(int64_t{1})}});
}

// x [B, D] against centres [K, D]: s * cosine (margins added by the
// caller) or plain x · W^T.
Var cosine_or_logits(GraphBuilder& b, Var x, Var centres, const MarginHeadOptions& options) {
  if (!options.normalize) return b.op("Gemm", {x, centres}, {{"transB", Attribute(int64_t{1})}}, "logits");
  return b.op("Gemm", {l2_normalize_rows(x), l2_normalize_rows(centres)}, {{"transB", Attribute(int64_t{1})}}, "cosine");
}

Var margin(GraphBuilder& b, Var cosine, Var labels, const MarginHeadOptions& options) {
  if (!options.normalize) return cosine;
  return b.op("MarginLogits", {cosine, labels},
              {{"scale", Attribute(options.scale)}, {"m1", Attribute(options.m1)}, {"m2", Attribute(options.m2)},
               {"m3", Attribute(options.m3)}},
              "margin_logits");
}

void check(GraphBuilder& b, Var features, const MarginHeadOptions& options) {
  if (options.classes < 1 || options.embedding < 1) {
    b.fail(ErrorKind::kInvalidArgument, "margin head: classes and embedding must be positive, got " +
                                            std::to_string(options.classes) + " and " + std::to_string(options.embedding));
  } else if (options.ranks < 1 || options.classes < options.ranks) {
    b.fail(ErrorKind::kInvalidArgument, "margin head: " + std::to_string(options.classes) + " classes cannot be sharded over " +
                                            std::to_string(options.ranks) + " ranks (every rank needs a class)");
  } else if (!(options.sample_ratio > 0 && options.sample_ratio <= 1)) {
    b.fail(ErrorKind::kInvalidArgument, "margin head: the sample ratio must be in (0, 1], got " +
                                            std::to_string(options.sample_ratio));
  } else if (features.valid() && (features.shape().rank() != 2 || features.size(1) != options.embedding)) {
    b.fail(ErrorKind::kShape, "margin head: features must be [batch, " + std::to_string(options.embedding) + "], got " +
                                  features.type().to_string());
  }
}

}  // namespace

int64_t sampled_centres(int64_t rows, double ratio, int64_t batch) {
  const int64_t wanted = static_cast<int64_t>(std::ceil(ratio * static_cast<double>(rows)));
  return std::min(rows, std::max(wanted, batch));
}

MarginHeadOptions margin_preset(const std::string& margin) {
  MarginHeadOptions options;
  options.margin = margin;
  if (margin == "arcface") {
    options.scale = 64, options.m1 = 1, options.m2 = 0.5, options.m3 = 0;
  } else if (margin == "cosface") {
    options.scale = 64, options.m1 = 1, options.m2 = 0, options.m3 = 0.4;
  } else if (margin == "softmax") {
    options.normalize = false;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown margin '" + margin + "' (arcface, cosface or softmax)");
  }
  return options;
}

MarginHead margin_softmax_loss(GraphBuilder& b, Var features, Var labels, const MarginHeadOptions& options) {
  MarginHead head;
  check(b, features, options);
  if (!b.ok()) return head;
  auto scope = b.scope(options.name);
  const int ranks = options.ranks;
  head.rows = ranks > 1 ? class_shard(options.classes, ranks, 0).width : options.classes;
  Var weight = b.parameter("weight", TensorType{DType::kFloat32, Shape{head.rows, options.embedding}});
  head.weight = weight.valid() ? weight.name() : "";

  std::vector<int64_t> group(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) group[static_cast<size_t>(r)] = r;
  auto collective = [&](const std::string& tag) {
    return std::map<std::string, Attribute>{{"group", ints_attr(group)}, {"tag", Attribute(options.name + "/" + tag)}};
  };
  Var x = features, y = labels;
  if (ranks > 1) {
    x = b.op("AllGather", {features}, collective("features"), "gather_features");
    y = b.op("AllGather", {labels}, collective("labels"), "gather_labels");
  }
  const int64_t batch = x.size(0);
  Var local = ranks > 1 ? b.op("ShardLabels", {y}, {{"classes", Attribute(options.classes)}}, "shard_labels") : y;
  Var centres = weight, columns;
  if (options.sample_ratio < 1) {
    head.sampled = sampled_centres(head.rows, options.sample_ratio, batch);
    std::vector<Var> sample = b.op("SampleClassCenters", {local}, 2,
                                   {{"classes", Attribute(options.classes)}, {"num_sample", Attribute(head.sampled)},
                                    {"seed", Attribute(static_cast<int64_t>(options.seed >> 1))}},
                                   "sample_centres");
    columns = sample[0];
    local = sample[1];
    centres = b.op("Gather", {weight, columns}, {{"axis", Attribute(int64_t{0})}}, "sampled_centres");
  }
  Var logits = margin(b, cosine_or_logits(b, x, centres, options), local, options);
  if (ranks == 1) {
    // The ordinary head: every class here (a sample with no padding).
    head.loss = cross_entropy(logits, local);
    return head;
  }
  std::vector<Var> mask_inputs = {logits};
  if (columns.valid()) mask_inputs.push_back(columns);
  logits = b.op("MaskShardPadding", mask_inputs, {{"classes", Attribute(options.classes)}}, "mask_padding");
  Var row_max = b.op("ReduceMax", {logits}, {{"axes", ints_attr({1})}, {"keepdims", Attribute(int64_t{1})}}, "row_max");
  std::map<std::string, Attribute> max_attrs = collective("row_max");
  max_attrs["reduction"] = Attribute(std::string("max"));
  row_max = b.op("AllReduce", {row_max}, max_attrs, "world_row_max");
  Var exp_sum = b.op("ReduceSum", {b.op("Exp", {logits - row_max})},
                     {{"axes", ints_attr({1})}, {"keepdims", Attribute(int64_t{0})}}, "exp_sum");
  std::map<std::string, Attribute> sum_attrs = collective("exp_sum");
  sum_attrs["reduction"] = Attribute(std::string("sum"));
  exp_sum = b.op("AllReduce", {exp_sum}, sum_attrs, "world_exp_sum");
  Var part = b.op("ShardedCrossEntropy", {logits, reshape(row_max, {-1}), exp_sum, local}, {}, "loss_part");
  std::map<std::string, Attribute> scatter_attrs = collective("loss");
  scatter_attrs["reduction"] = Attribute(std::string("sum"));
  Var own = b.op("ReduceScatter", {part}, scatter_attrs, "own_rows_loss");
  head.loss = reduce_mean(own, {0});
  return head;
}

Var margin_logits(GraphBuilder& b, Var features, const MarginHeadOptions& options, bool with_centres) {
  MarginHeadOptions one_rank = options;
  one_rank.ranks = 1;
  check(b, features, one_rank);
  if (!b.ok()) return {};
  auto scope = b.scope(options.name);
  Var weight;
  if (with_centres) {
    Tensor centres(DType::kFloat32, {options.classes, options.embedding});
    fill_class_centres(centres, options.classes, 1, 0, options.seed);
    weight = b.parameter("weight", std::move(centres));
  } else {
    weight = b.parameter("weight", TensorType{DType::kFloat32, Shape{options.classes, options.embedding}});
  }
  Var logits = cosine_or_logits(b, features, weight, options);
  return options.normalize ? logits * options.scale : logits;
}

void fill_class_centres(Tensor& weight, int64_t classes, int ranks, int rank, uint64_t seed) {
  const ClassShard rows = class_shard(classes, ranks, rank);
  const int64_t height = ranks > 1 ? rows.width : classes;
  if (weight.dtype() != DType::kFloat32 || weight.sizes().size() != 2 || weight.sizes()[0] != height) {
    throw Error(ErrorKind::kShape, "the class centres of rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                                       " for " + std::to_string(classes) + " classes are f32[" + std::to_string(height) +
                                       ", D], got " + weight.type_string());
  }
  const int64_t width = weight.sizes()[1];
  float* data = weight.data<float>();
  for (int64_t i = 0; i < height; ++i) {
    // SplitMix64 keyed by (seed, class): the row is the same whichever
    // rank holds it.
    uint64_t state = seed * 0x9E3779B97F4A7C15ULL ^ (static_cast<uint64_t>(rows.start + i) + 1) * 0xD1B54A32D192ED03ULL;
    float* row = data + i * width;
    for (int64_t d = 0; d < width; d += 2) {
      const auto [z0, z1] = splitmix64_normal_pair(state);
      row[d] = static_cast<float>(0.01 * z0);
      if (d + 1 < width) row[d + 1] = static_cast<float>(0.01 * z1);
    }
  }
}

}  // namespace weir::nn
