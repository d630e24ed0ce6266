#include "frontend/train/auc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace weir {

double roc_auc(std::span<const float> scores, std::span<const float> labels) {
  if (scores.size() != labels.size()) {
    throw Error(ErrorKind::kInvalidArgument, "roc_auc: " + std::to_string(scores.size()) + " scores but " +
                                                 std::to_string(labels.size()) + " labels (one label per score expected)");
  }
  std::vector<std::pair<float, bool>> scored(scores.size());
  int64_t positives = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (labels[i] != 0.0f && labels[i] != 1.0f) {
      throw Error(ErrorKind::kInvalidArgument, "roc_auc: label " + std::to_string(i) + " is " + std::to_string(labels[i]) +
                                                   "; labels must be 0 or 1");
    }
    if (std::isnan(scores[i])) throw Error(ErrorKind::kInvalidArgument, "roc_auc: score " + std::to_string(i) + " is NaN");
    scored[i] = {scores[i], labels[i] == 1.0f};
    positives += labels[i] == 1.0f;
  }
  const int64_t negatives = static_cast<int64_t>(scores.size()) - positives;
  if (positives == 0 || negatives == 0) {
    throw Error(ErrorKind::kInvalidArgument, std::string("roc_auc: no ") + (positives == 0 ? "positive (label 1)" : "negative (label 0)") +
                                                 " examples among " + std::to_string(scores.size()) +
                                                 "; the AUC needs both classes");
  }
  // Sorted by score alone: the order inside a group of ties does not matter,
  // since a group is counted as a whole.
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Twice U: each positive beats the negatives below its group (2 each) and
  // ties those in its group (1 each). Integers, so the sum is exact.
  uint64_t twice_u = 0, negatives_below = 0;
  for (size_t begin = 0; begin < scored.size();) {
    size_t end = begin;
    uint64_t group_positives = 0, group_negatives = 0;
    for (; end < scored.size() && scored[end].first == scored[begin].first; ++end) {
      (scored[end].second ? group_positives : group_negatives) += 1;
    }
    twice_u += group_positives * (2 * negatives_below + group_negatives);
    negatives_below += group_negatives;
    begin = end;
  }
  return static_cast<double>(twice_u) / (2.0 * static_cast<double>(positives) * static_cast<double>(negatives));
}

}  // namespace weir
