#include "ops/tensor/indexing_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "ops/axis_lines.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/elementwise/broadcast.h"
#include "ops/tensor/indexing.h"
#include "ops/threading.h"

namespace weir {

namespace {

int64_t span(const std::vector<int64_t>& sizes, size_t begin, size_t end) { return size_product(sizes, begin, end); }

// Concat pieces along `axis`: piece i has sizes[i][axis] rows of `inner` elements per outer index.
// Copies between the joined tensor and the pieces (join: pieces -> joined).
void move_pieces(const std::vector<const Tensor*>& pieces, const Tensor& joined, int64_t axis, bool join) {
  size_t element = dtype_size(joined.dtype());
  int64_t outer = span(joined.sizes(), 0, static_cast<size_t>(axis));
  int64_t inner = span(joined.sizes(), static_cast<size_t>(axis) + 1, joined.sizes().size());
  int64_t joined_row = joined.sizes()[static_cast<size_t>(axis)] * inner;
  auto* base = static_cast<char*>(joined.raw_data());
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (const Tensor* piece : pieces) {
    offsets.push_back(offset);
    offset += piece->sizes()[static_cast<size_t>(axis)] * inner;
  }
  // Rows split across threads: a channel concat of channels-last data copies
  // thousands of short rows, and one core's copy bandwidth was the limit.
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(joined_row, 1));
  parallel_for(outer, grain, [&](int64_t begin, int64_t end) {
    for (size_t p = 0; p < pieces.size(); ++p) {
      int64_t piece_row = pieces[p]->sizes()[static_cast<size_t>(axis)] * inner;
      if (piece_row == 0) continue;
      auto* data = static_cast<char*>(pieces[p]->raw_data());
      for (int64_t o = begin; o < end; ++o) {
        char* whole = base + static_cast<size_t>(o * joined_row + offsets[p]) * element;
        char* part = data + static_cast<size_t>(o * piece_row) * element;
        // The memory planner may have placed the piece where it belongs
        // (runtime/memory_planner.h): nothing to copy.
        if (whole == part) continue;
        if (join) std::memcpy(whole, part, static_cast<size_t>(piece_row) * element);
        else std::memcpy(part, whole, static_cast<size_t>(piece_row) * element);
      }
    }
  });
}

class ConcatKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& first = ctx.input(0);
    int64_t axis = resolve_axis(ctx, ctx.node().attr("axis").i(), first.sizes().size());
    const ConcatInputs inputs = concat_inputs(ctx, axis);
    Tensor& out = ctx.allocate_output(0, first.dtype(), inputs.sizes, KernelContext::Fill::kUninitialized);
    move_pieces(inputs.pieces, out, axis, true);
  }
};

// ConcatGrad(dY, inputs...): pieces of dY shaped like the inputs.
class ConcatGradKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    int64_t axis = resolve_axis(ctx, ctx.node().attr("axis").i(), dy.sizes().size());
    std::vector<const Tensor*> pieces = allocate_concat_grad_pieces(ctx, dy, axis);
    move_pieces(pieces, dy, axis, false);
  }
};

class SplitKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    int64_t axis = resolve_axis(ctx, indexing_axis(ctx.node(), 0), x.sizes().size());
    std::optional<std::vector<int64_t>> given;
    if (ctx.has_input(1)) given = index_values(ctx, ctx.input(1), "split");
    std::vector<int64_t> parts =
        split_parts(ctx, given ? &*given : nullptr, x.sizes()[static_cast<size_t>(axis)], ctx.num_outputs());
    std::vector<const Tensor*> pieces = allocate_split_pieces(ctx, x, axis, parts);
    move_pieces(pieces, x, axis, false);
  }
};

// Slice(data, starts, ends[, axes, steps]) and SliceGrad(dY, data, starts, ends[, axes, steps]).
class SliceKernel final : public OpKernel {
 public:
  explicit SliceKernel(bool gradient) : gradient_(gradient) {}

  void compute(KernelContext& ctx) override {
    size_t first = gradient_ ? 1 : 0;
    const Tensor& data = ctx.input(first);
    std::vector<SliceAxis> sliced = slice_axes(ctx, first, data.sizes(), [&](size_t input, const char* what) {
      return index_values(ctx, ctx.input(input), what);
    });
    std::vector<int64_t> out_sizes;
    for (const SliceAxis& axis : sliced) out_sizes.push_back(axis.count);
    if (!gradient_) {
      Tensor& out = ctx.allocate_output(0, data.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
      copy_slice(data.sizes(), sliced, dtype_size(data.dtype()), data.raw_data(), out.raw_data(), false);
      return;
    }
    const Tensor& dy = ctx.input(0);
    check_slice_grad(ctx, dy, out_sizes);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), data.sizes(), KernelContext::Fill::kZeros);
    copy_slice(data.sizes(), sliced, dtype_size(dy.dtype()), dy.raw_data(), dx.raw_data(), true);
  }

 private:
  bool gradient_;
};

