#include "ops/tensor/trilu.h"

#include <algorithm>
#include <cstring>

#include "core/graph.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

class TriluKernel final : public OpKernel {
 public:
  explicit TriluKernel(const Node& node) : upper_(!node.has_attr("upper") || node.attr("upper").i() != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.sizes().size() < 2) ctx.fail("input " + x.type_string() + " needs at least 2 axes");
    int64_t k = 0;
    if (ctx.has_input(1)) {
      std::vector<int64_t> values = index_values(ctx, ctx.input(1), "k");
      if (values.size() != 1) ctx.fail("k must hold one value, got " + ctx.input(1).type_string());
      k = values[0];
    }
    int64_t rows = x.sizes()[x.sizes().size() - 2], columns = x.sizes().back();
    int64_t matrices = rows * columns == 0 ? 0 : x.num_elements() / (rows * columns);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kZeros);
    size_t element = dtype_size(x.dtype());
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(y.raw_data());
    for (int64_t m = 0; m < matrices; ++m) {
      for (int64_t r = 0; r < rows; ++r) {
        // Kept columns of row r: [r + k, columns) when upper, [0, r + k] when lower.
        int64_t begin = upper_ ? std::clamp<int64_t>(r + k, 0, columns) : 0;
        int64_t end = upper_ ? columns : std::clamp<int64_t>(r + k + 1, 0, columns);
        if (end <= begin) continue;
        size_t offset = static_cast<size_t>((m * rows + r) * columns + begin) * element;
        std::memcpy(dst + offset, src + offset, static_cast<size_t>(end - begin) * element);
      }
    }
  }

 private:
  bool upper_;
};

}  // namespace

void register_trilu_schema(OpRegistry& registry) {
  OpSchema trilu("Trilu");
  trilu.input("input", "T").input("k", "I", Arity::kOptional).output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .attr("upper", AttrType::kInt, Attribute(int64_t{1}))
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        if (x != nullptr && x->shape.has_rank() && x->shape.rank() < 2) ctx.fail("input " + x->shape.to_string() + " needs at least 2 axes");
        infer_same_as_input(ctx);
      })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        std::vector<Value*> inputs = {grad};
        if (ctx.node().num_inputs() > 1 && ctx.node().input(1) != nullptr) inputs.push_back(ctx.node().input(1));
        ctx.set_input_grad(0, ctx.emit("Trilu", inputs, 1, ctx.node().attributes())[0]);
      })
      .doc("the upper (column - row >= k) or lower (column - row <= k) triangle of each matrix; zeros elsewhere");
  registry.add(std::move(trilu));
}

void register_trilu_cpu_kernel(KernelRegistry& registry) {
  registry.add("Trilu", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<TriluKernel>(node); });
}

}  // namespace weir
