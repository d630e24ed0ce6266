// A seeded synthetic classification set with any number of classes: each
// class has a centre (elements uniform in [0, 1), drawn from a generator
// keyed by the seed and the class alone, so a million classes need no
// table), and an example is its class's centre plus Gaussian noise. The
// nearest centre is the right answer, so accuracy means something at any C;
// the noise sets how hard it is.
//
//   weir::ClassCentresOptions options{.classes = 100000, .example_shape = {1, 28, 28}, .count = 8192};
//   weir::LabelledExamples train = weir::class_centre_examples(options);
//   options.sample_seed = 2;                       // held-out examples of the same classes
//   weir::LabelledExamples test = weir::class_centre_examples(options);
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace weir {

struct ClassCentresOptions {
  int64_t classes = 10;
  std::vector<int64_t> example_shape{};  // one example's (without the batch dim)
  int64_t count = 0;                     // examples
  double noise = 0.25;                   // the noise's standard deviation
  uint64_t seed = 1;                     // the centres
  uint64_t sample_seed = 1;              // the labels (uniform over the classes) and the noise
};

struct LabelledExamples {
  Tensor examples;  // f32 [count, example_shape...]
  Tensor labels;    // i64 [count]
};

// Throws weir::Error(kInvalidArgument) for no classes, a negative count or
// an empty example shape.
LabelledExamples class_centre_examples(const ClassCentresOptions& options);

}  // namespace weir
