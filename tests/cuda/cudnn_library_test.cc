// cuDNN opened by name on first use (ops/cuda/cudnn_library.h): every
// function the convolution kernels call resolves, and the descriptors they
// build from a problem's geometry are accepted, or refused with an error
// naming the call. Descriptors are host objects, so this needs no GPU; it
// skips where cuDNN is not installed.
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "ops/cuda/cudnn_conv_geometry.h"
#include "ops/cuda/cudnn_library.h"

namespace weir {
namespace {

class CudnnLibrary : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      cuda::cudnn();
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
  }
};

std::vector<int> as_ints(const std::vector<int64_t>& values) { return std::vector<int>(values.begin(), values.end()); }

TEST_F(CudnnLibrary, AcceptsTheDescriptorsOfEachProblemShape) {
  // 1-D (lifted to 2-D), 2-D grouped and dilated, 3-D with asymmetric pads (made explicit).
  std::vector<ConvProblem> problems(3);
  problems[0].spatial_rank = 1;
  problems[0].batch = 2, problems[0].in_channels = 3, problems[0].out_channels = 4, problems[0].group = 1;
  problems[0].in = {17, 1, 1}, problems[0].kernel = {5, 1, 1}, problems[0].out = {9, 1, 1};
  problems[0].strides = {2, 1, 1}, problems[0].pads_begin = {2, 0, 0}, problems[0].pads_end = {2, 0, 0};
  problems[1].spatial_rank = 2;
  problems[1].batch = 2, problems[1].in_channels = 4, problems[1].out_channels = 6, problems[1].group = 2;
  problems[1].in = {9, 7, 1}, problems[1].kernel = {3, 3, 1}, problems[1].out = {9, 7, 1};
  problems[1].dilations = {1, 2, 1}, problems[1].pads_begin = {1, 2, 0}, problems[1].pads_end = {1, 2, 0};
  problems[2].spatial_rank = 3;
  problems[2].batch = 1, problems[2].in_channels = 2, problems[2].out_channels = 3, problems[2].group = 1;
  problems[2].in = {4, 5, 6}, problems[2].kernel = {3, 2, 3}, problems[2].out = {2, 5, 3};
  problems[2].strides = {2, 1, 2}, problems[2].pads_begin = {0, 1, 1}, problems[2].pads_end = {1, 0, 0};
  for (const ConvProblem& p : problems) {
    const cuda::CudnnConvGeometry g = cuda::cudnn_conv_geometry(p);
    SCOPED_TRACE("spatial rank " + std::to_string(p.spatial_rank));
    EXPECT_NO_THROW(cuda::TensorDescriptor(CUDNN_DATA_FLOAT, as_ints(g.in_dims)));
    EXPECT_NO_THROW(cuda::TensorDescriptor(CUDNN_DATA_FLOAT, as_ints(g.out_dims)));
    EXPECT_NO_THROW(cuda::FilterDescriptor(CUDNN_DATA_FLOAT, as_ints(g.filter_dims)));
    EXPECT_NO_THROW(cuda::ConvolutionDescriptor(as_ints(g.pads), as_ints(g.strides), as_ints(g.dilations),
                                                static_cast<int>(p.group)));
    // The native 16-bit forms: channels-last data and KRSC filters (1-D and
    // 2-D problems; 3-D channels-last data widen to f32), tensor-op math.
    for (cudnnDataType_t type : {CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
      const bool last = p.spatial_rank <= 2;
      EXPECT_NO_THROW(cuda::TensorDescriptor(type, as_ints(g.in_dims), last));
      EXPECT_NO_THROW(cuda::TensorDescriptor(type, as_ints(g.out_dims), last));
      EXPECT_NO_THROW(
          cuda::FilterDescriptor(type, as_ints(g.filter_dims), last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW));
    }
    EXPECT_NO_THROW(cuda::ConvolutionDescriptor(as_ints(g.pads), as_ints(g.strides), as_ints(g.dilations),
                                                static_cast<int>(p.group), CUDNN_TENSOR_OP_MATH));
  }
}

TEST_F(CudnnLibrary, RefusalsNameTheCall) {
  std::string message;
  try {
    cuda::TensorDescriptor descriptor(CUDNN_DATA_FLOAT, {2, -3, 4, 4});
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("cudnnSetTensorNdDescriptor failed: CUDNN_STATUS"), std::string::npos) << message;
  message.clear();
  try {
    cuda::ConvolutionDescriptor descriptor({1, 1}, {0, 1}, {1, 1}, 1);  // a zero stride
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("cudnnSetConvolutionNdDescriptor failed: CUDNN_STATUS"), std::string::npos) << message;
}

}  // namespace
}  // namespace weir
