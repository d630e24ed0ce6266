#include "ops/cuda/cudnn_conv.h"

#include <limits>

#include "core/error.h"
#include "core/shape.h"

namespace weir::cuda {

namespace {

// cuDNN's legacy API counts in int: every size and every tensor's element count must fit.
std::vector<int> to_ints(const std::vector<int64_t>& values, const std::string& where, const char* what) {
  std::vector<int> result;
  int64_t count = 1;
  for (int64_t value : values) {
    count *= value;
    if (value > std::numeric_limits<int>::max() || count > std::numeric_limits<int>::max()) {
      throw Error(ErrorKind::kUnsupported, where + ": the " + what + " " + format_sizes(values) +
                                               " exceed cuDNN's 32-bit sizes; split the batch");
    }
    result.push_back(static_cast<int>(value));
  }
  return result;
}

// Workspaces above this are not worth an algorithm's speed.
constexpr size_t kMaxWorkspace = size_t{1} << 30;

// The algorithms whose arithmetic is products summed in f32 (GEMM-based):
// FFT and Winograd transform the operands first, which for 16-bit data
// happens at reduced precision.
bool gemm_based(cudnnConvolutionFwdAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
}
bool gemm_based(cudnnConvolutionBwdDataAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}
bool gemm_based(cudnnConvolutionBwdFilterAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
         algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

// The index of the first usable entry of cuDNN's ranked list, or -1. f32
// (!half): no tensor cores (TF32), unless `tf32` (data widened from 16
// bits), and never a conversion to f16. 16-bit data (half): tensor cores
// allowed, GEMM-based algorithms only. Where `deterministic`, a
// deterministic algorithm if cuDNN has one for the problem (else the best
// of the others: a result beats an error).
template <typename Perf>
int first_usable(const Perf* perfs, int count, bool half, bool tf32, bool deterministic) {
  for (bool require_deterministic : {deterministic, false}) {
    for (int i = 0; i < count; ++i) {
      const Perf& perf = perfs[i];
      if (perf.status != CUDNN_STATUS_SUCCESS || perf.memory > kMaxWorkspace) continue;
      const bool converts = perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      const bool tensor_ops = perf.mathType == CUDNN_TENSOR_OP_MATH || converts;
      if (!half && (converts || (tensor_ops && !tf32))) continue;
      if (half && !gemm_based(perf.algo)) continue;
      if (require_deterministic && perf.determinism != CUDNN_DETERMINISTIC) continue;
      return i;
    }
  }
  return -1;
}

// Default math lets f32 run on TF32 tensor cores; FMA math does not.
cudnnMathType_t math_for(const CudnnConvFormat& format) {
  if (format.data != CUDNN_DATA_FLOAT) return CUDNN_TENSOR_OP_MATH;
  return format.exact_in_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

}  // namespace

CudnnConv::CudnnConv(const ConvProblem& problem, ConvDirection direction, CudnnConvFormat format, cudnnHandle_t handle,
                     const std::string& where)
    : geometry_(cudnn_conv_geometry(problem)), direction_(direction), format_(format), where_(where) {
  const CudnnApi& api = cudnn();
  const CudnnConvGeometry& g = geometry_;
  const bool half = format.data != CUDNN_DATA_FLOAT;
  const bool tf32 = !half && format.exact_in_tf32;
  in_ = std::make_unique<TensorDescriptor>(format.data, to_ints(g.in_dims, where, "input sizes"), format.channels_last);
  out_ = std::make_unique<TensorDescriptor>(format.data, to_ints(g.out_dims, where, "output sizes"), format.channels_last);
  filter_ = std::make_unique<FilterDescriptor>(format.data, to_ints(g.filter_dims, where, "weight sizes"),
                                               format.channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW);
  // Pads, strides and dilations are at most 2^30 (conv_geometry checks).
  std::vector<int> pads(g.pads.begin(), g.pads.end()), strides(g.strides.begin(), g.strides.end()),
      dilations(g.dilations.begin(), g.dilations.end());
  convolution_ = std::make_unique<ConvolutionDescriptor>(
      pads, strides, dilations, to_ints({g.problem.group}, where, "group count")[0], math_for(format));
  // A 16-bit or TF32 algorithm runs with the math type cuDNN ranked it with
  // (the descriptor's, or FMA where its tensor-op kernels do not fit the
  // problem); the workspace size is asked for with that math type set.
  auto use_math_of = [&](cudnnMathType_t math) {
    if (half || tf32) cudnn_check(api.set_math_type(convolution_->get(), math), where + ": cudnnSetConvolutionMathType");
  };
  // A 16-bit query cuDNN answers "not supported" (any CUDNN_STATUS_NOT_SUPPORTED_*)
  // leaves the plan unusable, for the caller to widen to f32; other failures throw.
  auto answered = [&](cudnnStatus_t status, const char* call) {
    if (half && CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED) {
      algorithm_ = -1;
      return false;
    }
    cudnn_check(status, where + ": " + call);
    return true;
  };
  constexpr int kRequested = 16;
  int returned = 0;
  // Takes the first usable of cuDNN's ranked `perfs` (its math type too);
  // without one, `fallback` for f32 and none for 16 bits (widened to f32).
  auto adopt = [&](const auto* perfs, bool deterministic, int fallback) {
    const int chosen = first_usable(perfs, returned, half, tf32, deterministic);
    if (chosen >= 0) {
      algorithm_ = static_cast<int>(perfs[chosen].algo);
      use_math_of(perfs[chosen].mathType);
    } else {
      algorithm_ = half ? -1 : fallback;
    }
    return algorithm_ >= 0;
  };
  switch (direction) {
    case ConvDirection::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perfs[kRequested];
      if (!answered(api.forward_algorithms(handle, in_->get(), filter_->get(), convolution_->get(), out_->get(),
                                           kRequested, &returned, perfs),
                    "cudnnGetConvolutionForwardAlgorithm_v7")) {
        return;
      }
      if (!adopt(perfs, /*deterministic=*/false, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM)) return;
      answered(api.forward_workspace(handle, in_->get(), filter_->get(), convolution_->get(), out_->get(),
                                     static_cast<cudnnConvolutionFwdAlgo_t>(algorithm_), &workspace_bytes_),
               "cudnnGetConvolutionForwardWorkspaceSize");
      break;
    }
    case ConvDirection::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perfs[kRequested];
      if (!answered(api.backward_data_algorithms(handle, filter_->get(), out_->get(), convolution_->get(), in_->get(),
                                                 kRequested, &returned, perfs),
                    "cudnnGetConvolutionBackwardDataAlgorithm_v7")) {
        return;
      }
      if (!adopt(perfs, /*deterministic=*/true, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1)) return;
      answered(api.backward_data_workspace(handle, filter_->get(), out_->get(), convolution_->get(), in_->get(),
                                           static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm_), &workspace_bytes_),
               "cudnnGetConvolutionBackwardDataWorkspaceSize");
      break;
    }
    case ConvDirection::kBackwardWeights: {
      cudnnConvolutionBwdFilterAlgoPerf_t perfs[kRequested];
      if (!answered(api.backward_filter_algorithms(handle, in_->get(), out_->get(), convolution_->get(),
                                                   filter_->get(), kRequested, &returned, perfs),
                    "cudnnGetConvolutionBackwardFilterAlgorithm_v7")) {
        return;
      }
      if (!adopt(perfs, /*deterministic=*/true, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1)) return;
      answered(api.backward_filter_workspace(handle, in_->get(), out_->get(), convolution_->get(), filter_->get(),
                                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm_), &workspace_bytes_),
               "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      break;
    }
  }
}

