// Constant weights reordered once into the layout a oneDNN primitive
// prefers, and kept: the conv and matmul kernels of nodes whose weights are
// graph constants use it instead of reordering on every run.
//
//   PackedWeights packed;   // one per cached primitive
//   dnnl::memory w = packed.get(weights_ptr, plain_desc, pd.weights_desc(), engine, stream, &adopted);
//   std::optional<PackedConstant> saved = packed.exported();   // for a plan file
//
// A different source pointer is packed again. `adopted` holds packs a plan
// file brought (AdoptedPacks): one already in the wanted layout is used in
// place of packing, which is what lets a loaded plan's first run skip the
// reorders (ResNet-50's: 100 ms, most of them Winograd transforms).
// Thread-safe.
#pragma once

#include <dnnl.hpp>

#include <mutex>
#include <optional>
#include <vector>

#include "ops/kernel.h"

namespace weir {

// The layout string of a PackedConstant: the bytes of oneDNN's descriptor.
std::string packed_layout(const dnnl::memory::desc& desc);

// Packs from a plan file waiting for the primitive that wants their layout.
class AdoptedPacks {
 public:
  void add(std::vector<PackedConstant> packs);
  // Removes and returns the pack in `wanted`'s layout and of its size;
  // nullopt when there is none.
  std::optional<Tensor> take(const dnnl::memory::desc& wanted);
  bool empty() const;

 private:
  mutable std::mutex mutex_;
  std::vector<PackedConstant> packs_;
};

class PackedWeights {
 public:
  dnnl::memory get(const void* source, const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted,
                   const dnnl::engine& engine, dnnl::stream& stream, AdoptedPacks* adopted = nullptr);
  // The packed bytes and their layout (a view that keeps them alive);
  // nullopt before the first get().
  std::optional<PackedConstant> exported() const;

 private:
  mutable std::mutex mutex_;
  const void* source_ = nullptr;
  std::optional<dnnl::memory> packed_;
  Tensor adopted_bytes_;  // an adopted pack's bytes (a view of the plan file), kept alive
};

// The packs of every primitive in a cache (a map whose values are
// shared_ptrs, null for "no primitive"), `packed_of` naming each one's
// PackedWeights: what DnnlConv, DnnlMatmul and the int8 ones export.
template <typename Cache, typename PackedOf>
std::vector<PackedConstant> export_packs(const Cache& cache, PackedOf packed_of) {
  std::vector<PackedConstant> packs;
  for (const auto& entry : cache) {
    if (!entry.second) continue;
    if (std::optional<PackedConstant> pack = packed_of(*entry.second).exported()) packs.push_back(std::move(*pack));
  }
  return packs;
}

}  // namespace weir
