#include "ops/dnnl_packed_weights.h"

#include <cstring>
#include <memory>
#include <string>

namespace weir {

namespace {

std::string isa_name(dnnl::cpu_isa isa) {
  using dnnl::cpu_isa;
  switch (isa) {
    case cpu_isa::sse41: return "sse41";
    case cpu_isa::avx: return "avx";
    case cpu_isa::avx2: return "avx2";
    case cpu_isa::avx2_vnni: return "avx2_vnni";
    case cpu_isa::avx512_core: return "avx512_core";
    case cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "isa" + std::to_string(static_cast<int>(isa));
  }
}

}  // namespace

std::string packed_constant_target() {
  const dnnl_version_t* version = dnnl_version();
  return "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
         std::to_string(version->patch) + " " + isa_name(dnnl::get_effective_cpu_isa());
}

std::string packed_layout(const dnnl::memory::desc& desc) {
  return std::string(reinterpret_cast<const char*>(&desc.data), sizeof(desc.data));
}

void AdoptedPacks::add(std::vector<PackedConstant> packs) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (PackedConstant& pack : packs) packs_.push_back(std::move(pack));
}

std::optional<Tensor> AdoptedPacks::take(const dnnl::memory::desc& wanted) {
  // Compared as bytes, never read as a descriptor: the file's bytes are
  // not trusted to be one, and one target makes the same bytes for the same
  // layout.
  std::string layout = packed_layout(wanted);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = packs_.begin(); it != packs_.end(); ++it) {
    if (it->layout == layout && it->data.nbytes() == wanted.get_size()) {
      Tensor data = std::move(it->data);
      packs_.erase(it);
      return data;
    }
  }
  return std::nullopt;
}

bool AdoptedPacks::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return packs_.empty();
}

dnnl::memory PackedWeights::get(const void* source, const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted,
                                const dnnl::engine& engine, dnnl::stream& stream, AdoptedPacks* adopted) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (packed_ && source_ == source) return *packed_;
  if (!packed_ && adopted != nullptr) {
    if (std::optional<Tensor> bytes = adopted->take(wanted)) {
      adopted_bytes_ = std::move(*bytes);
      packed_ = dnnl::memory(wanted, engine, adopted_bytes_.raw_data());
      source_ = source;
      return *packed_;
    }
  }
  dnnl::memory user(plain, engine, const_cast<void*>(source));
  dnnl::memory packed(wanted, engine);
  dnnl::reorder(user, packed).execute(stream, user, packed);
  stream.wait();
  packed_ = packed;
  source_ = source;
  adopted_bytes_ = Tensor();
  return *packed_;
}

std::optional<PackedConstant> PackedWeights::exported() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!packed_) return std::nullopt;
  const dnnl::memory::desc desc = packed_->get_desc();
  auto keep = std::make_shared<dnnl::memory>(*packed_);
  auto bytes = static_cast<int64_t>(desc.get_size());
  return PackedConstant{packed_layout(desc),
                        Tensor::wrap(DType::kUInt8, {bytes}, packed_->get_data_handle(), Device::cpu(), keep),
                        adopted_bytes_.defined()};
}

}  // namespace weir
