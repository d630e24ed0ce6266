#include "ops/tensor/tensor_kernels.h"

#include <cstring>

#include "ops/cpu_clones.h"
#include "ops/tensor/indexing.h"
#include "ops/tensor/shape_slice.h"
#include "ops/threading.h"

namespace weir {

namespace {

class ShapeKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const std::vector<int64_t>& sizes = ctx.input(0).sizes();
    auto [start, end] = shape_slice(ctx.node(), static_cast<int64_t>(sizes.size()));
    Tensor& out = ctx.allocate_output(0, DType::kInt64, {end - start});
    if (end > start) std::memcpy(out.raw_data(), sizes.data() + start, static_cast<size_t>(end - start) * sizeof(int64_t));
  }
};

class ReshapeKernel final : public OpKernel {
 public:
  explicit ReshapeKernel(const Node& node) : allow_zero_(node.has_attr("allowzero") && node.attr("allowzero").i() != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& data = ctx.input(0);
    const Tensor& shape = ctx.input(1);
    if (shape.dtype() != DType::kInt64 || shape.rank() != 1) ctx.fail("shape must be a 1-D i64 tensor, got " + shape.type_string());
    std::vector<int64_t> requested(shape.data<int64_t>(), shape.data<int64_t>() + shape.num_elements());
    std::vector<int64_t> sizes = requested;
    int64_t known = 1;
    int inferred = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == 0 && !allow_zero_) {
        if (i >= data.sizes().size()) ctx.fail("shape " + format_sizes(requested) + " copies axis " + std::to_string(i) + " of " + data.type_string());
        sizes[i] = data.sizes()[i];
      }
      if (sizes[i] == -1) {
        if (inferred >= 0) ctx.fail("shape " + format_sizes(requested) + " has more than one -1");
        inferred = static_cast<int>(i);
        continue;
      }
      if (sizes[i] < 0) ctx.fail("shape " + format_sizes(requested) + " has a negative entry other than -1");
      if (__builtin_mul_overflow(known, sizes[i], &known)) ctx.fail("shape " + format_sizes(requested) + " overflows");
    }
    if (inferred >= 0) {
      if (known == 0 || data.num_elements() % known != 0) {
        ctx.fail("cannot infer the -1 in " + format_sizes(requested) + " for " + data.type_string());
      }
      sizes[static_cast<size_t>(inferred)] = data.num_elements() / known;
    } else if (known != data.num_elements()) {
      ctx.fail("cannot reshape " + data.type_string() + " (" + std::to_string(data.num_elements()) + " elements) to " +
               format_sizes(sizes));
    }
    ctx.set_output(0, data.reshape(sizes));
  }

 private:
  bool allow_zero_;
};

// Flatten, Squeeze and Unsqueeze: the output is a view with new sizes.
class FlattenKernel final : public OpKernel {
 public:
  explicit FlattenKernel(const Node& node) : axis_(node.has_attr("axis") ? node.attr("axis").i() : 1) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    int64_t rank = x.rank(), axis = axis_;
    if (axis < -rank || axis > rank) ctx.fail("axis " + std::to_string(axis_) + " is out of range for " + x.type_string());
    if (axis < 0) axis += rank;
    int64_t rows = 1, columns = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? rows : columns) *= x.sizes()[static_cast<size_t>(i)];
    ctx.set_output(0, x.reshape({rows, columns}));
  }

 private:
  int64_t axis_;
};

class IdentityKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override { ctx.set_output(0, ctx.input(0)); }
};

class SqueezeKernel final : public OpKernel {
 public:
  explicit SqueezeKernel(const Node& node) : has_axes_(node.has_attr("axes")) {
    if (has_axes_) axes_ = node.attr("axes").ints();
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    int64_t rank = x.rank();
    bool has_axes = has_axes_ || ctx.has_input(1);
    std::vector<int64_t> axes = ctx.has_input(1) ? index_values(ctx, ctx.input(1), "axes") : axes_;
    std::vector<bool> remove(static_cast<size_t>(rank), !has_axes);
    for (int64_t axis : axes) {
      if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for " + x.type_string());
      size_t index = static_cast<size_t>(axis < 0 ? axis + rank : axis);
      if (x.sizes()[index] != 1) ctx.fail("axis " + std::to_string(axis) + " of " + x.type_string() + " has size " + std::to_string(x.sizes()[index]) + ", not 1");
      remove[index] = true;
    }
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < remove.size(); ++i) {
      if (!(remove[i] && x.sizes()[i] == 1)) sizes.push_back(x.sizes()[i]);
    }
    ctx.set_output(0, x.reshape(sizes));
  }

 private:
  bool has_axes_;
  std::vector<int64_t> axes_;
};

