#include "ops/nn/conv_problem.h"

#include "core/error.h"
#include "core/half.h"
#include "core/shape.h"
#include "ops/dtype_dispatch.h"
#include "ops/threading.h"

namespace weir {

namespace {

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw Error(ErrorKind::kShape, node.op_type() + " '" + node.name() + "': " + message).with_node(node.name());
}

std::vector<int64_t> with_spatial(int64_t a, int64_t b, const std::array<int64_t, 3>& spatial, size_t rank) {
  std::vector<int64_t> sizes = {a, b};
  sizes.insert(sizes.end(), spatial.begin(), spatial.begin() + static_cast<std::ptrdiff_t>(rank));
  return sizes;
}

// Walks every (output position, kernel tap) pair whose input position lies
// inside the input, calling fn(out_offset, kernel_offset, in_offset) within
// one channel plane.
template <typename Fn>
inline void for_each_tap(const ConvProblem& p, Fn&& fn) {
  for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
    for (int64_t k0 = 0; k0 < p.kernel[0]; ++k0) {
      int64_t i0 = o0 * p.strides[0] - p.pads_begin[0] + k0 * p.dilations[0];
      if (i0 < 0 || i0 >= p.in[0]) continue;
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
        for (int64_t k1 = 0; k1 < p.kernel[1]; ++k1) {
          int64_t i1 = o1 * p.strides[1] - p.pads_begin[1] + k1 * p.dilations[1];
          if (i1 < 0 || i1 >= p.in[1]) continue;
          for (int64_t o2 = 0; o2 < p.out[2]; ++o2) {
            int64_t out_offset = (o0 * p.out[1] + o1) * p.out[2] + o2;
            for (int64_t k2 = 0; k2 < p.kernel[2]; ++k2) {
              int64_t i2 = o2 * p.strides[2] - p.pads_begin[2] + k2 * p.dilations[2];
              if (i2 < 0 || i2 >= p.in[2]) continue;
              fn(out_offset, (k0 * p.kernel[1] + k1) * p.kernel[2] + k2, (i0 * p.in[1] + i1) * p.in[2] + i2);
            }
          }
        }
      }
    }
  }
}

}  // namespace

std::vector<int64_t> ConvProblem::in_sizes() const { return with_spatial(batch, in_channels, in, spatial_rank); }
std::vector<int64_t> ConvProblem::out_sizes() const { return with_spatial(batch, out_channels, out, spatial_rank); }
std::vector<int64_t> ConvProblem::weight_sizes() const {
  return with_spatial(out_channels, in_channels / group, kernel, spatial_rank);
}

ConvProblem conv_problem(const Node& node, ConvKind kind, const std::vector<int64_t>& x_sizes,
                         const std::vector<int64_t>& w_sizes) {
  if (x_sizes.size() < 3 || x_sizes.size() > 5) {
    fail(node, "input has shape " + format_sizes(x_sizes) + "; expected [N, C, spatial...] with 1 to 3 spatial axes");
  }
  if (w_sizes.size() != x_sizes.size()) {
    fail(node, "weight has shape " + format_sizes(w_sizes) + " but the input " + format_sizes(x_sizes) +
                   " has rank " + std::to_string(x_sizes.size()));
  }
  size_t rank = x_sizes.size() - 2;
  std::vector<int64_t> x_spatial(x_sizes.begin() + 2, x_sizes.end());
  std::vector<int64_t> kernel(w_sizes.begin() + 2, w_sizes.end());
  ConvGeometry g = conv_geometry(node, kind, x_spatial, kernel);
  std::string groups = " (groups=" + std::to_string(g.group) + ")";

  ConvProblem p;
  p.batch = x_sizes[0];
  p.group = g.group;
  p.spatial_rank = rank;
  if (kind == ConvKind::kForward) {
    // W is [K, C/group, k...].
    if (x_sizes[1] != w_sizes[1] * g.group) {
      fail(node, "input channels " + std::to_string(x_sizes[1]) + " do not match weight channels " +
                     std::to_string(w_sizes[1] * g.group) + groups);
    }
    p.in_channels = x_sizes[1];
    p.out_channels = w_sizes[0];
  } else {
    // W is [C_in, C_out/group, k...]: the forward problem's [K, C/group, k...].
    if (x_sizes[1] != w_sizes[0]) {
      fail(node, "input channels " + std::to_string(x_sizes[1]) + " do not match weight's first axis " +
                     std::to_string(w_sizes[0]) + groups);
    }
    p.out_channels = w_sizes[0];
    p.in_channels = w_sizes[1] * g.group;
  }
  if (p.out_channels % g.group != 0) {
    fail(node, "output channels " + std::to_string(p.out_channels) + " are not divisible by group " +
                   std::to_string(g.group));
  }
  std::vector<int64_t> y_spatial = g.output_spatial(x_spatial);
  for (size_t i = 0; i < rank; ++i) {
    if (y_spatial[i] < 1) {
      fail(node, "the kernel " + format_sizes(kernel) + " (dilations " + format_sizes(g.dilations) +
                     ") does not fit the padded input " + format_sizes(x_spatial));
    }
    const std::vector<int64_t>& conv_in = kind == ConvKind::kForward ? x_spatial : y_spatial;
    const std::vector<int64_t>& conv_out = kind == ConvKind::kForward ? y_spatial : x_spatial;
    p.in[i] = conv_in[i];
    p.out[i] = conv_out[i];
    p.kernel[i] = kernel[i];
    p.strides[i] = g.strides[i];
    p.dilations[i] = g.dilations[i];
    p.pads_begin[i] = g.pads_begin[i];
    p.pads_end[i] = g.pads_end[i];
  }
  return p;
}

