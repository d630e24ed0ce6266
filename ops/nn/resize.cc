#include "ops/nn/resize.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

enum class Interpolation { kNearest, kLinear, kCubic };
enum class Transform { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn, kTfCropAndResize };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

std::string string_attr(const Node& node, const char* name, const char* fallback) {
  return node.has_attr(name) ? node.attr(name).s() : fallback;
}

// The attributes of a Resize node, parsed and checked once.
struct ResizeAttributes {
  Interpolation interpolation = Interpolation::kNearest;
  Transform transform = Transform::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;

  // Throws weir::Error naming the node on an unknown mode.
  static ResizeAttributes of(const Node& node) {
    ResizeAttributes result;
    auto bad = [&](const char* what, const std::string& value, const char* allowed) {
      return Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': " + what + " '" + value +
                                                    "' is not one of " + allowed).with_node(node.name());
    };
    std::string mode = string_attr(node, "mode", "nearest");
    if (mode == "nearest") result.interpolation = Interpolation::kNearest;
    else if (mode == "linear") result.interpolation = Interpolation::kLinear;
    else if (mode == "cubic") result.interpolation = Interpolation::kCubic;
    else throw bad("mode", mode, "nearest, linear, cubic");
    std::string transform = string_attr(node, "coordinate_transformation_mode", "half_pixel");
    if (transform == "half_pixel") result.transform = Transform::kHalfPixel;
    else if (transform == "pytorch_half_pixel") result.transform = Transform::kPytorchHalfPixel;
    else if (transform == "align_corners") result.transform = Transform::kAlignCorners;
    else if (transform == "asymmetric") result.transform = Transform::kAsymmetric;
    else if (transform == "tf_half_pixel_for_nn") result.transform = Transform::kTfHalfPixelForNn;
    else if (transform == "tf_crop_and_resize") result.transform = Transform::kTfCropAndResize;
    else throw bad("coordinate_transformation_mode", transform,
                   "half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize");
    std::string nearest = string_attr(node, "nearest_mode", "round_prefer_floor");
    if (nearest == "round_prefer_floor") result.nearest = NearestMode::kRoundPreferFloor;
    else if (nearest == "round_prefer_ceil") result.nearest = NearestMode::kRoundPreferCeil;
    else if (nearest == "floor") result.nearest = NearestMode::kFloor;
    else if (nearest == "ceil") result.nearest = NearestMode::kCeil;
    else throw bad("nearest_mode", nearest, "round_prefer_floor, round_prefer_ceil, floor, ceil");
    if (node.has_attr("cubic_coeff_a")) result.cubic_a = node.attr("cubic_coeff_a").f();
    if (node.has_attr("exclude_outside")) result.exclude_outside = node.attr("exclude_outside").i() != 0;
    if (node.has_attr("extrapolation_value")) result.extrapolation_value = node.attr("extrapolation_value").f();
    return result;
  }
};

// How one axis is resized: output coordinate x reads taps x*n .. x*n+n-1
// (input index, weight), or the extrapolation value when `outside[x]`.
struct AxisResize {
  int64_t in = 0, out = 0, taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;

  bool is_identity() const {
    if (in != out) return false;
    for (int64_t x = 0; x < out; ++x) {
      if (outside[static_cast<size_t>(x)]) return false;
      for (int64_t t = 0; t < taps; ++t) {
        auto k = static_cast<size_t>(x * taps + t);
        if (weight[k] != (index[k] == x ? 1.0 : 0.0)) return false;
      }
    }
    return true;
  }
};

