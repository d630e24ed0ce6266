#include "ops/nn/pool_kernels.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "ops/dtype_dispatch.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/dnnl_pool.h"
#include "ops/nn/pool_problem.h"
#include "ops/threading.h"

namespace weir {

namespace {

// Calls fn(out_offset, in_offsets_of_the_window, padded_count) for each output
// position of one plane; `padded_count` is how many taps fall inside the
// padded input (count_include_pad's divisor).
template <typename Fn>
void for_each_window(const ConvProblem& p, std::vector<int64_t>& taps, Fn&& fn) {
  for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
      for (int64_t o2 = 0; o2 < p.out[2]; ++o2) {
        taps.clear();
        int64_t padded = 1;
        int64_t o[3] = {o0, o1, o2};
        int64_t lo[3];
        for (int a = 0; a < 3; ++a) {
          lo[a] = o[a] * p.strides[a] - p.pads_begin[a];
          int64_t inside_padding = 0;
          for (int64_t k = 0; k < p.kernel[a]; ++k) {
            int64_t i = lo[a] + k * p.dilations[a];
            if (i < p.in[a] + p.pads_end[a]) ++inside_padding;
          }
          padded *= inside_padding;
        }
        for (int64_t k0 = 0; k0 < p.kernel[0]; ++k0) {
          int64_t i0 = lo[0] + k0 * p.dilations[0];
          if (i0 < 0 || i0 >= p.in[0]) continue;
          for (int64_t k1 = 0; k1 < p.kernel[1]; ++k1) {
            int64_t i1 = lo[1] + k1 * p.dilations[1];
            if (i1 < 0 || i1 >= p.in[1]) continue;
            for (int64_t k2 = 0; k2 < p.kernel[2]; ++k2) {
              int64_t i2 = lo[2] + k2 * p.dilations[2];
              if (i2 < 0 || i2 >= p.in[2]) continue;
              taps.push_back((i0 * p.in[1] + i1) * p.in[2] + i2);
            }
          }
        }
        fn((o0 * p.out[1] + o1) * p.out[2] + o2, taps, padded);
      }
    }
  }
}

// The first maximum of a window (NaN wins, as it propagates); -1 for an empty window.
template <typename T>
int64_t first_max(const T* plane, const std::vector<int64_t>& taps) {
  int64_t best = -1;
  ComputeType<T> best_value{};
  for (int64_t tap : taps) {
    ComputeType<T> value = load(plane[tap]);
    if (best < 0 || value > best_value || (std::isnan(value) && !std::isnan(best_value))) {
      best = tap;
      best_value = value;
    }
  }
  return best;
}

class MaxPoolKernel final : public OpKernel {
 public:
  explicit MaxPoolKernel(const Node& node)
      : column_major_(max_pool_column_major(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    ConvProblem p = pool_problem(ctx.node(), x.sizes());
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.out_sizes(), KernelContext::Fill::kUninitialized);
    bool want_indices = ctx.num_outputs() > 1;
    if (!want_indices && DnnlPool::supports(x.dtype(), p, /*max=*/true, false)) {
      dnnl_.forward(x.dtype(), p, /*max=*/true, false, x.raw_data(), y.raw_data());
      return;
    }
    int64_t* indices = want_indices
        ? ctx.allocate_output(1, DType::kInt64, p.out_sizes(), KernelContext::Fill::kUninitialized).data<int64_t>()
        : nullptr;
    int64_t in_plane = p.in_plane(), out_plane = p.out_plane();
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        parallel_for(p.batch * p.in_channels, 1, [&](int64_t begin, int64_t end) {
          std::vector<int64_t> taps;
          for (int64_t plane = begin; plane < end; ++plane) {
            const T* src = in + plane * in_plane;
            for_each_window(p, taps, [&](int64_t o, const std::vector<int64_t>& window, int64_t) {
              int64_t best = first_max(src, window);
              // A window wholly in the padding: -inf, or the integer type's lowest.
              ComputeType<T> empty = std::numeric_limits<ComputeType<T>>::has_infinity
                                         ? -std::numeric_limits<ComputeType<T>>::infinity()
                                         : std::numeric_limits<ComputeType<T>>::lowest();
              out[plane * out_plane + o] = best < 0 ? store<T>(empty) : src[best];
              if (indices != nullptr) indices[plane * out_plane + o] = plane * in_plane + flat(p, best);
            });
          }
        });
      }
    });
  }

 private:
  // Offset within a plane, column-major when storage_order=1 (2-D: w * H + h).
  int64_t flat(const ConvProblem& p, int64_t offset) const {
    if (!column_major_ || offset < 0) return offset;
    int64_t i2 = offset % p.in[2], rest = offset / p.in[2], i1 = rest % p.in[1], i0 = rest / p.in[1];
    if (p.spatial_rank == 1) return offset;
    if (p.spatial_rank == 2) return i1 * p.in[0] + i0;  // (h, w) are in[0], in[1]; in[2] is 1
    return (i2 * p.in[1] + i1) * p.in[0] + i0;
  }

  bool column_major_;
  DnnlPool dnnl_;
};

