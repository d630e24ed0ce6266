// SoftmaxGrad and LogSoftmaxGrad on each accelerator against the CPU
// kernels, on the outputs of the CPU's own Softmax and LogSoftmax: the last
// axis (lines shorter than a warp, odd lengths, longer than a block: one
// block per line), inner axes (strided lines: one thread per line), the
// default axis, empty tensors; f32, f16 and bf16.
//
// The sum along a line is a tree on the GPU's block-per-line path and
// left-to-right on the CPU: in f32 the sums differ by a few ulps of the
// partial sums (|sum(dY * Y)| <= max |dY| since Y sums to 1), which
// Y * (dY - sum) carries as ~1e-7 absolute; LogSoftmaxGrad's sum of dY
// grows as sqrt(n) but is scaled by exp(Y) ~ 1/n. Hence an absolute bound
// next to the relative one.
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

class SoftmaxGradOnBackend : public testing::OnBackend {};

Tolerance tolerance(DType dtype) {
  return dtype == DType::kFloat32 ? Tolerance{1e-5, 1e-6} : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-4} : Tolerance{1e-2, 1e-3};
}

TEST_P(SoftmaxGradOnBackend, MatchesTheCpuAlongAnyAxis) {
  struct Case {
    std::vector<int64_t> sizes;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{5, 17}, -1}, {{3, 1000}, -1}, {{2, 4099}, 1}, {{1, 1}, -1}, {{64, 10}, -1},
      {{2, 3, 4}, 1}, {{6, 5, 7}, 0}, {{4, 33, 3}, -2}, {{70000, 2}, 0}, {{0, 5}, -1},
  };
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : cases) {
      const std::map<std::string, Attribute> axis = {{"axis", Attribute(c.axis)}};
      const int64_t count = testing::count_of(c.sizes);
      Tensor x = testing::make_tensor(dtype, testing::random_values(dtype, count, seed++, -5.0, 5.0), c.sizes);
      Tensor dy = testing::make_tensor(dtype, testing::random_values(dtype, count, seed++, -1.0, 1.0), c.sizes);
      Tensor y = testing::run_op("Softmax", {x}, axis)[0];
      Tensor log_y = testing::run_op("LogSoftmax", {x}, axis)[0];
      const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(c.sizes) + " axis " + std::to_string(c.axis);
      expect_same_as_cpu(GetParam(), "SoftmaxGrad", {dy, y}, axis, tolerance(dtype), label);
      expect_same_as_cpu(GetParam(), "LogSoftmaxGrad", {dy, log_y}, axis, tolerance(dtype), label);
    }
  }
  // The default axis is the last.
  Tensor x = testing::random_tensor(DType::kFloat32, {3, 4, 5}, 7);
  Tensor dy = testing::random_tensor(DType::kFloat32, {3, 4, 5}, 8);
  expect_same_as_cpu(GetParam(), "SoftmaxGrad", {dy, testing::run_op("Softmax", {x})[0]}, {}, tolerance(DType::kFloat32));
  expect_same_as_cpu(GetParam(), "LogSoftmaxGrad", {dy, testing::run_op("LogSoftmax", {x})[0]}, {}, tolerance(DType::kFloat32));
}

TEST_P(SoftmaxGradOnBackend, RefusesMismatchedInputsAndAxes) {
  Tensor dy = testing::random_tensor(DType::kFloat32, {4, 5}, 1);
  std::string message = testing::error_of(
      [&] { testing::run_node_on(GetParam(), "SoftmaxGrad", {dy, testing::random_tensor(DType::kFloat32, {5, 4}, 2)}); });
  EXPECT_NE(message.find("must have the same type"), std::string::npos) << message;
  message = testing::error_of([&] { testing::run_node_on(GetParam(), "SoftmaxGrad", {dy, dy}, {{"axis", Attribute(2)}}); });
  EXPECT_NE(message.find("axis"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Cuda, SoftmaxGradOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
