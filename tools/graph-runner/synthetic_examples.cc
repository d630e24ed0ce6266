#include "tools/graph-runner/synthetic_examples.h"

#include <random>
#include <vector>

namespace weir::tools {

std::pair<Tensor, Tensor> synthetic_examples(const models::ClassifierGraph& shape, const models::ZooOptions& zoo,
                                             int64_t count, uint64_t seed) {
  std::vector<int64_t> sizes = {count};
  sizes.insert(sizes.end(), shape.example_shape.begin(), shape.example_shape.end());
  Tensor x(shape.input_dtype, sizes);
  Tensor y(DType::kInt64, {count});
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (shape.input_dtype == DType::kInt64) {
      x.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.vocab));
    } else {
      x.data<float>()[i] = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53);
    }
  }
  for (int64_t i = 0; i < count; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.classes));
  return {x, y};
}

}  // namespace weir::tools
