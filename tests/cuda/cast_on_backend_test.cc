// Cast on each accelerator against the CPU kernel, every dtype to every
// dtype, bit for bit: random values, and the edge cases of the CPU's rules
// (ops/cast/cast.h): halves and negatives truncated toward zero, values
// beyond the target's range saturated (float to integer) or wrapped
// (integer to integer), NaN to 0 and to true, infinities, f64 values that
// round twice on their way to f16 and bf16, 64-bit integers that round to
// f32. Sizes: empty, one element, several waves of blocks.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

class CastOnBackend : public testing::OnBackend {};

// Values every source type can hold exactly (or, for floats, holds as its
// own rounding of them), chosen for `dtype`.
std::vector<double> edge_values(DType dtype) {
  if (is_floating(dtype)) {
    const double inf = std::numeric_limits<double>::infinity();
    return {0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 127.0, 128.0, -128.0, -129.0, 255.0, 256.0, 300.7, -300.7,
            32767.0, 32768.0, -32769.0, 65504.0, 65520.0, 70000.0, 2147483647.0, 2147483648.0, -2147483649.0,
            4294967296.0, 1e10, -1e10, 9.3e18, -9.3e18, 1.9e19, 1e30, -1e30, 1e39, -1e39,
            1.0000000596046448, 1.00048828125, 1.0009765625 + 1e-12, 3.0e-8, 6.0e-8, 1e-40,
            inf, -inf, std::nan("")};
  }
  if (dtype == DType::kBool) return {0.0, 1.0, 1.0, 0.0};
  std::vector<double> values = {0.0, 1.0, 2.0, 3.0, 7.0, 100.0, 127.0};
  if (is_signed(dtype)) values.insert(values.end(), {-1.0, -2.0, -100.0, -128.0});
  if (dtype_size(dtype) >= 2) values.insert(values.end(), {255.0, 256.0, 300.0, 32767.0, 2049.0, 4097.0});
  if (dtype_size(dtype) >= 2 && is_signed(dtype)) values.insert(values.end(), {-129.0, -32768.0, -300.0});
  if (dtype == DType::kUInt16) values.insert(values.end(), {65535.0, 40000.0});
  if (dtype_size(dtype) >= 4) values.insert(values.end(), {65536.0, 16777217.0, 16777219.0, 2147483647.0, 100000007.0});
  if (dtype_size(dtype) >= 4 && is_signed(dtype)) values.insert(values.end(), {-2147483648.0, -16777217.0});
  if (dtype == DType::kUInt32) values.push_back(4294967295.0);
  if (dtype_size(dtype) == 8) {
    // Exact in f64, not in f32: integer-to-float rounding to nearest.
    values.insert(values.end(), {4294967296.0 * 3 + 1, 1099511627777.0, 4611686018427387904.0 + 1048576.0});
    if (is_signed(dtype)) values.insert(values.end(), {-1099511627777.0, -4611686018427387904.0 - 2097152.0});
    else values.push_back(9223372036854775808.0 + 4194304.0);
  }
  return values;
}

TEST_P(CastOnBackend, EveryTypeToEveryTypeMatchesTheCpuBitForBit) {
  uint32_t seed = 1;
  for (DType from : kAllDTypes) {
    std::vector<double> edges = edge_values(from);
    const std::vector<Tensor> inputs = {
        testing::make_tensor(from, edges, {static_cast<int64_t>(edges.size())}),
        // Wide floats: most land outside the small integer types' ranges.
        testing::make_tensor(from, testing::random_values(from, 3 * 1000, seed++, -400.0, 400.0), {3, 1000}),
        testing::random_tensor(from, {5, 7, 3}, seed++),
        testing::random_tensor(from, {1}, seed++),
        testing::random_tensor(from, {0, 4}, seed++),
        testing::random_tensor(from, {}, seed++),
    };
    for (DType to : kAllDTypes) {
      for (const Tensor& x : inputs) {
        expect_same_as_cpu(GetParam(), "Cast", {x}, {{"to", Attribute(static_cast<int64_t>(to))}}, Tolerance{},
                           std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)));
      }
    }
  }
}

// 2^25 elements: the grid-stride loop goes round a full grid (65536 blocks of 256) twice.
TEST_P(CastOnBackend, CoversTensorsLargerThanTheGrid) {
  Tensor x = testing::make_tensor(DType::kFloat32,
                                  testing::random_values(DType::kFloat32, 1 << 25, 7, -70000.0, 70000.0), {1 << 25});
  for (DType to : {DType::kFloat16, DType::kInt16, DType::kUInt8}) {
    expect_same_as_cpu(GetParam(), "Cast", {x}, {{"to", Attribute(static_cast<int64_t>(to))}}, Tolerance{},
                       std::string("f32 to ") + std::string(dtype_name(to)));
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, CastOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
