#include "ops/nn/dnnl_pool.h"

#include <dnnl.hpp>

#include <map>
#include <mutex>
#include <tuple>

#include "ops/dnnl_scratchpad.h"

namespace weir {

namespace {

using dnnl::memory;

// The end padding oneDNN needs for `out` windows: at least the node's, more
// when ceil_mode added a window that runs past it.
int64_t end_padding(const ConvProblem& p, size_t a) {
  int64_t span = (p.kernel[a] - 1) * p.dilations[a] + 1;
  return std::max(p.pads_end[a], (p.out[a] - 1) * p.strides[a] + span - p.in[a] - p.pads_begin[a]);
}

memory::dims dims_of(const std::array<int64_t, 3>& values, size_t rank, int64_t minus = 0) {
  memory::dims dims;
  for (size_t a = 0; a < rank; ++a) dims.push_back(values[a] - minus);  // spatial axes first, as ConvProblem keeps them
  return dims;
}

memory::data_type data_type_of(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16: return memory::data_type::bf16;
    case DType::kUInt8: return memory::data_type::u8;
    case DType::kInt8: return memory::data_type::s8;
    default: return memory::data_type::f32;
  }
}

// Plain [N, C, spatial...] of the problem's input or output, or
// [N, spatial..., C] in memory when channels_last (dims stay N, C, spatial).
memory::desc plain_desc(const ConvProblem& p, DType dtype, bool output, bool channels_last) {
  memory::dims dims = output ? p.out_sizes() : p.in_sizes();
  memory::dims strides(dims.size(), 1);
  if (channels_last) {
    // Memory order N, spatial..., C: C is innermost, then the last spatial axis.
    int64_t stride = dims[1];
    for (size_t a = dims.size(); a-- > 2;) {
      strides[a] = stride;
      stride *= dims[a];
    }
    strides[0] = stride;
    return memory::desc(dims, data_type_of(dtype), strides);
  }
  for (size_t a = dims.size() - 1; a-- > 0;) strides[a] = strides[a + 1] * dims[a + 1];
  return memory::desc(dims, data_type_of(dtype), strides);
}

using Key = std::tuple<DType, bool, bool, bool, int64_t, int64_t, size_t, std::array<int64_t, 3>, std::array<int64_t, 3>,
                       std::array<int64_t, 3>, std::array<int64_t, 3>, std::array<int64_t, 3>, std::array<int64_t, 3>,
                       std::array<int64_t, 3>>;

}  // namespace

struct DnnlPool::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  struct Cached {
    dnnl::pooling_v2_forward primitive;
    dnnl::memory::desc scratchpad;
  };
  std::map<Key, std::shared_ptr<Cached>> primitives;

  std::shared_ptr<Cached> primitive(DType dtype, const ConvProblem& p, bool max, bool include_pad,
                                                     bool channels_last) {
    Key key{dtype, max, include_pad, channels_last, p.batch, p.in_channels, p.spatial_rank, p.in, p.out, p.kernel, p.strides,
            p.dilations, p.pads_begin, p.pads_end};
    std::lock_guard<std::mutex> lock(mutex);
    auto found = primitives.find(key);
    if (found != primitives.end()) return found->second;
    std::array<int64_t, 3> pads_end{};
    for (size_t a = 0; a < 3; ++a) pads_end[a] = end_padding(p, a);
    dnnl::algorithm algorithm = max ? dnnl::algorithm::pooling_max
                                : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                              : dnnl::algorithm::pooling_avg_exclude_padding;
    size_t rank = p.spatial_rank;
    // oneDNN counts dilation from 0 (no gaps); ONNX from 1.
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, plain_desc(p, dtype, false, channels_last),
                                        plain_desc(p, dtype, true, channels_last), dims_of(p.strides, rank), dims_of(p.kernel, rank),
                                        dims_of(p.dilations, rank, 1), dims_of(p.pads_begin, rank), dims_of(pads_end, rank));
    dnnl::pooling_v2_forward::primitive_desc pd(desc, user_scratchpad(), engine);
    auto created = std::make_shared<Cached>(Cached{dnnl::pooling_v2_forward(pd), pd.scratchpad_desc()});
    primitives.emplace(key, created);
    return created;
  }
};

DnnlPool::DnnlPool() : impl_(std::make_unique<Impl>()) {}
DnnlPool::~DnnlPool() = default;

bool DnnlPool::supports(DType dtype, const ConvProblem& p, bool max, bool include_pad) {
  // i8 and u8: the maximum only (an average would round).
  const bool integer = dtype == DType::kInt8 || dtype == DType::kUInt8;
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16 && !(integer && max)) return false;
  if (p.batch == 0 || p.in_channels == 0 || p.out_plane() == 0 || p.in_plane() == 0) return false;
  for (size_t a = 0; a < 3; ++a) {
    if (!max && include_pad && end_padding(p, a) != p.pads_end[a]) return false;
    // A window wholly inside the padding has no taps; oneDNN refuses such shapes.
    if (p.pads_begin[a] >= (p.kernel[a] - 1) * p.dilations[a] + 1 || end_padding(p, a) >= (p.kernel[a] - 1) * p.dilations[a] + 1) {
      return false;
    }
  }
  return true;
}

void DnnlPool::forward(DType dtype, const ConvProblem& p, bool max, bool include_pad, const void* in, void* out,
                       bool channels_last) {
  std::shared_ptr<Impl::Cached> pool = impl_->primitive(dtype, p, max, include_pad, channels_last);
  dnnl::stream stream(impl_->engine);
  memory src(plain_desc(p, dtype, false, channels_last), impl_->engine, const_cast<void*>(in));
  memory dst(plain_desc(p, dtype, true, channels_last), impl_->engine, out);
  pool->primitive.execute(stream, {{DNNL_ARG_SRC, src},
                                   {DNNL_ARG_DST, dst},
                                   {DNNL_ARG_SCRATCHPAD, thread_scratchpad(pool->scratchpad, impl_->engine)}});
  stream.wait();
}

}  // namespace weir
