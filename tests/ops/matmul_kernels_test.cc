// MatMul and Gemm CPU kernels against a plain f64 reference on random
// inputs: batch folding, equal and broadcast batches, 1-D operands, empty
// dimensions, transposes, alpha/beta and every C broadcast; f32/f64/bf16/f16
// and integers; and concurrent use of one kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "core/error.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::count_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

struct Case {
  std::vector<int64_t> a, b, out;
};

const std::vector<Case> kCases = {
    {{2, 3}, {3, 4}, {2, 4}},             {{5, 2, 3}, {3, 4}, {5, 2, 4}},
    {{5, 2, 3}, {5, 3, 4}, {5, 2, 4}},    {{2, 1, 2, 3}, {3, 3, 4}, {2, 3, 2, 4}},
    {{3}, {3, 4}, {4}},                   {{2, 3}, {3}, {2}},
    {{3}, {3}, {}},                       {{0, 3}, {3, 4}, {0, 4}},
    {{2, 0}, {0, 4}, {2, 4}},             {{1, 1, 1}, {1, 1}, {1, 1, 1}},
    {{4, 1, 17, 9}, {1, 3, 9, 33}, {4, 3, 17, 33}},
};

// out[..., i, j] = sum_k a[..., i, k] * b[..., k, j] with NumPy batch broadcasting;
// also returns sum_k |a||b| per element, the scale of the rounding error.
std::pair<std::vector<double>, std::vector<double>> reference(const Case& c, const std::vector<double>& a,
                                                              const std::vector<double>& b) {
  std::vector<int64_t> as = c.a, bs = c.b;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  std::vector<int64_t> a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  size_t rank = std::max(a_batch.size(), b_batch.size());
  a_batch.insert(a_batch.begin(), rank - a_batch.size(), 1);
  b_batch.insert(b_batch.begin(), rank - b_batch.size(), 1);
  std::vector<int64_t> out_batch(rank);
  for (size_t i = 0; i < rank; ++i) out_batch[i] = std::max(a_batch[i], b_batch[i]);
  int64_t batches = count_of(out_batch);
  std::vector<double> out(static_cast<size_t>(batches * m * n)), scale(out.size());
  for (int64_t item = 0; item < batches; ++item) {
    int64_t rest = item, a_item = 0, b_item = 0, a_stride = 1, b_stride = 1;
    for (size_t axis = rank; axis-- > 0;) {
      int64_t coordinate = rest % out_batch[axis];
      rest /= out_batch[axis];
      a_item += (a_batch[axis] == 1 ? 0 : coordinate) * a_stride;
      b_item += (b_batch[axis] == 1 ? 0 : coordinate) * b_stride;
      a_stride *= a_batch[axis];
      b_stride *= b_batch[axis];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          double product = a[static_cast<size_t>(a_item * m * k + i * k + kk)] * b[static_cast<size_t>(b_item * k * n + kk * n + j)];
          sum += product;
          magnitude += std::fabs(product);
        }
        out[static_cast<size_t>(item * m * n + i * n + j)] = sum;
        scale[static_cast<size_t>(item * m * n + i * n + j)] = magnitude;
      }
    }
  }
  return {out, scale};
}

// Allowed error relative to sum |a||b|: accumulation in f32 (oneDNN) and one
// rounding of the output to the storage type.
double relative_tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 1e-6;
    case DType::kFloat64: return 1e-13;
    case DType::kFloat16: return std::ldexp(1.0, -10);
    case DType::kBFloat16: return std::ldexp(1.0, -7);
    default: return 0.0;
  }
}

TEST(MatMulKernel, MatchesTheReferenceForEveryBatchLayoutAndDtype) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16, DType::kInt32, DType::kInt64}) {
    for (const Case& c : kCases) {
      Tensor a = make_tensor(dtype, random_values(dtype, count_of(c.a), seed++, -2, 2), c.a);
      Tensor b = make_tensor(dtype, random_values(dtype, count_of(c.b), seed++, -2, 2), c.b);
      Tensor out = run_op("MatMul", {a, b})[0];
      ASSERT_EQ(out.sizes(), c.out) << dtype_name(dtype);
      auto [expected, scale] = reference(c, to_doubles(a), to_doubles(b));
      std::vector<double> got = to_doubles(out);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_LE(std::fabs(got[i] - expected[i]), relative_tolerance(dtype) * (scale[i] + std::fabs(expected[i])) + 1e-30)
            << dtype_name(dtype) << " case " << testing::count_of(c.a) << " element " << i;
      }
    }
  }
}

