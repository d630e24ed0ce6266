#include "ops/quantization/dnnl_int8_matmul.h"

#include <dnnl.hpp>

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "ops/dnnl_packed_weights.h"
#include "ops/dnnl_scratchpad.h"

namespace weir {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::data_type dnnl_type(DType dtype) {
  switch (dtype) {
    case DType::kInt8: return memory::data_type::s8;
    case DType::kUInt8: return memory::data_type::u8;
    default: return memory::data_type::s32;
  }
}

struct Cached {
  dnnl::matmul primitive;
  memory::desc a, b_plain, b_wanted, y, scratchpad;
  PackedWeights packed_b;
};

using Key = std::tuple<int64_t, int64_t, int64_t, DType, DType, std::vector<float>, bool, bool, bool>;

}  // namespace

struct DnnlInt8Matmul::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  std::map<Key, std::shared_ptr<Cached>> cache;  // null: oneDNN has no fast kernel
  AdoptedPacks adopted;  // packed B matrices a plan file brought

  std::shared_ptr<Cached> get(int64_t rows, int64_t k, int64_t n, const Int8MatmulSetup& s, bool constant_b) {
    Key key{rows, k, n, s.a_dtype, s.y_dtype, s.multipliers, s.a_zero_nonzero, s.y_zero_nonzero, constant_b};
    std::lock_guard<std::mutex> lock(mutex);
    auto found = cache.find(key);
    if (found != cache.end()) return found->second;
    std::shared_ptr<Cached> created;
    try {
      created = build(rows, k, n, s, constant_b);
    } catch (const dnnl::error&) {
      created = nullptr;
    }
    cache.emplace(std::move(key), created);
    return created;
  }

  std::shared_ptr<Cached> build(int64_t rows, int64_t k, int64_t n, const Int8MatmulSetup& s, bool constant_b) {
    auto c = std::make_shared<Cached>();
    c->a = memory::desc({rows, k}, dnnl_type(s.a_dtype), Tag::ab);
    c->b_plain = memory::desc({k, n}, memory::data_type::s8, Tag::ab);
    c->y = memory::desc({rows, n}, dnnl_type(s.y_dtype), Tag::ab);
    memory::desc b = constant_b ? memory::desc({k, n}, memory::data_type::s8, Tag::any) : c->b_plain;
    dnnl::primitive_attr attr = user_scratchpad();
    if (!s.multipliers.empty()) attr.set_output_scales(s.multipliers.size() == 1 ? 0 : 1 << 1, s.multipliers);
    if (s.a_zero_nonzero) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    if (s.y_zero_nonzero) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(c->a, b, c->y), attr, engine);
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return nullptr;  // slower than the loops
    c->primitive = dnnl::matmul(pd);
    c->b_wanted = pd.weights_desc();
    c->scratchpad = pd.scratchpad_desc();
    return c;
  }
};

DnnlInt8Matmul::DnnlInt8Matmul() : impl_(std::make_unique<Impl>()) {}

std::vector<PackedConstant> DnnlInt8Matmul::packed_weights() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return export_packs(impl_->cache, [](const auto& cached) -> const PackedWeights& { return cached.packed_b; });
}

void DnnlInt8Matmul::adopt_packed_weights(std::vector<PackedConstant> packs) { impl_->adopted.add(std::move(packs)); }
DnnlInt8Matmul::~DnnlInt8Matmul() = default;

bool DnnlInt8Matmul::run(int64_t rows, int64_t k, int64_t n, const Int8MatmulSetup& setup, const Int8MatmulRun& r,
                         bool constant_b) {
  if (rows <= 0 || k <= 0 || n <= 0) return false;
  std::shared_ptr<Cached> c = impl_->get(rows, k, n, setup, constant_b);
  if (!c) return false;
  try {
    const dnnl::engine& engine = impl_->engine;
    dnnl::stream stream(engine);
    std::unordered_map<int, memory> args;
    args.emplace(DNNL_ARG_SRC, memory(c->a, engine, const_cast<void*>(r.a)));
    if (c->b_wanted != c->b_plain) {
      args.emplace(DNNL_ARG_WEIGHTS, c->packed_b.get(r.b, c->b_plain, c->b_wanted, engine, stream, &impl_->adopted));
    } else {
      args.emplace(DNNL_ARG_WEIGHTS, memory(c->b_plain, engine, const_cast<int8_t*>(r.b)));
    }
    args.emplace(DNNL_ARG_DST, memory(c->y, engine, r.y));
    int32_t a_zero = r.a_zero, y_zero = r.y_zero;
    memory::desc zero_desc({1}, memory::data_type::s32, Tag::x);
    if (setup.a_zero_nonzero) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory(zero_desc, engine, &a_zero));
    if (setup.y_zero_nonzero) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, memory(zero_desc, engine, &y_zero));
    args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(c->scratchpad, engine));
    c->primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::kInternal, std::string("oneDNN int8 matmul failed: ") + e.what());
  }
  return true;
}

}  // namespace weir
