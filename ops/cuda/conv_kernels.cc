#include "ops/cuda/conv_kernels.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "ops/cuda/conv_device.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/cudnn_conv.h"
#include "ops/cuda/kernel_scratch.h"
#include "ops/elementwise/fused_activation.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/conv_problem.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

using cuda::ElementType;

ElementType element_type(const KernelContext& ctx, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return ElementType::kFloat32;
    case DType::kFloat16: return ElementType::kFloat16;
    case DType::kBFloat16: return ElementType::kBFloat16;
    default: ctx.fail("the CUDA kernel takes f32, f16 or bf16, got " + std::string(dtype_name(dtype)));
  }
}

cuda::ConvActivation device_activation(FusedActivation::Kind kind) {
  switch (kind) {
    case FusedActivation::Kind::kNone: return cuda::ConvActivation::kNone;
    case FusedActivation::Kind::kRelu: return cuda::ConvActivation::kRelu;
    case FusedActivation::Kind::kLeakyRelu: return cuda::ConvActivation::kLeakyRelu;
    case FusedActivation::Kind::kClip: return cuda::ConvActivation::kClip;
    case FusedActivation::Kind::kSigmoid: return cuda::ConvActivation::kSigmoid;
    case FusedActivation::Kind::kTanh: return cuda::ConvActivation::kTanh;
    case FusedActivation::Kind::kSilu: return cuda::ConvActivation::kSilu;
    case FusedActivation::Kind::kGelu: return cuda::ConvActivation::kGelu;
    case FusedActivation::Kind::kGeluTanh: return cuda::ConvActivation::kGeluTanh;
  }
  return cuda::ConvActivation::kNone;
}

cuda::Spatial3 spatial(const std::array<int64_t, 3>& sizes) {
  cuda::Spatial3 s;
  for (int a = 0; a < 3; ++a) s.size[a] = sizes[static_cast<size_t>(a)];
  return s;
}

bool is_empty(const std::vector<int64_t>& sizes) {
  for (int64_t size : sizes) {
    if (size == 0) return true;
  }
  return false;
}

void check_same_dtype(const KernelContext& ctx, DType dtype) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i) && ctx.input(i).dtype() != dtype) {
      ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.input(i).dtype())) + "; expected " +
               std::string(dtype_name(dtype)));
    }
  }
}

bool same_problem(const ConvProblem& a, const ConvProblem& b) {
  return a.batch == b.batch && a.in_channels == b.in_channels && a.out_channels == b.out_channels &&
         a.group == b.group && a.spatial_rank == b.spatial_rank && a.in == b.in && a.out == b.out &&
         a.kernel == b.kernel && a.strides == b.strides && a.dilations == b.dilations &&
         a.pads_begin == b.pads_begin && a.pads_end == b.pads_end;
}

std::string where(const KernelContext& ctx) { return ctx.node().op_type() + " '" + ctx.node().name() + "'"; }

// The operands of one direction of a problem: two of the three roles.
// `in` is the problem's input side ([N, C, in...], channels-last when
// in_channels_last), `out` its output side ([N, K, out...]), `weight`
// [K, C/group, kernel...]. The missing role is the result.
struct ConvOperands {
  const Tensor* in = nullptr;
  bool in_channels_last = false;
  const Tensor* out = nullptr;
  const Tensor* weight = nullptr;
};