TEST(MatMulKernel, MismatchedInnerDimensionsNameTheNode) {
  try {
    run_op("MatMul", {Tensor(DType::kFloat32, {2, 3}), Tensor(DType::kFloat32, {4, 5})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), "op");
    EXPECT_NE(std::string(e.what()).find("inner dimensions"), std::string::npos) << e.what();
  }
}

TEST(GemmKernel, TransposesAlphaBetaAndEveryCShape) {
  const int64_t m = 5, k = 7, n = 3;
  uint32_t seed = 50;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int trans_a = 0; trans_a < 2; ++trans_a) {
      for (int trans_b = 0; trans_b < 2; ++trans_b) {
        for (const std::vector<int64_t>& c_sizes : std::vector<std::vector<int64_t>>{{}, {n}, {1, n}, {m, 1}, {m, n}}) {
          std::vector<int64_t> a_sizes = trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
          std::vector<int64_t> b_sizes = trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
          std::vector<double> a = random_values(dtype, m * k, seed++), b = random_values(dtype, k * n, seed++);
          std::vector<double> c = random_values(dtype, count_of(c_sizes), seed++);
          Tensor out = run_op("Gemm", {make_tensor(dtype, a, a_sizes), make_tensor(dtype, b, b_sizes), make_tensor(dtype, c, c_sizes)},
                              {{"alpha", Attribute(0.75)}, {"beta", Attribute(-1.5)},
                               {"transA", Attribute(trans_a)}, {"transB", Attribute(trans_b)}})[0];
          ASSERT_EQ(out.sizes(), (std::vector<int64_t>{m, n}));
          std::vector<double> got = to_doubles(out);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0, magnitude = 0;
              for (int64_t kk = 0; kk < k; ++kk) {
                double x = a[static_cast<size_t>(trans_a ? kk * m + i : i * k + kk)];
                double y = b[static_cast<size_t>(trans_b ? j * k + kk : kk * n + j)];
                sum += x * y;
                magnitude += std::fabs(x * y);
              }
              size_t c_index = c_sizes.size() < 2 ? (c_sizes.empty() ? 0 : static_cast<size_t>(j))
                               : static_cast<size_t>((c_sizes[0] == 1 ? 0 : i) * c_sizes[1] + (c_sizes[1] == 1 ? 0 : j));
              double expected = 0.75 * sum - 1.5 * c[c_index];
              ASSERT_NEAR(got[static_cast<size_t>(i * n + j)], expected, relative_tolerance(dtype) * (magnitude + 2 * std::fabs(c[c_index])) + 1e-30);
            }
          }
        }
      }
    }
  }
  // Without C the result is alpha * op(A) * op(B).
  Tensor two = run_op("Gemm", {Tensor::from_vector<float>({1, 2}, {1, 2}), Tensor::from_vector<float>({3, 4}, {2, 1})},
                      {{"alpha", Attribute(2.0)}})[0];
  EXPECT_EQ(two.data<float>()[0], 22.0f);
}

TEST(MatMulKernel, OneKernelRunsConcurrentlyFromSeveralThreads) {
  Graph g("g");
  Value* a = g.add_input("a", {DType::kFloat32, Shape{Dim::symbol("M"), 64}});
  Value* b = g.add_constant("b", make_tensor(DType::kFloat32, random_values(DType::kFloat32, 64 * 32, 9), {64, 32}));
  Node* node = g.add_node("MatMul", {a, b}, 1, {}, "mm");
  std::unique_ptr<OpKernel> kernel = default_kernel_registry().create(*node, DeviceType::kCpu);
  auto run = [&](int64_t rows, uint32_t seed) {
    Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, rows * 64, seed), {rows, 64});
    KernelContext ctx(*node, {x, b->data()}, cpu_allocator());
    kernel->compute(ctx);
    return ctx.output(0);
  };
  Tensor expected_small = run(8, 1), expected_large = run(96, 2);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        Tensor got = (t + i) % 2 == 0 ? run(8, 1) : run(96, 2);
        const Tensor& expected = (t + i) % 2 == 0 ? expected_small : expected_large;
        // Not bitwise: a call that runs while another holds the OpenMP team
        // may get fewer threads, and oneDNN then blocks the sums differently.
        std::vector<double> got_values = to_doubles(got), want = to_doubles(expected);
        bool same = got_values.size() == want.size();
        for (size_t k = 0; same && k < want.size(); ++k) same = std::fabs(got_values[k] - want[k]) <= 1e-5 * (1 + std::fabs(want[k]));
        if (!same) ++mismatches[static_cast<size_t>(t)];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace weir
