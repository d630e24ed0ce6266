#include "frontend/data/click_log.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/splitmix.h"

namespace weir {

namespace {

// The Zipf table holds one double per rank; this keeps it under 1 GiB (and
// slots x ids_per_slot far inside int64).
constexpr int64_t kMaxIdsPerSlot = int64_t{1} << 27;
// Ranks whose ids and weights the generator computes once (see synthetic_click_log).
constexpr int64_t kHeadRanks = 1024;
// The logit's offset before the id weights (mean zero) and the centred dense
// term: sigmoid(-1.3) is 0.214, and the spread of the logit lifts the mean
// click probability to about 0.25.
constexpr double kBaseLogit = -1.3;

// Separate key domains, so an id weight, a dense weight and a permutation key
// never share a generator state.
constexpr uint64_t kIdWeightDomain = 0x1D3C7A5B9E2F4861ULL;
constexpr uint64_t kDenseWeightDomain = 0x6A09E667F3BCC909ULL;
constexpr uint64_t kPermutationDomain = 0xBB67AE8584CAA73BULL;
constexpr uint64_t kSampleDomain = 0x3C6EF372FE94F82BULL;


double keyed_normal(uint64_t seed, uint64_t domain, uint64_t index) {
  uint64_t state = splitmix64_keyed(seed, domain, index);
  return splitmix64_normal_pair(state).first;
}

void check_options(const ClickLogOptions& o) {
  auto fail = [](const std::string& what) { throw Error(ErrorKind::kInvalidArgument, "click log options: " + what); };
  if (o.examples < 0) fail("examples must be >= 0, got " + std::to_string(o.examples));
  if (o.slots < 1) fail("slots must be >= 1, got " + std::to_string(o.slots));
  if (o.ids_per_slot < 1 || o.ids_per_slot > kMaxIdsPerSlot) {
    fail("ids_per_slot must be in [1, " + std::to_string(kMaxIdsPerSlot) + "] (the Zipf table holds one double per id), got " +
         std::to_string(o.ids_per_slot));
  }
  if (o.dense_features < 0) fail("dense_features must be >= 0, got " + std::to_string(o.dense_features));
  if (!std::isfinite(o.zipf_exponent) || o.zipf_exponent < 0) {
    fail("zipf_exponent must be finite and >= 0, got " + std::to_string(o.zipf_exponent));
  }
  if (!std::isfinite(o.weight_scale) || o.weight_scale < 0) {
    fail("weight_scale must be finite and >= 0, got " + std::to_string(o.weight_scale));
  }
}

// The true model's parameters that are not per id: computed once per log (or
// per click_logit call), a handful of normals.
class TrueModel {
 public:
  explicit TrueModel(const ClickLogOptions& options)
      : options_(options), id_scale_(options.weight_scale / std::sqrt(static_cast<double>(options.slots))) {
    const double dense_scale =
        options.dense_features > 0 ? 2 * options.weight_scale / std::sqrt(static_cast<double>(options.dense_features)) : 0;
    bias_ = kBaseLogit;
    for (int j = 0; j < options.dense_features; ++j) {
      dense_weights_.push_back(dense_scale * keyed_normal(options.model_seed, kDenseWeightDomain, static_cast<uint64_t>(j)));
      bias_ -= 0.5 * dense_weights_.back();  // centres the dense term: E[dense] = 0.5
    }
  }

  double id_weight(int64_t id) const {
    return id_scale_ * keyed_normal(options_.model_seed, kIdWeightDomain, static_cast<uint64_t>(id));
  }

  // The logit of an example whose ids have the weights `id_weights` (one per
  // slot, from id_weight()). Summed in a fixed order (slots, then dense), so
  // click_logit and the generator get the same bits.
  double logit(const double* id_weights, const float* dense) const {
    double z = bias_;
    for (int s = 0; s < options_.slots; ++s) z += id_weights[s];
    for (int j = 0; j < options_.dense_features; ++j) z += dense_weights_[static_cast<size_t>(j)] * dense[j];
    return z;
  }