// One direction of a convolution through cuDNN, for one kernel: the plan
// for the last problem, and the scratch that stages operands in f32 (and
// padded) where they are not already, and cuDNN's workspace.
class ConvRunner {
 public:
  // Enqueues `direction` of `p` and writes the result, in p's sizes, to
  // `dest` as `dest_type` (dest may be an output tensor or f32 scratch).
  void run(KernelContext& ctx, ConvDirection direction, const ConvProblem& p, ElementType type,
           const ConvOperands& operands, void* dest, ElementType dest_type) {
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::CudnnHandle handle(ctx.stream()->device().index);
    cuda::cudnn_check(cuda::cudnn().set_stream(handle.get(), stream), where(ctx) + ": cudnnSetStream");
    if (!plan_ || planned_direction_ != direction || !same_problem(planned_, p)) {
      plan_.reset();
      plan_.emplace(p, direction, handle.get(), where(ctx));
      planned_ = p;
      planned_direction_ = direction;
    }
    const cuda::CudnnConv& conv = *plan_;
    const cuda::CudnnConvGeometry& g = conv.geometry();
    const bool f32 = type == ElementType::kFloat32;

    const int64_t in_count = p.batch * p.in_channels * p.in_plane();
    const int64_t padded_in_count = p.batch * p.in_channels * g.problem.in_plane();
    const int64_t out_count = p.batch * p.out_channels * p.out_plane();
    const int64_t weight_count = p.out_channels * (p.in_channels / p.group) * p.kernel_volume();
    const bool stage_in = operands.in != nullptr && (!f32 || operands.in_channels_last || g.explicit_padding);
    const bool stage_channels_first = stage_in && operands.in_channels_last && g.explicit_padding;
    const bool stage_out = operands.out != nullptr && !f32;
    const bool stage_weight = operands.weight != nullptr && !f32;
    const bool result_is_in = direction == ConvDirection::kBackwardData;
    const int64_t result_count =
        direction == ConvDirection::kForward ? out_count : result_is_in ? padded_in_count : weight_count;
    const bool stage_result = dest_type != ElementType::kFloat32 || (result_is_in && g.explicit_padding);
    constexpr size_t kF32 = sizeof(float);
    std::vector<void*> parts = scratch_.reserve(
        ctx, {stage_in ? static_cast<size_t>(padded_in_count) * kF32 : 0,
              stage_channels_first ? static_cast<size_t>(in_count) * kF32 : 0,
              stage_out ? static_cast<size_t>(out_count) * kF32 : 0,
              stage_weight ? static_cast<size_t>(weight_count) * kF32 : 0,
              stage_result ? static_cast<size_t>(result_count) * kF32 : 0, conv.workspace_bytes()});

    const int64_t no_offset[3] = {0, 0, 0};
    const int64_t pad_offset[3] = {-g.input_offset[0], -g.input_offset[1], -g.input_offset[2]};
    // A widened copy, element for element.
    auto widen = [&](const Tensor& t, void* to) {
      cuda::launch_shifted_copy(type, t.raw_data(), cuda::Spatial3{}, ElementType::kFloat32, to, cuda::Spatial3{},
                                no_offset, t.num_elements(), stream);
      cuda::check_launch(ctx, "shifted_copy (widen to f32)");
      return static_cast<const float*>(to);
    };

    const float* in = nullptr;
    if (operands.in != nullptr) {
      in = static_cast<const float*>(operands.in->raw_data());
      if (stage_in) {
        const void* source = operands.in->raw_data();
        ElementType source_type = type;
        if (operands.in_channels_last) {
          auto* first = static_cast<float*>(stage_channels_first ? parts[1] : parts[0]);
          cuda::launch_channels_first_f32(type, source, first, p.batch, p.in_channels, p.in_plane(), stream);
          cuda::check_launch(ctx, "channels_first");
          source = first;
          source_type = ElementType::kFloat32;
        }
        if (!operands.in_channels_last || g.explicit_padding) {
          cuda::launch_shifted_copy(source_type, source, spatial(p.in), ElementType::kFloat32, parts[0],
                                    spatial(g.problem.in), pad_offset, p.batch * p.in_channels, stream);
          cuda::check_launch(ctx, "shifted_copy (pad to f32)");
        }
        in = static_cast<const float*>(parts[0]);
      }
    }
    const float* out = nullptr;
    if (operands.out != nullptr) {
      out = stage_out ? widen(*operands.out, parts[2]) : static_cast<const float*>(operands.out->raw_data());
    }
    const float* weight = nullptr;
    if (operands.weight != nullptr) {
      weight = stage_weight ? widen(*operands.weight, parts[3]) : static_cast<const float*>(operands.weight->raw_data());
    }

    auto* result = static_cast<float*>(stage_result ? parts[4] : dest);
    switch (direction) {
      case ConvDirection::kForward: conv.run(handle.get(), in, weight, result, parts[5]); break;
      case ConvDirection::kBackwardData: conv.run(handle.get(), out, weight, result, parts[5]); break;
      case ConvDirection::kBackwardWeights: conv.run(handle.get(), out, in, result, parts[5]); break;
    }
    if (!stage_result) return;
    if (result_is_in) {
      // Crop the padded data gradient (the offset is the pads' begin), rounding to dest_type.
      const int64_t crop[3] = {g.input_offset[0], g.input_offset[1], g.input_offset[2]};
      cuda::launch_shifted_copy(ElementType::kFloat32, result, spatial(g.problem.in), dest_type, dest, spatial(p.in),
                                crop, p.batch * p.in_channels, stream);
    } else {
      cuda::launch_shifted_copy(ElementType::kFloat32, result, cuda::Spatial3{}, dest_type, dest, cuda::Spatial3{},
                                no_offset, result_count, stream);
    }
    cuda::check_launch(ctx, "shifted_copy (round the result)");
  }

