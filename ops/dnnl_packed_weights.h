// Constant weights reordered once into the layout a oneDNN primitive
// prefers, and kept: the conv and matmul kernels of nodes whose weights are
// graph constants use it instead of reordering on every run.
//
//   PackedWeights packed;   // one per cached primitive
//   dnnl::memory w = packed.get(weights_ptr, plain_desc, pd.weights_desc(), engine, stream);
//
// A different source pointer is packed again. Thread-safe.
#pragma once

#include <dnnl.hpp>

#include <mutex>
#include <optional>

namespace weir {

class PackedWeights {
 public:
  dnnl::memory get(const void* source, const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted,
                   const dnnl::engine& engine, dnnl::stream& stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!packed_ || source_ != source) {
      dnnl::memory user(plain, engine, const_cast<void*>(source));
      dnnl::memory packed(wanted, engine);
      dnnl::reorder(user, packed).execute(stream, user, packed);
      stream.wait();
      packed_ = packed;
      source_ = source;
    }
    return *packed_;
  }

 private:
  std::mutex mutex_;
  const void* source_ = nullptr;
  std::optional<dnnl::memory> packed_;
};

}  // namespace weir
