// MatMul and Gemm on each accelerator against the CPU kernels: MatMul's
// batch broadcasting (one B, one A, both batched, general broadcast, 1-D
// operands, an empty inner dimension) and Gemm's transA/transB, alpha, beta
// and C broadcast as a scalar, a row, a column or a full matrix; odd sizes.
#include <map>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

class MatMulOnBackend : public testing::OnBackend {};

Tensor uniform(const std::vector<int64_t>& sizes, uint32_t seed) {
  return testing::make_tensor(DType::kFloat32, testing::random_values(DType::kFloat32, testing::count_of(sizes), seed, -1.0, 1.0),
                              sizes);
}

// f32 sums of k products in [-1, 1] in different orders differ by a few
// ulps of the partial sums, which grow like sqrt(k).
Tolerance for_inner(int64_t k) { return {1e-5, 2e-6 * static_cast<double>(std::max<int64_t>(k, 1))}; }

TEST_P(MatMulOnBackend, MatMulBroadcastsBatchesLikeTheCpu) {
  struct Case {
    std::vector<int64_t> a, b;
  };
  const std::vector<Case> cases = {
      {{5, 7}, {7, 3}},                 // plain
      {{33, 65}, {65, 17}},             // odd sizes
      {{4, 5, 7}, {7, 3}},              // one B: A's batch folded into rows
      {{5, 7}, {4, 7, 3}},              // one A for every B
      {{2, 3, 5, 7}, {2, 3, 7, 3}},     // same batch on both sides
      {{2, 1, 5, 7}, {1, 3, 7, 3}},     // general broadcast
      {{7}, {7, 3}},                    // 1-D A
      {{4, 5, 7}, {7}},                 // 1-D B
      {{7}, {7}},                       // dot product
      {{5, 0}, {0, 3}},                 // empty inner dimension: zeros
      {{0, 7}, {7, 3}},                 // empty result
      {{128, 256}, {256, 96}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Tensor a = uniform(c.a, seed++);
    Tensor b = uniform(c.b, seed++);
    expect_same_as_cpu(GetParam(), "MatMul", {a, b}, {}, for_inner(c.a.back()));
  }
}

TEST_P(MatMulOnBackend, GemmTransposesScalesAndAddsBroadcastC) {
  const int64_t m = 13, k = 29, n = 11;
  uint32_t seed = 50;
  for (int trans_a : {0, 1}) {
    for (int trans_b : {0, 1}) {
      Tensor a = uniform(trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, seed++);
      Tensor b = uniform(trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, seed++);
      for (const std::vector<int64_t>& c_sizes : std::vector<std::vector<int64_t>>{{}, {n}, {m, 1}, {m, n}}) {
        Tensor c = uniform(c_sizes, seed++);
        std::map<std::string, Attribute> attributes = {{"transA", Attribute(int64_t{trans_a})},
                                                       {"transB", Attribute(int64_t{trans_b})},
                                                       {"alpha", Attribute(0.75)},
                                                       {"beta", Attribute(-1.5)}};
        expect_same_as_cpu(GetParam(), "Gemm", {a, b, c}, attributes, for_inner(k),
                           "transA " + std::to_string(trans_a) + ", transB " + std::to_string(trans_b));
      }
      // No C, and the defaults (alpha = beta = 1).
      expect_same_as_cpu(GetParam(), "Gemm", {a, b}, {{"transA", Attribute(int64_t{trans_a})}, {"transB", Attribute(int64_t{trans_b})}},
                         for_inner(k));
    }
  }
  // beta = 0 ignores C; an empty inner dimension leaves beta * C.
  Tensor c = uniform({m, n}, 99);
  expect_same_as_cpu(GetParam(), "Gemm", {uniform({m, k}, 97), uniform({k, n}, 98), c}, {{"beta", Attribute(0.0)}}, for_inner(k));
  expect_same_as_cpu(GetParam(), "Gemm", {uniform({m, 0}, 95), uniform({0, n}, 96), c}, {{"beta", Attribute(2.0)}}, Tolerance{});
}

INSTANTIATE_TEST_SUITE_P(Cuda, MatMulOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
