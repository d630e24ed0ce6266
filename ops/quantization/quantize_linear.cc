#include "ops/quantization/quantize_linear.h"

#include <algorithm>
#include <type_traits>

#include "core/graph.h"
#include "ops/node_attributes.h"
#include "ops/quantization/quantization_common.h"
#include "ops/quantization/quantize_loops.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {


// How a per-tensor or per-axis scale lies over x: x is [outer, channels,
// inner] and channel c takes scale c (per tensor: one channel).
struct AxisLayout {
  int64_t outer = 1, channels = 1, inner = 1;
};

// Checks scale and zero point against x (`scale_name`, `zero_name` name them)
// and returns the layout. A scale of one element is per tensor whatever its
// rank (ONNX broadcasts a [1] scale); any other is 1-D along `axis`.
AxisLayout axis_layout(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                       int64_t axis, const std::string& scale_name, const std::string& zero_name) {
  if (scale.rank() > 1) ctx.fail(scale_name + " " + scale.type_string() + " must be a scalar or 1-D");
  if (zero_point != nullptr && (zero_point->rank() > 1 || zero_point->num_elements() != scale.num_elements())) {
    ctx.fail(zero_name + " " + zero_point->type_string() + " must have the shape of " + scale_name + " " +
             scale.type_string());
  }
  AxisLayout layout;
  if (scale.num_elements() == 1) {
    layout.inner = x.num_elements();
    return layout;
  }
  int64_t rank = x.rank();
  if (axis < -rank || axis >= rank) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range for x " + x.type_string() + " with a per-axis " +
             scale_name + " " + scale.type_string());
  }
  auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  if (x.sizes()[a] != scale.num_elements()) {
    ctx.fail(scale_name + " " + scale.type_string() + " must have one value per element of axis " + std::to_string(a) +
             " of x " + x.type_string());
  }
  for (size_t i = 0; i < a; ++i) layout.outer *= x.sizes()[i];
  layout.channels = x.sizes()[a];
  for (size_t i = a + 1; i < x.sizes().size(); ++i) layout.inner *= x.sizes()[i];
  return layout;
}

// Runs fn(channel, begin, count) over x's rows of one channel, in parallel;
// per tensor, over ranges of the whole.
template <typename Fn>
void for_each_row(const AxisLayout& layout, Fn&& fn) {
  if (layout.channels == 1) {
    parallel_for(layout.outer * layout.inner, kElementwiseGrain,
                 [&](int64_t begin, int64_t end) { fn(int64_t{0}, begin, end - begin); });
    return;
  }
  int64_t rows = layout.outer * layout.channels;
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(layout.inner, 1));
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) fn(row % layout.channels, row * layout.inner, layout.inner);
  });
}

class QuantizeLinearKernel final : public OpKernel {
 public:
  explicit QuantizeLinearKernel(const Node& node) : axis_(int_attr(node, "axis", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor* zero = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    DType out_dtype = zero != nullptr ? zero->dtype() : DType::kUInt8;
    if (!is_quantized_dtype(out_dtype)) ctx.fail("y_zero_point " + zero->type_string() + " must be i8 or u8");
    if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kInt32)
      ctx.fail("x " + x.type_string() + " must be f32 or i32");
    AxisLayout layout = axis_layout(ctx, x, scale, zero, axis_, "y_scale", "y_zero_point");
    std::vector<float> scales = scale_values(ctx, scale, "y_scale");
    std::vector<int32_t> zeros = zero != nullptr ? zero_point_values(ctx, *zero, out_dtype, "y_zero_point")
                                                 : std::vector<int32_t>(scales.size(), 0);
    Tensor& y = ctx.allocate_output(0, out_dtype, x.sizes(), KernelContext::Fill::kUninitialized);
    auto run = [&]<typename Q, typename X>() {
      const X* in = x.data<X>();
      Q* out = y.data<Q>();
      for_each_row(layout, [&](int64_t channel, int64_t begin, int64_t count) {
        auto c = static_cast<size_t>(channel);
        if constexpr (std::is_same_v<X, float>) {
          // x / scale in f32, as ONNX's definition and ONNX Runtime compute it.
          quantize_f32(in + begin, count, scales[c], zeros[c], out + begin);
        } else {
          // An i32 over a scale in f64: exact enough to round once.
          const double s = scales[c];
          for (int64_t i = begin; i < begin + count; ++i) {
            out[i] = saturate_round<Q>(static_cast<double>(in[i]) / s, zeros[c]);
          }
        }
      });
    };
    bool to_i8 = out_dtype == DType::kInt8;
    if (x.dtype() == DType::kFloat32) {
      to_i8 ? run.template operator()<int8_t, float>() : run.template operator()<uint8_t, float>();
    } else {
      to_i8 ? run.template operator()<int8_t, int32_t>() : run.template operator()<uint8_t, int32_t>();
    }
  }

