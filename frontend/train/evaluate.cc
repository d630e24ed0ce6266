#include "frontend/train/evaluate.h"

#include <cstring>

#include "core/error.h"

namespace weir {

double classification_accuracy(Session& session, const std::string& input, const Tensor& examples,
                               const Tensor& labels, int64_t batch_size) {
  if (examples.rank() < 1 || labels.rank() != 1 || labels.dtype() != DType::kInt64 ||
      labels.sizes()[0] != examples.sizes()[0]) {
    throw Error(ErrorKind::kInvalidArgument, "evaluation: examples " + examples.type_string() +
                                                 " and labels " + labels.type_string() +
                                                 " must have the same count; labels must be i64[N]");
  }
  const int64_t n = examples.sizes()[0];
  const size_t row = n > 0 ? examples.nbytes() / static_cast<size_t>(n) : 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    int64_t count = std::min(batch_size, n - begin);
    std::vector<int64_t> sizes = examples.sizes();
    sizes[0] = batch_size;
    Tensor batch(examples.dtype(), sizes);
    std::memcpy(batch.raw_data(), static_cast<const char*>(examples.raw_data()) + static_cast<size_t>(begin) * row,
                static_cast<size_t>(count) * row);
    const Value* in = session.plan().graph().find_value(input);
    if (in != nullptr && in->shape().has_rank() && !in->shape()[0].is_static()) batch = batch.slice(0, count);
    std::vector<Tensor> outputs = session.run({{input, batch}});
    const Tensor& logits = outputs.at(0);
    if (logits.rank() != 2 || logits.dtype() != DType::kFloat32) {
      throw Error(ErrorKind::kInvalidArgument, "evaluation: the first output must be f32 logits [batch, classes], got " +
                                                   logits.type_string());
    }
    const int64_t classes = logits.sizes()[1];
    const float* l = logits.data<float>();
    for (int64_t i = 0; i < count; ++i) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c) {
        if (l[i * classes + c] > l[i * classes + best]) best = c;
      }
      if (best == labels.data<int64_t>()[begin + i]) ++correct;
    }
  }
  return n > 0 ? static_cast<double>(correct) / static_cast<double>(n) : 0;
}

}  // namespace weir
