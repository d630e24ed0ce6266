// MatMul, Gemm and FusedMatMul on each accelerator against the CPU kernels,
// in f32, f16 and bf16: MatMul's batch broadcasting (one B, one A for every
// B, both batched, general broadcast, 1-D operands, an empty inner
// dimension); Gemm's transA/transB, alpha, beta and C broadcast as a
// scalar, a row, a column or a full matrix, and its f32 output_dtype from
// f16/bf16; FusedMatMul with every activation, with and without a bias,
// batched A, and its f32 output_dtype; odd sizes throughout.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ops/elementwise/fused_activation.h"
#include "ops/wide_output.h"
#include "tests/backend_comparison.h"
#include "tests/cuda/backend_test_inputs.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;
using testing::uniform;

class MatMulOnBackend : public testing::OnBackend {};

const std::vector<DType> kTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// f32 sums of k products in [-1, 1] in different orders (cuBLASLt's
// blocking, oneDNN's) differ by a few ulps of the partial sums, which grow
// like sqrt(k). The 16-bit types sum in f32 on both sides too, then round
// once: the two roundings may land an ulp of the type apart (2^-11 relative
// for f16, 2^-8 for bf16), and the f32 differences before them scale with k.
Tolerance for_inner(DType dtype, int64_t k) {
  const double inner = static_cast<double>(std::max<int64_t>(k, 1));
  switch (dtype) {
    case DType::kFloat16: return {2e-3, 1e-5 * inner};
    case DType::kBFloat16: return {1e-2, 1e-5 * inner};
    default: return {1e-5, 2e-6 * inner};
  }
}

// Gemm with C in f16/bf16 rounds twice, as the CPU does: the product to the
// type, then the sum with beta * C. Where the two sides' f32 products
// straddle a rounding boundary, the rounded products differ by an ulp of
// the type at the product's magnitude (sums of k products in [-1, 1]: about
// sqrt(k) at most), and adding beta * C may cancel most of the result, so
// that ulp is allowed absolutely.
Tolerance for_inner_then_c(DType dtype, int64_t k) {
  Tolerance tolerance = for_inner(dtype, k);
  const double root_k = std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  if (dtype == DType::kFloat16) tolerance.absolute += std::ldexp(1.0, -10) * root_k;
  if (dtype == DType::kBFloat16) tolerance.absolute += std::ldexp(1.0, -7) * root_k;
  return tolerance;
}

// An f32 output written from f16/bf16 inputs (output_dtype): the f32 sums
// themselves, unrounded. Looser than for_inner(f32) because the CPU's bf16
// product may add pairs of products inside its dot instructions, another
// order of f32 roundings; still far below a bf16 or f16 ulp.
Tolerance for_wide(int64_t k) { return {1e-4, 1e-5 * static_cast<double>(std::max<int64_t>(k, 1))}; }

Attribute output_dtype_f32() { return Attribute(static_cast<int64_t>(DType::kFloat32)); }

TEST_P(MatMulOnBackend, MatMulBroadcastsBatchesLikeTheCpu) {
  struct Case {
    std::vector<int64_t> a, b;
  };
  const std::vector<Case> cases = {
      {{5, 7}, {7, 3}},                 // plain
      {{33, 65}, {65, 17}},             // odd sizes
      {{64, 128}, {128, 32}},           // aligned sizes (tensor-core algorithms for f16/bf16)
      {{4, 5, 7}, {7, 3}},              // one B: A's batch folded into rows
      {{5, 7}, {4, 7, 3}},              // one A for every B: a batch stride of 0
      {{2, 3, 5, 7}, {2, 3, 7, 3}},     // same batch on both sides
      {{1, 3, 5, 7}, {2, 3, 7, 3}},     // A broadcast along the outer axis: two batches of 3
      {{2, 1, 5, 7}, {1, 3, 7, 3}},     // general broadcast: batches of 3 with A's stride 0
      {{3, 1, 4, 6}, {5, 6, 2}},        // general broadcast against fewer batch axes
      {{7}, {7, 3}},                    // 1-D A
      {{4, 5, 7}, {7}},                 // 1-D B
      {{7}, {3, 7, 2}},                 // 1-D A against a batched B
      {{7}, {7}},                       // dot product
      {{5, 0}, {0, 3}},                 // empty inner dimension: zeros
      {{2, 5, 0}, {2, 0, 3}},           // the same, batched
      {{0, 7}, {7, 3}},                 // empty result
      {{2, 0, 5, 7}, {7, 3}},           // empty batch
      {{128, 256}, {256, 96}},
  };
  for (DType dtype : kTypes) {
    uint32_t seed = 1;
    for (const Case& c : cases) {
      Tensor a = uniform(dtype, c.a, seed++);
      Tensor b = uniform(dtype, c.b, seed++);
      expect_same_as_cpu(GetParam(), "MatMul", {a, b}, {}, for_inner(dtype, c.a.back()));
    }
  }
}