// The ONNX reference's cubic convolution weights for taps at -1, 0, 1, 2
// around the fraction `r`.
std::array<double, 4> cubic_weights(double r, double a) {
  double s = 1 - r;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

// `scale` is the effective scale (out / in when sizes were given); the
// reference measures the output length as scale * in, not the rounded size.
AxisResize plan_axis(const ResizeAttributes& attrs, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  AxisResize axis;
  axis.in = in;
  axis.out = out;
  axis.taps = attrs.interpolation == Interpolation::kCubic ? 4 : attrs.interpolation == Interpolation::kLinear ? 2 : 1;
  axis.index.resize(static_cast<size_t>(out * axis.taps));
  axis.weight.resize(axis.index.size());
  axis.outside.assign(static_cast<size_t>(out), false);
  const double length = scale * static_cast<double>(in);
  const auto last = static_cast<double>(in - 1);
  for (int64_t x = 0; x < out; ++x) {
    auto xd = static_cast<double>(x);
    double source = 0;
    switch (attrs.transform) {
      case Transform::kHalfPixel: source = (xd + 0.5) / scale - 0.5; break;
      case Transform::kPytorchHalfPixel: source = length == 1 ? -0.5 : (xd + 0.5) / scale - 0.5; break;
      case Transform::kAlignCorners: source = length == 1 ? 0 : xd * last / (length - 1); break;
      case Transform::kAsymmetric: source = xd / scale; break;
      case Transform::kTfHalfPixelForNn: source = (xd + 0.5) / scale; break;
      case Transform::kTfCropAndResize:
        source = length == 1 ? (roi_end - roi_start) * last / 2 : xd * (roi_end - roi_start) * last / (length - 1);
        source += roi_start * last;
        if (source < 0 || source > last) axis.outside[static_cast<size_t>(x)] = true;
        break;
    }
    // The reference prefers the left neighbour: an integral source is the
    // right tap of the pair (base, base + 1) with fraction 1.
    double floor = std::floor(source);
    auto base = static_cast<int64_t>(floor);
    double fraction = source - floor;
    if (fraction == 0) {
      base -= 1;
      fraction = 1;
    }
    int64_t* index = &axis.index[static_cast<size_t>(x * axis.taps)];
    double* weight = &axis.weight[static_cast<size_t>(x * axis.taps)];
    switch (attrs.interpolation) {
      case Interpolation::kNearest: {
        bool right = fraction == 1;
        if (!right) {
          switch (attrs.nearest) {
            case NearestMode::kRoundPreferFloor: right = fraction > 0.5; break;
            case NearestMode::kRoundPreferCeil: right = fraction >= 0.5; break;
            case NearestMode::kFloor: right = false; break;
            case NearestMode::kCeil: right = true; break;
          }
        }
        index[0] = base + (right ? 1 : 0);
        weight[0] = 1;
        break;
      }
      case Interpolation::kLinear:
        index[0] = base;
        index[1] = base + 1;
        weight[0] = 1 - fraction;
        weight[1] = fraction;
        break;
      case Interpolation::kCubic: {
        std::array<double, 4> w = cubic_weights(fraction, attrs.cubic_a);
        for (int64_t t = 0; t < 4; ++t) {
          index[t] = base - 1 + t;
          weight[t] = w[static_cast<size_t>(t)];
        }
        break;
      }
    }
    if (attrs.exclude_outside && attrs.interpolation != Interpolation::kNearest) {
      double sum = 0;
      for (int64_t t = 0; t < axis.taps; ++t) {
        if (index[t] < 0 || index[t] >= in) weight[t] = 0;
        sum += weight[t];
      }
      if (sum != 0) {
        for (int64_t t = 0; t < axis.taps; ++t) weight[t] /= sum;
      }
    }
    for (int64_t t = 0; t < axis.taps; ++t) index[t] = std::clamp<int64_t>(index[t], 0, in - 1);  // edge
  }
  return axis;
}

// One axis' pass over a [outer, in, inner] buffer to [outer, out, inner]
// (forward), or its transpose from [outer, out, inner] back to [outer, in,
// inner] (backward: each output's gradient spread over its taps).
void resize_pass(const AxisResize& axis, int64_t outer, int64_t inner, const std::vector<double>& src,
                 std::vector<double>& dst, bool backward, double extrapolation) {
  dst.assign(static_cast<size_t>(outer * (backward ? axis.in : axis.out) * inner), 0.0);
  parallel_for(outer, 1, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      for (int64_t x = 0; x < axis.out; ++x) {
        double* out_row = backward ? nullptr : &dst[static_cast<size_t>((o * axis.out + x) * inner)];
        const double* grad_row = backward ? &src[static_cast<size_t>((o * axis.out + x) * inner)] : nullptr;
        if (axis.outside[static_cast<size_t>(x)]) {
          if (!backward) std::fill(out_row, out_row + inner, extrapolation);
          continue;
        }
        for (int64_t t = 0; t < axis.taps; ++t) {
          auto k = static_cast<size_t>(x * axis.taps + t);
          double w = axis.weight[k];
          if (w == 0) continue;
          auto row = static_cast<size_t>((o * axis.in + axis.index[k]) * inner);
          if (backward) {
            double* in_row = &dst[row];
            for (int64_t i = 0; i < inner; ++i) in_row[i] += w * grad_row[i];
          } else {
            const double* in_row = &src[row];
            for (int64_t i = 0; i < inner; ++i) out_row[i] += w * in_row[i];
          }
        }
      }
    }
  });
}

