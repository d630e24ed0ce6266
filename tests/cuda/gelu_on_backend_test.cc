// Gelu (both forms: approximate "none" through erf, "tanh") and GeluGrad on
// each accelerator against the CPU kernels: short, odd and long tensors
// (more elements than one launch's blocks cover in one pass), empty ones,
// inputs deep into both tails; f32, f16 and bf16.
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

const std::vector<std::vector<int64_t>> kShapes = {{5, 17}, {3, 1000}, {1}, {2, 3, 4, 5}, {0, 4}, {70001}, {4100, 4100}};

// In the negative tail gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) cancels: erf
// near -1 carries an absolute error of an ulp or two of 1 (the GPU's erff
// and tanhf are within 2 ulps, the CPU's libm within 1), which the
// cancellation turns into up to ~1e-6 * |x| absolute in y, however small
// y is. Hence the absolute bound next to the relative one. The tanh form's
// derivative amplifies more: where tanh is within a few ulps of -1 (x near
// -4 .. -6) an ulp of t (6e-8) moves 0.5 x (1 - t^2) d_inner by up to
// |x| d_inner (~20) times as much, and dY (up to 2) doubles it: ~2.5e-6 per
// ulp of tanhf on a dX near 0. Hence 1e-5 absolute for f32.
Tolerance tolerance(DType dtype) {
  return dtype == DType::kFloat32 ? Tolerance{1e-5, 1e-5} : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-4} : Tolerance{1e-2, 1e-3};
}

class GeluOnBackend : public testing::OnBackend {};

TEST_P(GeluOnBackend, MatchesTheCpuInBothForms) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : kShapes) {
      if (dtype != DType::kFloat32 && testing::count_of(sizes) > 100000) continue;  // one long case is enough
      Tensor x = testing::make_tensor(dtype, testing::random_values(dtype, testing::count_of(sizes), seed++, -6.0, 6.0), sizes);
      Tensor dy = testing::make_tensor(dtype, testing::random_values(dtype, testing::count_of(sizes), seed++, -2.0, 2.0), sizes);
      const std::string label = std::string(dtype_name(dtype)) + " " + format_sizes(sizes);
      expect_same_as_cpu(GetParam(), "Gelu", {x}, {}, tolerance(dtype), label + " default form");
      for (const char* form : {"none", "tanh"}) {
        const std::map<std::string, Attribute> attributes = {{"approximate", Attribute(form)}};
        expect_same_as_cpu(GetParam(), "Gelu", {x}, attributes, tolerance(dtype), label + " " + form);
        expect_same_as_cpu(GetParam(), "GeluGrad", {dy, x}, attributes, tolerance(dtype), label + " " + form);
      }
    }
  }
}

TEST_P(GeluOnBackend, RejectsAnUnknownForm) {
  try {
    testing::run_node_on(GetParam(), "Gelu", {testing::random_tensor(DType::kFloat32, {4}, 3)},
                         {{"approximate", Attribute("sigmoid")}});
    ADD_FAILURE() << "approximate 'sigmoid' ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("approximate 'sigmoid' is not 'none' or 'tanh'"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, GeluOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
