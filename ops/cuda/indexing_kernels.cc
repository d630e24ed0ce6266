#include "ops/cuda/indexing_kernels.h"

#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/shape.h"
#include "ops/axis_lines.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/host_input.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/cuda/strided_copy.h"
#include "ops/cuda/tensor_device.h"
#include "ops/dtype_sets.h"
#include "ops/elementwise/broadcast.h"
#include "ops/tensor/indexing.h"
#include "ops/tensor/indexing_kernels.h"

namespace weir {

namespace {

int64_t span(const std::vector<int64_t>& sizes, size_t begin, size_t end) { return size_product(sizes, begin, end); }

// The values of a small integer input, read on the host.
std::vector<int64_t> host_index_values(const KernelContext& ctx, size_t input, const char* what) {
  return index_values(ctx, cuda::host_input(ctx, input, what), what);
}

char* byte_pointer(const Tensor& tensor) { return static_cast<char*>(tensor.raw_data()); }

// Copies between the joined tensor and its pieces along `axis` (join:
// pieces -> joined), one strided copy per piece: [outer, piece row] at the
// piece's column within [outer, joined row].
void move_pieces(const KernelContext& ctx, const std::vector<const Tensor*>& pieces, const Tensor& joined, int64_t axis,
                 bool join) {
  const size_t element = dtype_size(joined.dtype());
  const int64_t outer = span(joined.sizes(), 0, static_cast<size_t>(axis));
  const int64_t inner = span(joined.sizes(), static_cast<size_t>(axis) + 1, joined.sizes().size());
  const int64_t joined_row = joined.sizes()[static_cast<size_t>(axis)] * inner;
  int64_t offset = 0;
  for (const Tensor* piece : pieces) {
    const int64_t piece_row = piece->sizes()[static_cast<size_t>(axis)] * inner;
    char* whole = byte_pointer(joined) + static_cast<size_t>(offset) * element;
    char* part = byte_pointer(*piece);
    offset += piece_row;
    // The memory planner may have placed the piece where it belongs
    // (runtime/memory_planner.h): nothing to copy.
    if (piece_row == 0 || outer == 0 || whole == part) continue;
    cuda::require_on_device(ctx, *piece, join ? "a piece" : "an output piece");
    if (join) {
      cuda::copy_strided(ctx, element, part, whole, {outer, piece_row}, {piece_row, 1}, {joined_row, 1}, "Concat");
    } else {
      cuda::copy_strided(ctx, element, whole, part, {outer, piece_row}, {joined_row, 1}, {piece_row, 1}, "Split");
    }
  }
}

class ConcatCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& first = ctx.input(0);
    int64_t axis = resolve_axis(ctx, ctx.node().attr("axis").i(), first.sizes().size());
    const ConcatInputs inputs = concat_inputs(ctx, axis);
    cuda::cuda_stream(ctx);
    Tensor& out = ctx.allocate_output(0, first.dtype(), inputs.sizes, KernelContext::Fill::kUninitialized);
    move_pieces(ctx, inputs.pieces, out, axis, true);
  }
};

// ConcatGrad(dY, inputs...): pieces of dY shaped like the inputs.
class ConcatGradCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    int64_t axis = resolve_axis(ctx, ctx.node().attr("axis").i(), dy.sizes().size());
    cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    std::vector<const Tensor*> pieces = allocate_concat_grad_pieces(ctx, dy, axis);
    move_pieces(ctx, pieces, dy, axis, false);
  }
};

class SplitCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    int64_t axis = resolve_axis(ctx, indexing_axis(ctx.node(), 0), x.sizes().size());
    std::optional<std::vector<int64_t>> given;
    if (ctx.has_input(1)) given = host_index_values(ctx, 1, "split");
    std::vector<int64_t> parts =
        split_parts(ctx, given ? &*given : nullptr, x.sizes()[static_cast<size_t>(axis)], ctx.num_outputs());
    cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    std::vector<const Tensor*> pieces = allocate_split_pieces(ctx, x, axis, parts);
    move_pieces(ctx, pieces, x, axis, false);
  }
};

// Slice(data, starts, ends[, axes, steps]) and SliceGrad(dY, data, starts, ends[, axes, steps]).
class SliceCudaKernel final : public OpKernel {
 public:
  explicit SliceCudaKernel(bool gradient) : gradient_(gradient) {}