TEST_P(MatMulOnBackend, GemmTransposesScalesAndAddsBroadcastC) {
  // The LeNet training graph's gradient Gemms are these transposes too
  // (dA = dY op(B)^T, dB = op(A)^T dY: transA or transB set, alpha kept).
  const int64_t m = 13, k = 29, n = 11;
  for (DType dtype : kTypes) {
    uint32_t seed = 50;
    for (int trans_a : {0, 1}) {
      for (int trans_b : {0, 1}) {
        Tensor a = uniform(dtype, trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, seed++);
        Tensor b = uniform(dtype, trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, seed++);
        const std::string label = std::string(dtype_name(dtype)) + ", transA " + std::to_string(trans_a) +
                                  ", transB " + std::to_string(trans_b);
        for (const std::vector<int64_t>& c_sizes :
             std::vector<std::vector<int64_t>>{{}, {1}, {n}, {1, n}, {m, 1}, {1, 1}, {m, n}}) {
          Tensor c = uniform(dtype, c_sizes, seed++);
          std::map<std::string, Attribute> attributes = {{"transA", Attribute(int64_t{trans_a})},
                                                         {"transB", Attribute(int64_t{trans_b})},
                                                         {"alpha", Attribute(0.75)},
                                                         {"beta", Attribute(-1.5)}};
          expect_same_as_cpu(GetParam(), "Gemm", {a, b, c}, attributes, for_inner_then_c(dtype, k),
                             label + ", C " + c.type_string());
        }
        // No C, and the defaults (alpha = beta = 1) with a full C.
        const std::map<std::string, Attribute> transposes = {{"transA", Attribute(int64_t{trans_a})},
                                                             {"transB", Attribute(int64_t{trans_b})}};
        expect_same_as_cpu(GetParam(), "Gemm", {a, b}, transposes, for_inner(dtype, k), label + ", no C");
        expect_same_as_cpu(GetParam(), "Gemm", {a, b, uniform(dtype, {m, n}, seed++)}, transposes,
                           for_inner_then_c(dtype, k), label + ", alpha = beta = 1");
        if (dtype != DType::kFloat32) {
          // f32 written from the 16-bit inputs: the weight gradients of mixed-precision training.
          std::map<std::string, Attribute> wide = transposes;
          wide[kOutputDtypeAttr] = output_dtype_f32();
          wide["alpha"] = Attribute(0.5);
          expect_same_as_cpu(GetParam(), "Gemm", {a, b}, wide, for_wide(k), label + ", output_dtype f32");
        }
      }
    }
    // beta = 0 ignores C; an empty inner dimension leaves beta * C.
    Tensor c = uniform(dtype, {m, n}, 99);
    expect_same_as_cpu(GetParam(), "Gemm", {uniform(dtype, {m, k}, 97), uniform(dtype, {k, n}, 98), c},
                       {{"beta", Attribute(0.0)}}, for_inner(dtype, k), "beta 0");
    expect_same_as_cpu(GetParam(), "Gemm", {uniform(dtype, {m, 0}, 95), uniform(dtype, {0, n}, 96), c},
                       {{"beta", Attribute(2.0)}}, for_inner(dtype, 1), "K 0");
    // Larger, aligned sizes, where cuBLASLt picks other (tensor-core, split) algorithms.
    expect_same_as_cpu(GetParam(), "Gemm", {uniform(dtype, {256, 96}, 93), uniform(dtype, {128, 256}, 94)},
                       {{"transA", Attribute(int64_t{1})}, {"transB", Attribute(int64_t{1})}}, for_inner(dtype, 256),
                       "96 x 256 x 128, both transposed");
  }
}

// Every activation FusedMatMul knows, with the attributes it reads.
std::vector<std::map<std::string, Attribute>> every_activation() {
  std::vector<std::map<std::string, Attribute>> result;
  for (const std::string& name : FusedActivation::names()) {
    std::map<std::string, Attribute> attributes = {{"activation", Attribute(name)}};
    if (name == "LeakyRelu") attributes["activation_alpha"] = Attribute(0.2);
    if (name == "Clip") {
      attributes["activation_alpha"] = Attribute(-0.4);
      attributes["activation_beta"] = Attribute(0.6);
    }
    result.push_back(attributes);
  }
  return result;
}

TEST_P(MatMulOnBackend, FusedMatMulAddsBiasAndAppliesEveryActivation) {
  struct Case {
    std::vector<int64_t> a;
    int64_t n;
  };
  const std::vector<Case> cases = {
      {{13, 29}, 11},     // odd sizes
      {{2, 3, 16}, 24},   // batched A, folded into rows
      {{64, 128}, 64},    // aligned sizes
      {{5, 0}, 7},        // K 0: the activation of the bias (or of zeros)
  };
  ASSERT_EQ(every_activation().size(), 9u) << "a new activation: check the CUDA kernel maps it";
  for (DType dtype : kTypes) {
    uint32_t seed = 200;
    for (const Case& c : cases) {
      const int64_t k = c.a.back();
      // Sums of k products in [-1, 1] plus a bias in [-1, 1] spread over a
      // few units around 0, where every activation bends (and Clip's bounds cut).
      Tensor a = uniform(dtype, c.a, seed++);
      Tensor b = uniform(dtype, {k, c.n}, seed++);
      Tensor bias = uniform(dtype, {c.n}, seed++);
      for (const auto& activation : every_activation()) {
        const std::string label = std::string(dtype_name(dtype)) + ", " + activation.at("activation").s() + ", A " +
                                  a.type_string();
        expect_same_as_cpu(GetParam(), "FusedMatMul", {a, b, bias}, activation, for_inner(dtype, k), label + ", bias");
        expect_same_as_cpu(GetParam(), "FusedMatMul", {a, b}, activation, for_inner(dtype, k), label + ", no bias");
        if (dtype != DType::kFloat32 && k > 0) {
          // The CPU writes a wide FusedMatMul only with K > 0 (through oneDNN).
          std::map<std::string, Attribute> wide = activation;
          wide[kOutputDtypeAttr] = output_dtype_f32();
          expect_same_as_cpu(GetParam(), "FusedMatMul", {a, b, bias}, wide, for_wide(k), label + ", bias, output_dtype f32");
          expect_same_as_cpu(GetParam(), "FusedMatMul", {a, b}, wide, for_wide(k), label + ", output_dtype f32");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, MatMulOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
