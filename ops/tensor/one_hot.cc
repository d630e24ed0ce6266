#include "ops/tensor/one_hot.h"

#include <cmath>
#include <cstring>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {


int64_t axis_of(const Node& node) { return node.has_attr("axis") ? node.attr("axis").i() : -1; }

// The values of a numeric tensor, truncated toward zero to int64.
std::vector<int64_t> truncated_values(const KernelContext& ctx, const Tensor& t, const char* what) {
  std::vector<int64_t> values(static_cast<size_t>(t.num_elements()));
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      ctx.fail(std::string(what) + " must be numeric, got " + t.type_string());
    } else {
      for (size_t i = 0; i < values.size(); ++i) {
        auto v = static_cast<double>(load(t.data<T>()[i]));
        if (!std::isfinite(v) || std::fabs(v) > 9.0e18) ctx.fail(std::string(what) + " holds " + std::to_string(v));
        values[i] = static_cast<int64_t>(v);
      }
    }
  });
  return values;
}

void infer_one_hot(InferenceContext& ctx) {
  const TensorType* indices = ctx.input_type(0);
  const TensorType* values = ctx.input_type(2);
  if (indices == nullptr || values == nullptr) return;
  if (!indices->shape.has_rank()) {
    ctx.set_output_type(0, {values->dtype, Shape::unknown_rank()});
    return;
  }
  int64_t rank = indices->shape.rank() + 1;
  int64_t axis = normalize_axis(axis_of(ctx.node()), rank, ctx);
  std::vector<Dim> dims = indices->shape.dims();
  Dim depth = symbolic_dim(ctx, static_cast<size_t>(axis));
  if (const Tensor* constant = ctx.input_constant(1); constant != nullptr && constant->num_elements() == 1) {
    if (constant->dtype() == DType::kInt64) depth = Dim(constant->data<int64_t>()[0]);
    else if (constant->dtype() == DType::kInt32) depth = Dim(constant->data<int32_t>()[0]);
  }
  dims.insert(dims.begin() + axis, depth);
  ctx.set_output_type(0, {values->dtype, Shape(std::move(dims))});
}

class OneHotKernel final : public OpKernel {
 public:
  explicit OneHotKernel(const Node& node) : axis_(axis_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& index_tensor = ctx.input(0);
    const Tensor& values = ctx.input(2);
    std::vector<int64_t> depth_values = truncated_values(ctx, ctx.input(1), "depth");
    if (depth_values.size() != 1 || depth_values[0] < 1) {
      ctx.fail("depth must be one value of at least 1, got " + ctx.input(1).type_string());
    }
    if (values.num_elements() != 2) ctx.fail("values must hold [off_value, on_value], got " + values.type_string());
    int64_t depth = depth_values[0];
    std::vector<int64_t> indices = truncated_values(ctx, index_tensor, "indices");
    auto rank = static_cast<int64_t>(index_tensor.sizes().size()) + 1;
    if (axis_ < -rank || axis_ >= rank) ctx.fail("axis " + std::to_string(axis_) + " is out of range for rank " + std::to_string(rank));
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    std::vector<int64_t> sizes = index_tensor.sizes();
    sizes.insert(sizes.begin() + axis, depth);
    // indices viewed as [outer, inner] around the new axis.
    int64_t inner = 1;
    for (size_t a = static_cast<size_t>(axis); a < index_tensor.sizes().size(); ++a) inner *= index_tensor.sizes()[a];
    int64_t outer = inner == 0 ? 0 : static_cast<int64_t>(indices.size()) / inner;
    Tensor& out = ctx.allocate_output(0, values.dtype(), sizes, KernelContext::Fill::kUninitialized);
    size_t element = dtype_size(values.dtype());
    const auto* off = static_cast<const char*>(values.raw_data());
    const char* on = off + element;
    auto* dst = static_cast<char*>(out.raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t d = 0; d < depth; ++d) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t index = indices[static_cast<size_t>(o * inner + i)];
          if (index < 0) index += depth;
          std::memcpy(dst + static_cast<size_t>((o * depth + d) * inner + i) * element, index == d ? on : off, element);
        }
      }
    }
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_one_hot_schema(OpRegistry& registry) {
  OpSchema one_hot("OneHot");
  one_hot.input("indices", "T1").input("depth", "T2").input("values", "T3").output("output", "T3")
      .type_constraint("T1", kNumericDTypes).type_constraint("T2", kNumericDTypes)
      .type_constraint("T3", kAnyDTypes)
      .attr("axis", AttrType::kInt, Attribute(int64_t{-1}))
      .infer(infer_one_hot)
      .doc("values[1] where the new axis' coordinate equals the index, values[0] elsewhere (indices outside "
           "[-depth, depth) give no on value)");
  registry.add(std::move(one_hot));
}

void register_one_hot_cpu_kernel(KernelRegistry& registry) {
  registry.add("OneHot", DeviceType::kCpu, kNumericDTypes, [](const Node& node) { return std::make_unique<OneHotKernel>(node); });
}

}  // namespace weir