class AveragePoolKernel final : public OpKernel {
 public:
  explicit AveragePoolKernel(const Node& node) : include_pad_(pool_count_include_pad(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    ConvProblem p = pool_problem(ctx.node(), x.sizes());
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.out_sizes(), KernelContext::Fill::kUninitialized);
    if (DnnlPool::supports(x.dtype(), p, /*max=*/false, include_pad_)) {
      dnnl_.forward(x.dtype(), p, /*max=*/false, include_pad_, x.raw_data(), y.raw_data());
      return;
    }
    int64_t in_plane = p.in_plane(), out_plane = p.out_plane();
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        parallel_for(p.batch * p.in_channels, 1, [&](int64_t begin, int64_t end) {
          std::vector<int64_t> taps;
          for (int64_t plane = begin; plane < end; ++plane) {
            const T* src = in + plane * in_plane;
            for_each_window(p, taps, [&](int64_t o, const std::vector<int64_t>& window, int64_t padded) {
              ComputeType<T> sum = 0;
              for (int64_t tap : window) sum += load(src[tap]);
              int64_t count = include_pad_ ? padded : static_cast<int64_t>(window.size());
              out[plane * out_plane + o] = store<T>(count > 0 ? sum / static_cast<ComputeType<T>>(count) : sum);
            });
          }
        });
      }
    });
  }

 private:
  bool include_pad_;
  DnnlPool dnnl_;
};