class UnsqueezeKernel final : public OpKernel {
 public:
  explicit UnsqueezeKernel(const Node& node) {
    if (node.has_attr("axes")) axes_ = node.attr("axes").ints();
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> axes = ctx.has_input(1) ? index_values(ctx, ctx.input(1), "axes") : axes_;
    int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
    std::vector<bool> inserted(static_cast<size_t>(rank), false);
    for (int64_t axis : axes) {
      if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for output rank " + std::to_string(rank));
      size_t index = static_cast<size_t>(axis < 0 ? axis + rank : axis);
      if (inserted[index]) ctx.fail("axis " + std::to_string(axis) + " is listed twice");
      inserted[index] = true;
    }
    std::vector<int64_t> sizes;
    size_t next = 0;
    for (bool insert : inserted) sizes.push_back(insert ? 1 : x.sizes()[next++]);
    ctx.set_output(0, x.reshape(sizes));
  }

 private:
  std::vector<int64_t> axes_;
};

// dst[3a + b] = src[a + b * stride]: three rows of 4-byte words (an RGB
// image's planes) interleaved into one. Compiled for AVX-512, AVX2 and the
// baseline, picked at load time: the stride-3 stores need shuffles that the
// baseline's SSE2 lacks (a 3x224x224 input took 19 us on two threads).
WEIR_CPU_CLONES void interleave3_words(const uint32_t* src,
                                                                                    int64_t stride, uint32_t* dst,
                                                                                    int64_t count) {
  const uint32_t* __restrict r0 = src;
  const uint32_t* __restrict r1 = src + stride;
  const uint32_t* __restrict r2 = src + 2 * stride;
  uint32_t* __restrict out = dst;
  for (int64_t a = 0; a < count; ++a) {
    out[3 * a] = r0[a];
    out[3 * a + 1] = r1[a];
    out[3 * a + 2] = r2[a];
  }
}

class TransposeKernel final : public OpKernel {
 public:
  explicit TransposeKernel(const Node& node) {
    if (node.has_attr("perm")) perm_ = node.attr("perm").ints();
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const TransposeView view = transpose_view(ctx, perm_, x);
    const std::vector<int64_t>& out_sizes = view.sizes;
    const std::vector<int64_t>& strides = view.strides;
    Tensor& y = ctx.allocate_output(0, x.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
    switch (dtype_size(x.dtype())) {
      case 1: copy<uint8_t>(x, y, out_sizes, strides); break;
      case 2: copy<uint16_t>(x, y, out_sizes, strides); break;
      case 4: copy<uint32_t>(x, y, out_sizes, strides); break;
      default: copy<uint64_t>(x, y, out_sizes, strides); break;
    }
  }

 private:
  // Gathers the output in order; the innermost output axis walks the input
  // with that axis's stride. Rows are split across threads.
  template <typename Word>
  static void copy(const Tensor& x, Tensor& y, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
    const Word* in = static_cast<const Word*>(x.raw_data());
    Word* out = static_cast<Word*>(y.raw_data());
    if (y.num_elements() == 0) return;
    if (sizes.empty()) {
      out[0] = in[0];
      return;
    }
    const size_t rank = sizes.size();
    const int64_t inner = sizes.back();
    const int64_t inner_stride = strides.back();
    if (inner_stride != 1 && tiled(in, out, sizes, strides)) return;
    const int64_t rows = y.num_elements() / inner;
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t offset = 0, rest = row;
        for (size_t axis = rank - 1; axis-- > 0;) {
          offset += (rest % sizes[axis]) * strides[axis];
          rest /= sizes[axis];
        }
        Word* dst = out + row * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] = in[offset + i * inner_stride];
      }
    });
  }

  // When the input's innermost axis is output axis j other than the last,
  // the plain gather reads with a large stride: a batch of 2-D transposes
  // between axis j and the last one, done in 16x16 tiles so reads and writes
  // both stay in cache lines (NCHW <-> NHWC around channels-last convs).
  template <typename Word>
  static bool tiled(const Word* in, Word* out, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
    const size_t rank = sizes.size();
    size_t j = rank;
    for (size_t axis = 0; axis + 1 < rank; ++axis) {
      if (strides[axis] == 1 && sizes[axis] > 1) j = axis;
    }
    if (j == rank) return false;
    std::vector<int64_t> out_strides(rank, 1);
    for (size_t axis = rank - 1; axis-- > 0;) out_strides[axis] = out_strides[axis + 1] * sizes[axis + 1];
    constexpr int64_t kTile = 16;
    const int64_t inner = sizes.back(), inner_stride = strides.back(), along = sizes[j], out_stride_j = out_strides[j];
    // A short innermost output axis (an image's 3 channels going last) makes
    // a 16x16 tile a 16x3 one: longer tiles along j then, or the job
    // bookkeeping outweighs the copy (150 K elements took 70 us).
    const int64_t tile_j = inner >= kTile ? kTile : std::max<int64_t>(kTile, 1024 / std::max<int64_t>(inner, 1));
    const int64_t tiles_j = (along + tile_j - 1) / tile_j;
    int64_t outer = 1;
    for (size_t axis = 0; axis + 1 < rank; ++axis) outer *= axis == j ? 1 : sizes[axis];
    parallel_for(outer * tiles_j, 1, [&](int64_t begin, int64_t end) {
      for (int64_t job = begin; job < end; ++job) {
        int64_t rest = job / tiles_j, a0 = (job % tiles_j) * tile_j;
        int64_t in_base = 0, out_base = 0;
        for (size_t axis = rank - 1; axis-- > 0;) {
          if (axis == j) continue;
          int64_t index = rest % sizes[axis];
          rest /= sizes[axis];
          in_base += index * strides[axis];
          out_base += index * out_strides[axis];
        }
        const int64_t a1 = std::min(along, a0 + tile_j);
        if (out_stride_j == inner && inner <= 4) {
          interleave(in + in_base + a0, inner_stride, out + out_base + a0 * inner, a1 - a0, inner);
          continue;
        }
        for (int64_t b0 = 0; b0 < inner; b0 += kTile) {
          const int64_t b1 = std::min(inner, b0 + kTile);
          for (int64_t a = a0; a < a1; ++a) {
            Word* dst = out + out_base + a * out_stride_j;
            const Word* src = in + in_base + a;
            for (int64_t b = b0; b < b1; ++b) dst[b] = src[b * inner_stride];
          }
        }
      }
    });
    return true;
  }

  // dst[a * n + b] = src[a + b * stride] for b < n <= 4: n input rows
  // interleaved into one, with n known to the compiler so it vectorizes.
  template <typename Word>
  static void interleave(const Word* src, int64_t stride, Word* dst, int64_t count, int64_t n) {
    if constexpr (sizeof(Word) == 4) {
      if (n == 3) {
        interleave3_words(reinterpret_cast<const uint32_t*>(src), stride, reinterpret_cast<uint32_t*>(dst), count);
        return;
      }
    }
    auto rows = [&]<int N>() {
      for (int64_t a = 0; a < count; ++a) {
        for (int b = 0; b < N; ++b) dst[a * N + b] = src[a + b * stride];
      }
    };
    switch (n) {
      case 1: rows.template operator()<1>(); break;
      case 2: rows.template operator()<2>(); break;
      case 3: rows.template operator()<3>(); break;
      default: rows.template operator()<4>(); break;
    }
  }

  std::vector<int64_t> perm_;
};

}  // namespace

