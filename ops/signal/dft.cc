#include "ops/signal/dft.h"

#include <algorithm>
#include <complex>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/signal/fft.h"
#include "ops/tensor/indexing.h"
#include "ops/threading.h"

namespace weir {

namespace {

using Complex = std::complex<double>;

// The one value of a scalar integer input (rank 0, or one element).
int64_t scalar_int(const KernelContext& ctx, size_t index, const char* what) {
  std::vector<int64_t> values = index_values(ctx, ctx.input(index), what);
  if (values.size() != 1) ctx.fail(std::string(what) + " must be a scalar, got " + ctx.input(index).type_string());
  return values[0];
}

// A constant scalar integer input's value, for inference.
std::optional<int64_t> constant_scalar(const InferenceContext& ctx, size_t index) {
  if (index >= ctx.num_inputs() || ctx.input_type(index) == nullptr) return std::nullopt;
  std::optional<std::vector<int64_t>> values = constant_ints(ctx, index);
  if (!values || values->size() != 1) return std::nullopt;
  return (*values)[0];
}

// DFT's axis: [-rank, -2] or [0, rank - 2] (the last axis holds the complex
// components), as an index in [0, rank - 2]; nullopt when out of range.
std::optional<int64_t> dft_axis(int64_t axis, int64_t rank) {
  if (axis >= 0 && axis <= rank - 2) return axis;
  if (axis < 0 && axis >= -rank && axis <= -2) return axis + rank;
  return std::nullopt;
}

std::string axis_range(int64_t rank) {
  return "[" + std::to_string(-rank) + ", -2] or [0, " + std::to_string(rank - 2) + "]";
}

// Reads element `offset` (a real value, or a real and an imaginary value) of a
// signal with `components` per element.
template <typename T>
Complex read_complex(const T* data, int64_t offset, int64_t components) {
  double re = static_cast<double>(load(data[offset * components]));
  double im = components == 2 ? static_cast<double>(load(data[offset * components + 1])) : 0.0;
  return {re, im};
}

template <typename T>
void write_complex(T* data, int64_t offset, Complex value) {
  data[offset * 2] = store<T>(static_cast<ComputeType<T>>(value.real()));
  data[offset * 2 + 1] = store<T>(static_cast<ComputeType<T>>(value.imag()));
}

// Lines per parallel chunk: each is a whole transform.
constexpr int64_t kLineGrain = 16;

void infer_dft(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (!x->shape.has_rank()) {
    ctx.set_output_type(0, {x->dtype, Shape::unknown_rank()});
    return;
  }
  int64_t rank = x->shape.rank();
  if (rank < 2) ctx.fail("input " + x->to_string() + " needs [batch, signal..., 1 or 2]");
  const Dim& last = x->shape.dims().back();
  if (last.is_static() && last.size() != 1 && last.size() != 2) {
    ctx.fail("input " + x->to_string() + " must end in 1 (real) or 2 (complex) components");
  }
  std::optional<int64_t> axis = dft_axis(ctx.attr_int("axis"), rank);
  if (!axis) ctx.fail("axis " + std::to_string(ctx.attr_int("axis")) + " is out of range " + axis_range(rank));
  bool onesided = ctx.attr_int("onesided") != 0;
  if (onesided && ctx.attr_int("inverse") != 0) ctx.fail("onesided output is for the forward transform only");
  if (onesided && last.is_static() && last.size() == 2) ctx.fail("onesided output needs a real input, got " + x->to_string());
  auto a = static_cast<size_t>(*axis);
  std::vector<Dim> dims = x->shape.dims();
  Dim n = dims[a];
  if (ctx.num_inputs() > 1 && ctx.input_type(1) != nullptr) {
    std::optional<int64_t> length = constant_scalar(ctx, 1);
    if (length && *length < 1) ctx.fail("dft_length must be at least 1, got " + std::to_string(*length));
    n = length ? Dim(*length) : symbolic_dim(ctx, a);
  }
  if (onesided) n = n.is_static() ? Dim(n.size() / 2 + 1) : symbolic_dim(ctx, a);
  dims[a] = n;
  dims.back() = Dim(2);
  ctx.set_output_type(0, {x->dtype, Shape(std::move(dims))});
}

class DftKernel final : public OpKernel {
 public:
  explicit DftKernel(const Node& node)
      : axis_(int_attr(node, "axis", 1)), inverse_(int_attr(node, "inverse", 0) != 0),
        onesided_(int_attr(node, "onesided", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t>& sizes = x.sizes();
    auto rank = static_cast<int64_t>(sizes.size());
    if (rank < 2) ctx.fail("input " + x.type_string() + " needs [batch, signal..., 1 or 2]");
    int64_t components = sizes.back();
    if (components != 1 && components != 2) ctx.fail("input " + x.type_string() + " must end in 1 (real) or 2 (complex) components");
    std::optional<int64_t> axis = dft_axis(axis_, rank);
    if (!axis) ctx.fail("axis " + std::to_string(axis_) + " is out of range " + axis_range(rank));
    if (onesided_ && inverse_) ctx.fail("onesided output is for the forward transform only");
    if (onesided_ && components == 2) ctx.fail("onesided output needs a real input, got " + x.type_string());
    auto a = static_cast<size_t>(*axis);
    int64_t in_length = sizes[a];
    int64_t n = ctx.has_input(1) ? scalar_int(ctx, 1, "dft_length") : in_length;
    if (n < 1) ctx.fail("the transform needs a length of at least 1, got " + std::to_string(n) + " for " + x.type_string());
    int64_t out_length = onesided_ ? n / 2 + 1 : n;
    std::vector<int64_t> out_sizes = sizes;
    out_sizes[a] = out_length;
    out_sizes.back() = 2;
    int64_t outer = 1, inner = 1;
    for (size_t b = 0; b < a; ++b) outer *= sizes[b];
    for (size_t b = a + 1; b + 1 < sizes.size(); ++b) inner *= sizes[b];
    Tensor& y = ctx.allocate_output(0, x.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
    const Fft fft(n);
    const int64_t copied = std::min(n, in_length);
    const double scale = inverse_ ? 1.0 / static_cast<double>(n) : 1.0;
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = x.data<T>();
        T* out = y.data<T>();
        parallel_for(outer * inner, kLineGrain, [&](int64_t begin, int64_t end) {
          std::vector<Complex> line(static_cast<size_t>(n)), scratch;
          for (int64_t l = begin; l < end; ++l) {
            int64_t o = l / inner, i = l % inner;
            for (int64_t k = 0; k < n; ++k) {
              line[static_cast<size_t>(k)] = k < copied ? read_complex(in, (o * in_length + k) * inner + i, components) : Complex(0, 0);
            }
            fft.transform(line.data(), inverse_, scratch);
            for (int64_t k = 0; k < out_length; ++k) {
              write_complex(out, (o * out_length + k) * inner + i, line[static_cast<size_t>(k)] * scale);
            }
          }
        });
      } else {
        ctx.fail("input must be floating point, got " + x.type_string());
      }
    });
  }

