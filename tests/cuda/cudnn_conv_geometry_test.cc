// How the CUDA convolutions put a problem to cuDNN (ops/cuda/
// cudnn_conv_geometry.h), checked on the host with the CPU's direct
// convolution loops: the problem the descriptors describe (1-D problems
// lifted to 2-D, asymmetric pads made explicit), run on the input padded
// as the CUDA kernel pads it, gives the original problem's results in all
// three directions, and its output sizes are those cuDNN derives from the
// descriptors. The shifted copies, the epilogue's indexing and the
// activations are the device code's own functions (conv_elements.h). Needs
// no GPU.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/cuda/conv_elements.h"
#include "ops/cuda/cudnn_conv_geometry.h"
#include "ops/elementwise/fused_activation.h"
#include "ops/nn/channels_last.h"
#include "ops/nn/conv_problem.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using cuda::CudnnConvGeometry;

// The problem cuDNN sees: the descriptor arrays read back, with pads on both
// ends of an axis alike (all cuDNN can express).
ConvProblem described_problem(const CudnnConvGeometry& g, int64_t group) {
  ConvProblem p;
  p.batch = g.in_dims[0];
  p.in_channels = g.in_dims[1];
  p.out_channels = g.filter_dims[0];
  p.group = group;
  p.spatial_rank = g.in_dims.size() - 2;
  for (size_t a = 0; a < p.spatial_rank; ++a) {
    p.in[a] = g.in_dims[a + 2];
    p.out[a] = g.out_dims[a + 2];
    p.kernel[a] = g.filter_dims[a + 2];
    p.strides[a] = g.strides[a];
    p.dilations[a] = g.dilations[a];
    p.pads_begin[a] = p.pads_end[a] = g.pads[a];
  }
  return p;
}

// cuDNN's output size for each axis of the described problem
// (cudnnGetConvolutionNdForwardOutputDim's formula).
std::vector<int64_t> cudnn_output_sizes(const ConvProblem& p) {
  std::vector<int64_t> out = {p.batch, p.out_channels};
  for (size_t a = 0; a < p.spatial_rank; ++a) {
    const int64_t extent = (p.kernel[a] - 1) * p.dilations[a] + 1;
    out.push_back((p.in[a] + 2 * p.pads_begin[a] - extent) / p.strides[a] + 1);
  }
  return out;
}

// What the CUDA kernel's shifted copy (conv::shifted_source) makes of
// x [planes, from...]: [planes, to...] where coordinate d holds x at
// d + offset, zeros outside x.
std::vector<float> shifted(const std::vector<float>& x, int64_t planes, const std::array<int64_t, 3>& from,
                           const std::array<int64_t, 3>& to, const int64_t (&offset)[3]) {
  cuda::conv::Shift shift;
  for (size_t a = 0; a < 3; ++a) {
    shift.src[a] = from[a];
    shift.dst[a] = to[a];
    shift.offset[a] = offset[a];
  }
  std::vector<float> result(static_cast<size_t>(planes * to[0] * to[1] * to[2]));
  for (size_t i = 0; i < result.size(); ++i) {
    const int64_t source = cuda::conv::shifted_source(shift, static_cast<int64_t>(i));
    result[i] = source < 0 ? 0.0f : x.at(static_cast<size_t>(source));
  }
  return result;
}

std::vector<float> random_floats(int64_t count, uint32_t seed) {
  std::vector<double> values = testing::random_values(DType::kFloat32, count, seed, -1.0, 1.0);
  return std::vector<float>(values.begin(), values.end());
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1.0 + std::abs(want[i]))) << what << ": element " << i;
  }
}

