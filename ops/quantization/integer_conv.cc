#include "ops/quantization/integer_conv.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/graph.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/conv_problem.h"
#include "ops/quantization/dnnl_int8_conv.h"
#include "ops/quantization/quantization_common.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {


// Calls fn.template operator()<Q>() with Q the C++ type of an i8 or u8 tensor.
template <typename Fn>
void dispatch_quantized(DType dtype, Fn&& fn) {
  if (dtype == DType::kInt8) {
    fn.template operator()<int8_t>();
  } else {
    fn.template operator()<uint8_t>();
  }
}

// The i32 convolution of x and w centered on their zero points (x_zero one
// value, w_zeros one or one per output channel), [N, M, out...] into `out`.
// Per batch item: the patches of x as a [C * kernel, out] matrix (im2col,
// zero where the window leaves x), then one integer product per group.
void integer_conv(const ConvProblem& p, const Tensor& x, const Tensor& w, int32_t x_zero,
                  const std::vector<int32_t>& w_zeros, int32_t* out) {
  const int64_t in_group = p.in_channels / p.group, out_group = p.out_channels / p.group;
  const int64_t taps = p.kernel_volume(), depth = in_group * taps, plane = p.out_plane(), in_plane = p.in_plane();
  std::vector<int16_t> w16(static_cast<size_t>(p.out_channels * depth));
  dispatch_quantized(w.dtype(), [&]<typename Q>() {
    for (int64_t m = 0; m < p.out_channels; ++m) {
      const int64_t index = w_zeros.size() == 1 ? 0 : m;
      subtract_zero_points(
          w.data<Q>() + m * depth, depth, w_zeros, [index](int64_t) { return index; }, w16.data() + m * depth);
    }
  });
  std::vector<int16_t> columns(static_cast<size_t>(p.in_channels * taps * plane));
  for (int64_t n = 0; n < p.batch; ++n) {
    dispatch_quantized(x.dtype(), [&]<typename Q>() {
      const Q* image = x.data<Q>() + n * p.in_channels * in_plane;
      int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(plane, 1));
      parallel_for(p.in_channels * taps, grain, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          int64_t c = row / taps, tap = row % taps;
          int64_t k0 = tap / (p.kernel[1] * p.kernel[2]), k1 = tap / p.kernel[2] % p.kernel[1], k2 = tap % p.kernel[2];
          const Q* channel = image + c * in_plane;
          int16_t* column = columns.data() + row * plane;
          for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
            int64_t i0 = o0 * p.strides[0] - p.pads_begin[0] + k0 * p.dilations[0];
            for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
              int64_t i1 = o1 * p.strides[1] - p.pads_begin[1] + k1 * p.dilations[1];
              int16_t* line = column + (o0 * p.out[1] + o1) * p.out[2];
              if (i0 < 0 || i0 >= p.in[0] || i1 < 0 || i1 >= p.in[1]) {
                std::fill(line, line + p.out[2], int16_t{0});
                continue;
              }
              const Q* source = channel + (i0 * p.in[1] + i1) * p.in[2];
              for (int64_t o2 = 0; o2 < p.out[2]; ++o2) {
                int64_t i2 = o2 * p.strides[2] - p.pads_begin[2] + k2 * p.dilations[2];
                line[o2] = i2 < 0 || i2 >= p.in[2] ? int16_t{0}
                                                   : static_cast<int16_t>(static_cast<int32_t>(source[i2]) - x_zero);
              }
            }
          }
        }
      });
    });
    std::vector<IntGemmItem> items;
    for (int64_t g = 0; g < p.group; ++g) {
      items.push_back({w16.data() + g * out_group * depth, columns.data() + g * depth * plane,
                       out + (n * p.out_channels + g * out_group) * plane});
    }
    int_gemm(out_group, plane, depth, items);
  }
}