 private:
  int64_t axis_;
  bool inverse_, onesided_;
};

// STFT's sizes from what inference knows: the frame length n from
// frame_length or the window's static size.
void infer_stft(InferenceContext& ctx) {
  const TensorType* signal = ctx.input_type(0);
  if (signal == nullptr) return;
  if (!signal->shape.has_rank()) {
    ctx.set_output_type(0, {signal->dtype, Shape{symbolic_dim(ctx, 0), symbolic_dim(ctx, 1), symbolic_dim(ctx, 2), Dim(2)}});
    return;
  }
  if (signal->shape.rank() != 3) ctx.fail("signal " + signal->to_string() + " must be [batch, length, 1 or 2]");
  const Dim& components = signal->shape[2];
  if (components.is_static() && components.size() != 1 && components.size() != 2) {
    ctx.fail("signal " + signal->to_string() + " must end in 1 (real) or 2 (complex) components");
  }
  bool onesided = ctx.attr_int("onesided") != 0;
  if (onesided && components.is_static() && components.size() == 2) {
    ctx.fail("onesided output needs a real signal, got " + signal->to_string());
  }
  const TensorType* window = ctx.num_inputs() > 2 ? ctx.input_type(2) : nullptr;
  if (window != nullptr && window->shape.has_rank() && window->shape.rank() != 1) {
    ctx.fail("window " + window->to_string() + " must have rank 1");
  }
  bool has_length = ctx.num_inputs() > 3 && ctx.input_type(3) != nullptr;
  if (window == nullptr && !has_length) ctx.fail("needs a window or a frame_length");
  std::optional<int64_t> n = constant_scalar(ctx, 3);
  if (n && *n < 1) ctx.fail("frame_length must be at least 1, got " + std::to_string(*n));
  if (window != nullptr && window->shape.has_rank() && window->shape[0].is_static()) {
    int64_t window_length = window->shape[0].size();
    if (n && *n != window_length) {
      ctx.fail("frame_length " + std::to_string(*n) + " differs from the window's length " + std::to_string(window_length));
    }
    n = window_length;
  }
  std::optional<int64_t> step = constant_scalar(ctx, 1);
  if (step && *step < 1) ctx.fail("frame_step must be at least 1, got " + std::to_string(*step));
  Dim frames = symbolic_dim(ctx, 1), bins = symbolic_dim(ctx, 2);
  if (n) {
    bins = Dim(onesided ? *n / 2 + 1 : *n);
    const Dim& length = signal->shape[1];
    if (length.is_static() && length.size() < *n) {
      ctx.fail("frame length " + std::to_string(*n) + " is longer than the signal " + signal->to_string());
    }
    if (step && length.is_static()) frames = Dim((length.size() - *n) / *step + 1);
  }
  ctx.set_output_type(0, {signal->dtype, Shape{signal->shape[0], frames, bins, Dim(2)}});
}

class StftKernel final : public OpKernel {
 public:
  explicit StftKernel(const Node& node) : onesided_(int_attr(node, "onesided", 1) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& signal = ctx.input(0);
    const std::vector<int64_t>& sizes = signal.sizes();
    if (sizes.size() != 3 || (sizes[2] != 1 && sizes[2] != 2)) {
      ctx.fail("signal " + signal.type_string() + " must be [batch, length, 1 or 2]");
    }
    const int64_t batch = sizes[0], length = sizes[1], components = sizes[2];
    if (onesided_ && components == 2) ctx.fail("onesided output needs a real signal, got " + signal.type_string());
    int64_t step = scalar_int(ctx, 1, "frame_step");
    if (step < 1) ctx.fail("frame_step must be at least 1, got " + std::to_string(step));
    std::vector<double> window;
    if (ctx.has_input(2)) {
      const Tensor& w = ctx.input(2);
      if (w.sizes().size() != 1) ctx.fail("window " + w.type_string() + " must have rank 1");
      window.resize(static_cast<size_t>(w.num_elements()));
      dispatch_dtype(w.dtype(), [&]<typename T>() {
        if constexpr (std::is_floating_point_v<ComputeType<T>>) {
          for (size_t k = 0; k < window.size(); ++k) window[k] = static_cast<double>(load(w.data<T>()[k]));
        } else {
          ctx.fail("window must be floating point, got " + w.type_string());
        }
      });
    }
    int64_t n = 0;
    if (ctx.has_input(3)) {
      n = scalar_int(ctx, 3, "frame_length");
      if (ctx.has_input(2) && n != static_cast<int64_t>(window.size())) {
        ctx.fail("frame_length " + std::to_string(n) + " differs from the window's length " + std::to_string(window.size()));
      }
    } else if (ctx.has_input(2)) {
      n = static_cast<int64_t>(window.size());
    } else {
      ctx.fail("needs a window or a frame_length");
    }
    if (n < 1) ctx.fail("frame_length must be at least 1, got " + std::to_string(n));
    if (n > length) ctx.fail("frame length " + std::to_string(n) + " is longer than the signal " + signal.type_string());
    const int64_t frames = (length - n) / step + 1;
    const int64_t bins = onesided_ ? n / 2 + 1 : n;
    Tensor& y = ctx.allocate_output(0, signal.dtype(), {batch, frames, bins, 2}, KernelContext::Fill::kUninitialized);
    const Fft fft(n);
    dispatch_dtype(signal.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        const T* in = signal.data<T>();
        T* out = y.data<T>();
        parallel_for(batch * frames, kLineGrain, [&](int64_t begin, int64_t end) {
          std::vector<Complex> line(static_cast<size_t>(n)), scratch;
          for (int64_t l = begin; l < end; ++l) {
            int64_t b = l / frames, f = l % frames;
            for (int64_t k = 0; k < n; ++k) {
              Complex value = read_complex(in, b * length + f * step + k, components);
              line[static_cast<size_t>(k)] = window.empty() ? value : value * window[static_cast<size_t>(k)];
            }
            fft.transform(line.data(), false, scratch);
            for (int64_t k = 0; k < bins; ++k) write_complex(out, l * bins + k, line[static_cast<size_t>(k)]);
          }
        });
      } else {
        ctx.fail("signal must be floating point, got " + signal.type_string());
      }
    });
  }

 private:
  bool onesided_;
};

}  // namespace

