#include "ops/tensor/selection.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>

#include "core/graph.h"
#include "ops/axis_lines.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

template <typename T>
bool is_nonzero(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value;
  } else {
    return load(value) != ComputeType<T>(0);  // NaN is non-zero
  }
}

// --- Compress --------------------------------------------------------------

// Compress's view of its input: [outer, n, inner] around the axis (the
// flattened input is [1, numel, 1]) and the kept positions along it.
struct CompressLayout {
  AxisSplit split;
  std::vector<int64_t> kept;
  std::vector<int64_t> out_sizes;
};

CompressLayout compress_layout(const KernelContext& ctx, const Tensor& x, const Tensor& condition,
                               const std::optional<int64_t>& axis) {
  if (condition.dtype() != DType::kBool || condition.rank() != 1) {
    ctx.fail("condition must be a 1-D bool tensor, got " + condition.type_string());
  }
  CompressLayout layout;
  if (axis) {
    if (x.rank() == 0) ctx.fail("input " + x.type_string() + " has no axis " + std::to_string(*axis));
    layout.split = split_at(ctx, x.sizes(), *axis);
  } else {
    layout.split.n = x.num_elements();
  }
  const bool* flags = condition.data<bool>();
  for (int64_t j = 0; j < condition.num_elements(); ++j) {
    if (!flags[j]) continue;
    if (j >= layout.split.n) {
      ctx.fail("condition " + condition.type_string() + " selects index " + std::to_string(j) + ", but " +
               (axis ? "the axis" : "the flattened input") + " has " + std::to_string(layout.split.n) + " entries");
    }
    layout.kept.push_back(j);
  }
  auto count = static_cast<int64_t>(layout.kept.size());
  if (axis) {
    layout.out_sizes = x.sizes();
    layout.out_sizes[static_cast<size_t>(resolve_axis(ctx, *axis, x.sizes().size()))] = count;
  } else {
    layout.out_sizes = {count};
  }
  return layout;
}

// Copies the kept slices between the full tensor and the compressed one.
void copy_kept(const CompressLayout& layout, size_t element, const char* from, char* to, bool scatter) {
  const AxisSplit& s = layout.split;
  auto count = static_cast<int64_t>(layout.kept.size());
  size_t bytes = static_cast<size_t>(s.inner) * element;
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      auto full = static_cast<size_t>((o * s.n + layout.kept[static_cast<size_t>(k)]) * s.inner) * element;
      auto packed = static_cast<size_t>((o * count + k) * s.inner) * element;
      if (scatter) std::memcpy(to + full, from + packed, bytes);
      else std::memcpy(to + packed, from + full, bytes);
    }
  }
}

std::optional<int64_t> optional_axis(const Node& node) {
  if (!node.has_attr("axis")) return std::nullopt;
  return node.attr("axis").i();
}

class CompressKernel final : public OpKernel {
 public:
  explicit CompressKernel(const Node& node) : axis_(optional_axis(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    CompressLayout layout = compress_layout(ctx, x, ctx.input(1), axis_);
    Tensor& y = ctx.allocate_output(0, x.dtype(), layout.out_sizes, KernelContext::Fill::kUninitialized);
    copy_kept(layout, dtype_size(x.dtype()), static_cast<const char*>(x.raw_data()), static_cast<char*>(y.raw_data()),
              /*scatter=*/false);
  }

 private:
  std::optional<int64_t> axis_;
};

// CompressGrad(dY, X, condition): dY's slices at the kept positions of a zero tensor of X's shape.
class CompressGradKernel final : public OpKernel {
 public:
  explicit CompressGradKernel(const Node& node) : axis_(optional_axis(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    CompressLayout layout = compress_layout(ctx, x, ctx.input(2), axis_);
    if (dy.sizes() != layout.out_sizes) {
      ctx.fail("dY " + dy.type_string() + " does not match the compressed shape " + format_sizes(layout.out_sizes));
    }
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), x.sizes(), KernelContext::Fill::kZeros);
    copy_kept(layout, dtype_size(dy.dtype()), static_cast<const char*>(dy.raw_data()), static_cast<char*>(dx.raw_data()),
              /*scatter=*/true);
  }

 private:
  std::optional<int64_t> axis_;
};

// The number of true entries of a constant 1-D bool condition, else nullopt.
std::optional<int64_t> constant_true_count(const InferenceContext& ctx, size_t index) {
  const Tensor* condition = ctx.input_constant(index);
  if (condition == nullptr || condition->dtype() != DType::kBool) return std::nullopt;
  const bool* flags = condition->data<bool>();
  return static_cast<int64_t>(std::count(flags, flags + condition->num_elements(), true));
}