 private:
  std::optional<cuda::CudnnConv> plan_;
  ConvProblem planned_;
  ConvDirection planned_direction_ = ConvDirection::kForward;
  cuda::KernelScratch scratch_;
};

// Conv (kForward), ConvTranspose (kTranspose: the problem's backward-data
// direction) and FusedConv (kForward with an activation, an addend, and
// channels-first or channels-last data).
class ConvCudaKernel final : public OpKernel {
 public:
  ConvCudaKernel(const Node& node, ConvKind kind, bool fused = false) : kind_(kind) {
    if (fused) {
      activation_ = FusedActivation::from_node(node);
      channels_last_ = conv_layout_is_channels_last(node);
    }
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    check_same_dtype(ctx, x.dtype());
    const ElementType type = element_type(ctx, x.dtype());
    const bool last = channels_last_;
    const ConvProblem p =
        conv_problem(ctx.node(), kind_, last ? channels_first_order(x.sizes()) : x.sizes(), w.sizes());
    const bool forward = kind_ == ConvKind::kForward;
    std::vector<int64_t> y_sizes = forward ? p.out_sizes() : p.in_sizes();
    const int64_t y_channels = y_sizes[1];
    const int64_t y_plane = forward ? p.out_plane() : p.in_plane();
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (bias != nullptr && (bias->rank() != 1 || bias->sizes()[0] != y_sizes[1])) {
      ctx.fail("bias has shape " + format_sizes(bias->sizes()) + "; expected [" + std::to_string(y_sizes[1]) +
               "], one value per output channel");
    }
    const bool empty = is_empty(x.sizes()) || is_empty(w.sizes()) || is_empty(y_sizes);
    if (last) y_sizes = channels_last_order(y_sizes);
    const Tensor* addend = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (addend != nullptr && addend->sizes() != y_sizes) {
      ctx.fail("the addend Z has shape " + format_sizes(addend->sizes()) + "; expected the output's " + format_sizes(y_sizes));
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "X");
    cuda::require_on_device(ctx, w, "W");
    if (bias != nullptr) cuda::require_on_device(ctx, *bias, "B");
    if (addend != nullptr) cuda::require_on_device(ctx, *addend, "Z");
    Tensor& y = ctx.allocate_output(0, x.dtype(), y_sizes, KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;

    std::lock_guard<std::mutex> lock(mutex_);
    const bool f32_in_place = type == ElementType::kFloat32 && !last && addend == nullptr;
    float* conv = nullptr;
    if (empty) {
      // No products (no input channels): Y = activation(B + Z) over zeros.
      conv = static_cast<float*>(result_scratch_.reserve(ctx, {y.num_elements() * sizeof(float)})[0]);
      cudaError_t status = cudaMemsetAsync(conv, 0, y.num_elements() * sizeof(float), stream);
      if (status != cudaSuccess) {
        cudaGetLastError();
        ctx.fail(std::string("cudaMemsetAsync failed: ") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
      }
    } else {
      conv = f32_in_place ? static_cast<float*>(y.raw_data())
                          : static_cast<float*>(result_scratch_.reserve(ctx, {y.num_elements() * sizeof(float)})[0]);
      if (forward) {
        runner_.run(ctx, ConvDirection::kForward, p, type, {.in = &x, .in_channels_last = last, .weight = &w}, conv,
                    ElementType::kFloat32);
      } else {
        runner_.run(ctx, ConvDirection::kBackwardData, p, type, {.out = &x, .weight = &w}, conv, ElementType::kFloat32);
      }
    }
    if (conv != y.raw_data() || bias != nullptr || addend != nullptr || !activation_.none()) {
      cuda::launch_conv_epilogue(type, conv, bias != nullptr ? bias->raw_data() : nullptr,
                                 addend != nullptr ? addend->raw_data() : nullptr, y.raw_data(), p.batch,
                                 y_channels, y_plane, last, device_activation(activation_.kind),
                                 activation_.alpha, activation_.beta, stream);
      cuda::check_launch(ctx, "conv_epilogue");
    }
  }

 private:
  ConvKind kind_;
  FusedActivation activation_{};
  bool channels_last_ = false;
  std::mutex mutex_;  // concurrent runs of one plan share the plan and scratch
  ConvRunner runner_;
  cuda::KernelScratch result_scratch_;
};

bool transposed(const Node& node) { return node.has_attr("transposed") && node.attr("transposed").i() != 0; }

// ConvGradData(dY, W, X) -> dX and ConvGradWeight(dY, X, W) -> dW.
class ConvGradCudaKernel final : public OpKernel {
 public:
  ConvGradCudaKernel(const Node& node, bool weight) : weight_(weight), transposed_(transposed(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(weight_ ? 1 : 2);
    const Tensor& w = ctx.input(weight_ ? 2 : 1);
    check_same_dtype(ctx, dy.dtype());
    const ElementType type = element_type(ctx, dy.dtype());
    const ConvProblem p =
        conv_problem(ctx.node(), transposed_ ? ConvKind::kTranspose : ConvKind::kForward, x.sizes(), w.sizes());
    const std::vector<int64_t> expected = transposed_ ? p.in_sizes() : p.out_sizes();
    if (dy.sizes() != expected) {
      ctx.fail("dY has shape " + format_sizes(dy.sizes()) + "; the forward output is " + format_sizes(expected));
    }
    const bool empty = is_empty(dy.sizes()) || is_empty(w.sizes()) || is_empty(x.sizes());
    const DType grad_dtype = weight_ ? kernel_output_dtype(ctx, dy.dtype()) : dy.dtype();
    const ElementType grad_type = element_type(ctx, grad_dtype);
    cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, weight_ ? x : w, weight_ ? "X" : "W");
    Tensor& grad = ctx.allocate_output(0, grad_dtype, weight_ ? w.sizes() : x.sizes(),
                                       empty ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    if (empty) return;
    std::lock_guard<std::mutex> lock(mutex_);
    // For ConvTranspose the problem's output side is X and its input side dY's.
    if (weight_) {
      ConvOperands operands{.in = transposed_ ? &dy : &x, .out = transposed_ ? &x : &dy};
      runner_.run(ctx, ConvDirection::kBackwardWeights, p, type, operands, grad.raw_data(), grad_type);
    } else if (transposed_) {
      runner_.run(ctx, ConvDirection::kForward, p, type, {.in = &dy, .weight = &w}, grad.raw_data(), grad_type);
    } else {
      runner_.run(ctx, ConvDirection::kBackwardData, p, type, {.out = &dy, .weight = &w}, grad.raw_data(), grad_type);
    }
  }

 private:
  bool weight_;
  bool transposed_;
  std::mutex mutex_;
  ConvRunner runner_;
};

// ConvGradBias(dY) -> dB: sums over the batch and spatial axes.
class ConvGradBiasCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    if (dy.rank() < 2) ctx.fail("dY has shape " + format_sizes(dy.sizes()) + "; expected [N, C, ...]");
    const ElementType type = element_type(ctx, dy.dtype());
    const int64_t batch = dy.sizes()[0], channels = dy.sizes()[1];
    const int64_t plane = batch * channels == 0 ? 0 : dy.num_elements() / (batch * channels);
    const DType db_dtype = kernel_output_dtype(ctx, dy.dtype());
    const ElementType db_type = element_type(ctx, db_dtype);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    Tensor& db = ctx.allocate_output(0, db_dtype, {channels}, KernelContext::Fill::kUninitialized);
    if (channels == 0) return;
    cuda::launch_conv_bias_grad(type, dy.raw_data(), db_type, db.raw_data(), batch, channels, plane, stream);
    cuda::check_launch(ctx, "conv_bias_grad");
  }
};

}  // namespace

void register_conv_cuda_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  registry.add("Conv", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<ConvCudaKernel>(node, ConvKind::kForward); });
  registry.add("FusedConv", DeviceType::kCuda, types, [](const Node& node) {
    return std::make_unique<ConvCudaKernel>(node, ConvKind::kForward, /*fused=*/true);
  });
  registry.add("ConvTranspose", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<ConvCudaKernel>(node, ConvKind::kTranspose); });
  registry.add("ConvGradData", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<ConvGradCudaKernel>(node, /*weight=*/false); });
  registry.add("ConvGradWeight", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<ConvGradCudaKernel>(node, /*weight=*/true); });
  registry.add("ConvGradBias", DeviceType::kCuda, types,
               [](const Node&) { return std::make_unique<ConvGradBiasCudaKernel>(); });
}

}  // namespace weir