ConvProblem integer_conv_problem(const KernelContext& ctx, const Tensor& x, const Tensor& w) {
  if (!is_quantized_dtype(x.dtype()) || !is_quantized_dtype(w.dtype())) {
    ctx.fail("x and w must be i8 or u8, got " + x.type_string() + " and " + w.type_string());
  }
  return conv_problem(ctx.node(), ConvKind::kForward, x.sizes(), w.sizes());
}

// w's zero points (or scales): one value, or one per output channel.
void check_per_channel(const KernelContext& ctx, const Tensor& t, int64_t channels, const std::string& name) {
  if (t.num_elements() != 1 && (t.rank() != 1 || t.num_elements() != channels)) {
    ctx.fail(name + " " + t.type_string() + " must be one value or one per output channel (" +
             std::to_string(channels) + ")");
  }
}

void check_one_value(const KernelContext& ctx, const Tensor& t, const std::string& name) {
  if (t.num_elements() != 1) ctx.fail(name + " " + t.type_string() + " must be one value");
}

class ConvIntegerKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    ConvProblem p = integer_conv_problem(ctx, x, w);
    int32_t x_zero = 0;
    if (ctx.has_input(2)) {
      check_one_value(ctx, ctx.input(2), "x_zero_point");
      x_zero = zero_point_values(ctx, ctx.input(2), x.dtype(), "x_zero_point")[0];
    }
    std::vector<int32_t> w_zeros{0};
    if (ctx.has_input(3)) {
      check_per_channel(ctx, ctx.input(3), p.out_channels, "w_zero_point");
      w_zeros = zero_point_values(ctx, ctx.input(3), w.dtype(), "w_zero_point");
    }
    Tensor& y = ctx.allocate_output(0, DType::kInt32, p.out_sizes(), KernelContext::Fill::kUninitialized);
    integer_conv(p, x, w, x_zero, w_zeros, y.data<int32_t>());
  }
};

