#include "ops/tensor/scatter_gather_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ops/axis_lines.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction_of(const Node& node) {
  std::string name = node.has_attr("reduction") ? node.attr("reduction").s() : "none";
  if (name == "none") return Reduction::kNone;
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (name == "max") return Reduction::kMax;
  if (name == "min") return Reduction::kMin;
  throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': reduction '" + name +
                                               "' is not one of none, add, mul, max, min").with_node(node.name());
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t a = sizes.size(); a-- > 1;) strides[a - 1] = strides[a] * sizes[a];
  return strides;
}

int64_t product(const std::vector<int64_t>& sizes, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) result *= sizes[i];
  return result;
}

// `index` wrapped into [0, limit); fails when outside [-limit, limit).
int64_t wrap_index(const KernelContext& ctx, int64_t index, int64_t limit) {
  if (index < -limit || index >= limit) {
    ctx.fail("index " + std::to_string(index) + " is out of range for an axis of size " + std::to_string(limit));
  }
  return index < 0 ? index + limit : index;
}

// Element-wise indexing along `axis`: calls visit(position, data_offset) for
// every element of `indices` (position is its flat index there), with the
// data element it names: its own coordinates, `axis` replaced by the index.
template <typename Visit>
void for_each_element_index(const KernelContext& ctx, const std::vector<int64_t>& data_sizes,
                            const std::vector<int64_t>& index_sizes, const std::vector<int64_t>& indices, int64_t axis,
                            Visit visit) {
  if (index_sizes.size() != data_sizes.size()) {
    ctx.fail("indices " + format_sizes(index_sizes) + " must have the rank of data " + format_sizes(data_sizes));
  }
  for (size_t a = 0; a < data_sizes.size(); ++a) {
    if (static_cast<int64_t>(a) != axis && index_sizes[a] > data_sizes[a]) {
      ctx.fail("indices " + format_sizes(index_sizes) + " exceed data " + format_sizes(data_sizes) + " on axis " + std::to_string(a));
    }
  }
  std::vector<int64_t> strides = strides_of(data_sizes);
  std::vector<int64_t> coordinate(index_sizes.size(), 0);
  auto along = static_cast<size_t>(axis);
  for (size_t position = 0; position < indices.size(); ++position) {
    int64_t offset = 0;
    for (size_t a = 0; a < coordinate.size(); ++a) {
      int64_t c = a == along ? wrap_index(ctx, indices[position], data_sizes[a]) : coordinate[a];
      offset += c * strides[a];
    }
    visit(static_cast<int64_t>(position), offset);
    for (size_t a = coordinate.size(); a-- > 0;) {
      if (++coordinate[a] < index_sizes[a]) break;
      coordinate[a] = 0;
    }
  }
}

// Tuple indexing (GatherND / ScatterND): indices [..., k] name slices of
// data after `batch` shared leading axes. Each tuple's slice has `slice`
// elements; the gathered shape is indices' without its last axis, then data's
// axes after batch + k.
struct TupleIndexing {
  int64_t batch = 0, k = 0, tuples = 0, slice = 1;
  std::vector<int64_t> gathered_sizes;
};

TupleIndexing plan_tuples(const KernelContext& ctx, const std::vector<int64_t>& data_sizes,
                          const std::vector<int64_t>& index_sizes, int64_t batch) {
  auto r = static_cast<int64_t>(data_sizes.size()), q = static_cast<int64_t>(index_sizes.size());
  int64_t k = q == 0 ? 0 : index_sizes.back();
  if (q == 0 || batch < 0 || batch >= std::min(q, r) || batch + k > r) {
    ctx.fail("batch_dims " + std::to_string(batch) + " and indices " + format_sizes(index_sizes) + " do not fit data " +
             format_sizes(data_sizes));
  }
  auto b = static_cast<size_t>(batch);
  for (size_t a = 0; a < b; ++a) {
    if (index_sizes[a] != data_sizes[a]) {
      ctx.fail("batch axis " + std::to_string(a) + " of indices " + format_sizes(index_sizes) + " differs from data " +
               format_sizes(data_sizes));
    }
  }
  TupleIndexing plan;
  plan.batch = batch;
  plan.k = k;
  plan.tuples = product(index_sizes, 0, index_sizes.size() - 1);
  plan.slice = product(data_sizes, b + static_cast<size_t>(k), data_sizes.size());
  plan.gathered_sizes.assign(index_sizes.begin(), index_sizes.end() - 1);
  plan.gathered_sizes.insert(plan.gathered_sizes.end(), data_sizes.begin() + batch + k, data_sizes.end());
  return plan;
}

