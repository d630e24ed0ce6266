// The window arithmetic the CUDA pooling kernels run (ops/cuda/
// pool_windows.h), executed on the host over every window of
// pool_test_cases.h and compared with the CPU kernels: MaxPool's maxima and
// Indices (both storage orders), AveragePool's means (both
// count_include_pad), and the gathered MaxPoolGrad and AveragePoolGrad.
// Inputs of a few distinct values put ties in most windows; NaNs must win.
// Needs no GPU: it checks the device code's logic where no device is.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/cuda/pool_kernels.h"
#include "ops/cuda/pool_windows.h"
#include "ops/nn/pool_problem.h"
#include "tests/cuda/pool_test_cases.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::PoolCase;

// The windows the CUDA kernel derives for this node and input.
cuda::PoolWindows windows_for(const std::string& op, const Tensor& x, const std::map<std::string, Attribute>& attributes) {
  testing::SingleOpGraph single = testing::single_op_graph(op, {x}, attributes, 1);
  return pool_windows_of(pool_problem(*single.graph->nodes().at(0), x.sizes()));
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Values from {-2, ..., 2} (ties in most windows), with a NaN now and then when `with_nan`.
Tensor tied_values(const std::vector<int64_t>& sizes, uint32_t seed, bool with_nan) {
  std::vector<double> values = testing::random_values(DType::kFloat32, testing::count_of(sizes), seed, -2.5, 2.5);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::round(values[i]);
    if (with_nan && i % 37 == 11) values[i] = std::numeric_limits<double>::quiet_NaN();
  }
  return testing::make_tensor(DType::kFloat32, values, sizes);
}

void check_case(const PoolCase& c, const Tensor& x, uint32_t seed) {
  const cuda::PoolWindows w = windows_for("MaxPool", x, c.attributes);
  const float* px = x.data<float>();
  const int64_t in_plane = w.in_plane(), out_plane = w.out_plane();
  ASSERT_EQ(w.planes * in_plane, x.num_elements());

  for (int64_t order : {0, 1}) {
    auto attributes = c.attributes;
    attributes["storage_order"] = Attribute(order);
    std::vector<Tensor> want = testing::run_op("MaxPool", {x}, attributes, 2);
    ASSERT_EQ(want[0].num_elements(), w.planes * out_plane);
    for (int64_t i = 0; i < want[0].num_elements(); ++i) {
      const int64_t plane = i / out_plane;
      int64_t o[3];
      cuda::pool::output_coordinates(w, i % out_plane, o);
      const float* src = px + plane * in_plane;
      const int64_t best = cuda::pool::first_max(w, [&](int64_t tap) { return src[tap]; }, o);
      const float y = best < 0 ? -std::numeric_limits<float>::infinity() : src[best];
      ASSERT_TRUE(same_float(y, want[0].data<float>()[i])) << "MaxPool element " << i << ": " << y;
      ASSERT_EQ(plane * in_plane + cuda::pool::index_offset(w, best, order != 0), want[1].data<int64_t>()[i])
          << "Indices element " << i << ", storage_order " << order;
    }
  }

  for (int64_t include_pad : {0, 1}) {
    auto attributes = c.attributes;
    attributes["count_include_pad"] = Attribute(include_pad);
    Tensor want = testing::run_op("AveragePool", {x}, attributes)[0];
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      int64_t o[3];
      cuda::pool::output_coordinates(w, i % out_plane, o);
      const float* src = px + (i / out_plane) * in_plane;
      const float y = cuda::pool::average(w, [&](int64_t tap) { return src[tap]; }, o, include_pad != 0);
      const float expected = want.data<float>()[i];
      ASSERT_TRUE(same_float(y, expected) || std::abs(y - expected) <= 1e-6 * (1 + std::abs(expected)))
          << "AveragePool element " << i << ", count_include_pad " << include_pad << ": " << y << " vs " << expected;
    }
  }

  Tensor y = testing::run_op("MaxPool", {x}, c.attributes)[0];
  Tensor dy = testing::make_tensor(DType::kFloat32,
                                   testing::random_values(DType::kFloat32, y.num_elements(), seed, -1.0, 1.0), y.sizes());
  const float* pdy = dy.data<float>();
  Tensor want_max = testing::run_op("MaxPoolGrad", {dy, x}, c.attributes)[0];
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float* src = px + (i / in_plane) * in_plane;
    const float* grad = pdy + (i / in_plane) * out_plane;
    const float got = cuda::pool::max_pool_grad(w, [&](int64_t tap) { return src[tap]; },
                                                [&](int64_t offset) { return grad[offset]; }, i % in_plane);
    // The same f32 additions in the same order: bit for bit.
    ASSERT_EQ(got, want_max.data<float>()[i]) << "MaxPoolGrad element " << i;
  }
  for (int64_t include_pad : {0, 1}) {
    auto attributes = c.attributes;
    attributes["count_include_pad"] = Attribute(include_pad);
    Tensor want = testing::run_op("AveragePoolGrad", {dy, x}, attributes)[0];
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const float* grad = pdy + (i / in_plane) * out_plane;
      const float got = cuda::pool::average_pool_grad(w, [&](int64_t offset) { return grad[offset]; }, i % in_plane,
                                                      include_pad != 0);
      ASSERT_EQ(got, want.data<float>()[i]) << "AveragePoolGrad element " << i << ", count_include_pad " << include_pad;
    }
  }
}

TEST(CudaPoolWindows, MatchTheCpuKernelsWithTies) {
  uint32_t seed = 1;
  for (const PoolCase& c : testing::pool_cases()) {
    SCOPED_TRACE(c.label);
    check_case(c, tied_values(c.x, seed, /*with_nan=*/false), seed + 1);
    seed += 2;
  }
}

TEST(CudaPoolWindows, MatchTheCpuKernelsOnUniformValues) {
  uint32_t seed = 100;
  for (const PoolCase& c : testing::pool_cases()) {
    SCOPED_TRACE(c.label);
    std::vector<double> values = testing::random_values(DType::kFloat32, testing::count_of(c.x), seed, -1.0, 1.0);
    check_case(c, testing::make_tensor(DType::kFloat32, values, c.x), seed + 1);
    seed += 2;
  }
}

TEST(CudaPoolWindows, NaNsWinTheirWindows) {
  uint32_t seed = 200;
  for (const PoolCase& c : testing::pool_cases()) {
    SCOPED_TRACE(c.label);
    check_case(c, tied_values(c.x, seed, /*with_nan=*/true), seed + 1);
    seed += 2;
  }
}

}  // namespace
}  // namespace weir