// QLinearConv, and FusedQLinearConv (the same with a Relu, on channels-first
// or channels-last data). oneDNN runs what it can (see DnnlInt8Conv); the
// int32 loops run the rest, and everything when quantized_reference_forced().
class QLinearConvKernel final : public OpKernel {
 public:
  QLinearConvKernel(const Node& node, bool fused) {
    constant_weights_ = node.num_inputs() > 3 && node.input(3) != nullptr && node.input(3)->is_constant();
    if (fused) {
      std::string activation = node.has_attr("activation") ? node.attr("activation").s() : "None";
      if (activation != "None" && activation != "Relu") {
        throw Error(ErrorKind::kInvalidArgument, "FusedQLinearConv '" + node.name() + "': activation '" + activation +
                                                     "' is not None or Relu");
      }
      relu_ = activation == "Relu";
      channels_last_ = conv_layout_is_channels_last(node);
    }
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(3);
    ConvProblem p = channels_last_ ? problem_channels_last(ctx, x, w) : integer_conv_problem(ctx, x, w);
    check_one_value(ctx, ctx.input(1), "x_scale");
    check_one_value(ctx, ctx.input(2), "x_zero_point");
    check_per_channel(ctx, ctx.input(4), p.out_channels, "w_scale");
    check_per_channel(ctx, ctx.input(5), p.out_channels, "w_zero_point");
    if (ctx.input(4).num_elements() != ctx.input(5).num_elements()) {
      ctx.fail("w_zero_point " + ctx.input(5).type_string() + " must have the shape of w_scale " +
               ctx.input(4).type_string());
    }
    check_one_value(ctx, ctx.input(6), "y_scale");
    check_one_value(ctx, ctx.input(7), "y_zero_point");
    const Tensor& y_zero = ctx.input(7);
    if (!is_quantized_dtype(y_zero.dtype())) ctx.fail("y_zero_point " + y_zero.type_string() + " must be i8 or u8");
    const float x_scale = scale_values(ctx, ctx.input(1), "x_scale")[0];
    const int32_t x_zero = zero_point_values(ctx, ctx.input(2), x.dtype(), "x_zero_point")[0];
    const std::vector<float> w_scales = scale_values(ctx, ctx.input(4), "w_scale");
    const std::vector<int32_t> w_zeros = zero_point_values(ctx, ctx.input(5), w.dtype(), "w_zero_point");
    const float y_scale = scale_values(ctx, ctx.input(6), "y_scale")[0];
    const int32_t out_zero = zero_point_values(ctx, y_zero, y_zero.dtype(), "y_zero_point")[0];
    const Tensor* bias_tensor = nullptr;
    if (ctx.has_input(8)) {
      bias_tensor = &ctx.input(8);
      const Tensor& b = *bias_tensor;
      if (b.dtype() != DType::kInt32 || b.rank() != 1 || b.num_elements() != p.out_channels) {
        ctx.fail("B " + b.type_string() + " must be i32 with one value per output channel (" +
                 std::to_string(p.out_channels) + ")");
      }
    }
    // As the reference computes them: (x_scale * w_scale) / y_scale in f32.
    std::vector<float> multipliers(w_scales.size());
    for (size_t m = 0; m < multipliers.size(); ++m) multipliers[m] = x_scale * w_scales[m] / y_scale;
    std::vector<int64_t> y_sizes = channels_last_ ? channels_last_order(p.out_sizes()) : p.out_sizes();
    const Addend addend = addend_of(ctx, y_sizes, y_zero.dtype(), y_scale);
    Tensor& y = ctx.allocate_output(0, y_zero.dtype(), y_sizes, KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;

    bool weights_centered = std::all_of(w_zeros.begin(), w_zeros.end(), [](int32_t z) { return z == 0; });
    if (!quantized_reference_forced() && w.dtype() == DType::kInt8 && weights_centered && x.num_elements() > 0) {
      Int8ConvSetup setup{x.dtype(), y_zero.dtype(), multipliers, relu_, bias_tensor != nullptr, channels_last_,
                          x_zero != 0, out_zero != 0};
      if (addend.values != nullptr) {
        setup.sum = true;
        setup.sum_scale = addend.multiplier;
        setup.sum_zero = addend.zero;
        // The sum post-op adds onto y: unless the planner put y over Z, Z goes there first.
        if (y.raw_data() != addend.values->raw_data()) std::memcpy(y.raw_data(), addend.values->raw_data(), y.nbytes());
      }
      Int8ConvRun run{x.raw_data(), x_zero, w.data<int8_t>(),
                      bias_tensor != nullptr ? bias_tensor->data<int32_t>() : nullptr, out_zero, y.raw_data()};
      if (dnnl_.forward(p, setup, run, constant_weights_)) return;
    }
    if (channels_last_) {
      // The loops read channels-first: move the channel axis around them.
      Tensor x_first = to_channel_order(x, /*last=*/false);
      Tensor y_first = Tensor::uninitialized(y.dtype(), p.out_sizes());
      Addend addend_first = addend;
      Tensor z_first;
      if (addend.values != nullptr) {
        z_first = to_channel_order(*addend.values, /*last=*/false);
        addend_first.values = &z_first;
      }
      reference(ctx, p, x_first, w, x_zero, w_zeros, bias_tensor, multipliers, out_zero, addend_first, y_first);
      Tensor moved = to_channel_order(y_first, /*last=*/true);
      std::memcpy(y.raw_data(), moved.raw_data(), moved.nbytes());
      return;
    }
    reference(ctx, p, x, w, x_zero, w_zeros, bias_tensor, multipliers, out_zero, addend, y);
  }


  std::vector<PackedConstant> packed_constants() const override { return dnnl_.packed_weights(); }
  void adopt_packed_constants(std::vector<PackedConstant> packs) override {
    dnnl_.adopt_packed_weights(std::move(packs));
  }

 private:
  // FusedQLinearConv's residual addend Z (inputs 9 to 11): what it adds to
  // the scaled sum, in output steps, is (z - zero) * multiplier.
  struct Addend {
    const Tensor* values = nullptr;  // null: none
    int32_t zero = 0;
    float multiplier = 0;  // z_scale / y_scale
  };

  Addend addend_of(const KernelContext& ctx, const std::vector<int64_t>& y_sizes, DType y_dtype, float y_scale) const {
    if (!ctx.has_input(9)) return {};
    const Tensor& z = ctx.input(9);
    if (z.dtype() != y_dtype || z.sizes() != y_sizes) {
      ctx.fail("the addend Z " + z.type_string() + " must have y's type and shape, " +
               std::string(dtype_name(y_dtype)) + format_sizes(y_sizes));
    }
    if (!ctx.has_input(10) || !ctx.has_input(11)) ctx.fail("the addend Z needs z_scale and z_zero_point");
    check_one_value(ctx, ctx.input(10), "z_scale");
    check_one_value(ctx, ctx.input(11), "z_zero_point");
    Addend a;
    a.values = &z;
    a.zero = zero_point_values(ctx, ctx.input(11), z.dtype(), "z_zero_point")[0];
    a.multiplier = scale_values(ctx, ctx.input(10), "z_scale")[0] / y_scale;
    return a;
  }

  ConvProblem problem_channels_last(const KernelContext& ctx, const Tensor& x, const Tensor& w) const {
    if (!is_quantized_dtype(x.dtype()) || !is_quantized_dtype(w.dtype())) {
      ctx.fail("x and w must be i8 or u8, got " + x.type_string() + " and " + w.type_string());
    }
    return conv_problem(ctx.node(), ConvKind::kForward, channels_first_order(x.sizes()), w.sizes());
  }

  // `t` (i8 or u8, rank >= 3) with its channel axis moved to the end (last)
  // or from the end to position 1.
  static Tensor to_channel_order(const Tensor& t, bool last) {
    std::vector<int64_t> sizes = t.sizes();
    std::vector<int64_t> out_sizes = last ? channels_last_order(sizes) : channels_first_order(sizes);
    Tensor out = Tensor::uninitialized(t.dtype(), out_sizes);
    const int64_t n = sizes[0];
    const int64_t channels = last ? sizes[1] : sizes.back();
    const int64_t plane = n == 0 || channels == 0 ? 0 : t.num_elements() / (n * channels);
    const auto* in = static_cast<const uint8_t*>(t.raw_data());
    auto* o = static_cast<uint8_t*>(out.raw_data());
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t i = 0; i < plane; ++i) {
          int64_t first = (b * channels + c) * plane + i, last_index = (b * plane + i) * channels + c;
          if (last) {
            o[last_index] = in[first];
          } else {
            o[first] = in[last_index];
          }
        }
      }
    }
    return out;
  }

  // The int32 loops: the reference, and the fallback for what oneDNN lacks.
  void reference(const KernelContext&, const ConvProblem& p, const Tensor& x, const Tensor& w, int32_t x_zero,
                 const std::vector<int32_t>& w_zeros, const Tensor* bias_tensor, const std::vector<float>& multipliers,
                 int32_t out_zero, const Addend& addend, Tensor& y) const {
    std::vector<int32_t> bias(static_cast<size_t>(p.out_channels), 0);
    if (bias_tensor != nullptr) bias.assign(bias_tensor->data<int32_t>(), bias_tensor->data<int32_t>() + p.out_channels);
    const int64_t plane = p.out_plane();
    std::vector<int32_t> acc(static_cast<size_t>(p.batch * p.out_channels * plane));
    integer_conv(p, x, w, x_zero, w_zeros, acc.data());
    const bool relu = relu_;
    dispatch_quantized(y.dtype(), [&]<typename Q>() {
      Q* out = y.data<Q>();
      // Relu before quantization is a floor at the zero point after it.
      const Q floor = relu ? static_cast<Q>(out_zero) : std::numeric_limits<Q>::min();
      // y may lie over the addend: each element is read before it is written.
      const Q* z = addend.values != nullptr ? addend.values->data<Q>() : nullptr;
      int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(plane, 1));
      parallel_for(p.batch * p.out_channels, grain, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          auto m = static_cast<size_t>(row % p.out_channels);
          const auto b = static_cast<uint32_t>(bias[m]);
          const float multiplier = multipliers[multipliers.size() == 1 ? 0 : m];
          for (int64_t i = row * plane; i < (row + 1) * plane; ++i) {
            // The bias joins the sum in 32 bits, wrapping as the sum does.
            auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc[static_cast<size_t>(i)]) + b);
            if (z != nullptr) {
              // As oneDNN's sum post-op: the scaled sum plus the scaled addend, then the Relu and rounding.
              float value = static_cast<float>(sum) * multiplier +
                            static_cast<float>(static_cast<int32_t>(z[i]) - addend.zero) * addend.multiplier;
              out[i] = std::max(saturate_round<Q>(value, out_zero), floor);
            } else {
              out[i] = std::max(requantize<Q>(sum, multiplier, out_zero), floor);
            }
          }
        }
      });
    });
  }

  bool constant_weights_ = false;
  bool relu_ = false;
  bool channels_last_ = false;
  DnnlInt8Conv dnnl_;
};

