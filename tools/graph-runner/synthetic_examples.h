// Seeded random examples for a zoo classifier, shaped like its input, and
// random labels: what train --data synthetic trains on and what explain
// times one rank's step with.
//
//   auto [x, y] = weir::tools::synthetic_examples(classifier, zoo, 512, /*seed=*/43);
#pragma once

#include <cstdint>
#include <utility>

#include "core/tensor.h"
#include "models/zoo.h"

namespace weir::tools {

// Floats in [0, 1) (token ids below zoo.vocab for an integer input) and
// labels below zoo.classes; the same seed and count give the same examples.
std::pair<Tensor, Tensor> synthetic_examples(const models::ClassifierGraph& shape, const models::ZooOptions& zoo,
                                             int64_t count, uint64_t seed);

}  // namespace weir::tools
