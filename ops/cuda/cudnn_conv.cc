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

// The first usable entry of cuDNN's ranked list, or -1: no TF32 tensor
// cores, and, where `deterministic`, a deterministic algorithm if cuDNN has
// one for the problem (else the best of the others: a result beats an error).
template <typename Perf>
int first_usable(const Perf* perfs, int count, bool deterministic) {
  for (bool require_deterministic : {deterministic, false}) {
    for (int i = 0; i < count; ++i) {
      const Perf& perf = perfs[i];
      if (perf.status != CUDNN_STATUS_SUCCESS || perf.memory > kMaxWorkspace) continue;
      if (perf.mathType == CUDNN_TENSOR_OP_MATH || perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
      if (require_deterministic && perf.determinism != CUDNN_DETERMINISTIC) continue;
      return static_cast<int>(perf.algo);
    }
  }
  return -1;
}

}  // namespace

CudnnConv::CudnnConv(const ConvProblem& problem, ConvDirection direction, cudnnHandle_t handle, const std::string& where)
    : geometry_(cudnn_conv_geometry(problem)), direction_(direction), where_(where) {
  const CudnnApi& api = cudnn();
  const CudnnConvGeometry& g = geometry_;
  in_ = std::make_unique<TensorDescriptor>(CUDNN_DATA_FLOAT, to_ints(g.in_dims, where, "input sizes"));
  out_ = std::make_unique<TensorDescriptor>(CUDNN_DATA_FLOAT, to_ints(g.out_dims, where, "output sizes"));
  filter_ = std::make_unique<FilterDescriptor>(CUDNN_DATA_FLOAT, to_ints(g.filter_dims, where, "weight sizes"));
  // Pads, strides and dilations are at most 2^30 (conv_geometry checks).
  std::vector<int> pads(g.pads.begin(), g.pads.end()), strides(g.strides.begin(), g.strides.end()),
      dilations(g.dilations.begin(), g.dilations.end());
  convolution_ = std::make_unique<ConvolutionDescriptor>(pads, strides, dilations,
                                                         to_ints({g.problem.group}, where, "group count")[0]);
  constexpr int kRequested = 16;
  int returned = 0;
  switch (direction) {
    case ConvDirection::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perfs[kRequested];
      cudnn_check(api.forward_algorithms(handle, in_->get(), filter_->get(), convolution_->get(), out_->get(), kRequested,
                                         &returned, perfs),
                  where + ": cudnnGetConvolutionForwardAlgorithm_v7");
      algorithm_ = first_usable(perfs, returned, /*deterministic=*/false);
      if (algorithm_ < 0) algorithm_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
      cudnn_check(api.forward_workspace(handle, in_->get(), filter_->get(), convolution_->get(), out_->get(),
                                        static_cast<cudnnConvolutionFwdAlgo_t>(algorithm_), &workspace_bytes_),
                  where + ": cudnnGetConvolutionForwardWorkspaceSize");
      break;
    }
    case ConvDirection::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perfs[kRequested];
      cudnn_check(api.backward_data_algorithms(handle, filter_->get(), out_->get(), convolution_->get(), in_->get(),
                                               kRequested, &returned, perfs),
                  where + ": cudnnGetConvolutionBackwardDataAlgorithm_v7");
      algorithm_ = first_usable(perfs, returned, /*deterministic=*/true);
      if (algorithm_ < 0) algorithm_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
      cudnn_check(api.backward_data_workspace(handle, filter_->get(), out_->get(), convolution_->get(), in_->get(),
                                              static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm_), &workspace_bytes_),
                  where + ": cudnnGetConvolutionBackwardDataWorkspaceSize");
      break;
    }
    case ConvDirection::kBackwardWeights: {
      cudnnConvolutionBwdFilterAlgoPerf_t perfs[kRequested];
      cudnn_check(api.backward_filter_algorithms(handle, in_->get(), out_->get(), convolution_->get(), filter_->get(),
                                                 kRequested, &returned, perfs),
                  where + ": cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      algorithm_ = first_usable(perfs, returned, /*deterministic=*/true);
      if (algorithm_ < 0) algorithm_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
      cudnn_check(api.backward_filter_workspace(handle, in_->get(), out_->get(), convolution_->get(), filter_->get(),
                                                static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm_),
                                                &workspace_bytes_),
                  where + ": cudnnGetConvolutionBackwardFilterWorkspaceSize");
      break;
    }
  }
}

void CudnnConv::run(cudnnHandle_t handle, const float* a, const float* b, float* out, void* workspace) const {
  const CudnnApi& api = cudnn();
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