// Output shape of a forward convolution of x (channels-first `x_shape`)
// with weight `w_index`: static where x's spatial sizes and w are, else
// fresh symbols.
Shape integer_conv_shape(InferenceContext& ctx, const Shape& x_shape, size_t w_index) {
  const TensorType* w = ctx.input_type(w_index);
  if (!x_shape.has_rank() || !w->shape.has_rank()) return Shape::unknown_rank();
  int64_t rank = x_shape.rank();
  if (rank < 3 || rank > 5 || w->shape.rank() != rank) {
    ctx.fail("x " + x_shape.to_string() + " and w " + w->shape.to_string() +
             " must both be [N, C, spatial...] with 1 to 3 spatial axes");
  }
  std::vector<Dim> dims(static_cast<size_t>(rank));
  dims[0] = x_shape[0];
  for (int64_t i = 1; i < rank; ++i) dims[static_cast<size_t>(i)] = symbolic_dim(ctx, static_cast<size_t>(i));
  if (!w->shape.is_static()) return Shape(std::move(dims));
  std::vector<int64_t> ws = w->shape.sizes();
  dims[1] = Dim(ws[0]);
  int64_t group = ctx.attr_int("group");
  std::vector<int64_t> xs(static_cast<size_t>(rank), 1);
  xs[1] = x_shape[1].is_static() ? x_shape[1].size() : ws[1] * group;
  bool spatial_static = true;
  for (int64_t i = 2; i < rank; ++i) {
    const Dim& d = x_shape[static_cast<size_t>(i)];
    spatial_static = spatial_static && d.is_static();
    xs[static_cast<size_t>(i)] = d.is_static() ? d.size() : ws[static_cast<size_t>(i)];
  }
  ConvProblem p = conv_problem(ctx.node(), ConvKind::kForward, xs, ws);  // checks channels and attributes
  if (spatial_static) {
    for (int64_t i = 2; i < rank; ++i) dims[static_cast<size_t>(i)] = Dim(p.out[static_cast<size_t>(i - 2)]);
  }
  return Shape(std::move(dims));
}

