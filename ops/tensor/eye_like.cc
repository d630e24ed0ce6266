#include "ops/tensor/eye_like.h"

#include <string>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

// The output dtype: the `dtype` attribute when set, else the input's.
template <typename Fail>
DType output_dtype(bool has_dtype, int64_t code, DType input, Fail&& fail) {
  if (!has_dtype) return input;
  if (code <= 0 || code > 0x7fffffff || !is_valid_dtype(static_cast<int32_t>(code))) {
    fail("dtype " + std::to_string(code) + " is not a dtype Weir supports");
  }
  return static_cast<DType>(code);
}

class EyeLikeKernel final : public OpKernel {
 public:
  explicit EyeLikeKernel(const Node& node)
      : has_dtype_(node.has_attr("dtype")), dtype_code_(int_attr(node, "dtype", 0)), k_(int_attr(node, "k", 0)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 2) ctx.fail("input " + x.type_string() + " must be 2-D");
    DType dtype = output_dtype(has_dtype_, dtype_code_, x.dtype(), [&](const std::string& m) { ctx.fail(m); });
    Tensor& y = ctx.allocate_output(0, dtype, x.sizes(), KernelContext::Fill::kZeros);
    int64_t rows = x.sizes()[0], columns = x.sizes()[1];
    dispatch_dtype(dtype, [&]<typename T>() {
      T* out = y.data<T>();
      T one;
      if constexpr (std::is_same_v<T, bool>) {
        one = true;
      } else {
        one = store<T>(ComputeType<T>(1));
      }
      // Row r's one sits at column r + k, when that column exists.
      for (int64_t r = 0; r < rows; ++r) {
        int64_t c = r + k_;
        if (c >= 0 && c < columns) out[r * columns + c] = one;
      }
    });
  }

 private:
  bool has_dtype_;
  int64_t dtype_code_;
  int64_t k_;
};

}  // namespace

void register_eye_like_schema(OpRegistry& registry) {
  OpSchema eye_like("EyeLike");
  eye_like.input("input", "T1").output("output", "T2")
      .type_constraint("T1", kAnyDTypes).type_constraint("T2", kAnyDTypes)
      .attr("dtype", AttrType::kInt)
      .attr("k", AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        if (x->shape.has_rank() && x->shape.rank() != 2) ctx.fail("input " + x->shape.to_string() + " must be 2-D");
        DType dtype = output_dtype(ctx.has_attr("dtype"), ctx.has_attr("dtype") ? ctx.attr_int("dtype") : 0, x->dtype,
                                   [&](const std::string& m) { ctx.fail(m); });
        ctx.set_output_type(0, {dtype, x->shape.has_rank() ? x->shape : Shape{symbolic_dim(ctx, 0), symbolic_dim(ctx, 1)}});
      })
      // Only the input's shape is read: no gradient flows to it.
      .gradient([](GradientContext&) {})
      .doc("ones on diagonal k (column - row == k) of a matrix of the input's shape, zeros elsewhere; "
           "dtype from the attribute, else the input's");
  registry.add(std::move(eye_like));
}

void register_eye_like_cpu_kernel(KernelRegistry& registry) {
  registry.add("EyeLike", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<EyeLikeKernel>(node); });
}

}  // namespace weir
