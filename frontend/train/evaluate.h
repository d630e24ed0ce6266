// Evaluation of a classifier: runs an inference session over a labelled set
// in batches and counts the rows whose arg-max logit is the label.
//
//   double accuracy = weir::classification_accuracy(session, "x", test_images, test_labels, 1000);
#pragma once

#include <cstdint>
#include <string>

#include "runtime/session.h"

namespace weir {

// The session's first output must be logits [batch, classes]. The input's
// batch dim may be symbolic (any batch) or static (then `batch_size` must
// equal it and a final partial batch is padded and ignored).
double classification_accuracy(Session& session, const std::string& input, const Tensor& examples,
                               const Tensor& labels, int64_t batch_size);

}  // namespace weir
