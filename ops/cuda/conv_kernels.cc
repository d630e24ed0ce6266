#include "ops/cuda/conv_kernels.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ops/cuda/conv_device.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/cudnn_conv.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/elementwise/fused_activation.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/conv_kernels.h"
#include "ops/nn/conv_problem.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

using cuda::ElementType;

using cuda::element_type;

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

// One direction of a convolution through cuDNN, for one kernel: the plans
// of its last few problems; each run stages operands where they are not
// already in the form cuDNN reads, and gives cuDNN its workspace, in
// scratch of its own launch (cuda::LaunchScratch).
//
// Concurrent runs of one plan share the runner. Only the plans are shared
// state: one is taken under the runner's mutex, and each run holds its own
// reference while it enqueues, with a cuDNN handle of its own (the pool's),
// so launches from several threads do not wait for each other.
//
// f16 and bf16 data whose result has the data's type run natively: cuDNN
// reads and writes the 16-bit data (tensor cores, f32 accumulation), the
// result rounded once. A channels-last input (FusedConv's NHWC, one or two
// spatial axes) stays channels-last, with the weight put in cuDNN's KRSC
// order and the result written channels-last. Everything else widens to
// f32 on the device and runs in f32 (FMA math): f32 data, a wider result
// (an f32 weight gradient of 16-bit data: cuDNN writes a half filter
// gradient for half data), 3-D channels-last data, and problems cuDNN has
// no 16-bit algorithm for.
class ConvRunner {
 public:
  // The layout run() writes the result of `direction` of `p` in for these
  // arguments: channels-last where the run is native on channels-last
  // input, else [N, C, spatial...]. Plans the problem (kept for run()).
  bool result_channels_last(KernelContext& ctx, ConvDirection direction, const ConvProblem& p, ElementType type,
                            bool in_channels_last, ElementType dest_type) {
    cuda::CudnnHandle handle(ctx.stream()->device().index);
    return plan(ctx, handle.get(), direction, p, type, in_channels_last, dest_type)->format().channels_last;
  }

  // Enqueues `direction` of `p` and writes the result, in p's sizes, to
  // `dest` as `dest_type` (dest may be an output tensor or scratch), in the
  // layout result_channels_last() gives.
  void run(KernelContext& ctx, ConvDirection direction, const ConvProblem& p, ElementType type,
           const ConvOperands& operands, void* dest, ElementType dest_type) {
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::CudnnHandle handle(ctx.stream()->device().index);
    cuda::cudnn_check(cuda::cudnn().set_stream(handle.get(), stream), where(ctx) + ": cudnnSetStream");
    const std::shared_ptr<const cuda::CudnnConv> planned =
        plan(ctx, handle.get(), direction, p, type, operands.in_channels_last, dest_type);
    const cuda::CudnnConv& conv = *planned;
    if (conv.format().data != CUDNN_DATA_FLOAT) {
      run_native(ctx, handle.get(), conv, direction, p, type, operands, dest);
      return;
    }
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
    const cuda::LaunchScratch scratch(ctx, {stage_in ? static_cast<size_t>(padded_in_count) * kF32 : 0,
                                            stage_channels_first ? static_cast<size_t>(in_count) * kF32 : 0,
                                            stage_out ? static_cast<size_t>(out_count) * kF32 : 0,
                                            stage_weight ? static_cast<size_t>(weight_count) * kF32 : 0,
                                            stage_result ? static_cast<size_t>(result_count) * kF32 : 0,
                                            conv.workspace_bytes()});
    const std::vector<void*>& parts = scratch.parts();

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
  static cudnnDataType_t cudnn_type(ElementType type) {
    switch (type) {
      case ElementType::kFloat32: return CUDNN_DATA_FLOAT;
      case ElementType::kFloat16: return CUDNN_DATA_HALF;
      case ElementType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    }
    return CUDNN_DATA_FLOAT;
  }

  // The plan for these arguments, kept for the last kPlans problems (the
  // newest first), so runs of a few input shapes (concurrent or in turn)
  // do not plan again each time.
  std::shared_ptr<const cuda::CudnnConv> plan(KernelContext& ctx, cudnnHandle_t handle, ConvDirection direction,
                                              const ConvProblem& p, ElementType type, bool in_channels_last,
                                              ElementType dest_type) {
    const bool native = type != ElementType::kFloat32 && dest_type == type && !(in_channels_last && p.spatial_rank > 2);
    // 16-bit data that do not run natively are widened to f32: exact in TF32.
    const bool widened = type != ElementType::kFloat32;
    const cuda::CudnnConvFormat wanted{.data = native ? cudnn_type(type) : CUDNN_DATA_FLOAT,
                                       .channels_last = native && in_channels_last,
                                       .exact_in_tf32 = !native && widened};
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Planned& known : plans_) {
      if (known.direction == direction && same_problem(known.problem, p) && known.format == wanted) return known.plan;
    }
    auto made = std::make_shared<const cuda::CudnnConv>(p, direction, wanted, handle, where(ctx));
    if (!made->usable()) {
      made = std::make_shared<const cuda::CudnnConv>(p, direction, cuda::CudnnConvFormat{.exact_in_tf32 = widened},
                                                     handle, where(ctx));
    }
    plans_.insert(plans_.begin(), Planned{p, direction, wanted, made});
    if (plans_.size() > kPlans) plans_.pop_back();  // a run still enqueueing it keeps its own reference
    return made;
  }