ConvProblem make_problem(size_t rank, int64_t batch, int64_t in_channels, int64_t out_channels, int64_t group,
                         std::array<int64_t, 3> in, std::array<int64_t, 3> kernel, std::array<int64_t, 3> strides,
                         std::array<int64_t, 3> dilations, std::array<int64_t, 3> pads_begin,
                         std::array<int64_t, 3> pads_end) {
  ConvProblem p;
  p.batch = batch;
  p.in_channels = in_channels;
  p.out_channels = out_channels;
  p.group = group;
  p.spatial_rank = rank;
  p.in = in;
  p.kernel = kernel;
  p.strides = strides;
  p.dilations = dilations;
  p.pads_begin = pads_begin;
  p.pads_end = pads_end;
  for (size_t a = 0; a < 3; ++a) {
    const int64_t extent = (kernel[a] - 1) * dilations[a] + 1;
    p.out[a] = (in[a] + pads_begin[a] + pads_end[a] - extent) / strides[a] + 1;
  }
  return p;
}

void check_geometry(const ConvProblem& p, const std::string& label) {
  SCOPED_TRACE(label);
  const CudnnConvGeometry g = cuda::cudnn_conv_geometry(p);
  ASSERT_GE(g.in_dims.size(), 4u) << "cuDNN's convolutions need two spatial axes at least";
  ASSERT_EQ(g.out_dims.size(), g.in_dims.size());
  ASSERT_EQ(g.filter_dims.size(), g.in_dims.size());
  ASSERT_EQ(g.pads.size(), g.in_dims.size() - 2);
  const ConvProblem d = described_problem(g, p.group);
  EXPECT_EQ(cudnn_output_sizes(d), g.out_dims);
  // The data keep their layout: [N, C, W] is [N, C, 1, W].
  EXPECT_EQ(testing::count_of(g.out_dims), testing::count_of(p.out_sizes()));
  EXPECT_EQ(testing::count_of(g.filter_dims), testing::count_of(p.weight_sizes()));

  const int64_t in_planes = p.batch * p.in_channels;
  std::vector<float> x = random_floats(testing::count_of(p.in_sizes()), 1);
  std::vector<float> w = random_floats(testing::count_of(p.weight_sizes()), 2);
  std::vector<float> dy = random_floats(testing::count_of(p.out_sizes()), 3);
  // What the kernel hands cuDNN: x padded by input_offset (to d's input sizes).
  const std::array<int64_t, 3> padded = g.problem.in;
  const int64_t pad[3] = {-g.input_offset[0], -g.input_offset[1], -g.input_offset[2]};
  std::vector<float> x_padded = shifted(x, in_planes, p.in, padded, pad);
  EXPECT_EQ(static_cast<int64_t>(x_padded.size()), testing::count_of(g.in_dims));

  std::vector<float> want(dy.size()), got(dy.size());
  conv_forward_direct<float>(p, x.data(), w.data(), nullptr, want.data());
  conv_forward_direct<float>(d, x_padded.data(), w.data(), nullptr, got.data());
  expect_near_all(got, want, "forward");

  std::vector<float> want_dx(x.size()), got_dx_padded(x_padded.size());
  conv_backward_data_direct<float>(p, dy.data(), w.data(), want_dx.data());
  conv_backward_data_direct<float>(d, dy.data(), w.data(), got_dx_padded.data());
  expect_near_all(shifted(got_dx_padded, in_planes, padded, p.in, g.input_offset), want_dx, "backward data");

  std::vector<float> want_dw(w.size()), got_dw(w.size());
  conv_backward_weights_direct<float>(p, dy.data(), x.data(), want_dw.data());
  conv_backward_weights_direct<float>(d, dy.data(), x_padded.data(), got_dw.data());
  expect_near_all(got_dw, want_dw, "backward weights");
}

TEST(CudnnConvGeometry, SymmetricPadsPassThrough) {
  ConvProblem p = make_problem(2, 2, 4, 6, 2, {9, 7, 1}, {3, 3, 1}, {2, 1, 1}, {1, 2, 1}, {1, 2, 0}, {1, 2, 0});
  const CudnnConvGeometry g = cuda::cudnn_conv_geometry(p);
  EXPECT_FALSE(g.explicit_padding);
  EXPECT_EQ(g.in_dims, (std::vector<int64_t>{2, 4, 9, 7}));
  EXPECT_EQ(g.filter_dims, (std::vector<int64_t>{6, 2, 3, 3}));
  EXPECT_EQ(g.pads, (std::vector<int64_t>{1, 2}));
  check_geometry(p, "2-D, groups, stride, dilation, symmetric pads");
}