// Indices checked against the axis size, negatives wrapped.
std::vector<int64_t> checked_indices(const KernelContext& ctx, const Tensor& indices, int64_t limit) {
  std::vector<int64_t> values = index_values(ctx, indices, "indices");
  for (int64_t& value : values) {
    if (value < -limit || value >= limit) {
      ctx.fail("index " + std::to_string(value) + " is out of range for an axis of size " + std::to_string(limit));
    }
    if (value < 0) value += limit;
  }
  return values;
}

class GatherKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& data = ctx.input(0);
    int64_t axis = resolve_axis(ctx, indexing_axis(ctx.node(), 0), data.sizes().size());
    const std::vector<int64_t>& ds = data.sizes();
    std::vector<int64_t> indices = checked_indices(ctx, ctx.input(1), ds[static_cast<size_t>(axis)]);
    std::vector<int64_t> out_sizes = gather_sizes(ds, axis, ctx.input(1).sizes());
    Tensor& out = ctx.allocate_output(0, data.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
    size_t row = static_cast<size_t>(span(ds, static_cast<size_t>(axis) + 1, ds.size())) * dtype_size(data.dtype());
    int64_t outer = span(ds, 0, static_cast<size_t>(axis)), along = ds[static_cast<size_t>(axis)];
    auto count = static_cast<int64_t>(indices.size());
    const auto* src = static_cast<const char*>(data.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    parallel_for(outer * count, 64, [&](int64_t begin, int64_t end) {
      for (int64_t job = begin; job < end; ++job) {
        int64_t o = job / count, i = job % count;
        std::memcpy(dst + static_cast<size_t>(job) * row, src + static_cast<size_t>(o * along + indices[static_cast<size_t>(i)]) * row, row);
      }
    });
  }
};

// GatherGrad(dY, data, indices): adds each gathered row of dY back at its index.
class GatherGradKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const std::vector<int64_t>& ds = ctx.input(1).sizes();
    int64_t axis = resolve_axis(ctx, indexing_axis(ctx.node(), 0), ds.size());
    int64_t along = ds[static_cast<size_t>(axis)];
    std::vector<int64_t> indices = checked_indices(ctx, ctx.input(2), along);
    int64_t outer = span(ds, 0, static_cast<size_t>(axis)), row = span(ds, static_cast<size_t>(axis) + 1, ds.size());
    auto count = static_cast<int64_t>(indices.size());
    check_gather_grad(ctx, dy, outer, count, row);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), ds, KernelContext::Fill::kZeros);
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* g = dy.data<T>();
        T* out = dx.data<T>();
        // Parallel over the outer index only: repeated indices add into the same row.
        parallel_for(outer, 1, [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o) {
            for (int64_t i = 0; i < count; ++i) {
              T* target = out + (o * along + indices[static_cast<size_t>(i)]) * row;
              const T* source = g + (o * count + i) * row;
              for (int64_t k = 0; k < row; ++k) target[k] = store<T>(load(target[k]) + load(source[k]));
            }
          }
        });
      }
    });
  }
};

class ExpandKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> shape = index_values(ctx, ctx.input(1), "shape");
    std::vector<int64_t> sizes = expand_sizes(ctx, x, shape);
    Tensor& out = ctx.allocate_output(0, x.dtype(), sizes, KernelContext::Fill::kUninitialized);
    BroadcastPlan plan(sizes, x.sizes(), x.sizes());
    size_t element = dtype_size(x.dtype());
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    int64_t stride = plan.inner_stride_a();
    plan.for_each([&](int64_t out_offset, int64_t in_offset, int64_t, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(dst + static_cast<size_t>(out_offset + i) * element, src + static_cast<size_t>(in_offset + i * stride) * element, element);
      }
    });
  }
};

// Calls visit(out_flat, in_offset) for every element of a tiling of `in`
// (sizes `in`) to `out` sizes: in_offset is the element it copies.
template <typename Visit>
void for_each_tiled(const std::vector<int64_t>& in, const std::vector<int64_t>& out, Visit visit) {
  size_t rank = out.size();
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t a = rank; a-- > 1;) in_strides[a - 1] = in_strides[a] * in[a];
  std::vector<int64_t> index(rank, 0);
  int64_t total = span(out, 0, out.size());
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t offset = 0;
    for (size_t a = 0; a < rank; ++a) offset += (index[a] % in[a]) * in_strides[a];
    visit(flat, offset);
    for (size_t a = rank; a-- > 0;) {
      if (++index[a] < out[a]) break;
      index[a] = 0;
    }
  }
}

class TileKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> sizes = tile_sizes(ctx, x, index_values(ctx, ctx.input(1), "repeats"));
    Tensor& out = ctx.allocate_output(0, x.dtype(), sizes, KernelContext::Fill::kUninitialized);
    size_t element = dtype_size(x.dtype());
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    for_each_tiled(x.sizes(), sizes, [&](int64_t flat, int64_t offset) {
      std::memcpy(dst + static_cast<size_t>(flat) * element, src + static_cast<size_t>(offset) * element, element);
    });
  }
};

// TileGrad(dY, X): every tile of dY added back onto X's shape.
class TileGradKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const std::vector<int64_t>& xs = ctx.input(1).sizes();
    check_tiling(ctx, dy, ctx.input(1));
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs, KernelContext::Fill::kZeros);
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* g = dy.data<T>();
        T* out = dx.data<T>();
        for_each_tiled(xs, dy.sizes(), [&](int64_t flat, int64_t offset) { out[offset] = store<T>(load(out[offset]) + load(g[flat])); });
      }
    });
  }
};

// Fills `out` with copies of the one element at `value`.
void fill_with(Tensor& out, const void* value) {
  size_t element = dtype_size(out.dtype());
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t i = 0; i < out.num_elements(); ++i) std::memcpy(dst + static_cast<size_t>(i) * element, value, element);
}

class ConstantOfShapeKernel final : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(const Node& node) : value_(constant_of_shape_value(node)) {}

  void compute(KernelContext& ctx) override {
    std::vector<int64_t> shape = index_values(ctx, ctx.input(0), "shape");
    check_constant_shape(ctx, shape);
    Tensor& out = ctx.allocate_output(0, value_.dtype(), shape, KernelContext::Fill::kUninitialized);
    fill_with(out, value_.raw_data());
  }

 private:
  Tensor value_;
};

class RangeKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    DType dtype = ctx.input(0).dtype();
    for (size_t i = 0; i < 3; ++i) {
      if (ctx.input(i).num_elements() != 1 || ctx.input(i).dtype() != dtype) {
        ctx.fail("start, limit and delta must be scalars of one type; input " + std::to_string(i) + " is " + ctx.input(i).type_string());
      }
    }
    dispatch_dtype(dtype, [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        auto start = static_cast<double>(load(ctx.input(0).data<T>()[0]));
        auto limit = static_cast<double>(load(ctx.input(1).data<T>()[0]));
        auto delta = static_cast<double>(load(ctx.input(2).data<T>()[0]));
        if (delta == 0) ctx.fail("delta is 0");
        auto count = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
        if (count > (int64_t{1} << 40)) ctx.fail("the range has " + std::to_string(count) + " elements");
        Tensor& out = ctx.allocate_output(0, dtype, {count}, KernelContext::Fill::kUninitialized);
        T* data = out.data<T>();
        // Accumulate as ONNX's reference does: start + i * delta in the element type.
        ComputeType<T> first = load(ctx.input(0).data<T>()[0]), step = load(ctx.input(2).data<T>()[0]);
        for (int64_t i = 0; i < count; ++i) data[i] = store<T>(static_cast<ComputeType<T>>(first + static_cast<ComputeType<T>>(i) * step));
      }
    });
  }
};

class SizeKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    ctx.allocate_output(0, DType::kInt64, {}).data<int64_t>()[0] = ctx.input(0).num_elements();
  }
};

class ConstantKernel final : public OpKernel {
 public:
  explicit ConstantKernel(const Node& node) {
    if (node.has_attr("value")) {
      value_ = node.attr("value").t();
    } else if (node.has_attr("value_float")) {
      value_ = Tensor::scalar<float>(static_cast<float>(node.attr("value_float").f()));
    } else if (node.has_attr("value_int")) {
      value_ = Tensor::scalar<int64_t>(node.attr("value_int").i());
    } else if (node.has_attr("value_floats")) {
      std::vector<float> values;
      for (double v : node.attr("value_floats").floats()) values.push_back(static_cast<float>(v));
      value_ = Tensor::from_vector<float>(values, {static_cast<int64_t>(values.size())});
    } else if (node.has_attr("value_ints")) {
      const std::vector<int64_t>& values = node.attr("value_ints").ints();
      value_ = Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())});
    } else {
      throw Error(ErrorKind::kInvalidArgument, "Constant '" + node.name() + "': needs a value attribute").with_node(node.name());
    }
  }
  void compute(KernelContext& ctx) override { ctx.set_output(0, value_); }

 private:
  Tensor value_;
};

class ZerosLikeKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    ctx.allocate_output(0, ctx.input(0).dtype(), ctx.input(0).sizes(), KernelContext::Fill::kZeros);
  }
};

template <typename K>
KernelFactory simple() {
  return [](const Node&) { return std::make_unique<K>(); };
}

}  // namespace

int64_t indexing_axis(const Node& node, int64_t fallback) { return node.has_attr("axis") ? node.attr("axis").i() : fallback; }

int64_t size_product(const std::vector<int64_t>& sizes, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= sizes[i];
  return product;
}

ConcatInputs concat_inputs(const KernelContext& ctx, int64_t axis) {
  const Tensor& first = ctx.input(0);
  ConcatInputs inputs;
  std::vector<int64_t>& sizes = inputs.sizes;
  sizes = first.sizes();
  sizes[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    bool same = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (size_t a = 0; same && a < sizes.size(); ++a) same = static_cast<int64_t>(a) == axis || t.sizes()[a] == first.sizes()[a];
    if (!same) ctx.fail("input " + std::to_string(i) + " " + t.type_string() + " does not match input 0 " + first.type_string() +
                        " off the concat axis " + std::to_string(axis));
    sizes[static_cast<size_t>(axis)] += t.sizes()[static_cast<size_t>(axis)];
    inputs.pieces.push_back(&t);
  }
  return inputs;
}

std::vector<const Tensor*> allocate_concat_grad_pieces(KernelContext& ctx, const Tensor& dy, int64_t axis) {
  std::vector<const Tensor*> pieces;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    std::vector<int64_t> sizes = dy.sizes();
    sizes[static_cast<size_t>(axis)] = ctx.input(i).sizes().at(static_cast<size_t>(axis));
    pieces.push_back(&ctx.allocate_output(i - 1, dy.dtype(), sizes, KernelContext::Fill::kUninitialized));
  }
  return pieces;
}

std::vector<int64_t> split_parts(const KernelContext& ctx, const std::vector<int64_t>* given, int64_t along, size_t outputs) {
  const size_t n = outputs;
  std::vector<int64_t> parts;
  if (given) {
    parts = *given;
    int64_t sum = 0;
    for (int64_t part : parts) sum += part;
    if (parts.size() != n || sum != along) {
      ctx.fail("split " + format_sizes(parts) + " must have " + std::to_string(n) + " entries summing to " + std::to_string(along));
    }
  } else {
    int64_t part = (along + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
    for (size_t i = 0; i < n; ++i) parts.push_back(std::max<int64_t>(0, std::min(part, along - part * static_cast<int64_t>(i))));
  }
  return parts;
}

std::vector<const Tensor*> allocate_split_pieces(KernelContext& ctx, const Tensor& x, int64_t axis,
                                                 const std::vector<int64_t>& parts) {
  std::vector<const Tensor*> pieces;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::vector<int64_t> sizes = x.sizes();
    sizes[static_cast<size_t>(axis)] = parts[i];
    pieces.push_back(&ctx.allocate_output(i, x.dtype(), sizes, KernelContext::Fill::kUninitialized));
  }
  return pieces;
}

std::vector<SliceAxis> slice_axes(const KernelContext& ctx, size_t first, const std::vector<int64_t>& data_sizes,
                                  const IndexInputFn& read) {
  std::vector<int64_t> starts = read(first + 1, "starts");
  std::vector<int64_t> ends = read(first + 2, "ends");
  std::optional<std::vector<int64_t>> axes, steps;
  if (ctx.has_input(first + 3)) axes = read(first + 3, "axes");
  if (ctx.has_input(first + 4)) steps = read(first + 4, "steps");
  return resolve_slice(data_sizes, starts, ends, axes ? &*axes : nullptr, steps ? &*steps : nullptr,
                       [&](const std::string& m) { ctx.fail(m); });
}

void check_slice_grad(const KernelContext& ctx, const Tensor& dy, const std::vector<int64_t>& slice_sizes) {
  if (dy.sizes() != slice_sizes) {
    ctx.fail("dY has shape " + format_sizes(dy.sizes()) + "; the slice is " + format_sizes(slice_sizes));
  }
}