 private:
  const ClickLogOptions& options_;
  double id_scale_;
  double bias_ = 0;
  std::vector<double> dense_weights_;
};

// A bijection of [0, n): a balanced 4-round Feistel network on 2*half_bits
// bits (the smallest even width with 2^(2*half_bits) >= n), cycle-walked:
// outputs >= n are fed back in until one lands in range. Cycle walking keeps
// a bijection because the walk from x follows x's own cycle of the Feistel
// permutation; the domain is under 4n, so a walk averages under 4 steps.
class SlotPermutation {
 public:
  SlotPermutation(int64_t n, uint64_t seed, int slot) : n_(static_cast<uint64_t>(n)) {
    while ((uint64_t{1} << (2 * half_bits_)) < n_) ++half_bits_;
    mask_ = (uint64_t{1} << half_bits_) - 1;
    for (int r = 0; r < 4; ++r) keys_[r] = splitmix64_keyed(seed, kPermutationDomain, static_cast<uint64_t>(slot) * 4 + r);
  }

  uint64_t operator()(uint64_t x) const {
    do x = feistel(x);
    while (x >= n_);
    return x;
  }

 private:
  uint64_t feistel(uint64_t x) const {
    uint64_t left = x >> half_bits_, right = x & mask_;
    for (uint64_t key : keys_) {
      const uint64_t mixed = left ^ (splitmix64_mix(right ^ key) & mask_);
      left = right;
      right = mixed;
    }
    return (left << half_bits_) | right;
  }

  uint64_t n_;
  int half_bits_ = 1;
  uint64_t mask_ = 0;
  uint64_t keys_[4] = {};
};

// Ranks 0 .. n-1 (rank k+1 of the formula) with probability ~ 1/(k+1)^s:
// the running sums of the weights, searched by bisection. A guide table
// (Chen & Asau's indexed search) narrows each search first: guide_[j] is the
// first rank whose running sum exceeds j/n of the total, so a target in
// [j/n, (j+1)/n) of the total lies between guide_[j] and guide_[j+1] and
// the bisection runs over a few ranks instead of all n. The answer is the
// same rank a bisection of the whole table gives, only found sooner.
class ZipfTable {
 public:
  ZipfTable(int64_t n, double exponent) : cumulative_(static_cast<size_t>(n)), guide_(static_cast<size_t>(n) + 1) {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      sum += std::pow(static_cast<double>(k + 1), -exponent);
      cumulative_[static_cast<size_t>(k)] = sum;
    }
    size_t k = 0;
    for (size_t j = 0; j < guide_.size(); ++j) {
      while (k < cumulative_.size() && cumulative_[k] <= bucket_start(j)) ++k;
      guide_[j] = k;
    }
  }

  uint64_t draw(double unit) const {
    const double target = unit * cumulative_.back();
    // The bucket holding the target; rounding may put the target below the
    // bucket's start, so the lower bound comes from the bucket before.
    const size_t j = std::min(static_cast<size_t>(unit * static_cast<double>(cumulative_.size())), cumulative_.size() - 1);
    const size_t lo = guide_[j > 0 ? j - 1 : 0], hi = std::min(guide_[j + 1] + 1, cumulative_.size());
    auto begin = cumulative_.begin() + static_cast<ptrdiff_t>(lo), end = cumulative_.begin() + static_cast<ptrdiff_t>(hi);
    // The first rank whose running sum exceeds the target. Should rounding
    // have put the answer outside [lo, hi), the search goes on beyond it, so
    // the result is always exactly that of a bisection of the whole table.
    auto it = std::upper_bound(begin, end, target);
    if (it == end && hi < cumulative_.size()) it = std::upper_bound(end, cumulative_.end(), target);
    if (it == begin && lo > 0) it = std::upper_bound(cumulative_.begin(), begin, target);
    // A target at the very end (rounding again) takes the last rank.
    return static_cast<uint64_t>(std::min<ptrdiff_t>(it - cumulative_.begin(), std::ssize(cumulative_) - 1));
  }

 private:
  double bucket_start(size_t j) const {
    return static_cast<double>(j) / static_cast<double>(cumulative_.size()) * cumulative_.back();
  }

  std::vector<double> cumulative_;
  std::vector<size_t> guide_;
};

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

}  // namespace