OpSchema& conv_attributes(OpSchema& schema) {
  return schema.attr("auto_pad", AttrType::kString, Attribute("NOTSET"))
      .attr("dilations", AttrType::kInts)
      .attr("group", AttrType::kInt, Attribute(int64_t{1}))
      .attr("kernel_shape", AttrType::kInts)
      .attr("pads", AttrType::kInts)
      .attr("strides", AttrType::kInts);
}

OpSchema qlinear_conv_schema(const char* op_type, bool fused) {
  OpSchema qlinear(op_type);
  qlinear.input("x", "T1")
      .input("x_scale", "F")
      .input("x_zero_point", "T1")
      .input("w", "T2")
      .input("w_scale", "F")
      .input("w_zero_point", "T2")
      .input("y_scale", "F")
      .input("y_zero_point", "T3")
      .input("B", "T4", Arity::kOptional)
      .output("y", "T3")
      .type_constraint("T1", kQuantizedDTypes)
      .type_constraint("T2", kQuantizedDTypes)
      .type_constraint("T3", kQuantizedDTypes)
      .type_constraint("T4", {DType::kInt32})
      .type_constraint("F", {DType::kFloat32});
  conv_attributes(qlinear).infer([fused](InferenceContext& ctx) {
    const TensorType* x = ctx.input_type(0);
    const TensorType* zero = ctx.input_type(7);
    if (x == nullptr || ctx.input_type(3) == nullptr || zero == nullptr) return;
    bool last = fused && conv_layout_is_channels_last(ctx.node());
    Shape y = integer_conv_shape(ctx, last ? channels_first_order(x->shape) : x->shape, 3);
    ctx.set_output_type(0, {zero->dtype, last ? channels_last_order(y) : y});
  });
  if (!fused) {
    qlinear.doc(
        "ConvInteger plus the i32 bias B, requantized per output channel m: saturate(round(acc * x_scale * "
        "w_scale[m] / y_scale) + y_zero_point), halves to even");
    return qlinear;
  }
  qlinear.input("Z", "T3", Arity::kOptional)
      .input("z_scale", "F", Arity::kOptional)
      .input("z_zero_point", "T3", Arity::kOptional)
      .inplace_input(9)  // the sum post-op adds onto Z where it lies
      .attr("activation", AttrType::kString, Attribute("None"))
      .attr("layout", AttrType::kString, Attribute("NCHW"))
      .doc(
          "QLinearConv, then (activation Relu) at least y_zero_point, as Relu before QuantizeLinear gives; layout "
          "NCHW or NHWC (channels last: x [N, spatial..., C], y [N, spatial..., M]); with a residual Z shaped "
          "like y: saturate(round(activation((acc + B) * x_scale * w_scale[m] + (Z - z_zero_point) * z_scale) / "
          "y_scale) + y_zero_point), written over Z where the planner allows");
  return qlinear;
}

}  // namespace

