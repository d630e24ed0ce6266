// Pad in every mode (negative pads, axes, size-1 and empty axes) against a
// reference that folds coordinates back step by step, PadGrad against finite
// differences, and malformed pads.
#include <gtest/gtest.h>

#include <limits>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::error_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

Tensor i64(std::vector<int64_t> values) {
  auto n = static_cast<int64_t>(values.size());
  return Tensor::from_vector<int64_t>(values, {n});
}

// The input coordinate padded coordinate x (already minus the begin pad)
// copies, or -1 for the constant; folds one reflection or period at a time.
int64_t fold(int64_t x, int64_t n, const std::string& mode) {
  if (x >= 0 && x < n) return x;
  if (mode == "constant") return -1;
  if (mode == "edge") return x < 0 ? 0 : n - 1;
  while (x < 0 || x >= n) {
    if (mode == "wrap") {
      x += x < 0 ? n : -n;
    } else if (n == 1) {
      x = 0;
    } else {
      x = x < 0 ? -x : 2 * (n - 1) - x;
    }
  }
  return x;
}

std::vector<double> reference_pad(const std::vector<double>& values, const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& begin, const std::vector<int64_t>& out_sizes,
                                  const std::string& mode, double constant) {
  std::vector<double> out(static_cast<size_t>(count_of(out_sizes)));
  for (int64_t flat = 0; flat < count_of(out_sizes); ++flat) {
    int64_t rest = flat, source = 0, stride = 1;
    bool inside = true;
    for (size_t a = out_sizes.size(); a-- > 0;) {
      int64_t c = rest % out_sizes[a];
      rest /= out_sizes[a];
      int64_t x = fold(c - begin[a], sizes[a], mode);
      if (x < 0) inside = false;
      source += x * stride;
      stride *= sizes[a];
    }
    out[static_cast<size_t>(flat)] = inside ? values[static_cast<size_t>(source)] : constant;
  }
  return out;
}

TEST(PadKernels, EveryModeMatchesTheReference) {
  const std::vector<int64_t> sizes = {3, 1, 4};
  for (DType dtype : {DType::kFloat32, DType::kInt32, DType::kBFloat16}) {
    Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), 1), sizes);
    std::vector<double> values = to_doubles(x);
    for (const char* mode : {"constant", "edge", "reflect", "wrap"}) {
      // Pads wider than the axis (several reflections/periods) and a crop.
      std::vector<int64_t> pads = {2, 3, 5, 4, 0, -1};
      std::vector<Tensor> inputs = {x, i64(pads)};
      double constant = 0;
      if (std::string(mode) == "constant") {
        constant = 2;
        inputs.push_back(make_tensor(dtype, {constant}, {}));
      }
      Tensor y = run_op("Pad", inputs, {{"mode", Attribute(std::string(mode))}})[0];
      std::vector<int64_t> begin = {2, 3, 5}, out_sizes = {9, 4, 8};
      ASSERT_EQ(y.sizes(), out_sizes) << mode;
      EXPECT_EQ(to_doubles(y), reference_pad(values, sizes, begin, out_sizes, mode, constant)) << mode << " " << dtype_name(dtype);
    }
  }
}

TEST(PadKernels, AxesInputAndEmptyAxes) {
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 6, 2), {2, 3});
  Tensor y = run_op("Pad", {x, i64({1, 2}), Tensor(), i64({-1})}, {{"mode", Attribute(std::string("reflect"))}})[0];
  EXPECT_EQ(to_doubles(y), reference_pad(to_doubles(x), {2, 3}, {0, 1}, {2, 6}, "reflect", 0));
  Tensor empty = make_tensor(DType::kFloat32, {}, {0, 2});
  EXPECT_EQ(run_op("Pad", {empty, i64({1, 0, 1, 0})})[0].sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_NE(error_of("Pad", {empty, i64({1, 0, 1, 0})}, {{"mode", Attribute(std::string("edge"))}}).find("empty axis 0"),
            std::string::npos);
}

TEST(PadKernels, MalformedPadsNameTheProblem) {
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 6, 3), {2, 3});
  EXPECT_NE(error_of("Pad", {x, i64({1, 2, 3})}).find("needs 4 values"), std::string::npos);
  EXPECT_NE(error_of("Pad", {x, i64({0, -2, 0, -2})}).find("below 0"), std::string::npos);
  // Pads from a file near INT64_MAX: the sum is checked, not wrapped.
  const int64_t huge = std::numeric_limits<int64_t>::max() - 1;
  EXPECT_NE(error_of("Pad", {x, i64({0, huge, 0, huge})}).find("overflow axis 1"), std::string::npos);
  EXPECT_NE(error_of("Pad", {x, i64({0, 0, 0, 0})}, {{"mode", Attribute(std::string("mirror"))}}).find("mode 'mirror'"),
            std::string::npos);
}

TEST(PadGradients, EveryModeMatchesFiniteDifferences) {
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 12, 4), {3, 4});
  for (const char* mode : {"constant", "edge", "reflect", "wrap"}) {
    check_gradient("Pad", {x, i64({2, -1, 4, 3})}, {0}, {{"mode", Attribute(std::string(mode))}});
  }
}

}  // namespace
}  // namespace weir