  // A run on the 16-bit data itself: only asymmetric pads (a padded copy
  // of the input side, or a cropped copy of a data gradient) and a
  // channels-last weight are staged, in the data's type.
  void run_native(KernelContext& ctx, cudnnHandle_t handle, const cuda::CudnnConv& conv, ConvDirection direction,
                  const ConvProblem& p, ElementType type, const ConvOperands& operands, void* dest) {
    cudaStream_t stream = cuda::cuda_stream(ctx);
    const cuda::CudnnConvGeometry& g = conv.geometry();
    const bool last = conv.format().channels_last;
    constexpr size_t kElement = 2;  // f16 and bf16
    const int64_t padded_in_count = p.batch * p.in_channels * g.problem.in_plane();
    const int64_t weight_count = p.out_channels * (p.in_channels / p.group) * p.kernel_volume();
    const bool result_is_in = direction == ConvDirection::kBackwardData;
    const bool stage_in = operands.in != nullptr && g.explicit_padding;
    const bool stage_weight = operands.weight != nullptr && last;
    const bool stage_result = result_is_in && g.explicit_padding;
    const cuda::LaunchScratch scratch(ctx, {stage_in ? static_cast<size_t>(padded_in_count) * kElement : 0,
                                            stage_weight ? static_cast<size_t>(weight_count) * kElement : 0,
                                            stage_result ? static_cast<size_t>(padded_in_count) * kElement : 0,
                                            conv.workspace_bytes()});
    const std::vector<void*>& parts = scratch.parts();

    const void* in = operands.in != nullptr ? operands.in->raw_data() : nullptr;
    if (stage_in) {
      const int64_t pad_offset[3] = {-g.input_offset[0], -g.input_offset[1], -g.input_offset[2]};
      if (!last) {
        cuda::launch_shifted_copy(type, in, spatial(p.in), type, parts[0], spatial(g.problem.in), pad_offset,
                                  p.batch * p.in_channels, stream);
      } else {
        const cuda::ChannelsLastPadding padding = cuda::channels_last_padding(g, p);
        cuda::launch_shifted_copy(type, in, spatial(padding.from), type, parts[0], spatial(padding.to), padding.offset,
                                  p.batch, stream);
      }
      cuda::check_launch(ctx, "shifted_copy (pad)");
      in = parts[0];
    }
    const void* weight = operands.weight != nullptr ? operands.weight->raw_data() : nullptr;
    if (stage_weight) {
      cuda::launch_channels_last(type, weight, parts[1], p.out_channels, p.in_channels / p.group, p.kernel_volume(),
                                 stream);
      cuda::check_launch(ctx, "channels_last (weight to KRSC)");
      weight = parts[1];
    }
    const void* out = operands.out != nullptr ? operands.out->raw_data() : nullptr;
    void* result = stage_result ? parts[2] : dest;
    switch (direction) {
      case ConvDirection::kForward: conv.run(handle, in, weight, result, parts[3]); break;
      case ConvDirection::kBackwardData: conv.run(handle, out, weight, result, parts[3]); break;
      case ConvDirection::kBackwardWeights: conv.run(handle, out, in, result, parts[3]); break;
    }
    if (!stage_result) return;
    // Crop the padded data gradient (the offset is the pads' begin): a copy, no rounding.
    const int64_t crop[3] = {g.input_offset[0], g.input_offset[1], g.input_offset[2]};
    cuda::launch_shifted_copy(type, result, spatial(g.problem.in), type, dest, spatial(p.in), crop,
                              p.batch * p.in_channels, stream);
    cuda::check_launch(ctx, "shifted_copy (crop)");
  }

