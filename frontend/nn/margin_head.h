// The classifier head of large-scale classification (face recognition,
// PLSC; ../shared/DISTRIBUTED.md §7): class centres W [C, D] (one row per
// class), margin logits on L2-normalised features and centres (ArcFace,
// CosFace) or plain logits, softmax cross-entropy; model parallel over the
// ranks of a world, with PartialFC's sampling of the centres.
//
//   weir::nn::MarginHeadOptions head{.classes = 1000000, .embedding = 512, .ranks = 2};
//   weir::nn::MarginHead h = weir::nn::margin_softmax_loss(b, embedding, labels, head);
//   // h.loss: this rank's rows' mean loss; h.weight: the centres' parameter
//
// Model parallel (ranks > 1): every rank holds the rows of its classes
// (C / N each, the first C % N one more; ops/loss/class_shards.h), padded
// to ceil(C / N) rows so every rank runs the same program:
//
//   x = AllGather(features), y = AllGather(labels)     the whole batch on every rank
//   local = ShardLabels(y)                             a column of this shard, or -1
//   [columns, local = SampleClassCenters(local)]       PartialFC: K of the shard's rows
//   cosine = Gemm(x / |x|, W_shard / |W_shard|, transB)   [B, width or K]
//   logits = MaskShardPadding(MarginLogits(cosine, local))
//   row_max = AllReduce(ReduceMax(logits), max), exp_sum = AllReduce(ReduceSum(Exp(logits - row_max)), sum)
//   loss = ReduceMean(ReduceScatter(ShardedCrossEntropy(logits, row_max, exp_sum, local), sum))
//
// The shard is a distributed parameter (DataParallelStrategy): not
// averaged, and its gradient (of the ranks' summed losses) divided by N.
// With one rank the head is the ordinary one: Gemm, MarginLogits,
// SoftmaxCrossEntropyLoss over all C classes, so the two forms are
// compared against each other.
//
// The centres have no initial value in the graph (a million classes of
// 512 floats are 2 GB): each rank fills its rows after its session starts
// with fill_class_centres(), which draws row c from a generator keyed by
// (seed, c) alone, so a rank's shard holds exactly the rows of the
// one-rank head and padding rows hold the next classes' draws (never
// trained; they keep the normalisation finite).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "frontend/builder/graph_builder.h"

namespace weir::nn {

struct MarginHeadOptions {
  int64_t classes = 0;
  int64_t embedding = 0;  // D, the features' width
  int ranks = 1;          // > 1: model parallel over a world of this many ranks
  // "arcface" (s 64, m2 0.5), "cosface" (s 64, m3 0.4), "softmax" (plain
  // logits x · W^T: no normalisation, no scale, no margin)
  std::string margin = "arcface";
  double scale = 64;
  double m1 = 1, m2 = 0.5, m3 = 0;
  bool normalize = true;
  // PartialFC: the fraction of each rank's centres trained per step (1: all).
  // K = min(width, max(ceil(ratio * width), the global batch)), so every
  // positive fits.
  double sample_ratio = 1.0;
  uint64_t seed = 0;          // the centres' generator (fill_class_centres) and the sampling's
  std::string name = "head";  // the scope; the parameter is NAME/weight
};

// PartialFC's sample per rank: min(rows, max(ceil(ratio * rows), batch)),
// `batch` the whole step's (every positive must fit).
int64_t sampled_centres(int64_t rows, double ratio, int64_t batch);

// The margin's defaults; throws weir::Error(kInvalidArgument) naming the choices.
MarginHeadOptions margin_preset(const std::string& margin);

struct MarginHead {
  Var loss;             // scalar: this rank's rows' mean cross-entropy
  std::string weight;   // the centres' parameter: [ceil(C / N), D] (this rank's shard) or [C, D]
  int64_t rows = 0;     // its rows
  int64_t sampled = 0;  // K (PartialFC), or 0
};

// features [B, D] (this rank's rows), labels [B] (i64): the training form.
MarginHead margin_softmax_loss(GraphBuilder& b, Var features, Var labels, const MarginHeadOptions& options);

// The inference form over all C classes: logits [B, C] (s * cosine, or
// x · W^T for "softmax"), the centres NAME/weight [C, D] filled from the
// seed when `with_centres`, else left to be baked in.
Var margin_logits(GraphBuilder& b, Var features, const MarginHeadOptions& options, bool with_centres);

// Rank `rank`'s rows of the centres [ceil(C / N), D] (ranks 1: all C rows)
// written into `weight`, f32 N(0, 0.01^2) per element.
void fill_class_centres(Tensor& weight, int64_t classes, int ranks, int rank, uint64_t seed);

}  // namespace weir::nn