  void compute(KernelContext& ctx) override {
    size_t first = gradient_ ? 1 : 0;
    const Tensor& data = ctx.input(first);
    std::vector<SliceAxis> sliced = slice_axes(ctx, first, data.sizes(), [&](size_t input, const char* what) {
      return host_index_values(ctx, input, what);
    });
    std::vector<int64_t> out_sizes, strided;
    const std::vector<int64_t> strides = cuda::dense_strides(data.sizes());
    int64_t start = 0;  // the slice's first element, when it has any
    for (size_t a = 0; a < sliced.size(); ++a) {
      out_sizes.push_back(sliced[a].count);
      strided.push_back(sliced[a].step * strides[a]);
      start += sliced[a].start * strides[a];
    }
    cuda::cuda_stream(ctx);
    const bool empty = count_of(out_sizes) == 0;
    if (!gradient_) {
      Tensor& out = ctx.allocate_output(0, data.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
      if (empty) return;
      cuda::require_on_device(ctx, data, "data");
      const size_t element = dtype_size(data.dtype());
      cuda::copy_strided(ctx, element, byte_pointer(data) + static_cast<size_t>(start) * element, out.raw_data(), out_sizes,
                         strided, cuda::dense_strides(out_sizes), "Slice");
      return;
    }
    const Tensor& dy = ctx.input(0);
    check_slice_grad(ctx, dy, out_sizes);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), data.sizes(), KernelContext::Fill::kZeros);
    if (empty) return;
    cuda::require_on_device(ctx, dy, "dY");
    const size_t element = dtype_size(dy.dtype());
    cuda::copy_strided(ctx, element, dy.raw_data(), byte_pointer(dx) + static_cast<size_t>(start) * element, out_sizes,
                       cuda::dense_strides(out_sizes), strided, "SliceGrad");
  }

 private:
  static int64_t count_of(const std::vector<int64_t>& sizes) { return span(sizes, 0, sizes.size()); }

  bool gradient_;
};

// The indices input, checked for type; its values stay on the device.
bool indices_are_i64(const KernelContext& ctx, const Tensor& indices) {
  if (indices.dtype() != DType::kInt64 && indices.dtype() != DType::kInt32) {
    ctx.fail("indices must be i32 or i64, got " + indices.type_string());
  }
  return indices.dtype() == DType::kInt64;
}

// The widest word (16, 8, 4, 2 or 1 bytes) that divides `row_bytes` and
// both addresses.
size_t row_word(int64_t row_bytes, const void* a, const void* b) {
  for (size_t word : {size_t{16}, size_t{8}, size_t{4}, size_t{2}}) {
    if (row_bytes % static_cast<int64_t>(word) == 0 && reinterpret_cast<uintptr_t>(a) % word == 0 &&
        reinterpret_cast<uintptr_t>(b) % word == 0) {
      return word;
    }
  }
  return 1;
}

class GatherCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    int64_t axis = resolve_axis(ctx, indexing_axis(ctx.node(), 0), data.sizes().size());
    const std::vector<int64_t>& ds = data.sizes();
    const bool wide = indices_are_i64(ctx, indices);
    std::vector<int64_t> out_sizes = gather_sizes(ds, axis, indices.sizes());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    Tensor& out = ctx.allocate_output(0, data.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    cuda::require_on_device(ctx, data, "data");
    cuda::require_on_device(ctx, indices, "indices");
    const int64_t row_bytes = span(ds, static_cast<size_t>(axis) + 1, ds.size()) * static_cast<int64_t>(dtype_size(data.dtype()));
    const size_t word = row_word(row_bytes, data.raw_data(), out.raw_data());
    // The launch's own: its check reads it after the run, when another
    // run's launch could have reset a shared one.
    Tensor first_bad = Tensor::uninitialized(DType::kInt64, {1}, ctx.allocator());
    const int64_t along = ds[static_cast<size_t>(axis)];
    cuda::launch_gather(word, data.raw_data(), indices.raw_data(), wide, out.raw_data(), span(ds, 0, static_cast<size_t>(axis)),
                        along, indices.num_elements(), row_bytes / static_cast<int64_t>(word),
                        first_bad.data<int64_t>(), stream);
    cuda::check_launch(ctx, "gather_kernel");
    // An index out of range fails as on the CPU, naming the first one, once
    // the device work is done (the indices are kept until then).
    const Node& node = ctx.node();
    cuda::check_device_values(ctx, first_bad, [&node, indices, wide, along](const std::vector<int64_t>& found) {
      if (found[0] < 0) return;
      const size_t width = wide ? sizeof(int64_t) : sizeof(int32_t);
      const int64_t value = cuda::read_device_integers(indices.device().index,
                                                       static_cast<const char*>(indices.raw_data()) + found[0] * width, 1,
                                                       wide, node)[0];
      fail_node(node, "index " + std::to_string(value) + " is out of range for an axis of size " + std::to_string(along));
    });
  }
};