void CudnnConv::run(cudnnHandle_t handle, const void* a, const void* b, void* out, void* workspace) const {
  const CudnnApi& api = cudnn();
  // alpha and beta are float for f32, f16 and bf16 data alike (double only for double data).
  const float one = 1.0f, zero = 0.0f;
  switch (direction_) {
    case ConvDirection::kForward:
      cudnn_check(api.forward(handle, &one, in_->get(), a, filter_->get(), b, convolution_->get(),
                              static_cast<cudnnConvolutionFwdAlgo_t>(algorithm_), workspace, workspace_bytes_, &zero,
                              out_->get(), out),
                  where_ + ": cudnnConvolutionForward");
      return;
    case ConvDirection::kBackwardData:
      cudnn_check(api.backward_data(handle, &one, filter_->get(), b, out_->get(), a, convolution_->get(),
                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm_), workspace, workspace_bytes_,
                                    &zero, in_->get(), out),
                  where_ + ": cudnnConvolutionBackwardData");
      return;
    case ConvDirection::kBackwardWeights:
      cudnn_check(api.backward_filter(handle, &one, in_->get(), b, out_->get(), a, convolution_->get(),
                                      static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm_), workspace,
                                      workspace_bytes_, &zero, filter_->get(), out),
                  where_ + ": cudnnConvolutionBackwardFilter");
      return;
  }
}

}  // namespace weir::cuda