 private:
  int64_t axis_;
};

class DequantizeLinearKernel final : public OpKernel {
 public:
  explicit DequantizeLinearKernel(const Node& node) : axis_(int_attr(node, "axis", 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor* zero = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (!is_quantized_dtype(x.dtype()) && x.dtype() != DType::kInt32)
      ctx.fail("x " + x.type_string() + " must be i8, u8 or i32");
    AxisLayout layout = axis_layout(ctx, x, scale, zero, axis_, "x_scale", "x_zero_point");
    std::vector<float> scales = scale_values(ctx, scale, "x_scale");
    std::vector<int32_t> zeros = zero != nullptr ? zero_point_values(ctx, *zero, x.dtype(), "x_zero_point")
                                                 : std::vector<int32_t>(scales.size(), 0);
    if (x.dtype() == DType::kInt32 && std::any_of(zeros.begin(), zeros.end(), [](int32_t z) { return z != 0; })) {
      ctx.fail("an i32 x takes no zero point but 0; x_zero_point is " + zero->type_string());
    }
    Tensor& y = ctx.allocate_output(0, DType::kFloat32, x.sizes(), KernelContext::Fill::kUninitialized);
    float* out = y.data<float>();
    auto run = [&]<typename X>() {
      const X* in = x.data<X>();
      for_each_row(layout, [&](int64_t channel, int64_t begin, int64_t count) {
        auto c = static_cast<size_t>(channel);
        const float s = scales[c];
        if constexpr (std::is_same_v<X, int32_t>) {
          for (int64_t i = begin; i < begin + count; ++i) out[i] = static_cast<float>(in[i]) * s;  // zero point 0
        } else {
          dequantize_to_f32(in + begin, count, s, zeros[c], out + begin);
        }
      });
    };
    switch (x.dtype()) {
      case DType::kInt8:
        run.template operator()<int8_t>();
        break;
      case DType::kUInt8:
        run.template operator()<uint8_t>();
        break;
      default:
        run.template operator()<int32_t>();
        break;
    }
  }

 private:
  int64_t axis_;
};

class DynamicQuantizeLinearKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat32) ctx.fail("x " + x.type_string() + " must be f32");
    const float* in = x.data<float>();
    const int64_t count = x.num_elements();
    // The range of x, widened to include 0 (NaN is skipped).
    float low = 0.0f, high = 0.0f;
    for (int64_t i = 0; i < count; ++i) {
      low = in[i] < low ? in[i] : low;
      high = in[i] > high ? in[i] : high;
    }
    // As ONNX defines them, in f32: scale = (max - min) / (qmax - qmin),
    // zero point = saturate(round(qmin - min / scale)). All of x zero gives
    // scale 0; the zero point is then 0 and y all zeros.
    const float scale = (high - low) / 255.0f;
    int32_t zero = 0;
    if (scale != 0.0f) zero = saturate_round<uint8_t>(std::clamp(0.0f - low / scale, 0.0f, 255.0f), 0);
    Tensor& y = ctx.allocate_output(0, DType::kUInt8, x.sizes(), KernelContext::Fill::kUninitialized);
    uint8_t* out = y.data<uint8_t>();
    parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      if (scale == 0.0f) {
        std::fill(out + begin, out + end, uint8_t{0});
        return;
      }
      for (int64_t i = begin; i < end; ++i) out[i] = saturate_round<uint8_t>(in[i] / scale, zero);
    });
    ctx.allocate_output(1, DType::kFloat32, {}, KernelContext::Fill::kUninitialized).data<float>()[0] = scale;
    ctx.allocate_output(2, DType::kUInt8, {}, KernelContext::Fill::kUninitialized).data<uint8_t>()[0] =
        static_cast<uint8_t>(zero);
  }
};