// ChannelsLastPool: MaxPool or AveragePool on [N, spatial..., C], through
// oneDNN only (the channels_last_layout pass makes it only for problems
// oneDNN supports).
class ChannelsLastPoolKernel final : public OpKernel {
 public:
  explicit ChannelsLastPoolKernel(const Node& node)
      : max_((node.has_attr("mode") ? node.attr("mode").s() : "max") == "max"), include_pad_(pool_count_include_pad(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    ConvProblem p = pool_problem(ctx.node(), channels_first_order(x.sizes()));
    Tensor& y = ctx.allocate_output(0, x.dtype(), channels_last_order(p.out_sizes()), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    if (!DnnlPool::supports(x.dtype(), p, max_, include_pad_)) {
      ctx.fail("oneDNN has no pooling for this window on " + x.type_string() +
               "; run the channels-first MaxPool/AveragePool instead");
    }
    dnnl_.forward(x.dtype(), p, max_, include_pad_, x.raw_data(), y.raw_data(), /*channels_last=*/true);
  }

 private:
  bool max_;
  bool include_pad_;
  DnnlPool dnnl_;
};

// Adds each output gradient of one (n, c) plane to the first maximal input
// of its window (in kernel order, NaN winning), as first_max does.
template <typename T>
void max_pool_backward_plane(const ConvProblem& p, const T* src, const T* grad, ComputeType<T>* acc) {
  using C = ComputeType<T>;
  const int64_t in_hw = p.in[1] * p.in[2];
  for (int64_t od = 0; od < p.out[0]; ++od) {
    for (int64_t oh = 0; oh < p.out[1]; ++oh) {
      for (int64_t ow = 0; ow < p.out[2]; ++ow) {
        int64_t best = -1;
        C best_value{};
        for (int64_t kd = 0; kd < p.kernel[0]; ++kd) {
          int64_t id = od * p.strides[0] - p.pads_begin[0] + kd * p.dilations[0];
          if (id < 0 || id >= p.in[0]) continue;
          for (int64_t kh = 0; kh < p.kernel[1]; ++kh) {
            int64_t ih = oh * p.strides[1] - p.pads_begin[1] + kh * p.dilations[1];
            if (ih < 0 || ih >= p.in[1]) continue;
            for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
              int64_t iw = ow * p.strides[2] - p.pads_begin[2] + kw * p.dilations[2];
              if (iw < 0 || iw >= p.in[2]) continue;
              int64_t tap = id * in_hw + ih * p.in[2] + iw;
              C value = load(src[tap]);
              if (best < 0 || value > best_value || (std::isnan(value) && !std::isnan(best_value))) {
                best = tap;
                best_value = value;
              }
            }
          }
        }
        if (best >= 0) acc[best] += load(grad[(od * p.out[1] + oh) * p.out[2] + ow]);
      }
    }
  }
}

// The common case of non-overlapping 2-D windows (stride = kernel, no
// padding or dilation, e.g. 2x2/2): every input belongs to at most one
// window, so dX is written once, without an accumulator, and without
// data-dependent branches (random activations make them mispredict).
bool non_overlapping_2d(const ConvProblem& p) {
  if (p.spatial_rank != 2) return false;
  for (size_t a = 0; a < 2; ++a) {
    if (p.kernel[a] != p.strides[a] || p.pads_begin[a] != 0 || p.dilations[a] != 1 || p.out[a] * p.kernel[a] > p.in[a]) {
      return false;
    }
  }
  return true;
}

template <typename T>
void max_pool_backward_non_overlapping(const ConvProblem& p, const T* src, const T* grad, T* dx) {
  using C = ComputeType<T>;
  const int64_t H = p.in[0], W = p.in[1], KH = p.kernel[0], KW = p.kernel[1], OH = p.out[0], OW = p.out[1];
  for (int64_t oh = 0; oh < OH; ++oh) {
    for (int64_t ow = 0; ow < OW; ++ow) {
      const T* window = src + oh * KH * W + ow * KW;
      T* out = dx + oh * KH * W + ow * KW;
      C best = load(window[0]);
      bool nan = false;
      for (int64_t kh = 0; kh < KH; ++kh) {
        for (int64_t kw = 0; kw < KW; ++kw) {
          C v = load(window[kh * W + kw]);
          best = v > best ? v : best;
          nan |= v != v;
        }
      }
      const T g = grad[oh * OW + ow];
      bool done = false;
      for (int64_t kh = 0; kh < KH; ++kh) {
        for (int64_t kw = 0; kw < KW; ++kw) {
          C v = load(window[kh * W + kw]);
          // The first NaN wins when there is one, else the first maximum.
          bool hit = !done & (nan ? v != v : v == best);
          out[kh * W + kw] = hit ? g : store<T>(C(0));
          done |= hit;
        }
      }
    }
  }
  // Rows and columns past the last window get no gradient.
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t w = h < OH * KH ? OW * KW : 0; w < W; ++w) dx[h * W + w] = store<T>(C(0));
  }
}

