#include "frontend/data/class_centres.h"

#include "core/error.h"
#include "core/splitmix.h"

namespace weir {

LabelledExamples class_centre_examples(const ClassCentresOptions& options) {
  int64_t size = 1;
  for (int64_t d : options.example_shape) size *= d;
  if (options.classes < 1 || options.count < 0 || options.example_shape.empty() || size < 1 || !(options.noise >= 0)) {
    throw Error(ErrorKind::kInvalidArgument, "class-centre examples need classes >= 1, count >= 0, a non-empty example "
                                             "shape and noise >= 0; got " + std::to_string(options.classes) + " classes, " +
                                             std::to_string(options.count) + " examples");
  }
  std::vector<int64_t> sizes = {options.count};
  sizes.insert(sizes.end(), options.example_shape.begin(), options.example_shape.end());
  LabelledExamples set{Tensor(DType::kFloat32, sizes), Tensor(DType::kInt64, {options.count})};
  uint64_t samples = options.sample_seed * 0xD1B54A32D192ED03ULL + 0x8CB92BA72F3D8DD7ULL;
  for (int64_t i = 0; i < options.count; ++i) {
    const int64_t label = static_cast<int64_t>(splitmix64_next(samples) % static_cast<uint64_t>(options.classes));
    set.labels.data<int64_t>()[i] = label;
    uint64_t centre = options.seed * 0x9E3779B97F4A7C15ULL ^ (static_cast<uint64_t>(label) + 1) * 0xA24BAED4963EE407ULL;
    float* x = set.examples.data<float>() + i * size;
    for (int64_t e = 0; e < size; e += 2) {
      const auto [z0, z1] = splitmix64_normal_pair(samples);
      x[e] = static_cast<float>(splitmix64_unit(centre) + options.noise * z0);
      if (e + 1 < size) x[e + 1] = static_cast<float>(splitmix64_unit(centre) + options.noise * z1);
    }
  }
  return set;
}

}  // namespace weir