// Inference's checks of a scale (input `scale_index`) and its zero point
// (`zero_index`, when present) that static shapes allow: one value, or a 1-D
// scale with one value per element of x's `axis`.
void check_static_scale(InferenceContext& ctx, size_t scale_index, size_t zero_index, const char* scale_name,
                        const char* zero_name) {
  const TensorType* x = ctx.input_type(0);
  const TensorType* scale = ctx.input_type(scale_index);
  const TensorType* zero = ctx.input_type(zero_index);
  if (scale == nullptr || !scale->shape.has_rank()) return;
  if (scale->shape.rank() > 1)
    ctx.fail(std::string(scale_name) + " " + scale->shape.to_string() + " must be a scalar or 1-D");
  if (zero != nullptr && zero->shape.has_rank() && scale->shape.is_static() && zero->shape.is_static() &&
      (zero->shape.rank() > 1 || zero->shape.num_elements() != scale->shape.num_elements())) {
    ctx.fail(std::string(zero_name) + " " + zero->shape.to_string() + " must have the shape of " + scale_name + " " +
             scale->shape.to_string());
  }
  if (x == nullptr || !x->shape.has_rank() || !scale->shape.is_static() || scale->shape.num_elements() == 1) return;
  int64_t rank = x->shape.rank();
  int64_t axis = ctx.attr_int("axis");
  if (axis < -rank || axis >= rank) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range for x " + x->shape.to_string() + " with a per-axis " +
             scale_name + " " + scale->shape.to_string());
  }
  const Dim& along = x->shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  if (along.is_static() && along.size() != scale->shape.num_elements()) {
    ctx.fail(std::string(scale_name) + " " + scale->shape.to_string() + " must have one value per element of axis " +
             std::to_string(axis) + " of x " + x->shape.to_string());
  }
}

}  // namespace

void register_quantize_linear_schemas(OpRegistry& registry) {
  OpSchema quantize("QuantizeLinear");
  quantize.input("x", "T1")
      .input("y_scale", "F")
      .input("y_zero_point", "T2", Arity::kOptional)
      .output("y", "T2")
      .type_constraint("T1", {DType::kFloat32, DType::kInt32})
      .type_constraint("F", {DType::kFloat32})
      .type_constraint("T2", kQuantizedDTypes)
      .attr("axis", AttrType::kInt, Attribute(int64_t{1}))
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        check_static_scale(ctx, 1, 2, "y_scale", "y_zero_point");
        const TensorType* zero = ctx.input_type(2);
        ctx.set_output_type(0, {zero != nullptr ? zero->dtype : DType::kUInt8, x->shape});
      })
      .doc(
          "saturate(round(x / y_scale) + y_zero_point), halves to even, in y_zero_point's type (u8 without one); "
          "scale and zero point per tensor or 1-D along axis");
  registry.add(std::move(quantize));

  OpSchema dequantize("DequantizeLinear");
  dequantize.input("x", "T")
      .input("x_scale", "F")
      .input("x_zero_point", "T", Arity::kOptional)
      .output("y", "F")
      .type_constraint("T", {DType::kInt8, DType::kUInt8, DType::kInt32})
      .type_constraint("F", {DType::kFloat32})
      .attr("axis", AttrType::kInt, Attribute(int64_t{1}))
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        check_static_scale(ctx, 1, 2, "x_scale", "x_zero_point");
        ctx.set_output_type(0, {DType::kFloat32, x->shape});
      })
      .doc(
          "(x - x_zero_point) * x_scale in f32; scale and zero point per tensor or 1-D along axis; an i32 x has "
          "zero point 0");
  registry.add(std::move(dequantize));

  OpSchema dynamic("DynamicQuantizeLinear");
  dynamic.input("x", "T1")
      .output("y", "T2")
      .output("y_scale", "F")
      .output("y_zero_point", "T2")
      .type_constraint("T1", {DType::kFloat32})
      .type_constraint("F", {DType::kFloat32})
      .type_constraint("T2", {DType::kUInt8})
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        ctx.set_output_type(0, {DType::kUInt8, x->shape});
        ctx.set_output_type(1, {DType::kFloat32, Shape{}});
        ctx.set_output_type(2, {DType::kUInt8, Shape{}});
      })
      .doc(
          "u8 quantization of x over its range widened to include 0: y_scale = (max - min) / 255, y_zero_point = "
          "saturate(round(-min / y_scale)), y = saturate(round(x / y_scale) + y_zero_point)");
  registry.add(std::move(dynamic));
}

void register_quantize_linear_cpu_kernels(KernelRegistry& registry) {
  registry.add("QuantizeLinear", DeviceType::kCpu, {DType::kFloat32, DType::kInt32},
               [](const Node& node) { return std::make_unique<QuantizeLinearKernel>(node); });
  registry.add("DequantizeLinear", DeviceType::kCpu, {DType::kInt8, DType::kUInt8, DType::kInt32},
               [](const Node& node) { return std::make_unique<DequantizeLinearKernel>(node); });
  registry.add("DynamicQuantizeLinear", DeviceType::kCpu, {DType::kFloat32},
               [](const Node&) { return std::make_unique<DynamicQuantizeLinearKernel>(); });
}

}  // namespace weir