TEST(CudnnConvGeometry, AsymmetricPadsBecomeExplicit) {
  // SAME_UPPER of a 4-wide kernel: one more pad at the end.
  ConvProblem p = make_problem(2, 2, 3, 5, 1, {8, 6, 1}, {4, 2, 1}, {1, 2, 1}, {1, 1, 1}, {1, 0}, {2, 1});
  const CudnnConvGeometry g = cuda::cudnn_conv_geometry(p);
  EXPECT_TRUE(g.explicit_padding);
  EXPECT_EQ(g.in_dims, (std::vector<int64_t>{2, 3, 11, 7}));
  EXPECT_EQ(g.pads, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(g.input_offset[0], 1);
  EXPECT_EQ(g.input_offset[1], 0);
  check_geometry(p, "2-D, asymmetric pads");
  check_geometry(make_problem(2, 1, 4, 4, 4, {7, 5, 1}, {3, 3, 1}, {2, 2, 1}, {2, 1, 1}, {2, 0}, {1, 3}),
                 "2-D depthwise, asymmetric pads, stride 2, dilation 2");
}

TEST(CudnnConvGeometry, OneDimensionalProblemsGainAnAxis) {
  ConvProblem p = make_problem(1, 3, 4, 2, 2, {11, 1, 1}, {3, 1, 1}, {2, 1, 1}, {2, 1, 1}, {2, 0, 0}, {2, 0, 0});
  const CudnnConvGeometry g = cuda::cudnn_conv_geometry(p);
  EXPECT_EQ(g.in_dims, (std::vector<int64_t>{3, 4, 1, 11}));
  EXPECT_EQ(g.out_dims, (std::vector<int64_t>{3, 2, 1, p.out[0]}));
  EXPECT_EQ(g.strides, (std::vector<int64_t>{1, 2}));
  check_geometry(p, "1-D, symmetric pads");
  check_geometry(make_problem(1, 2, 3, 3, 1, {10, 1, 1}, {4, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 0, 0}, {2, 0, 0}),
                 "1-D, asymmetric pads");
}

TEST(CudnnConvGeometry, ThreeDimensionalProblems) {
  check_geometry(make_problem(3, 2, 2, 4, 2, {5, 6, 4}, {2, 3, 2}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0}, {1, 1, 0}),
                 "3-D, symmetric pads");
  check_geometry(make_problem(3, 1, 3, 2, 1, {4, 5, 6}, {3, 2, 3}, {2, 1, 2}, {1, 1, 1}, {0, 1, 2}, {1, 0, 1}),
                 "3-D, asymmetric pads");
}

// The native 16-bit path pads a channels-last input in place of layout
// (channels_last_padding), and puts weights in cuDNN's KRSC order
// (channels_first_source): the padded channels-last input must be the
// channels-first padding, element for element, laid out channels-last.
void check_channels_last_padding(const ConvProblem& p, const std::string& label) {
  SCOPED_TRACE(label);
  const CudnnConvGeometry g = cuda::cudnn_conv_geometry(p);
  ASSERT_TRUE(g.explicit_padding);
  const int64_t channels = p.in_channels, plane = p.in_plane(), padded_plane = g.problem.in_plane();
  std::vector<float> x = random_floats(p.batch * channels * plane, 4);
  const int64_t pad[3] = {-g.input_offset[0], -g.input_offset[1], -g.input_offset[2]};
  std::vector<float> padded_first = shifted(x, p.batch * channels, p.in, g.problem.in, pad);
  std::vector<float> x_last(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x_last[i] = x[static_cast<size_t>(cuda::conv::channels_first_source(static_cast<int64_t>(i), channels, plane))];
  }
  const cuda::ChannelsLastPadding padding = cuda::channels_last_padding(g, p);
  std::vector<float> padded_last = shifted(x_last, p.batch, padding.from, padding.to, padding.offset);
  ASSERT_EQ(padded_last.size(), padded_first.size());
  for (size_t i = 0; i < padded_last.size(); ++i) {
    const int64_t j = cuda::conv::channels_first_source(static_cast<int64_t>(i), channels, padded_plane);
    ASSERT_EQ(padded_last[i], padded_first[static_cast<size_t>(j)]) << "element " << i;
    // channels_first_source inverts channels_last_source.
    ASSERT_EQ(cuda::conv::channels_last_source(j, channels, padded_plane), static_cast<int64_t>(i));
  }
}