void infer_compress(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  const TensorType* condition = ctx.input_type(1);
  if (condition != nullptr && condition->shape.has_rank() && condition->shape.rank() != 1) {
    ctx.fail("condition " + condition->shape.to_string() + " must be 1-D");
  }
  if (x == nullptr) return;
  std::optional<int64_t> count = constant_true_count(ctx, 1);
  if (!ctx.has_attr("axis")) {
    ctx.set_output_type(0, {x->dtype, Shape{count ? Dim(*count) : symbolic_dim(ctx, 0)}});
    return;
  }
  if (!x->shape.has_rank()) {
    ctx.set_output_type(0, {x->dtype, Shape::unknown_rank()});
    return;
  }
  int64_t axis = normalize_axis(ctx.attr_int("axis"), x->shape.rank(), ctx);
  std::vector<Dim> dims = x->shape.dims();
  dims[static_cast<size_t>(axis)] = count ? Dim(*count) : symbolic_dim(ctx, static_cast<size_t>(axis));
  ctx.set_output_type(0, {x->dtype, Shape(std::move(dims))});
}

// --- NonZero ---------------------------------------------------------------

class NonZeroKernel final : public OpKernel {
 public:
  explicit NonZeroKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> found;  // flat positions
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      const T* data = x.data<T>();
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        if (is_nonzero(data[i])) found.push_back(i);
      }
    });
    auto rank = static_cast<size_t>(x.rank());
    auto count = static_cast<int64_t>(found.size());
    Tensor& y = ctx.allocate_output(0, DType::kInt64, {x.rank(), count}, KernelContext::Fill::kUninitialized);
    int64_t* out = y.data<int64_t>();
    for (int64_t k = 0; k < count; ++k) {
      int64_t rest = found[static_cast<size_t>(k)];
      for (size_t a = rank; a-- > 0;) {
        int64_t size = x.sizes()[a];
        out[static_cast<int64_t>(a) * count + k] = rest % size;
        rest /= size;
      }
    }
  }
};

void infer_non_zero(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  Dim rank = x->shape.has_rank() ? Dim(x->shape.rank()) : symbolic_dim(ctx, 0);
  Dim count = symbolic_dim(ctx, 1);
  if (const Tensor* constant = ctx.input_constant(0)) {
    int64_t n = 0;
    dispatch_dtype(constant->dtype(), [&]<typename T>() {
      const T* data = constant->data<T>();
      for (int64_t i = 0; i < constant->num_elements(); ++i) n += is_nonzero(data[i]) ? 1 : 0;
    });
    count = Dim(n);
  }
  ctx.set_output_type(0, {DType::kInt64, Shape{rank, count}});
}

// --- Unique ----------------------------------------------------------------

// Three-way comparison with NaN after every number and equal to NaN.
template <typename V>
int compare_values(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    bool a_nan = std::isnan(a), b_nan = std::isnan(b);
    if (a_nan || b_nan) return a_nan == b_nan ? 0 : (a_nan ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

class UniqueKernel final : public OpKernel {
 public:
  explicit UniqueKernel(const Node& node)
      : axis_(optional_axis(node)), sorted_(!node.has_attr("sorted") || node.attr("sorted").i() != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    AxisSplit s;
    if (axis_) {
      if (x.rank() == 0) ctx.fail("input " + x.type_string() + " has no axis " + std::to_string(*axis_));
      s = split_at(ctx, x.sizes(), *axis_);
    } else {
      s.n = x.num_elements();
    }
    // Slice a holds elements (o, a, i) for o < outer, i < inner, in that order.
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::vector<int64_t> group_of(static_cast<size_t>(s.n));  // slice -> group, groups in sorted order
    std::vector<int64_t> first, count;                         // per group
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      const T* data = x.data<T>();
      auto compare = [&](int64_t a, int64_t b) {
        for (int64_t o = 0; o < s.outer; ++o) {
          for (int64_t i = 0; i < s.inner; ++i) {
            int c = compare_values(load(data[(o * s.n + a) * s.inner + i]), load(data[(o * s.n + b) * s.inner + i]));
            if (c != 0) return c;
          }
        }
        return 0;
      };
      // Stable: each group starts with its first occurrence.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
      for (size_t k = 0; k < order.size(); ++k) {
        if (k == 0 || compare(order[k - 1], order[k]) != 0) {
          first.push_back(order[k]);
          count.push_back(0);
        }
        group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size()) - 1;
        ++count.back();
      }
    });
    auto groups = static_cast<int64_t>(first.size());
    // position[g]: group g's place in Y (by first occurrence unless sorted).
    std::vector<int64_t> position(first.size());
    std::iota(position.begin(), position.end(), int64_t{0});
    if (!sorted_) {
      std::vector<int64_t> by_first(first.size());
      std::iota(by_first.begin(), by_first.end(), int64_t{0});
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
      for (size_t p = 0; p < by_first.size(); ++p) position[static_cast<size_t>(by_first[p])] = static_cast<int64_t>(p);
    }

    std::vector<int64_t> y_sizes = {groups};
    if (axis_) {
      y_sizes = x.sizes();
      y_sizes[static_cast<size_t>(resolve_axis(ctx, *axis_, x.sizes().size()))] = groups;
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), y_sizes, KernelContext::Fill::kUninitialized);
    size_t element = dtype_size(x.dtype());
    size_t bytes = static_cast<size_t>(s.inner) * element;
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(y.raw_data());
    for (int64_t o = 0; o < s.outer; ++o) {
      for (size_t g = 0; g < first.size(); ++g) {
        std::memcpy(dst + static_cast<size_t>((o * groups + position[g]) * s.inner) * element,
                    src + static_cast<size_t>((o * s.n + first[g]) * s.inner) * element, bytes);
      }
    }
    if (ctx.num_outputs() > 1) {
      int64_t* indices = ctx.allocate_output(1, DType::kInt64, {groups}, KernelContext::Fill::kUninitialized).data<int64_t>();
      for (size_t g = 0; g < first.size(); ++g) indices[position[g]] = first[g];
    }
    if (ctx.num_outputs() > 2) {
      int64_t* inverse = ctx.allocate_output(2, DType::kInt64, {s.n}, KernelContext::Fill::kUninitialized).data<int64_t>();
      for (size_t a = 0; a < group_of.size(); ++a) inverse[a] = position[static_cast<size_t>(group_of[a])];
    }
    if (ctx.num_outputs() > 3) {
      int64_t* counts = ctx.allocate_output(3, DType::kInt64, {groups}, KernelContext::Fill::kUninitialized).data<int64_t>();
      for (size_t g = 0; g < first.size(); ++g) counts[position[g]] = count[g];
    }
  }

 private:
  std::optional<int64_t> axis_;
  bool sorted_;
};