#if defined(__SSE2__)
// Four consecutive elements as f32 lanes, and back. bf16 is the top half of
// an f32, so both directions are exact shifts (dX holds only dY values and
// zeros, which need no rounding).
inline __m128 load4(const float* p) { return _mm_loadu_ps(p); }
inline void store4(float* p, __m128 v) { _mm_storeu_ps(p, v); }
inline __m128 load4(const BFloat16* p) {
  __m128i half = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), half));
}
inline void store4(BFloat16* p, __m128 v) {
  __m128i top = _mm_srai_epi32(_mm_castps_si128(v), 16);  // sign-extended: packs cannot saturate
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packs_epi32(top, top));
}
inline float to_float(float v) { return v; }
inline float to_float(BFloat16 v) { return bf16_bits_to_float(v.bits); }
inline void from_exact_float(float* p, float v) { *p = v; }
inline void from_exact_float(BFloat16* p, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  p->bits = static_cast<uint16_t>(bits >> 16);
}

// 2x2/2 windows of one f32 or bf16 plane, four windows per step in SSE
// registers: the window's maximum, then masks that pick its first maximal
// tap. Returns false (having written garbage) when the plane holds a NaN,
// for which the scalar path's first-NaN rule applies instead.
template <typename T>
bool max_pool_backward_2x2(const ConvProblem& p, const T* src, const T* grad, T* dx) {
  const int64_t W = p.in[1], OH = p.out[0], OW = p.out[1];
  __m128 nan = _mm_setzero_ps();
  const __m128 all = _mm_castsi128_ps(_mm_set1_epi32(-1));
  for (int64_t oh = 0; oh < OH; ++oh) {
    const T* r0 = src + 2 * oh * W;
    const T* r1 = r0 + W;
    const T* g = grad + oh * OW;
    T* o0 = dx + 2 * oh * W;
    T* o1 = o0 + W;
    auto block = [&](int64_t ow) {
      __m128 x0 = load4(r0 + 2 * ow), x1 = load4(r0 + 2 * ow + 4);
      __m128 y0 = load4(r1 + 2 * ow), y1 = load4(r1 + 2 * ow + 4);
      __m128 a = _mm_shuffle_ps(x0, x1, _MM_SHUFFLE(2, 0, 2, 0)), b = _mm_shuffle_ps(x0, x1, _MM_SHUFFLE(3, 1, 3, 1));
      __m128 c = _mm_shuffle_ps(y0, y1, _MM_SHUFFLE(2, 0, 2, 0)), d = _mm_shuffle_ps(y0, y1, _MM_SHUFFLE(3, 1, 3, 1));
      nan = _mm_or_ps(nan, _mm_or_ps(_mm_cmpunord_ps(a, b), _mm_cmpunord_ps(c, d)));
      __m128 m = _mm_max_ps(_mm_max_ps(a, b), _mm_max_ps(c, d));
      __m128 ha = _mm_cmpeq_ps(a, m);
      __m128 hb = _mm_andnot_ps(ha, _mm_cmpeq_ps(b, m));
      __m128 taken = _mm_or_ps(ha, hb);
      __m128 hc = _mm_andnot_ps(taken, _mm_cmpeq_ps(c, m));
      __m128 hd = _mm_andnot_ps(_mm_or_ps(taken, hc), all);
      __m128 gv = load4(g + ow);
      __m128 ga = _mm_and_ps(ha, gv), gb = _mm_and_ps(hb, gv), gc = _mm_and_ps(hc, gv), gd = _mm_and_ps(hd, gv);
      store4(o0 + 2 * ow, _mm_unpacklo_ps(ga, gb));
      store4(o0 + 2 * ow + 4, _mm_unpackhi_ps(ga, gb));
      store4(o1 + 2 * ow, _mm_unpacklo_ps(gc, gd));
      store4(o1 + 2 * ow + 4, _mm_unpackhi_ps(gc, gd));
    };
    int64_t ow = 0;
    for (; ow + 4 <= OW; ow += 4) block(ow);
    // A ragged end (LeNet's 7- and 14-wide outputs) is one more block that
    // overlaps the last: it writes the same values again, no scalar tail.
    if (ow < OW && OW >= 4) {
      block(OW - 4);
      ow = OW;
    }
    for (; ow < OW; ++ow) {
      float a = to_float(r0[2 * ow]), b = to_float(r0[2 * ow + 1]), c = to_float(r1[2 * ow]), d = to_float(r1[2 * ow + 1]);
      if ((a != a) | (b != b) | (c != c) | (d != d)) return false;
      float m = std::max(std::max(a, b), std::max(c, d));
      bool ha = a == m, hb = !ha & (b == m), hc = !ha & !hb & (c == m), hd = !ha & !hb & !hc;
      float gw = to_float(g[ow]);
      from_exact_float(o0 + 2 * ow, ha ? gw : 0.0f);
      from_exact_float(o0 + 2 * ow + 1, hb ? gw : 0.0f);
      from_exact_float(o1 + 2 * ow, hc ? gw : 0.0f);
      from_exact_float(o1 + 2 * ow + 1, hd ? gw : 0.0f);
    }
  }
  if (_mm_movemask_ps(nan) != 0) return false;
  const int64_t H = p.in[0];
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t w = h < OH * 2 ? OW * 2 : 0; w < W; ++w) from_exact_float(dx + h * W + w, 0.0f);
  }
  return true;
}
#endif