// The float values of an optional float input (roi, scales), or empty.
std::vector<double> float_values(const KernelContext& ctx, size_t index, const char* what) {
  std::vector<double> values;
  if (!ctx.has_input(index)) return values;
  const Tensor& t = ctx.input(index);
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool> || std::is_integral_v<T>) {
      ctx.fail(std::string(what) + " must be floating point, got " + t.type_string());
    } else {
      for (int64_t i = 0; i < t.num_elements(); ++i) values.push_back(static_cast<double>(load(t.data<T>()[i])));
    }
  });
  return values;
}

// Resize(X, roi?, scales?, sizes?) and ResizeGrad(dY, X, roi?, scales?, sizes?).
class ResizeKernel final : public OpKernel {
 public:
  ResizeKernel(const Node& node, bool gradient) : attrs_(ResizeAttributes::of(node)), gradient_(gradient) {}

  void compute(KernelContext& ctx) override {
    size_t first = gradient_ ? 1 : 0;
    const Tensor& x = ctx.input(first);
    const std::vector<int64_t>& in_sizes = x.sizes();
    auto rank = in_sizes.size();
    std::vector<double> roi = float_values(ctx, first + 1, "roi");
    std::vector<double> scales = float_values(ctx, first + 2, "scales");
    std::vector<int64_t> sizes;
    if (ctx.has_input(first + 3)) {
      const Tensor& s = ctx.input(first + 3);
      if (s.dtype() != DType::kInt64) ctx.fail("sizes must be i64, got " + s.type_string());
      sizes.assign(s.data<int64_t>(), s.data<int64_t>() + s.num_elements());
    }
    std::vector<int64_t> out_sizes(rank);
    std::vector<double> effective(rank);
    if (!sizes.empty()) {
      if (sizes.size() != rank) ctx.fail("sizes " + format_sizes(sizes) + " needs one entry per axis of " + x.type_string());
      for (size_t a = 0; a < rank; ++a) {
        if (sizes[a] < 0) ctx.fail("sizes " + format_sizes(sizes) + " has a negative entry");
        out_sizes[a] = sizes[a];
        effective[a] = in_sizes[a] == 0 ? 1.0 : static_cast<double>(sizes[a]) / static_cast<double>(in_sizes[a]);
      }
    } else if (!scales.empty()) {
      if (scales.size() != rank) ctx.fail("scales has " + std::to_string(scales.size()) + " entries for " + x.type_string());
      for (size_t a = 0; a < rank; ++a) {
        if (!(scales[a] > 0) || !std::isfinite(scales[a])) ctx.fail("scale " + std::to_string(scales[a]) + " must be positive");
        double size = std::floor(scales[a] * static_cast<double>(in_sizes[a]));
        if (size > 1e12) ctx.fail("scale " + std::to_string(scales[a]) + " makes axis " + std::to_string(a) + " too large");
        out_sizes[a] = static_cast<int64_t>(size);
        effective[a] = scales[a];
      }
    } else {
      ctx.fail("needs non-empty scales or sizes");
    }
    if (attrs_.transform == Transform::kTfCropAndResize && roi.size() != 2 * rank) {
      ctx.fail("tf_crop_and_resize needs roi with " + std::to_string(2 * rank) + " values, got " + std::to_string(roi.size()));
    }
    for (size_t a = 0; a < rank; ++a) {
      if (in_sizes[a] == 0 && out_sizes[a] > 0) ctx.fail("cannot resize the empty axis " + std::to_string(a) + " of " + x.type_string());
    }
    std::vector<AxisResize> axes;
    for (size_t a = 0; a < rank; ++a) {
      double start = roi.size() == 2 * rank ? roi[a] : 0.0, end = roi.size() == 2 * rank ? roi[a + rank] : 1.0;
      axes.push_back(plan_axis(attrs_, in_sizes[a], out_sizes[a], effective[a], start, end));
    }
    if (!gradient_) {
      run_passes(ctx, x, in_sizes, out_sizes, axes);
    } else {
      const Tensor& dy = ctx.input(0);
      if (dy.sizes() != out_sizes) ctx.fail("dY " + dy.type_string() + " does not match the resized shape " + format_sizes(out_sizes));
      run_passes(ctx, dy, in_sizes, out_sizes, axes);
    }
  }

