#include "ops/nn/dnnl_layer_norm.h"

#include <dnnl.hpp>

#include <map>
#include <mutex>
#include <tuple>

#include "ops/dnnl_scratchpad.h"

namespace weir {

struct DnnlLayerNorm::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  struct Cached {
    dnnl::layer_normalization_forward primitive;
    dnnl::memory::desc scratchpad;
  };
  std::map<std::tuple<int64_t, int64_t, float, bool, bool>, Cached> primitives;

  Cached primitive(int64_t rows, int64_t len, float epsilon, bool bias, bool statistics) {
    auto key = std::make_tuple(rows, len, epsilon, bias, statistics);
    std::lock_guard<std::mutex> lock(mutex);
    auto found = primitives.find(key);
    if (found != primitives.end()) return found->second;
    dnnl::memory::desc data({rows, len}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    auto flags = dnnl::normalization_flags::use_scale;
    if (bias) flags = flags | dnnl::normalization_flags::use_shift;
    // forward_training is what makes oneDNN write the mean and variance.
    dnnl::layer_normalization_forward::desc desc(
        statistics ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, data, epsilon, flags);
    dnnl::layer_normalization_forward::primitive_desc pd(desc, user_scratchpad(), engine);
    Cached created{dnnl::layer_normalization_forward(pd), pd.scratchpad_desc()};
    primitives.emplace(key, created);
    return created;
  }
};

DnnlLayerNorm::DnnlLayerNorm() : impl_(std::make_unique<Impl>()) {}
DnnlLayerNorm::~DnnlLayerNorm() = default;

void DnnlLayerNorm::forward(int64_t rows, int64_t len, float epsilon, const float* x, const float* scale,
                            const float* bias, float* y, float* mean, float* variance) {
  bool statistics = mean != nullptr && variance != nullptr;
  Impl::Cached norm = impl_->primitive(rows, len, epsilon, bias != nullptr, statistics);
  const dnnl::engine& engine = impl_->engine;
  dnnl::memory::desc data({rows, len}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  dnnl::memory::desc params({len}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  dnnl::memory::desc per_row({rows}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(data, engine, const_cast<float*>(x))},
      {DNNL_ARG_DST, dnnl::memory(data, engine, y)},
      {DNNL_ARG_SCALE, dnnl::memory(params, engine, const_cast<float*>(scale))}};
  if (bias != nullptr) args.emplace(DNNL_ARG_SHIFT, dnnl::memory(params, engine, const_cast<float*>(bias)));
  if (statistics) {
    args.emplace(DNNL_ARG_MEAN, dnnl::memory(per_row, engine, mean));
    args.emplace(DNNL_ARG_VARIANCE, dnnl::memory(per_row, engine, variance));
  }
  dnnl::stream stream(engine);
  args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(norm.scratchpad, engine));
  norm.primitive.execute(stream, args);
  stream.wait();
}

}  // namespace weir
