// Attention on each accelerator against the CPU kernel: several batch,
// sequence, head and head-size shapes (a sequence of 128 with 64-wide
// heads, odd sizes, fewer keys than a warp), no mask and masks of every
// broadcast rank, a causal mask, an explicit scale; f32 and bf16. The fused
// kernel's limit on S + D is checked to fail naming it.
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::expect_same_as_cpu;
using testing::Tolerance;

struct Shape {
  int64_t batch, seq, heads, dim;
};

// f32: the CPU multiplies through oneDNN, the GPU in its own order; outputs
// are averages of values in [-1, 1] and may be near 0, hence the absolute
// bound. bf16: the CPU rounds the scores and the probabilities to bf16
// before the second product (oneDNN's bf16 matmuls and softmax), the GPU
// keeps them in f32: differences of a few bf16 ulps of the values averaged.
// (The CPU's bf16 results against its f32 results rounded to bf16, which is
// what this kernel computes, differed by up to 2e-2 relative + 6.2e-3.)
Tolerance tolerance(DType dtype) { return dtype == DType::kFloat32 ? Tolerance{1e-5, 2e-6} : Tolerance{2e-2, 1.5e-2}; }

Tensor random(DType dtype, const std::vector<int64_t>& sizes, uint32_t seed, double low, double high) {
  return testing::make_tensor(dtype, testing::random_values(dtype, testing::count_of(sizes), seed, low, high), sizes);
}

class AttentionOnBackend : public testing::OnBackend {};

TEST_P(AttentionOnBackend, MatchesTheCpuWithAndWithoutMasks) {
  const std::vector<Shape> shapes = {{2, 16, 4, 8}, {1, 128, 8, 64}, {3, 7, 3, 4}, {1, 1, 2, 4}, {2, 33, 1, 20}, {1, 300, 2, 48}};
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    for (const Shape& s : shapes) {
      const std::vector<int64_t> sizes = {s.batch, s.seq, s.heads * s.dim};
      Tensor q = random(dtype, sizes, seed++, -1.0, 1.0);
      Tensor k = random(dtype, sizes, seed++, -1.0, 1.0);
      Tensor v = random(dtype, sizes, seed++, -1.0, 1.0);
      const std::map<std::string, Attribute> heads = {{"num_heads", Attribute(s.heads)}};
      const std::string label = std::string(dtype_name(dtype)) + " B " + std::to_string(s.batch) + " S " +
                                std::to_string(s.seq) + " H " + std::to_string(s.heads) + " D " + std::to_string(s.dim);
      expect_same_as_cpu(GetParam(), "Attention", {q, k, v}, heads, tolerance(dtype), label);
      // Masks of every rank broadcasting to [B, H, S, S].
      const std::vector<std::vector<int64_t>> mask_shapes = {
          {s.seq}, {s.seq, s.seq}, {s.batch, 1, s.seq, s.seq}, {s.batch, s.heads, s.seq, s.seq}, {1, s.heads, 1, s.seq}};
      for (const std::vector<int64_t>& mask_sizes : mask_shapes) {
        Tensor mask = random(dtype, mask_sizes, seed++, -3.0, 3.0);
        expect_same_as_cpu(GetParam(), "Attention", {q, k, v, mask}, heads, tolerance(dtype),
                           label + " mask " + format_sizes(mask_sizes));
      }
      // Causal: a large negative above the diagonal (finite, so that every row
      // has a maximum the CPU's and the GPU's exp agree on).
      std::vector<double> causal(static_cast<size_t>(s.seq * s.seq), 0.0);
      for (int64_t i = 0; i < s.seq; ++i) {
        for (int64_t j = i + 1; j < s.seq; ++j) causal[static_cast<size_t>(i * s.seq + j)] = -1e4;
      }
      expect_same_as_cpu(GetParam(), "Attention", {q, k, v, testing::make_tensor(dtype, causal, {s.seq, s.seq})}, heads,
                         tolerance(dtype), label + " causal");
      // An explicit scale; in f32 large enough that the max subtraction
      // matters (in bf16 scores that large would be rounded by the CPU to
      // ulps of 1/16 or more before the exp: no common ground to compare).
      // Scores reach ~60 there, and their f32 rounding (ulps of 4e-6) goes
      // through the exp into the weights: against an f64 evaluation oneDNN's
      // results were off by up to 6.4e-6 (S 128, D 64), this kernel's
      // order of operations (emulated on the host) by up to 1.6e-6.
      const double scale = dtype == DType::kFloat32 ? 3.0 : 0.5;
      expect_same_as_cpu(GetParam(), "Attention", {q, k, v}, {{"num_heads", Attribute(s.heads)}, {"scale", Attribute(scale)}},
                         dtype == DType::kFloat32 ? Tolerance{1e-5, 2e-5} : tolerance(dtype),
                         label + " scale " + std::to_string(scale));
    }
  }
}

TEST_P(AttentionOnBackend, RefusesRowsLongerThanItsSharedMemory) {
  // S + D = 12100 + 4 floats exceed the 47 KiB the fused kernel takes.
  Tensor q = random(DType::kFloat32, {1, 12100, 4}, 5, -1.0, 1.0);
  try {
    testing::run_node_on(GetParam(), "Attention", {q, q, q}, {{"num_heads", Attribute(int64_t{1})}});
    ADD_FAILURE() << "a sequence of 12100 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the fused CUDA kernel takes at most"), std::string::npos) << e.what();
  }
}

TEST_P(AttentionOnBackend, RejectsAMaskThatDoesNotBroadcast) {
  Tensor q = random(DType::kFloat32, {2, 5, 8}, 6, -1.0, 1.0);
  Tensor mask = random(DType::kFloat32, {3, 5}, 7, -1.0, 1.0);
  try {
    testing::run_node_on(GetParam(), "Attention", {q, q, q, mask}, {{"num_heads", Attribute(int64_t{2})}});
    ADD_FAILURE() << "a [3, 5] mask ran against [2, 2, 5, 5]";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not broadcast to [2,2,5,5]"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, AttentionOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