std::vector<int64_t> gather_sizes(const std::vector<int64_t>& data_sizes, int64_t axis,
                                  const std::vector<int64_t>& indices_sizes) {
  std::vector<int64_t> out_sizes(data_sizes.begin(), data_sizes.begin() + axis);
  out_sizes.insert(out_sizes.end(), indices_sizes.begin(), indices_sizes.end());
  out_sizes.insert(out_sizes.end(), data_sizes.begin() + axis + 1, data_sizes.end());
  return out_sizes;
}

void check_gather_grad(const KernelContext& ctx, const Tensor& dy, int64_t outer, int64_t count, int64_t row) {
  if (dy.num_elements() != outer * count * row) ctx.fail("dY " + dy.type_string() + " does not match the gathered shape");
}

std::vector<int64_t> expand_sizes(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& shape) {
  auto sizes = broadcast_sizes(x.sizes(), shape);
  if (!sizes) ctx.fail("cannot expand " + x.type_string() + " to " + format_sizes(shape));
  return *sizes;
}

std::vector<int64_t> tile_sizes(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& repeats) {
  if (repeats.size() != x.sizes().size()) {
    ctx.fail("repeats " + format_sizes(repeats) + " needs one entry per axis of " + x.type_string());
  }
  std::vector<int64_t> sizes = x.sizes();
  for (size_t a = 0; a < sizes.size(); ++a) {
    if (repeats[a] < 0) ctx.fail("repeats " + format_sizes(repeats) + " has a negative entry");
    sizes[a] *= repeats[a];
  }
  return sizes;
}

void check_tiling(const KernelContext& ctx, const Tensor& dy, const Tensor& x) {
  const std::vector<int64_t>& xs = x.sizes();
  bool tiles = dy.sizes().size() == xs.size();
  for (size_t a = 0; tiles && a < xs.size(); ++a) {
    tiles = xs[a] == 0 ? dy.sizes()[a] == 0 : dy.sizes()[a] % xs[a] == 0;
  }
  if (!tiles) ctx.fail("dY " + dy.type_string() + " is not a tiling of X " + x.type_string());
}

Tensor constant_of_shape_value(const Node& node) {
  if (!node.has_attr("value")) return Tensor::scalar<float>(0.0f);
  Tensor value = node.attr("value").t();
  if (value.num_elements() != 1) {
    throw Error(ErrorKind::kShape, "ConstantOfShape '" + node.name() + "': value must hold one element, got " +
                                       value.type_string()).with_node(node.name());
  }
  return value;
}

void check_constant_shape(const KernelContext& ctx, const std::vector<int64_t>& shape) {
  if (!checked_num_elements(shape)) ctx.fail("shape " + format_sizes(shape) + " has a negative size or too many elements");
}

void register_indexing_cpu_kernels(KernelRegistry& registry) {
  registry.add("Concat", DeviceType::kCpu, kAnyDTypes, simple<ConcatKernel>());
  registry.add("ConcatGrad", DeviceType::kCpu, kAnyDTypes, simple<ConcatGradKernel>());
  registry.add("Split", DeviceType::kCpu, kAnyDTypes, simple<SplitKernel>());
  registry.add("Slice", DeviceType::kCpu, kAnyDTypes, [](const Node&) { return std::make_unique<SliceKernel>(false); });
  registry.add("SliceGrad", DeviceType::kCpu, kNumericDTypes, [](const Node&) { return std::make_unique<SliceKernel>(true); });
  registry.add("Gather", DeviceType::kCpu, kAnyDTypes, simple<GatherKernel>());
  registry.add("GatherGrad", DeviceType::kCpu, kNumericDTypes, simple<GatherGradKernel>());
  registry.add("Expand", DeviceType::kCpu, kAnyDTypes, simple<ExpandKernel>());
  registry.add("Tile", DeviceType::kCpu, kAnyDTypes, simple<TileKernel>());
  registry.add("TileGrad", DeviceType::kCpu, kNumericDTypes, simple<TileGradKernel>());
  registry.add("ConstantOfShape", DeviceType::kCpu, {DType::kInt64},
               [](const Node& node) { return std::make_unique<ConstantOfShapeKernel>(node); });
  registry.add("Range", DeviceType::kCpu, {DType::kFloat32, DType::kFloat64, DType::kInt16, DType::kInt32, DType::kInt64},
               simple<RangeKernel>());
  registry.add("Size", DeviceType::kCpu, kAnyDTypes, simple<SizeKernel>());
  registry.add("ZerosLike", DeviceType::kCpu, kAnyDTypes, simple<ZerosLikeKernel>());
  // Constant has no inputs: its kernel dtype is its output's.
  registry.add("Constant", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<ConstantKernel>(node); });
}

}  // namespace weir