std::optional<cuda::AddType> add_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return cuda::AddType::kF32;
    case DType::kFloat64: return cuda::AddType::kF64;
    case DType::kFloat16: return cuda::AddType::kF16;
    case DType::kBFloat16: return cuda::AddType::kBF16;
    case DType::kInt8: return cuda::AddType::kI8;
    case DType::kUInt8: return cuda::AddType::kU8;
    case DType::kInt16: return cuda::AddType::kI16;
    case DType::kUInt16: return cuda::AddType::kU16;
    case DType::kInt32: return cuda::AddType::kI32;
    case DType::kUInt32: return cuda::AddType::kU32;
    case DType::kInt64: return cuda::AddType::kI64;
    case DType::kUInt64: return cuda::AddType::kU64;
    default: return std::nullopt;
  }
}

cuda::AddType checked_add_type(const KernelContext& ctx, const Tensor& tensor) {
  std::optional<cuda::AddType> type = add_type(tensor.dtype());
  if (!type) ctx.fail("the CUDA kernel adds numeric types, got " + tensor.type_string());
  return *type;
}

// GatherGrad(dY, data, indices): adds each gathered row of dY back at its index.
class GatherGradCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const std::vector<int64_t>& ds = ctx.input(1).sizes();
    const Tensor& indices = ctx.input(2);
    int64_t axis = resolve_axis(ctx, indexing_axis(ctx.node(), 0), ds.size());
    const int64_t along = ds[static_cast<size_t>(axis)];
    const bool wide = indices_are_i64(ctx, indices);
    const int64_t outer = span(ds, 0, static_cast<size_t>(axis)), row = span(ds, static_cast<size_t>(axis) + 1, ds.size());
    const int64_t count = indices.num_elements();
    check_gather_grad(ctx, dy, outer, count, row);
    const cuda::AddType type = checked_add_type(ctx, dy);
    // The sort's keys (rows, and `along` for an index out of range) and values (positions) are 32-bit.
    constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
    if (along > kMax32 || count > kMax32) {
      ctx.fail("the CUDA kernel sorts at most 2^31 - 1 indices into an axis of at most 2^31 - 1 rows; got " +
               std::to_string(count) + " indices into " + std::to_string(along) + " rows");
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), ds, KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, indices, "indices");
    const size_t bytes = cuda::gather_grad_workspace_bytes(count, along);
    // The sort's keys, positions and temporary storage.
    const cuda::LaunchScratch scratch(ctx, {bytes});
    void* workspace = scratch.part(0);
    cuda::check_cuda_status(ctx,
                            cuda::launch_gather_grad(type, dy.raw_data(), indices.raw_data(), wide, dx.raw_data(), outer,
                                                     along, count, row, workspace, bytes, stream),
                            "sorting the indices and summing the rows");
  }
};

class ExpandCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> shape = host_index_values(ctx, 1, "shape");
    const std::vector<int64_t> sizes = expand_sizes(ctx, x, shape);
    cuda::cuda_stream(ctx);
    Tensor& out = ctx.allocate_output(0, x.dtype(), sizes, KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    cuda::require_on_device(ctx, x, "input 0");
    const std::vector<int64_t> x_strides = cuda::dense_strides(x.sizes());
    const size_t lead = sizes.size() - x.sizes().size();
    std::vector<int64_t> strides(sizes.size(), 0);  // 0 along broadcast axes
    for (size_t a = 0; a < x.sizes().size(); ++a) strides[lead + a] = x.sizes()[a] == 1 ? 0 : x_strides[a];
    cuda::copy_strided(ctx, dtype_size(x.dtype()), x.raw_data(), out.raw_data(), sizes, strides, cuda::dense_strides(sizes),
                       "Expand");
  }
};

class TileCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> repeats = host_index_values(ctx, 1, "repeats");
    std::vector<int64_t> sizes = tile_sizes(ctx, x, repeats);
    cuda::cuda_stream(ctx);
    Tensor& out = ctx.allocate_output(0, x.dtype(), sizes, KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    cuda::require_on_device(ctx, x, "input 0");
    // The output as [r0, s0, r1, s1, ...]: tile index then position in x.
    const std::vector<int64_t> x_strides = cuda::dense_strides(x.sizes()), out_strides = cuda::dense_strides(sizes);
    std::vector<int64_t> view, src, dst;
    for (size_t a = 0; a < sizes.size(); ++a) {
      view.insert(view.end(), {repeats[a], x.sizes()[a]});
      src.insert(src.end(), {0, x_strides[a]});
      dst.insert(dst.end(), {x.sizes()[a] * out_strides[a], out_strides[a]});
    }
    cuda::copy_strided(ctx, dtype_size(x.dtype()), x.raw_data(), out.raw_data(), view, src, dst, "Tile");
  }
};

// TileGrad(dY, X): every tile of dY added back onto X's shape.
class TileGradCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const std::vector<int64_t>& xs = ctx.input(1).sizes();
    check_tiling(ctx, dy, ctx.input(1));
    const cuda::AddType type = checked_add_type(ctx, dy);
    if (xs.size() > static_cast<size_t>(cuda::kMaxTileRank)) {
      ctx.fail("the CUDA kernel takes up to " + std::to_string(cuda::kMaxTileRank) + " axes, got " + dy.type_string());
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs, KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    cuda::require_on_device(ctx, dy, "dY");
    std::vector<int64_t> repeats;
    for (size_t a = 0; a < xs.size(); ++a) repeats.push_back(dy.sizes()[a] / xs[a]);
    cuda::launch_tile_grad(type, dy.raw_data(), dx.raw_data(), static_cast<int>(xs.size()), xs.data(), repeats.data(), stream);
    cuda::check_launch(ctx, "tile_grad_kernel");
  }
};

class ConstantOfShapeCudaKernel final : public OpKernel {
 public:
  explicit ConstantOfShapeCudaKernel(const Node& node) : value_(constant_of_shape_value(node)) {}

  void compute(KernelContext& ctx) override {
    std::vector<int64_t> shape = host_index_values(ctx, 0, "shape");
    check_constant_shape(ctx, shape);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    Tensor& out = ctx.allocate_output(0, value_.dtype(), shape, KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    uint64_t bits = 0;
    std::memcpy(&bits, value_.raw_data(), dtype_size(value_.dtype()));
    cuda::launch_fill(dtype_size(value_.dtype()), out.raw_data(), out.num_elements(), bits, stream);
    cuda::check_launch(ctx, "fill_kernel");
  }

 private:
  Tensor value_;  // host memory: its bytes become the fill kernel's argument
};

class ZerosLikeCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    cuda::cuda_stream(ctx);
    ctx.allocate_output(0, ctx.input(0).dtype(), ctx.input(0).sizes(), KernelContext::Fill::kZeros);
  }
};

template <typename K>
KernelFactory simple() {
  return [](const Node&) { return std::make_unique<K>(); };
}

}  // namespace

void register_indexing_cuda_kernels(KernelRegistry& registry) {
  registry.add("Concat", DeviceType::kCuda, kAnyDTypes, simple<ConcatCudaKernel>());
  registry.add("ConcatGrad", DeviceType::kCuda, kAnyDTypes, simple<ConcatGradCudaKernel>());
  registry.add("Split", DeviceType::kCuda, kAnyDTypes, simple<SplitCudaKernel>());
  registry.add("Slice", DeviceType::kCuda, kAnyDTypes, [](const Node&) { return std::make_unique<SliceCudaKernel>(false); });
  registry.add("SliceGrad", DeviceType::kCuda, kNumericDTypes,
               [](const Node&) { return std::make_unique<SliceCudaKernel>(true); });
  registry.add("Gather", DeviceType::kCuda, kAnyDTypes, simple<GatherCudaKernel>());
  registry.add("GatherGrad", DeviceType::kCuda, kNumericDTypes, simple<GatherGradCudaKernel>());
  registry.add("Expand", DeviceType::kCuda, kAnyDTypes, simple<ExpandCudaKernel>());
  registry.add("Tile", DeviceType::kCuda, kAnyDTypes, simple<TileCudaKernel>());
  registry.add("TileGrad", DeviceType::kCuda, kNumericDTypes, simple<TileGradCudaKernel>());
  registry.add("ConstantOfShape", DeviceType::kCuda, {DType::kInt64},
               [](const Node& node) { return std::make_unique<ConstantOfShapeCudaKernel>(node); });
  registry.add("ZerosLike", DeviceType::kCuda, kAnyDTypes, simple<ZerosLikeCudaKernel>());
}

}  // namespace weir