// Calls visit(tuple, data_offset) for every index tuple: the offset of its slice in data.
template <typename Visit>
void for_each_tuple(const KernelContext& ctx, const TupleIndexing& plan, const std::vector<int64_t>& data_sizes,
                    const std::vector<int64_t>& index_sizes, const std::vector<int64_t>& indices, Visit visit) {
  auto b = static_cast<size_t>(plan.batch);
  int64_t batches = product(index_sizes, 0, b);
  int64_t tuples_per_batch = batches == 0 ? 0 : plan.tuples / batches;
  int64_t batch_stride = product(data_sizes, b, data_sizes.size());
  std::vector<int64_t> strides = strides_of(data_sizes);
  for (int64_t t = 0; t < plan.tuples; ++t) {
    int64_t offset = (t / tuples_per_batch) * batch_stride;
    for (int64_t j = 0; j < plan.k; ++j) {
      auto axis = b + static_cast<size_t>(j);
      offset += wrap_index(ctx, indices[static_cast<size_t>(t * plan.k + j)], data_sizes[axis]) * strides[axis];
    }
    visit(t, offset);
  }
}

// target (op)= value in the element type's compute type.
template <typename T>
void combine(Reduction reduction, T& target, T value) {
  if constexpr (std::is_same_v<T, bool>) {
    target = value;  // only reduction none reaches bool (checked before)
  } else {
    auto a = load(target), b = load(value);
    switch (reduction) {
      case Reduction::kNone: target = value; return;
      case Reduction::kAdd: target = store<T>(static_cast<ComputeType<T>>(a + b)); return;
      case Reduction::kMul: target = store<T>(static_cast<ComputeType<T>>(a * b)); return;
      case Reduction::kMax: target = store<T>(b > a ? b : a); return;
      case Reduction::kMin: target = store<T>(b < a ? b : a); return;
    }
  }
}

class GatherElementsKernel final : public OpKernel {
 public:
  explicit GatherElementsKernel(const Node& node) : axis_(node.has_attr("axis") ? node.attr("axis").i() : 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& data = ctx.input(0);
    const Tensor& index_tensor = ctx.input(1);
    int64_t axis = resolve_axis(ctx, axis_, data.sizes().size());
    std::vector<int64_t> indices = index_values(ctx, index_tensor, "indices");
    Tensor& out = ctx.allocate_output(0, data.dtype(), index_tensor.sizes(), KernelContext::Fill::kUninitialized);
    size_t element = dtype_size(data.dtype());
    const auto* src = static_cast<const char*>(data.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    for_each_element_index(ctx, data.sizes(), index_tensor.sizes(), indices, axis, [&](int64_t position, int64_t offset) {
      std::memcpy(dst + static_cast<size_t>(position) * element, src + static_cast<size_t>(offset) * element, element);
    });
  }

 private:
  int64_t axis_;
};

// Checks updates against data's dtype and the shape the indices call for.
void check_updates(const KernelContext& ctx, const Tensor& data, const Tensor& updates,
                   const std::vector<int64_t>& expected, Reduction reduction) {
  if (updates.dtype() != data.dtype()) ctx.fail("updates " + updates.type_string() + " must have data's dtype " + data.type_string());
  if (updates.sizes() != expected) ctx.fail("updates " + updates.type_string() + " must have shape " + format_sizes(expected));
  if (data.dtype() == DType::kBool && reduction != Reduction::kNone) ctx.fail("bool data takes only reduction none");
}

class ScatterElementsKernel final : public OpKernel {
 public:
  explicit ScatterElementsKernel(const Node& node)
      : axis_(node.has_attr("axis") ? node.attr("axis").i() : 0), reduction_(reduction_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& data = ctx.input(0);
    const Tensor& index_tensor = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    int64_t axis = resolve_axis(ctx, axis_, data.sizes().size());
    check_updates(ctx, data, updates, index_tensor.sizes(), reduction_);
    std::vector<int64_t> indices = index_values(ctx, index_tensor, "indices");
    Tensor& out = ctx.allocate_output(0, data.dtype(), data.sizes(), KernelContext::Fill::kUninitialized);
    std::memcpy(out.raw_data(), data.raw_data(), data.nbytes());
    dispatch_dtype(data.dtype(), [&]<typename T>() {
      T* target = out.data<T>();
      const T* source = updates.data<T>();
      for_each_element_index(ctx, data.sizes(), index_tensor.sizes(), indices, axis, [&](int64_t position, int64_t offset) {
        combine(reduction_, target[offset], source[position]);
      });
    });
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};

// GatherND(data, indices) and GatherNDGrad(dY, data, indices): the same
// walk, copying slices out or adding them back.
class GatherNDKernel final : public OpKernel {
 public:
  GatherNDKernel(const Node& node, bool gradient)
      : batch_(node.has_attr("batch_dims") ? node.attr("batch_dims").i() : 0), gradient_(gradient) {}

