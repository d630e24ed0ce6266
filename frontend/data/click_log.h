// A synthetic click log for click-through-rate models (wide & deep over
// sparse ids, the parameter server's `ctr` model), drawn from a KNOWN
// logistic model, so the best AUC any model can reach is known: the AUC of
// the true click probability, roc_auc(log.true_probability, log.labels).
//
//   weir::ClickLogOptions options;                 // 8 slots x 125000 ids, 4 dense features
//   weir::ClickLog train = weir::synthetic_click_log(options);
//   options.examples = 20000;
//   options.sample_seed = 3;                       // held-out examples of the same model
//   weir::ClickLog test = weir::synthetic_click_log(options);
//
// The true model (fixed by model_seed and the shape options; `examples` and
// `sample_seed` never change it):
//   - global id g (slot s's ids are [s*ids_per_slot, (s+1)*ids_per_slot))
//     has weight N(0, weight_scale^2 / slots): weight_scale / sqrt(slots)
//     times a standard normal that is a pure function of (model_seed, g)
//     (SplitMix64 keyed by g), so 10^6 ids need no table and any process
//     computes the same weight;
//   - dense feature j has weight N(0, (2 weight_scale)^2 / dense_features):
//     the dense term's variance is about a third of the ids' (uniform [0, 1)
//     features have variance 1/12), so the ids carry most of the signal;
//   - the bias is -1.3 minus the dense term's mean (weights . 0.5): the id
//     weights have mean zero, so the click rate is about 0.25 for any seed;
//   - logit = bias + sum of the example's id weights + dense weights . dense,
//     click ~ Bernoulli(sigmoid(logit)).
// An example's ids: slot s draws a rank k in [1, ids_per_slot] with
// probability proportional to 1/k^zipf_exponent, then maps rank -> local id
// by a bijection of [0, ids_per_slot) keyed by (model_seed, s): a 4-round
// Feistel network on the smallest even number of bits covering ids_per_slot,
// cycle-walked back into range. The frequent ids are scattered over the slot
// (not just its small numbers), and train and test share them.
//
// With the defaults (measured, model_seed 1): the true model's AUC is 0.759
// on 200000 examples and the click rate 0.247 (model seeds 2-6: AUC 0.75 to
// 0.79, click rates 0.22 to 0.28; weight_scale 0.8 / 1.2 / 1.5 give an AUC
// of 0.72 / 0.79 / 0.83); 10^6 examples hold 577347 distinct ids and take
// 0.6 to 0.8 s to generate on this 2-core machine (one thread).
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor.h"

namespace weir {

struct ClickLogOptions {
  int64_t examples = 100000;
  int slots = 8;                  // sparse categorical slots per example (one id each)
  int64_t ids_per_slot = 125000;  // distinct ids a slot can take (8 x 125000 = 10^6 feature ids in all)
  int dense_features = 4;         // f32 features per example, uniform in [0, 1)
  double zipf_exponent = 1.1;     // how a slot's ids are drawn: id rank k with probability ~ 1/k^s
  double weight_scale = 1.0;      // the true model's per-id weights ~ N(0, weight_scale^2 / slots)
  uint64_t model_seed = 1;        // the true model (id weights, dense weights, bias): same seed, same model
  uint64_t sample_seed = 2;       // which examples are drawn (train and test: same model_seed, different sample_seed)
};

struct ClickLog {
  Tensor ids;               // int64 [examples, slots]: global feature ids, slot s's in [s*ids_per_slot, (s+1)*ids_per_slot)
  Tensor dense;             // f32 [examples, dense_features]
  Tensor labels;            // f32 [examples, 1]: 1 click, 0 no click
  Tensor true_probability;  // f32 [examples]: the true model's click probability of each example
};

// Deterministic: the same options give bit-identical tensors. Throws
// weir::Error(kInvalidArgument) for a negative example count, no slots, no
// ids per slot, a negative dense feature count, or an exponent or weight
// scale that is negative or not finite.
ClickLog synthetic_click_log(const ClickLogOptions& options);

// The true model's logit of one example: `ids` holds one global id per slot
// (slot s's id in slot s's range) and `dense` dense_features values. Depends
// on model_seed and the shape options only, so it is the same for logs drawn
// with any sample_seed; synthetic_click_log computes every example's
// probability as sigmoid of exactly this. Throws kInvalidArgument for wrong
// counts or an id outside its slot.
double click_logit(const ClickLogOptions& options, std::span<const int64_t> ids, std::span<const float> dense);

}  // namespace weir