 private:
  // Forward: axis by axis from X's sizes to the output's. Backward: the
  // transposed passes in reverse, from the output's sizes back to X's.
  void run_passes(KernelContext& ctx, const Tensor& source, const std::vector<int64_t>& in_sizes,
                  const std::vector<int64_t>& out_sizes, const std::vector<AxisResize>& axes) const {
    std::vector<double> current(static_cast<size_t>(source.num_elements())), next;
    dispatch_dtype(source.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        ctx.fail("cannot resize bool");
      } else {
        for (size_t i = 0; i < current.size(); ++i) current[i] = static_cast<double>(load(source.data<T>()[i]));
      }
    });
    std::vector<int64_t> shape = gradient_ ? out_sizes : in_sizes;
    size_t rank = axes.size();
    for (size_t step = 0; step < rank; ++step) {
      size_t a = gradient_ ? rank - 1 - step : step;
      if (axes[a].is_identity()) continue;
      int64_t outer = 1, inner = 1;
      for (size_t b = 0; b < a; ++b) outer *= shape[b];
      for (size_t b = a + 1; b < rank; ++b) inner *= shape[b];
      resize_pass(axes[a], outer, inner, current, next, gradient_, attrs_.extrapolation_value);
      shape[a] = gradient_ ? axes[a].in : axes[a].out;
      current.swap(next);
    }
    Tensor& out = ctx.allocate_output(0, source.dtype(), shape, KernelContext::Fill::kUninitialized);
    dispatch_dtype(source.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        T* data = out.data<T>();
        for (size_t i = 0; i < current.size(); ++i) {
          double value = current[i];
          if constexpr (std::is_integral_v<T>) value = std::nearbyint(value);
          data[i] = store<T>(static_cast<ComputeType<T>>(value));
        }
      }
    });
  }

  ResizeAttributes attrs_;
  bool gradient_;
};