TEST(CudnnConvGeometry, ChannelsLastPaddingPadsTheSpatialAxes) {
  check_channels_last_padding(make_problem(2, 2, 3, 5, 1, {8, 6, 1}, {4, 2, 1}, {1, 2, 1}, {1, 1, 1}, {1, 0}, {2, 1}),
                              "2-D, asymmetric pads");
  check_channels_last_padding(make_problem(2, 1, 4, 4, 4, {7, 5, 1}, {3, 3, 1}, {2, 2, 1}, {2, 1, 1}, {2, 0}, {1, 3}),
                              "2-D depthwise, asymmetric pads");
  check_channels_last_padding(make_problem(1, 2, 3, 3, 1, {10, 1, 1}, {4, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 0, 0}, {2, 0, 0}),
                              "1-D, asymmetric pads");
}

TEST(CudaConvElements, EpilogueFindsEachOutputsSumAndChannel) {
  // Every output element of either layout maps to the convolution sum of the
  // same (n, k, spatial) position, each exactly once.
  const int64_t batch = 2, channels = 3, plane = 5;
  const std::vector<int64_t> nchw = {batch, channels, plane};
  for (bool channels_last : {false, true}) {
    const std::vector<int64_t> y_sizes = channels_last ? channels_last_order(nchw) : nchw;
    std::vector<int> seen(static_cast<size_t>(batch * channels * plane), 0);
    for (int64_t i = 0; i < testing::count_of(y_sizes); ++i) {
      int64_t k = -1;
      const int64_t j = cuda::conv::epilogue_source(i, channels, plane, channels_last, k);
      const std::vector<int64_t> at = testing::unflatten(i, y_sizes);
      const std::vector<int64_t> want = channels_last ? std::vector<int64_t>{at[0], at[2], at[1]} : at;
      ASSERT_EQ(j, testing::flatten(want, nchw)) << "element " << i << (channels_last ? " (channels last)" : "");
      ASSERT_EQ(k, want[1]);
      ++seen[static_cast<size_t>(j)];
      // And the input side: channels_first reads [N, plane, C] element i of [N, C, plane] from here.
      const std::vector<int64_t> first = testing::unflatten(i, nchw);
      EXPECT_EQ(cuda::conv::channels_last_source(i, channels, plane),
                testing::flatten({first[0], first[2], first[1]}, channels_last_order(nchw)));
    }
    for (int count : seen) ASSERT_EQ(count, 1);
  }
}

TEST(CudaConvElements, ActivationsAreFusedActivations) {
  const std::vector<FusedActivation::Kind> kinds = {
      FusedActivation::Kind::kNone,    FusedActivation::Kind::kRelu, FusedActivation::Kind::kLeakyRelu,
      FusedActivation::Kind::kClip,    FusedActivation::Kind::kSigmoid, FusedActivation::Kind::kTanh,
      FusedActivation::Kind::kSilu,    FusedActivation::Kind::kGelu, FusedActivation::Kind::kGeluTanh};
  for (size_t index = 0; index < kinds.size(); ++index) {
    FusedActivation reference{kinds[index], -0.4f, 0.6f};
    if (kinds[index] == FusedActivation::Kind::kLeakyRelu) reference.alpha = 0.1f;
    // The device's enum follows FusedActivation's order (conv_kernels.cc maps by name).
    const cuda::conv::Activation device{static_cast<cuda::ConvActivation>(index), reference.alpha, reference.beta};
    for (float x = -6.0f; x <= 6.0f; x += 0.37f) {
      EXPECT_NEAR(device.apply(x), reference.apply(x), 1e-6 * (1 + std::abs(reference.apply(x))))
          << FusedActivation::name(kinds[index]) << " at " << x;
    }
  }
}

}  // namespace
}  // namespace weir