void register_integer_conv_schemas(OpRegistry& registry) {
  OpSchema integer("ConvInteger");
  integer.input("x", "T1")
      .input("w", "T2")
      .input("x_zero_point", "T1", Arity::kOptional)
      .input("w_zero_point", "T2", Arity::kOptional)
      .output("y", "T3")
      .type_constraint("T1", kQuantizedDTypes)
      .type_constraint("T2", kQuantizedDTypes)
      .type_constraint("T3", {DType::kInt32});
  conv_attributes(integer)
      .infer([](InferenceContext& ctx) {
        if (ctx.input_type(0) == nullptr || ctx.input_type(1) == nullptr) return;
        ctx.set_output_type(0, {DType::kInt32, integer_conv_shape(ctx, ctx.input_type(0)->shape, 1)});
      })
      .doc(
          "Conv of (x - x_zero_point) with (w - w_zero_point) in i32; w's zero point per tensor or per output channel");
  registry.add(std::move(integer));

  registry.add(qlinear_conv_schema("QLinearConv", /*fused=*/false));
  // What qdq_fusion makes of DequantizeLinear -> Conv -> Relu ->
  // QuantizeLinear: QLinearConv with the Relu (as a floor at y_zero_point,
  // which is what Relu before QuantizeLinear is), on channels-first or
  // channels-last data. Inference only.
  registry.add(qlinear_conv_schema("FusedQLinearConv", /*fused=*/true));
}

void register_integer_conv_cpu_kernels(KernelRegistry& registry) {
  registry.add("ConvInteger", DeviceType::kCpu, kQuantizedDTypes,
               [](const Node&) { return std::make_unique<ConvIntegerKernel>(); });
  registry.add("QLinearConv", DeviceType::kCpu, kQuantizedDTypes,
               [](const Node& node) { return std::make_unique<QLinearConvKernel>(node, /*fused=*/false); });
  registry.add("FusedQLinearConv", DeviceType::kCpu, kQuantizedDTypes,
               [](const Node& node) { return std::make_unique<QLinearConvKernel>(node, /*fused=*/true); });
}

}  // namespace weir
