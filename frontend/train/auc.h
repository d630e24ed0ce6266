// The area under the ROC curve of a binary classifier's scores: the
// probability that a random positive scores above a random negative, with
// ties counted as half (the Mann-Whitney U statistic over average ranks,
// divided by positives x negatives). Only the order of the scores matters,
// so logits and probabilities give the same AUC.
//
//   double auc = weir::roc_auc(predicted_probability, labels);   // 0.5: chance, 1: perfect
#pragma once

#include <span>

namespace weir {

// Area under the ROC curve of `scores` for binary `labels` (0 or 1; anything else is an error naming the index),
// ties counted as half (the Mann-Whitney statistic over average ranks). Throws kInvalidArgument when sizes differ,
// or when one class is absent (AUC undefined; say which class). A NaN score is an error naming its index (it has no
// place in the order). O(n log n): one sort, then one pass over the groups of tied scores; the count is exact
// (integer) before the final division.
double roc_auc(std::span<const float> scores, std::span<const float> labels);

}  // namespace weir