TransposeView transpose_view(const KernelContext& ctx, const std::vector<int64_t>& perm_attr, const Tensor& x) {
  const size_t rank = x.sizes().size();
  std::vector<int64_t> perm = perm_attr;
  if (perm.empty() && rank > 0) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (int64_t axis : perm) {
    valid = valid && axis >= 0 && axis < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(axis)];
    if (valid) seen[static_cast<size_t>(axis)] = true;
  }
  if (!valid) ctx.fail("perm " + format_sizes(perm) + " is not a permutation of the axes of " + x.type_string());

  std::vector<int64_t> in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * x.sizes()[i];
  TransposeView view;
  view.sizes.resize(rank);
  view.strides.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    view.sizes[i] = x.sizes()[static_cast<size_t>(perm[i])];
    view.strides[i] = in_strides[static_cast<size_t>(perm[i])];  // input stride of output axis i
  }
  return view;
}

void register_tensor_cpu_kernels(KernelRegistry& registry) {
  const std::vector<DType> all(std::begin(kAllDTypes), std::end(kAllDTypes));
  registry.add("Shape", DeviceType::kCpu, all, [](const Node&) { return std::make_unique<ShapeKernel>(); });
  registry.add("Reshape", DeviceType::kCpu, all, [](const Node& node) { return std::make_unique<ReshapeKernel>(node); });
  registry.add("Transpose", DeviceType::kCpu, all, [](const Node& node) { return std::make_unique<TransposeKernel>(node); });
  registry.add("Squeeze", DeviceType::kCpu, all, [](const Node& node) { return std::make_unique<SqueezeKernel>(node); });
  registry.add("Unsqueeze", DeviceType::kCpu, all, [](const Node& node) { return std::make_unique<UnsqueezeKernel>(node); });
  register_view_kernels(registry, DeviceType::kCpu);
}

void register_view_kernels(KernelRegistry& registry, DeviceType device) {
  const std::vector<DType> all(std::begin(kAllDTypes), std::end(kAllDTypes));
  registry.add("Flatten", device, all, [](const Node& node) { return std::make_unique<FlattenKernel>(node); });
  registry.add("Identity", device, all, [](const Node&) { return std::make_unique<IdentityKernel>(); });
}

}  // namespace weir