// MaxPoolGrad / AveragePoolGrad (dY, X) -> dX.
class PoolGradKernel final : public OpKernel {
 public:
  PoolGradKernel(const Node& node, bool max) : max_(max), include_pad_(pool_count_include_pad(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    ConvProblem p = pool_problem(ctx.node(), x.sizes());
    check_pool_grad(ctx, dy, p);
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    int64_t in_plane = p.in_plane(), out_plane = p.out_plane();
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* in = x.data<T>();
        const T* grad = dy.data<T>();
        T* out = dx.data<T>();
        if (max_ && non_overlapping_2d(p)) {
          parallel_for(p.batch * p.in_channels, 1, [&](int64_t begin, int64_t end) {
            for (int64_t plane = begin; plane < end; ++plane) {
#if defined(__SSE2__)
              if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
                if (p.kernel[0] == 2 && p.kernel[1] == 2 &&
                    max_pool_backward_2x2(p, in + plane * in_plane, grad + plane * out_plane, out + plane * in_plane)) {
                  continue;
                }
              }
#endif
              max_pool_backward_non_overlapping(p, in + plane * in_plane, grad + plane * out_plane, out + plane * in_plane);
            }
          });
          return;
        }
        if (max_) {
          // Max: the gradient goes to the first maximal tap of each window.
          // Direct index arithmetic: no per-window tap lists (this runs in
          // every training step of a pooled conv net).
          parallel_for(p.batch * p.in_channels, 1, [&](int64_t begin, int64_t end) {
            std::vector<ComputeType<T>> acc(static_cast<size_t>(in_plane));
            for (int64_t plane = begin; plane < end; ++plane) {
              std::fill(acc.begin(), acc.end(), ComputeType<T>(0));
              max_pool_backward_plane(p, in + plane * in_plane, grad + plane * out_plane, acc.data());
              for (int64_t i = 0; i < in_plane; ++i) out[plane * in_plane + i] = store<T>(acc[static_cast<size_t>(i)]);
            }
          });
          return;
        }
        parallel_for(p.batch * p.in_channels, 1, [&](int64_t begin, int64_t end) {
          std::vector<int64_t> taps;
          std::vector<ComputeType<T>> acc(static_cast<size_t>(in_plane));
          for (int64_t plane = begin; plane < end; ++plane) {
            std::fill(acc.begin(), acc.end(), ComputeType<T>(0));
            for_each_window(p, taps, [&](int64_t o, const std::vector<int64_t>& window, int64_t padded) {
              ComputeType<T> g = load(grad[plane * out_plane + o]);
              int64_t count = include_pad_ ? padded : static_cast<int64_t>(window.size());
              if (count == 0) return;
              ComputeType<T> share = g / static_cast<ComputeType<T>>(count);
              for (int64_t tap : window) acc[static_cast<size_t>(tap)] += share;
            });
            for (int64_t i = 0; i < in_plane; ++i) out[plane * in_plane + i] = store<T>(acc[static_cast<size_t>(i)]);
          }
        });
      }
    });
  }

 private:
  bool max_;
  bool include_pad_;
};

