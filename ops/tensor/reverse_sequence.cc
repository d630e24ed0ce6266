#include "ops/tensor/reverse_sequence.h"

#include <cstring>
#include <string>

#include "core/graph.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

// Fails unless the two axes are 0 and 1 in some order.
template <typename Fail>
void check_axes(int64_t batch_axis, int64_t time_axis, Fail&& fail) {
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis) {
    fail("batch_axis " + std::to_string(batch_axis) + " and time_axis " + std::to_string(time_axis) +
         " must be 0 and 1 in either order");
  }
}

class ReverseSequenceKernel final : public OpKernel {
 public:
  explicit ReverseSequenceKernel(const Node& node)
      : batch_axis_(int_attr(node, "batch_axis", 1)), time_axis_(int_attr(node, "time_axis", 0)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    check_axes(batch_axis_, time_axis_, [&](const std::string& m) { ctx.fail(m); });
    if (x.rank() < 2) ctx.fail("input " + x.type_string() + " needs at least 2 axes");
    int64_t batch = x.sizes()[static_cast<size_t>(batch_axis_)];
    int64_t time = x.sizes()[static_cast<size_t>(time_axis_)];
    const Tensor& lens_tensor = ctx.input(1);
    if (lens_tensor.rank() != 1 || lens_tensor.num_elements() != batch) {
      ctx.fail("sequence_lens " + lens_tensor.type_string() + " must be [" + std::to_string(batch) + "], the batch size");
    }
    std::vector<int64_t> lens = index_values(ctx, lens_tensor, "sequence_lens");
    for (int64_t len : lens) {
      if (len < 0 || len > time) {
        ctx.fail("sequence length " + std::to_string(len) + " is outside [0, " + std::to_string(time) + "]");
      }
    }
    // Row-major over (axis 0, axis 1, rest): element (t, b, r) moves to (len_b - 1 - t, b, r) for t < len_b.
    int64_t inner = 1;
    for (size_t a = 2; a < x.sizes().size(); ++a) inner *= x.sizes()[a];
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    size_t element = dtype_size(x.dtype());
    size_t bytes = static_cast<size_t>(inner) * element;
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(y.raw_data());
    auto offset = [&](int64_t b, int64_t t) {
      int64_t row = time_axis_ == 0 ? t * batch + b : b * time + t;
      return static_cast<size_t>(row * inner) * element;
    };
    for (int64_t b = 0; b < batch; ++b) {
      int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t t = 0; t < time; ++t) {
        int64_t from = t < len ? len - 1 - t : t;
        std::memcpy(dst + offset(b, t), src + offset(b, from), bytes);
      }
    }
  }

 private:
  int64_t batch_axis_, time_axis_;
};

void infer_reverse_sequence(InferenceContext& ctx) {
  int64_t batch_axis = ctx.attr_int("batch_axis"), time_axis = ctx.attr_int("time_axis");
  check_axes(batch_axis, time_axis, [&](const std::string& m) { ctx.fail(m); });
  const TensorType* x = ctx.input_type(0);
  const TensorType* lens = ctx.input_type(1);
  if (x == nullptr) return;
  if (x->shape.has_rank()) {
    if (x->shape.rank() < 2) ctx.fail("input " + x->shape.to_string() + " needs at least 2 axes");
    if (lens != nullptr && lens->shape.has_rank()) {
      const Dim& batch = x->shape[static_cast<size_t>(batch_axis)];
      if (lens->shape.rank() != 1 ||
          (batch.is_static() && lens->shape[0].is_static() && lens->shape[0].size() != batch.size())) {
        ctx.fail("sequence_lens " + lens->shape.to_string() + " must be [" + batch.to_string() + "], the batch size");
      }
    }
  }
  ctx.set_output_type(0, *x);
}

}  // namespace

void register_reverse_sequence_schema(OpRegistry& registry) {
  OpSchema reverse("ReverseSequence");
  reverse.input("input", "T").input("sequence_lens", "I").output("Y", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .attr("batch_axis", AttrType::kInt, Attribute(int64_t{1}))
      .attr("time_axis", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_reverse_sequence)
      .gradient([](GradientContext& ctx) {
        // A permutation that is its own inverse: dX = the same reversal of dY.
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        ctx.set_input_grad(0, ctx.emit("ReverseSequence", {grad, node.input(1)}, 1, node.attributes())[0]);
      })
      .doc("reverses the first sequence_lens[b] entries along time_axis of each batch entry b; the rest is copied");
  registry.add(std::move(reverse));
}

void register_reverse_sequence_cpu_kernel(KernelRegistry& registry) {
  registry.add("ReverseSequence", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<ReverseSequenceKernel>(node); });
}

}  // namespace weir