void infer_resize(InferenceContext& ctx) {
  ResizeAttributes::of(ctx.node());  // rejects unknown modes now
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (!x->shape.has_rank()) {
    ctx.set_output_type(0, {x->dtype, Shape::unknown_rank()});
    return;
  }
  auto rank = static_cast<size_t>(x->shape.rank());
  std::vector<Dim> dims(rank);
  for (size_t a = 0; a < rank; ++a) dims[a] = symbolic_dim(ctx, a);
  auto sizes = ctx.num_inputs() > 3 && ctx.input_type(3) != nullptr ? constant_ints(ctx, 3) : std::nullopt;
  const Tensor* scales = ctx.num_inputs() > 2 && ctx.input_type(2) != nullptr ? ctx.input_constant(2) : nullptr;
  if (sizes && !sizes->empty()) {
    if (sizes->size() != rank) ctx.fail("sizes " + format_sizes(*sizes) + " needs one entry per axis of " + x->shape.to_string());
    for (size_t a = 0; a < rank; ++a) dims[a] = Dim((*sizes)[a]);
  } else if (scales != nullptr && scales->num_elements() > 0 && scales->dtype() == DType::kFloat32) {
    if (static_cast<size_t>(scales->num_elements()) != rank) {
      ctx.fail("scales has " + std::to_string(scales->num_elements()) + " entries for " + x->shape.to_string());
    }
    for (size_t a = 0; a < rank; ++a) {
      double scale = scales->data<float>()[a];
      if (x->shape[a].is_static() && scale > 0 && std::isfinite(scale)) {
        double size = std::floor(scale * static_cast<double>(x->shape[a].size()));
        // As the kernel: a size past 10^12 is refused (and would not fit int64 much further on).
        if (size > 1e12) ctx.fail("scale " + std::to_string(scale) + " makes axis " + std::to_string(a) + " too large");
        dims[a] = Dim(static_cast<int64_t>(size));
      }
    }
  }
  ctx.set_output_type(0, {x->dtype, Shape(std::move(dims))});
}


OpSchema with_resize_attributes(OpSchema schema) {
  schema.attr("mode", AttrType::kString, Attribute(std::string("nearest")))
      .attr("coordinate_transformation_mode", AttrType::kString, Attribute(std::string("half_pixel")))
      .attr("nearest_mode", AttrType::kString, Attribute(std::string("round_prefer_floor")))
      .attr("cubic_coeff_a", AttrType::kFloat, Attribute(-0.75))
      .attr("exclude_outside", AttrType::kInt, Attribute(int64_t{0}))
      .attr("extrapolation_value", AttrType::kFloat, Attribute(0.0));
  return schema;
}

}  // namespace

void register_resize_schemas(OpRegistry& registry) {
  OpSchema resize("Resize");
  resize.input("X", "T").input("roi", "F", Arity::kOptional).input("scales", "S", Arity::kOptional)
      .input("sizes", "I", Arity::kOptional).output("Y", "T")
      .type_constraint("T", kNumericDTypes).type_constraint("F", kFloatDTypes).type_constraint("S", {DType::kFloat32})
      .type_constraint("I", {DType::kInt64})
      .infer(infer_resize)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::vector<Value*> inputs = {grad, node.input(0)};
        for (size_t i = 1; i < 4; ++i) inputs.push_back(i < node.num_inputs() ? node.input(i) : nullptr);
        ctx.set_input_grad(0, ctx.emit("ResizeGrad", inputs, 1, node.attributes())[0]);
      })
      .doc("X resized to `sizes` or by `scales` with nearest, linear or cubic interpolation per axis (ONNX "
           "coordinate transformation modes)");
  registry.add(with_resize_attributes(std::move(resize)));

  OpSchema resize_grad("ResizeGrad");
  resize_grad.input("dY", "T").input("X", "T").input("roi", "F", Arity::kOptional).input("scales", "S", Arity::kOptional)
      .input("sizes", "I", Arity::kOptional).output("dX", "T")
      .type_constraint("T", kFloatDTypes).type_constraint("F", kFloatDTypes).type_constraint("S", {DType::kFloat32})
      .type_constraint("I", {DType::kInt64})
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(1);
        if (x != nullptr) ctx.set_output_type(0, *x);
      })
      .doc("dY spread back over the input taps each output interpolated from: the gradient of Resize");
  registry.add(with_resize_attributes(std::move(resize_grad)));
}

void register_resize_cpu_kernels(KernelRegistry& registry) {
  registry.add("Resize", DeviceType::kCpu, kNumericDTypes, [](const Node& node) { return std::make_unique<ResizeKernel>(node, false); });
  registry.add("ResizeGrad", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<ResizeKernel>(node, true); });
}

}  // namespace weir