class GlobalPoolKernel final : public OpKernel {
 public:
  explicit GlobalPoolKernel(bool max) : max_(max) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const GlobalPoolShape shape = global_pool_shape(ctx, x, max_);
    const int64_t planes = shape.planes, plane = shape.plane;
    Tensor& y = ctx.allocate_output(0, x.dtype(), shape.sizes, KernelContext::Fill::kUninitialized);
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        parallel_for(planes, 1, [&](int64_t begin, int64_t end) {
          for (int64_t c = begin; c < end; ++c) {
            const T* src = in + c * plane;
            if (max_) {
              ComputeType<T> best = load(src[0]);
              for (int64_t i = 1; i < plane; ++i) {
                ComputeType<T> value = load(src[i]);
                if (value > best || std::isnan(value)) best = value;
                if (std::isnan(best)) break;
              }
              out[c] = store<T>(best);
            } else {
              ComputeType<T> sum = 0;
              for (int64_t i = 0; i < plane; ++i) sum += load(src[i]);
              out[c] = store<T>(plane > 0 ? sum / static_cast<ComputeType<T>>(plane) : sum);
            }
          }
        });
      }
    });
  }

 private:
  bool max_;
};

}  // namespace

bool pool_count_include_pad(const Node& node) {
  return node.has_attr("count_include_pad") && node.attr("count_include_pad").i() != 0;
}

bool max_pool_column_major(const Node& node) { return node.has_attr("storage_order") && node.attr("storage_order").i() != 0; }

void check_pool_grad(const KernelContext& ctx, const Tensor& dy, const ConvProblem& p) {
  if (dy.sizes() != p.out_sizes()) {
    ctx.fail("dY has shape " + format_sizes(dy.sizes()) + "; the pooled output is " + format_sizes(p.out_sizes()));
  }
}

GlobalPoolShape global_pool_shape(const KernelContext& ctx, const Tensor& x, bool max) {
  if (x.rank() < 3) ctx.fail("input has shape " + format_sizes(x.sizes()) + "; expected [N, C, spatial...]");
  GlobalPoolShape shape;
  shape.sizes.assign(x.sizes().size(), 1);
  shape.sizes[0] = x.sizes()[0];
  shape.sizes[1] = x.sizes()[1];
  shape.planes = shape.sizes[0] * shape.sizes[1];
  shape.plane = shape.planes == 0 ? 0 : x.num_elements() / shape.planes;
  if (max && shape.plane == 0 && shape.planes > 0) ctx.fail("GlobalMaxPool over empty spatial axes has no maximum");
  return shape;
}

void register_pool_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  registry.add("MaxPool", DeviceType::kCpu, {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8, DType::kUInt8},
               [](const Node& node) { return std::make_unique<MaxPoolKernel>(node); });
  registry.add("ChannelsLastPool", DeviceType::kCpu, {DType::kFloat32, DType::kBFloat16, DType::kInt8, DType::kUInt8},
               [](const Node& node) { return std::make_unique<ChannelsLastPoolKernel>(node); });
  registry.add("AveragePool", DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<AveragePoolKernel>(node); });
  registry.add("MaxPoolGrad", DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<PoolGradKernel>(node, true); });
  registry.add("AveragePoolGrad", DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<PoolGradKernel>(node, false); });
  registry.add("GlobalAveragePool", DeviceType::kCpu, types,
               [](const Node&) { return std::make_unique<GlobalPoolKernel>(false); });
  registry.add("GlobalMaxPool", DeviceType::kCpu, types,
               [](const Node&) { return std::make_unique<GlobalPoolKernel>(true); });
}

}  // namespace weir