  void compute(KernelContext& ctx) override {
    size_t first = gradient_ ? 1 : 0;
    const Tensor& data = ctx.input(first);
    const Tensor& index_tensor = ctx.input(first + 1);
    std::vector<int64_t> indices = index_values(ctx, index_tensor, "indices");
    const std::vector<int64_t>& ds = data.sizes();
    const std::vector<int64_t>& is = index_tensor.sizes();
    TupleIndexing plan = plan_tuples(ctx, ds, is, batch_);
    int64_t slice = plan.slice;
    if (!gradient_) {
      Tensor& out = ctx.allocate_output(0, data.dtype(), plan.gathered_sizes, KernelContext::Fill::kUninitialized);
      size_t element = dtype_size(data.dtype());
      const auto* src = static_cast<const char*>(data.raw_data());
      auto* dst = static_cast<char*>(out.raw_data());
      for_each_tuple(ctx, plan, ds, is, indices, [&](int64_t tuple, int64_t offset) {
        std::memcpy(dst + static_cast<size_t>(tuple * slice) * element, src + static_cast<size_t>(offset) * element,
                    static_cast<size_t>(slice) * element);
      });
      return;
    }
    const Tensor& dy = ctx.input(0);
    if (dy.sizes() != plan.gathered_sizes) {
      ctx.fail("dY " + dy.type_string() + " does not match the gathered shape " + format_sizes(plan.gathered_sizes));
    }
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), ds, KernelContext::Fill::kZeros);
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* g = dy.data<T>();
        T* target = dx.data<T>();
        for_each_tuple(ctx, plan, ds, is, indices, [&](int64_t tuple, int64_t offset) {
          for (int64_t e = 0; e < slice; ++e) combine(Reduction::kAdd, target[offset + e], g[tuple * slice + e]);
        });
      }
    });
  }

 private:
  int64_t batch_;
  bool gradient_;
};

class ScatterNDKernel final : public OpKernel {
 public:
  explicit ScatterNDKernel(const Node& node) : reduction_(reduction_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& data = ctx.input(0);
    const Tensor& index_tensor = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    const std::vector<int64_t>& ds = data.sizes();
    const std::vector<int64_t>& is = index_tensor.sizes();
    TupleIndexing plan = plan_tuples(ctx, ds, is, 0);
    check_updates(ctx, data, updates, plan.gathered_sizes, reduction_);
    std::vector<int64_t> indices = index_values(ctx, index_tensor, "indices");
    Tensor& out = ctx.allocate_output(0, data.dtype(), ds, KernelContext::Fill::kUninitialized);
    std::memcpy(out.raw_data(), data.raw_data(), data.nbytes());
    int64_t slice = plan.slice;
    dispatch_dtype(data.dtype(), [&]<typename T>() {
      T* target = out.data<T>();
      const T* source = updates.data<T>();
      for_each_tuple(ctx, plan, ds, is, indices, [&](int64_t tuple, int64_t offset) {
        for (int64_t e = 0; e < slice; ++e) combine(reduction_, target[offset + e], source[tuple * slice + e]);
      });
    });
  }

 private:
  Reduction reduction_;
};

}  // namespace

void register_scatter_gather_cpu_kernels(KernelRegistry& registry) {
  registry.add("GatherElements", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<GatherElementsKernel>(node); });
  registry.add("ScatterElements", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<ScatterElementsKernel>(node); });
  registry.add("GatherND", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<GatherNDKernel>(node, false); });
  registry.add("GatherNDGrad", DeviceType::kCpu, kNumericDTypes, [](const Node& node) { return std::make_unique<GatherNDKernel>(node, true); });
  registry.add("ScatterND", DeviceType::kCpu, kAnyDTypes, [](const Node& node) { return std::make_unique<ScatterNDKernel>(node); });
}

}  // namespace weir