double click_logit(const ClickLogOptions& options, std::span<const int64_t> ids, std::span<const float> dense) {
  check_options(options);
  if (std::ssize(ids) != options.slots || std::ssize(dense) != options.dense_features) {
    throw Error(ErrorKind::kInvalidArgument, "click_logit: an example has " + std::to_string(options.slots) + " ids and " +
                                                 std::to_string(options.dense_features) + " dense features, got " +
                                                 std::to_string(ids.size()) + " ids and " + std::to_string(dense.size()) +
                                                 " dense features");
  }
  for (int s = 0; s < options.slots; ++s) {
    const int64_t lo = s * options.ids_per_slot, hi = lo + options.ids_per_slot;
    if (ids[static_cast<size_t>(s)] < lo || ids[static_cast<size_t>(s)] >= hi) {
      throw Error(ErrorKind::kInvalidArgument, "click_logit: id " + std::to_string(ids[static_cast<size_t>(s)]) +
                                                   " of slot " + std::to_string(s) + " is outside the slot's range [" +
                                                   std::to_string(lo) + ", " + std::to_string(hi) + ")");
    }
  }
  const TrueModel model(options);
  std::vector<double> weights(ids.size());
  for (size_t s = 0; s < ids.size(); ++s) weights[s] = model.id_weight(ids[s]);
  return model.logit(weights.data(), dense.data());
}

ClickLog synthetic_click_log(const ClickLogOptions& options) {
  check_options(options);
  const int64_t n = options.examples, slots = options.slots, features = options.dense_features;
  ClickLog log{Tensor::uninitialized(DType::kInt64, {n, slots}), Tensor::uninitialized(DType::kFloat32, {n, features}),
               Tensor::uninitialized(DType::kFloat32, {n, 1}), Tensor::uninitialized(DType::kFloat32, {n})};
  if (n == 0) return log;

  const TrueModel model(options);
  const ZipfTable zipf(options.ids_per_slot, options.zipf_exponent);
  std::vector<SlotPermutation> permutations;
  for (int s = 0; s < options.slots; ++s) permutations.emplace_back(options.ids_per_slot, options.model_seed, s);

  // The ids and weights of each slot's most frequent ranks, computed once:
  // with the default Zipf exponent the top 1024 ranks take about 3/4 of the
  // draws, which then skip the permutation and the weight's normal draw.
  const int64_t head = std::min<int64_t>(kHeadRanks, options.ids_per_slot);
  std::vector<int64_t> head_ids(static_cast<size_t>(slots * head));
  std::vector<double> head_weights(head_ids.size());
  for (int s = 0; s < options.slots; ++s) {
    for (int64_t rank = 0; rank < head; ++rank) {
      const size_t at = static_cast<size_t>(s * head + rank);
      head_ids[at] = s * options.ids_per_slot + static_cast<int64_t>(permutations[static_cast<size_t>(s)](static_cast<uint64_t>(rank)));
      head_weights[at] = model.id_weight(head_ids[at]);
    }
  }

  std::vector<double> row_weights(static_cast<size_t>(slots));
  int64_t* ids = log.ids.data<int64_t>();
  float* dense = features > 0 ? log.dense.data<float>() : nullptr;
  float* labels = log.labels.data<float>();
  float* probability = log.true_probability.data<float>();
  // One sequential stream for the whole log: ids, dense values, then the label's coin, example by example.
  uint64_t state = splitmix64_keyed(options.sample_seed, kSampleDomain, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t* row_ids = ids + i * slots;
    float* row_dense = dense != nullptr ? dense + i * features : nullptr;
    for (int s = 0; s < options.slots; ++s) {
      const uint64_t rank = zipf.draw(splitmix64_unit(state));
      if (static_cast<int64_t>(rank) < head) {
        row_ids[s] = head_ids[static_cast<size_t>(s * head) + rank];
        row_weights[static_cast<size_t>(s)] = head_weights[static_cast<size_t>(s * head) + rank];
      } else {
        row_ids[s] = s * options.ids_per_slot + static_cast<int64_t>(permutations[static_cast<size_t>(s)](rank));
        row_weights[static_cast<size_t>(s)] = model.id_weight(row_ids[s]);
      }
    }
    // 24 random bits: exact in f32 and below 1 (a double in [0, 1) rounded to f32 can become 1.0f).
    for (int64_t j = 0; j < features; ++j) row_dense[j] = static_cast<float>(splitmix64_next(state) >> 40) * 0x1.0p-24f;
    const double p = sigmoid(model.logit(row_weights.data(), row_dense));
    probability[i] = static_cast<float>(p);
    labels[i] = splitmix64_unit(state) < p ? 1.0f : 0.0f;
  }
  return log;
}

}  // namespace weir
