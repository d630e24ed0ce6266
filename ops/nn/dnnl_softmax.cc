#include "ops/nn/dnnl_softmax.h"

#include <dnnl.hpp>

#include <map>
#include <mutex>
#include <tuple>

#include "ops/dnnl_scratchpad.h"

namespace weir {

namespace {

dnnl::memory::desc line_desc(DType dtype, const AxisSplit& split) {
  return dnnl::memory::desc({split.outer, split.n, split.inner},
                            dtype == DType::kBFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::abc);
}

}  // namespace

struct DnnlSoftmax::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  struct Cached {
    dnnl::primitive primitive;
    dnnl::memory::desc scratchpad;
  };
  std::map<std::tuple<DType, bool, int64_t, int64_t, int64_t>, Cached> primitives;

  Cached primitive(DType dtype, const AxisSplit& split, bool log) {
    auto key = std::make_tuple(dtype, log, split.outer, split.n, split.inner);
    std::lock_guard<std::mutex> lock(mutex);
    auto found = primitives.find(key);
    if (found != primitives.end()) return found->second;
    dnnl::memory::desc data = line_desc(dtype, split);
    Cached created;
    if (log) {
      dnnl::logsoftmax_forward::desc desc(dnnl::prop_kind::forward_inference, data, 1);
      dnnl::logsoftmax_forward::primitive_desc pd(desc, user_scratchpad(), engine);
      created = {dnnl::logsoftmax_forward(pd), pd.scratchpad_desc()};
    } else {
      dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, data, 1);
      dnnl::softmax_forward::primitive_desc pd(desc, user_scratchpad(), engine);
      created = {dnnl::softmax_forward(pd), pd.scratchpad_desc()};
    }
    primitives.emplace(key, created);
    return created;
  }
};

DnnlSoftmax::DnnlSoftmax() : impl_(std::make_unique<Impl>()) {}
DnnlSoftmax::~DnnlSoftmax() = default;

void DnnlSoftmax::forward(DType dtype, const AxisSplit& split, bool log, const void* in, void* out) {
  // Primitives are shared handles; executing one from several threads is allowed.
  Impl::Cached softmax = impl_->primitive(dtype, split, log);
  dnnl::stream stream(impl_->engine);
  dnnl::memory::desc data = line_desc(dtype, split);
  softmax.primitive.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(data, impl_->engine, const_cast<void*>(in))},
                                     {DNNL_ARG_DST, dnnl::memory(data, impl_->engine, out)},
                                     {DNNL_ARG_SCRATCHPAD, thread_scratchpad(softmax.scratchpad, impl_->engine)}});
  stream.wait();
}

}  // namespace weir