void infer_unique(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  Shape y = Shape::unknown_rank();
  Dim groups = symbolic_dim(ctx, 0);
  Dim slices = Dim::symbol(ctx.node().name() + ":inverse");
  if (!ctx.has_attr("axis")) {
    y = Shape{groups};
    if (x->shape.has_rank() && x->shape.is_static()) slices = Dim(x->shape.num_elements());
  } else if (x->shape.has_rank()) {
    int64_t axis = normalize_axis(ctx.attr_int("axis"), x->shape.rank(), ctx);
    groups = symbolic_dim(ctx, static_cast<size_t>(axis));
    std::vector<Dim> dims = x->shape.dims();
    slices = dims[static_cast<size_t>(axis)];
    dims[static_cast<size_t>(axis)] = groups;
    y = Shape(std::move(dims));
  }
  ctx.set_output_type(0, {x->dtype, y});
  if (ctx.num_outputs() > 1) ctx.set_output_type(1, {DType::kInt64, Shape{groups}});
  if (ctx.num_outputs() > 2) ctx.set_output_type(2, {DType::kInt64, Shape{slices}});
  if (ctx.num_outputs() > 3) ctx.set_output_type(3, {DType::kInt64, Shape{groups}});
}

}  // namespace

void register_selection_schemas(OpRegistry& registry) {
  OpSchema compress("Compress");
  compress.input("input", "T").input("condition", "B").output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("B", {DType::kBool})
      .attr("axis", AttrType::kInt)
      .infer(infer_compress)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        ctx.set_input_grad(0, ctx.emit("CompressGrad", {grad, node.input(0), node.input(1)}, 1, node.attributes())[0]);
      })
      .doc("the slices along `axis` (of the flattened input without it) whose condition entry is true");
  registry.add(std::move(compress));

  OpSchema compress_grad("CompressGrad");
  compress_grad.input("dY", "T").input("X", "T").input("condition", "B").output("dX", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("B", {DType::kBool})
      .attr("axis", AttrType::kInt)
      .infer(infer_gradient_like_input_1)
      .doc("Compress's backward: dY's slices at the kept positions of zeros of X's shape");
  registry.add(std::move(compress_grad));

  OpSchema non_zero("NonZero");
  non_zero.input("X", "T").output("Y", "I")
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .infer(infer_non_zero)
      .doc("the i64 [rank, count] coordinates of the non-zero elements, row-major order");
  registry.add(std::move(non_zero));

  OpSchema unique("Unique");
  unique.input("X", "T")
      .output("Y", "T").output("indices", "I", Arity::kOptional).output("inverse_indices", "I", Arity::kOptional)
      .output("counts", "I", Arity::kOptional)
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .attr("axis", AttrType::kInt)
      .attr("sorted", AttrType::kInt, Attribute(int64_t{1}))
      .infer(infer_unique)
      .doc("the distinct elements (slices along `axis`), sorted or by first occurrence, with first-occurrence "
           "indices, inverse indices and counts; NaN sorts last and equals NaN");
  registry.add(std::move(unique));
}

void register_selection_cpu_kernels(KernelRegistry& registry) {
  registry.add("Compress", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<CompressKernel>(node); });
  registry.add("CompressGrad", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<CompressGradKernel>(node); });
  registry.add("NonZero", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<NonZeroKernel>(node); });
  registry.add("Unique", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<UniqueKernel>(node); });
}

}  // namespace weir
