// The views that serve any device (Flatten, Identity: ops/tensor/
// tensor_kernels.h) on each accelerator against the CPU: the same sizes
// and the same elements, the input's memory shared rather than copied.
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

class ViewsOnBackend : public testing::OnBackend {};

TEST_P(ViewsOnBackend, FlattenAndIdentityMatchTheCpuExactly) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kInt64}) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{2, 3, 4, 5}, {7}, {0, 3}, {}}) {
      Tensor x = testing::random_tensor(dtype, sizes, seed++);
      expect_same_as_cpu(GetParam(), "Identity", {x}, {}, Tolerance{}, x.type_string());
      const int64_t rank = static_cast<int64_t>(sizes.size());
      for (int64_t axis = -rank; axis <= rank; ++axis) {
        expect_same_as_cpu(GetParam(), "Flatten", {x}, {{"axis", Attribute(axis)}}, Tolerance{},
                           x.type_string() + " axis " + std::to_string(axis));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, ViewsOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