template <typename T>
void conv_forward_direct(const ConvProblem& p, const T* in, const T* weight, const T* bias, T* out) {
  using C = ComputeType<T>;
  int64_t cg = p.in_channels / p.group, kg = p.out_channels / p.group;
  int64_t in_plane = p.in_plane(), out_plane = p.out_plane(), taps = p.kernel_volume();
  parallel_for(p.batch * p.out_channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> acc(static_cast<size_t>(out_plane));
    for (int64_t job = begin; job < end; ++job) {
      int64_t n = job / p.out_channels, k = job % p.out_channels, c0 = (k / kg) * cg;
      std::fill(acc.begin(), acc.end(), bias != nullptr ? load(bias[k]) : C(0));
      for (int64_t c = 0; c < cg; ++c) {
        const T* plane = in + (n * p.in_channels + c0 + c) * in_plane;
        const T* w = weight + (k * cg + c) * taps;
        for_each_tap(p, [&](int64_t o, int64_t t, int64_t i) { acc[static_cast<size_t>(o)] += load(plane[i]) * load(w[t]); });
      }
      T* y = out + (n * p.out_channels + k) * out_plane;
      for (int64_t o = 0; o < out_plane; ++o) y[o] = store<T>(acc[static_cast<size_t>(o)]);
    }
  });
}

template <typename T>
void conv_backward_data_direct(const ConvProblem& p, const T* d_out, const T* weight, T* d_in) {
  using C = ComputeType<T>;
  int64_t cg = p.in_channels / p.group, kg = p.out_channels / p.group;
  int64_t in_plane = p.in_plane(), out_plane = p.out_plane(), taps = p.kernel_volume();
  parallel_for(p.batch * p.in_channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> acc(static_cast<size_t>(in_plane));
    for (int64_t job = begin; job < end; ++job) {
      int64_t n = job / p.in_channels, c = job % p.in_channels, g = c / cg;
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t k = g * kg; k < (g + 1) * kg; ++k) {
        const T* dy = d_out + (n * p.out_channels + k) * out_plane;
        const T* w = weight + (k * cg + c - g * cg) * taps;
        for_each_tap(p, [&](int64_t o, int64_t t, int64_t i) { acc[static_cast<size_t>(i)] += load(dy[o]) * load(w[t]); });
      }
      T* dx = d_in + (n * p.in_channels + c) * in_plane;
      for (int64_t i = 0; i < in_plane; ++i) dx[i] = store<T>(acc[static_cast<size_t>(i)]);
    }
  });
}

template <typename T>
void conv_backward_weights_direct(const ConvProblem& p, const T* d_out, const T* in, T* d_weight) {
  using C = ComputeType<T>;
  int64_t cg = p.in_channels / p.group, kg = p.out_channels / p.group;
  int64_t in_plane = p.in_plane(), out_plane = p.out_plane(), taps = p.kernel_volume();
  parallel_for(p.out_channels * cg, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> acc(static_cast<size_t>(taps));
    for (int64_t job = begin; job < end; ++job) {
      int64_t k = job / cg, c = job % cg, c_in = (k / kg) * cg + c;
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t n = 0; n < p.batch; ++n) {
        const T* dy = d_out + (n * p.out_channels + k) * out_plane;
        const T* x = in + (n * p.in_channels + c_in) * in_plane;
        for_each_tap(p, [&](int64_t o, int64_t t, int64_t i) { acc[static_cast<size_t>(t)] += load(dy[o]) * load(x[i]); });
      }
      T* dw = d_weight + job * taps;
      for (int64_t t = 0; t < taps; ++t) dw[t] = store<T>(acc[static_cast<size_t>(t)]);
    }
  });
}

#define WEIR_INSTANTIATE_CONV_DIRECT(T)                                                          \
  template void conv_forward_direct<T>(const ConvProblem&, const T*, const T*, const T*, T*); \
  template void conv_backward_data_direct<T>(const ConvProblem&, const T*, const T*, T*);     \
  template void conv_backward_weights_direct<T>(const ConvProblem&, const T*, const T*, T*);
WEIR_INSTANTIATE_CONV_DIRECT(float)
WEIR_INSTANTIATE_CONV_DIRECT(double)
WEIR_INSTANTIATE_CONV_DIRECT(Float16)
WEIR_INSTANTIATE_CONV_DIRECT(BFloat16)
#undef WEIR_INSTANTIATE_CONV_DIRECT

bool conv_layout_is_channels_last(const Node& node) {
  std::string layout = node.has_attr("layout") ? node.attr("layout").s() : "NCHW";
  if (layout != "NCHW" && layout != "NHWC") {
    throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': layout '" + layout +
                                                 "' is not NCHW or NHWC")
        .with_node(node.name());
  }
  return layout == "NHWC";
}

}  // namespace weir