void register_dft_schemas(OpRegistry& registry) {
  OpSchema dft("DFT");
  dft.input("input", "T1").input("dft_length", "T2", Arity::kOptional).output("output", "T1")
      .type_constraint("T1", kFloatDTypes).type_constraint("T2", {DType::kInt32, DType::kInt64})
      .attr("axis", AttrType::kInt, Attribute(int64_t{1}))
      .attr("inverse", AttrType::kInt, Attribute(int64_t{0}))
      .attr("onesided", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_dft)
      .doc("the discrete Fourier transform along `axis` of a real [..., 1] or complex [..., 2] signal, as [..., 2]; "
           "dft_length pads or truncates, inverse divides by n, onesided keeps bins 0..n/2");
  registry.add(std::move(dft));

  OpSchema stft("STFT");
  stft.input("signal", "T1").input("frame_step", "T2").input("window", "T1", Arity::kOptional)
      .input("frame_length", "T2", Arity::kOptional).output("output", "T1")
      .type_constraint("T1", kFloatDTypes).type_constraint("T2", {DType::kInt32, DType::kInt64})
      .attr("onesided", AttrType::kInt, Attribute(int64_t{1}))
      .infer(infer_stft)
      .doc("the discrete Fourier transform of each windowed frame of signal [batch, length, 1 or 2]: "
           "[batch, frames, bins, 2]");
  registry.add(std::move(stft));
}

void register_dft_cpu_kernels(KernelRegistry& registry) {
  registry.add("DFT", DeviceType::kCpu, kFloatDTypes, [](const Node& node) { return std::make_unique<DftKernel>(node); });
  registry.add("STFT", DeviceType::kCpu, kFloatDTypes, [](const Node& node) { return std::make_unique<StftKernel>(node); });
}

}  // namespace weir