  struct Planned {
    ConvProblem problem;
    ConvDirection direction = ConvDirection::kForward;
    cuda::CudnnConvFormat format;
    std::shared_ptr<const cuda::CudnnConv> plan;
  };
  static constexpr size_t kPlans = 8;
  std::mutex mutex_;  // guards the plans
  std::vector<Planned> plans_;
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
    check_conv_inputs_dtype(ctx, x.dtype());
    const ElementType type = element_type(ctx, x.dtype());
    const bool last = channels_last_;
    const ConvProblem p =
        conv_problem(ctx.node(), kind_, last ? channels_first_order(x.sizes()) : x.sizes(), w.sizes());
    const bool forward = kind_ == ConvKind::kForward;
    const ConvOutput output = conv_output(ctx, p, forward, last);
    const std::vector<int64_t>& y_sizes = output.sizes;
    const int64_t y_channels = output.channels;
    const int64_t y_plane = forward ? p.out_plane() : p.in_plane();
    const bool empty = output.empty;
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* addend = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "X");
    cuda::require_on_device(ctx, w, "W");
    if (bias != nullptr) cuda::require_on_device(ctx, *bias, "B");
    if (addend != nullptr) cuda::require_on_device(ctx, *addend, "Z");
    Tensor& y = ctx.allocate_output(0, x.dtype(), y_sizes, KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;

    const ConvDirection direction = forward ? ConvDirection::kForward : ConvDirection::kBackwardData;
    // The convolution's result (the sums) is in the data's type: f32 for
    // f32, and for f16/bf16 what cuDNN writes natively (or the widened
    // run's result rounded once), so with a bias, Z or an activation the
    // 16-bit result is rounded twice, once here and once after the
    // epilogue: the price of tensor cores (FusedConv is most of a
    // ResNet's convolutions). It is written straight into Y where nothing
    // else reads Y's memory (no Z, which may share it) and the layouts match.
    ElementType sums_type = type;
    bool sums_last = false;
    void* conv = nullptr;
    cuda::LaunchScratch result;  // the sums, where they are not written into Y
    if (empty) {
      // No products (no input channels): Y = activation(B + Z) over zeros.
      sums_type = ElementType::kFloat32;
      result = cuda::LaunchScratch(ctx, {y.num_elements() * sizeof(float)});
      conv = result.part(0);
      cuda::check_cuda_status(ctx, cudaMemsetAsync(conv, 0, y.num_elements() * sizeof(float), stream), "cudaMemsetAsync");
    } else {
      sums_last = runner_.result_channels_last(ctx, direction, p, type, forward && last, type);
      const size_t element = type == ElementType::kFloat32 ? sizeof(float) : 2;
      if (addend == nullptr && sums_last == last) {
        conv = y.raw_data();
      } else {
        result = cuda::LaunchScratch(ctx, {static_cast<size_t>(y.num_elements()) * element});
        conv = result.part(0);
      }
      if (forward) {
        runner_.run(ctx, direction, p, type, {.in = &x, .in_channels_last = last, .weight = &w}, conv, type);
      } else {
        runner_.run(ctx, direction, p, type, {.out = &x, .weight = &w}, conv, type);
      }
    }
    if (conv != y.raw_data() || bias != nullptr || addend != nullptr || !activation_.none()) {
      cuda::launch_conv_epilogue(type, sums_type, conv, /*sums_in_y_layout=*/sums_last == last,
                                 bias != nullptr ? bias->raw_data() : nullptr,
                                 addend != nullptr ? addend->raw_data() : nullptr, y.raw_data(), p.batch, y_channels,
                                 y_plane, last, device_activation(activation_.kind), activation_.alpha,
                                 activation_.beta, stream);
      cuda::check_launch(ctx, "conv_epilogue");
    }
  }

 private:
  ConvKind kind_;
  FusedActivation activation_{};
  bool channels_last_ = false;
  ConvRunner runner_;
};

// ConvGradData(dY, W, X) -> dX and ConvGradWeight(dY, X, W) -> dW.
class ConvGradCudaKernel final : public OpKernel {
 public:
  ConvGradCudaKernel(const Node& node, bool weight) : weight_(weight), transposed_(conv_grad_transposed(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(weight_ ? 1 : 2);
    const Tensor& w = ctx.input(weight_ ? 2 : 1);
    check_conv_inputs_dtype(ctx, dy.dtype());
    const ElementType type = element_type(ctx, dy.dtype());
    const ConvProblem p =
        conv_problem(ctx.node(), transposed_ ? ConvKind::kTranspose : ConvKind::kForward, x.sizes(), w.sizes());
    const bool empty = check_conv_grad(ctx, p, transposed_, dy, x, w);
    const DType grad_dtype = weight_ ? kernel_output_dtype(ctx, dy.dtype()) : dy.dtype();
    const ElementType grad_type = element_type(ctx, grad_dtype);
    cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, weight_ ? x : w, weight_ ? "X" : "W");
    Tensor& grad = ctx.allocate_output(0, grad_dtype, weight_ ? w.sizes() : x.sizes(),
                                       empty ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
    if (empty) return;
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
  ConvRunner runner_;
};

// ConvGradBias(dY) -> dB: sums over the batch and spatial axes.
class ConvGradBiasCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const ConvBiasGradShape shape = conv_bias_grad_shape(ctx, dy);
    const ElementType type = element_type(ctx, dy.dtype());
    const int64_t batch = shape.batch, channels = shape.channels, plane = shape.plane;
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
