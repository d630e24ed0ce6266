// Deep gradient compression: DgcEncode and DgcMomentum through one-node
// graphs against a plain reference written here (loops and a sorted copy;
// it does not call dgc_k or dgc_threshold), plus the rampup schedule and
// the sampled threshold on their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "core/error.h"
#include "ops/optimizer/dgc.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::run_op;

float index_slot(int32_t index) {
  float slot;
  std::memcpy(&slot, &index, sizeof(slot));
  return slot;
}

int32_t slot_index(float slot) {
  int32_t index;
  std::memcpy(&index, &slot, sizeof(index));
  return index;
}

std::vector<float> floats_of(const Tensor& t) {
  const float* data = t.data<float>();
  return std::vector<float>(data, data + t.num_elements());
}

using testing::gaussian_floats;

Tensor tensor_of(const std::vector<float>& values, std::vector<int64_t> sizes) {
  return Tensor::from_vector<float>(values, std::move(sizes));
}

struct EncodeConfig {
  double momentum = 0.9;
  int64_t nesterov = 0;
  double weight_decay = 0;
  double clip_norm = 0;
  int64_t rampup_begin_step = 0;
  int64_t rampup_step = 1;
  std::vector<double> sparsity = {0.999};

  std::map<std::string, Attribute> attrs() const {
    return {{"momentum", Attribute(momentum)},           {"nesterov", Attribute(nesterov)},
            {"weight_decay", Attribute(weight_decay)},   {"clip_norm", Attribute(clip_norm)},
            {"rampup_begin_step", Attribute(rampup_begin_step)}, {"rampup_step", Attribute(rampup_step)},
            {"sparsity", Attribute(sparsity)}};
  }
};

// ---- the reference ----

int64_t reference_k(int64_t n, int64_t step, const EncodeConfig& c) {
  int64_t dgc_step = step - 1;
  if (dgc_step < c.rampup_begin_step) return 0;
  int64_t len = static_cast<int64_t>(c.sparsity.size());
  int64_t idx = (dgc_step - c.rampup_begin_step) * len / c.rampup_step;
  if (idx > len - 1) idx = len - 1;
  int64_t k = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - c.sparsity[static_cast<size_t>(idx)])));
  if (k < 1) k = 1;
  if (k > n) k = n;
  return k;
}

double reference_threshold(const std::vector<float>& v, int64_t k) {
  const int64_t n = static_cast<int64_t>(v.size());
  int64_t r = k / 2;
  if (r > 32) r = 32;
  if (r < 1) r = 1;
  const double f = static_cast<double>(k) / static_cast<double>(n);
  const int64_t blocks = n < 16 ? n : 16;
  double sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t start = b * n / blocks, end = (b + 1) * n / blocks, length = end - start;
    int64_t count = static_cast<int64_t>(std::ceil(static_cast<double>(r) / f));
    if (count < r) count = r;
    if (count > length) count = length;
    int64_t stride = length / count;
    if (stride < 1) stride = 1;
    std::vector<float> samples;
    for (int64_t j = 0; j < count; ++j) samples.push_back(std::fabs(v[static_cast<size_t>(start + j * stride)]));
    std::sort(samples.begin(), samples.end(), std::greater<float>());
    int64_t rank = r < count ? r : count;
    sum += static_cast<double>(samples[static_cast<size_t>(rank - 1)]);
  }
  return sum / static_cast<double>(blocks);
}

// One DgcEncode step on u and v (updated in place); returns `encoded`.
std::vector<float> reference_encode(const std::vector<float>& grad, const std::vector<float>& param,
                                    std::vector<float>& u, std::vector<float>& v, int64_t step,
                                    const EncodeConfig& c) {
  const int64_t n = static_cast<int64_t>(grad.size());
  const int64_t k = reference_k(n, step, c);
  if (k == 0) return {};
  double scale = 1;
  if (c.clip_norm > 0) {
    double squares = 0;
    for (float g : grad) squares += static_cast<double>(g) * g;
    if (std::sqrt(squares) > c.clip_norm) scale = c.clip_norm / std::sqrt(squares);
  }
  for (size_t i = 0; i < grad.size(); ++i) {
    double g = static_cast<double>(grad[i]) * scale + c.weight_decay * static_cast<double>(param[i]);
    if (c.nesterov != 0) {
      u[i] = static_cast<float>(c.momentum * (static_cast<double>(u[i]) + g));
      v[i] = static_cast<float>(static_cast<double>(v[i]) + static_cast<double>(u[i]) + g);
    } else {
      u[i] = static_cast<float>(c.momentum * static_cast<double>(u[i]) + g);
      v[i] = static_cast<float>(static_cast<double>(v[i]) + static_cast<double>(u[i]));
    }
  }
  const double threshold = reference_threshold(v, k);
  std::vector<std::pair<float, int64_t>> over;  // (|v|, index)
  for (int64_t i = 0; i < n; ++i) {
    if (std::fabs(v[static_cast<size_t>(i)]) > threshold) over.push_back({std::fabs(v[static_cast<size_t>(i)]), i});
  }
  if (static_cast<int64_t>(over.size()) > k) {
    std::sort(over.begin(), over.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    over.resize(static_cast<size_t>(k));
  }
  std::vector<int64_t> sent;
  for (const auto& entry : over) sent.push_back(entry.second);
  std::sort(sent.begin(), sent.end());
  std::vector<float> encoded;
  for (int64_t i : sent) {
    encoded.push_back(index_slot(static_cast<int32_t>(i)));
    encoded.push_back(v[static_cast<size_t>(i)]);
  }
  while (static_cast<int64_t>(encoded.size()) < 2 * k) {
    encoded.push_back(index_slot(-1));
    encoded.push_back(0.0f);
  }
  for (int64_t i : sent) u[static_cast<size_t>(i)] = v[static_cast<size_t>(i)] = 0.0f;
  return encoded;
}

std::vector<float> run_encode(const Tensor& grad, const Tensor& param, const Tensor& u, const Tensor& v, int64_t step,
                              const EncodeConfig& c) {
  std::vector<Tensor> out = run_op("DgcEncode", {grad, param, u, v, Tensor::scalar<int64_t>(step)}, c.attrs());
  EXPECT_EQ(out[0].rank(), 1);
  return floats_of(out[0]);
}

// Checks `got` against `want` pair by pair: indices exactly, values as floats.
void expect_same_encoding(const std::vector<float>& got, const std::vector<float>& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t j = 0; j < got.size(); j += 2) {
    EXPECT_EQ(slot_index(got[j]), slot_index(want[j])) << where << " pair " << j / 2;
    EXPECT_FLOAT_EQ(got[j + 1], want[j + 1]) << where << " pair " << j / 2;
  }
}

TEST(DgcKernels, RampupWalksTheSparsityListByStep) {
  EncodeConfig c;
  c.sparsity = {0.75, 0.9375, 0.984375, 0.996, 0.999};
  c.rampup_begin_step = 3;
  c.rampup_step = 10;
  const int64_t n = 1000;
  // dgc_step 0..2 dense; each sparsity for two steps (10 steps / 5 values), the last one held.
  const std::vector<int64_t> expected_k = {0, 0, 0, 250, 250, 62, 62, 15, 15, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  Tensor param = tensor_of(gaussian_floats(n, 1), {n});
  Tensor u(DType::kFloat32, {n}), v(DType::kFloat32, {n});
  for (int64_t step = 1; step <= static_cast<int64_t>(expected_k.size()); ++step) {
    const int64_t want = expected_k[static_cast<size_t>(step - 1)];
    EXPECT_EQ(reference_k(n, step, c), want) << "step " << step;
    EXPECT_EQ(dgc_k(n, step - 1, c.rampup_begin_step, c.rampup_step, c.sparsity), want) << "step " << step;
    Tensor grad = tensor_of(gaussian_floats(n, 100 + static_cast<uint32_t>(step)), {n});
    EXPECT_EQ(static_cast<int64_t>(run_encode(grad, param, u, v, step, c).size()), 2 * want) << "step " << step;
  }
  // k is at least 1 and at most numel.
  EXPECT_EQ(dgc_k(10, 0, 0, 1, {0.999}), 1);
  EXPECT_EQ(dgc_k(10, 0, 0, 1, {0.0}), 10);
  EXPECT_THROW(dgc_k(10, 0, 0, 0, {0.9}), Error);
  EXPECT_THROW(dgc_k(10, 0, 0, 1, {}), Error);
  EXPECT_THROW(dgc_k(10, 0, 0, 1, {1.0}), Error);
}

TEST(DgcKernels, ThresholdMatchesThePlainDefinition) {
  uint32_t seed = 7;
  for (int64_t n : {1, 2, 7, 16, 17, 100, 1000, 4099, 100000}) {
    std::vector<float> v = gaussian_floats(n, seed++);
    for (int64_t k : {int64_t{1}, int64_t{2}, n / 1000 + 1, n / 3 + 1, n}) {
      if (k > n) continue;
      EXPECT_EQ(dgc_threshold(v.data(), n, k), reference_threshold(v, k)) << "numel " << n << " k " << k;
    }
  }
  // On Gaussian data the estimate is a plausible magnitude: positive and at
  // most the largest |v|.
  std::vector<float> v = gaussian_floats(100000, 99);
  float largest = 0;
  for (float x : v) largest = std::max(largest, std::fabs(x));
  for (int64_t k : {10, 100, 1000}) {
    double threshold = dgc_threshold(v.data(), 100000, k);
    EXPECT_GT(threshold, 0) << k;
    EXPECT_LE(threshold, largest) << k;
  }
  EXPECT_THROW(dgc_threshold(v.data(), 10, 0), Error);
  EXPECT_THROW(dgc_threshold(v.data(), 10, 11), Error);
}

TEST(DgcKernels, EncodeMatchesTheReferenceOverSeveralSteps) {
  struct Case {
    std::string name;
    EncodeConfig config;
    std::vector<int64_t> sizes = {31, 33};
  };
  std::vector<Case> cases(6);
  cases[0].name = "plain";
  cases[1].name = "nesterov";
  cases[1].config.nesterov = 1;
  cases[2].name = "weight decay";
  cases[2].config.weight_decay = 0.05;
  cases[3].name = "clipped";
  cases[3].config.clip_norm = 3.0;  // the gradients' norm is about 32
  cases[4].name = "all";
  cases[4].config.nesterov = 1;
  cases[4].config.weight_decay = 0.01;
  cases[4].config.clip_norm = 5.0;
  cases[4].config.momentum = 0.8;
  cases[5].name = "large";  // above parallel_for's grain: more than one thread may update
  cases[5].config.nesterov = 1;
  cases[5].sizes = {70001};
  uint32_t seed = 20;
  for (Case& c : cases) {
    const std::vector<int64_t>& sizes = c.sizes;
    const int64_t n = testing::count_of(sizes);
    c.config.sparsity = {0.9, 0.99};
    c.config.rampup_begin_step = 1;
    c.config.rampup_step = 4;
    std::vector<float> param_values = gaussian_floats(n, seed++);
    Tensor param = tensor_of(param_values, sizes);
    Tensor u = tensor_of(gaussian_floats(n, seed++, 0.1), sizes), v = tensor_of(gaussian_floats(n, seed++, 0.1), sizes);
    for (int64_t step = 1; step <= 6; ++step) {
      const std::string where = c.name + " step " + std::to_string(step);
      std::vector<float> grad = gaussian_floats(n, seed++);
      if (c.config.clip_norm > 0) {
        double squares = 0;
        for (float g : grad) squares += static_cast<double>(g) * g;
        ASSERT_GT(std::sqrt(squares), c.config.clip_norm) << "the case must clip";
      }
      std::vector<float> ref_u = floats_of(u), ref_v = floats_of(v);  // follow the kernel's f32 state
      std::vector<float> got = run_encode(tensor_of(grad, sizes), param, u, v, step, c.config);
      std::vector<float> want = reference_encode(grad, param_values, ref_u, ref_v, step, c.config);
      expect_same_encoding(got, want, where);
      const int64_t k = reference_k(n, step, c.config);
      ASSERT_EQ(static_cast<int64_t>(got.size()), 2 * k) << where;
      // Sent indices ascend, padding only at the end, and u, v are zero there.
      std::vector<float> new_u = floats_of(u), new_v = floats_of(v);
      int32_t previous = -1;
      bool padding = false;
      for (size_t j = 0; j < got.size(); j += 2) {
        int32_t index = slot_index(got[j]);
        if (index == -1) {
          padding = true;
          EXPECT_EQ(got[j + 1], 0.0f) << where;
          continue;
        }
        EXPECT_FALSE(padding) << where << ": a sent pair after padding";
        EXPECT_GT(index, previous) << where;
        previous = index;
        EXPECT_EQ(new_u[static_cast<size_t>(index)], 0.0f) << where;
        EXPECT_EQ(new_v[static_cast<size_t>(index)], 0.0f) << where;
      }
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_FLOAT_EQ(new_u[static_cast<size_t>(i)], ref_u[static_cast<size_t>(i)]) << where << " u " << i;
        EXPECT_FLOAT_EQ(new_v[static_cast<size_t>(i)], ref_v[static_cast<size_t>(i)]) << where << " v " << i;
      }
      EXPECT_EQ(floats_of(param), param_values) << where << ": DgcEncode does not move the parameter";
    }
  }
}

TEST(DgcKernels, EncodePadsWhenFewEntriesExceedTheThreshold) {
  const int64_t n = 1000;
  EncodeConfig c;
  c.sparsity = {0.99};  // k = 10
  std::vector<float> grad(n, 0.0f);
  grad[5] = 3.0f;
  grad[500] = -4.0f;
  grad[999] = 2.0f;
  Tensor u(DType::kFloat32, {n}), v(DType::kFloat32, {n}), param(DType::kFloat32, {n});
  std::vector<float> got = run_encode(tensor_of(grad, {n}), param, u, v, 1, c);
  std::vector<float> want = {index_slot(5), 3.0f, index_slot(500), -4.0f, index_slot(999), 2.0f};
  for (int j = 0; j < 7; ++j) {
    want.push_back(index_slot(-1));
    want.push_back(0.0f);
  }
  expect_same_encoding(got, want, "three large entries");
  for (float x : floats_of(u)) EXPECT_EQ(x, 0.0f);  // sent entries masked, the rest were zero
  for (float x : floats_of(v)) EXPECT_EQ(x, 0.0f);
}

TEST(DgcKernels, EncodeKeepsTheKLargestWhenMoreExceed) {
  const int64_t n = 64;
  EncodeConfig c;
  c.sparsity = {0.75};  // k = 16
  c.momentum = 0.5;
  // Increasing magnitudes: the threshold (the mean of the blocks' minima)
  // lets about half through, and the 16 largest are the last 16.
  std::vector<float> grad(n);
  for (int64_t i = 0; i < n; ++i) grad[static_cast<size_t>(i)] = (i % 2 == 0 ? 1.0f : -1.0f) * (1.0f + 0.001f * static_cast<float>(i));
  int64_t over = 0;
  double threshold = reference_threshold(grad, 16);
  for (float g : grad) over += std::fabs(g) > threshold ? 1 : 0;
  ASSERT_GT(over, 16) << "the case must exceed k";
  Tensor u(DType::kFloat32, {n}), v(DType::kFloat32, {n}), param(DType::kFloat32, {n});
  std::vector<float> got = run_encode(tensor_of(grad, {n}), param, u, v, 1, c);
  std::vector<float> want;
  for (int32_t i = 48; i < 64; ++i) {
    want.push_back(index_slot(i));
    want.push_back(grad[static_cast<size_t>(i)]);
  }
  expect_same_encoding(got, want, "increasing magnitudes");

  // Equal magnitudes: the smaller indices win. Every fourth entry is 0, so
  // each block's minimum and the threshold are 0 and 48 entries exceed it.
  for (int64_t i = 0; i < n; ++i) grad[static_cast<size_t>(i)] = i % 4 == 0 ? 0.0f : 2.0f;
  Tensor u2(DType::kFloat32, {n}), v2(DType::kFloat32, {n});
  got = run_encode(tensor_of(grad, {n}), param, u2, v2, 1, c);
  want.clear();
  for (int32_t i = 0; want.size() < 32; ++i) {
    if (i % 4 == 0) continue;
    want.push_back(index_slot(i));
    want.push_back(2.0f);
  }
  expect_same_encoding(got, want, "ties");
}

TEST(DgcKernels, DensePhaseEncodesNothingAndLeavesTheStateAlone) {
  const int64_t n = 300;
  EncodeConfig c;
  c.rampup_begin_step = 5;
  Tensor u = tensor_of(gaussian_floats(n, 1), {n}), v = tensor_of(gaussian_floats(n, 2), {n});
  Tensor u_before = u.clone(), v_before = v.clone();
  for (int64_t step = 1; step <= 5; ++step) {
    std::vector<float> got = run_encode(tensor_of(gaussian_floats(n, 3), {n}), tensor_of(gaussian_floats(n, 4), {n}), u, v, step, c);
    EXPECT_TRUE(got.empty()) << "step " << step;
    EXPECT_TRUE(u.bitwise_equal(u_before)) << "step " << step;
    EXPECT_TRUE(v.bitwise_equal(v_before)) << "step " << step;
  }
  // Step 6 is dgc_step 5: the first sparse step.
  EXPECT_FALSE(run_encode(tensor_of(gaussian_floats(n, 3), {n}), tensor_of(gaussian_floats(n, 4), {n}), u, v, 6, c).empty());
}

TEST(DgcKernels, DgcMomentumDensePhaseIsMomentumBitwise) {
  struct Case {
    double momentum, weight_decay;
    int64_t nesterov;
  };
  const int64_t n = 1000;
  uint32_t seed = 40;
  for (const Case& c : {Case{0.9, 0.0, 0}, Case{0.9, 0.01, 1}, Case{0.8, 0.1, 0}}) {
    Tensor p1 = tensor_of(gaussian_floats(n, seed++), {n}), s1 = tensor_of(gaussian_floats(n, seed++, 0.1), {n});
    Tensor p2 = p1.clone(), s2 = s1.clone();
    std::map<std::string, Attribute> momentum_attrs = {{"momentum", Attribute(c.momentum)},
                                                       {"weight_decay", Attribute(c.weight_decay)},
                                                       {"nesterov", Attribute(c.nesterov)}};
    std::map<std::string, Attribute> dgc_attrs = momentum_attrs;
    dgc_attrs["rampup_begin_step"] = Attribute(int64_t{10});
    Tensor empty(DType::kFloat32, {0});
    for (int64_t step = 1; step <= 3; ++step) {
      Tensor grad = tensor_of(gaussian_floats(n, seed++), {n});
      Tensor lr = Tensor::scalar<float>(0.05f);
      std::vector<Tensor> out = run_op("DgcMomentum", {p1, s1, grad, empty, empty, lr, Tensor::scalar<int64_t>(step)},
                                       dgc_attrs, 2);
      EXPECT_EQ(out[0].raw_data(), p1.raw_data()) << "the parameter is updated in place";
      EXPECT_EQ(out[1].raw_data(), s1.raw_data()) << "the velocity is updated in place";
      run_op("Momentum", {p2, grad, s2, lr}, momentum_attrs, 2);
      EXPECT_TRUE(p1.bitwise_equal(p2)) << "nesterov " << c.nesterov << " step " << step;
      EXPECT_TRUE(s1.bitwise_equal(s2)) << "nesterov " << c.nesterov << " step " << step;
    }
  }
}

// param - lr * (the sum of the gathered pairs in order) / ranks.
std::vector<double> reference_sparse_update(const std::vector<float>& param, const std::vector<float>& gathered,
                                            int64_t ranks, double lr) {
  std::vector<double> sum(param.size(), 0.0);
  for (size_t j = 0; j < gathered.size(); j += 2) {
    int32_t index = slot_index(gathered[j]);
    if (index >= 0) sum[static_cast<size_t>(index)] += gathered[j + 1];
  }
  std::vector<double> result(param.size());
  for (size_t i = 0; i < param.size(); ++i) result[i] = param[i] - lr * (sum[i] / static_cast<double>(ranks));
  return result;
}

TEST(DgcKernels, DgcMomentumSparsePhaseAveragesTheRanks) {
  const std::vector<int64_t> sizes = {10, 20};
  const int64_t n = 200;
  EncodeConfig c;
  c.sparsity = {0.875};  // k = 25 per rank
  std::vector<float> param_values = gaussian_floats(n, 60);
  Tensor param = tensor_of(param_values, sizes);
  std::vector<float> gathered;
  std::vector<float> own;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    Tensor u = tensor_of(gaussian_floats(n, 70 + rank, 0.1), sizes), v = tensor_of(gaussian_floats(n, 80 + rank, 0.1), sizes);
    std::vector<float> encoded = run_encode(tensor_of(gaussian_floats(n, 90 + rank), sizes), param, u, v, 1, c);
    ASSERT_EQ(encoded.size(), 50u);
    if (rank == 0) own = encoded;
    gathered.insert(gathered.end(), encoded.begin(), encoded.end());
  }
  const float lr = 0.1f;
  auto check = [&](const std::vector<float>& all, const std::vector<float>& mine, const std::string& where) {
    Tensor p = tensor_of(param_values, sizes);
    Tensor velocity = tensor_of(gaussian_floats(n, 5), sizes), velocity_before = velocity.clone();
    Tensor dense(DType::kFloat32, sizes);
    std::vector<Tensor> out = run_op("DgcMomentum",
                                     {p, velocity, dense, tensor_of(all, {static_cast<int64_t>(all.size())}),
                                      tensor_of(mine, {static_cast<int64_t>(mine.size())}), Tensor::scalar<float>(lr),
                                      Tensor::scalar<int32_t>(3)},
                                     {{"momentum", Attribute(0.9)}, {"weight_decay", Attribute(0.1)}}, 2);
    EXPECT_EQ(out[0].raw_data(), p.raw_data()) << where;
    EXPECT_TRUE(velocity.bitwise_equal(velocity_before)) << where << ": the velocity is untouched";
    std::vector<double> want = reference_sparse_update(param_values, all, static_cast<int64_t>(all.size() / mine.size()),
                                                       static_cast<double>(lr));
    std::vector<float> got = floats_of(p);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-6 * std::max(1.0, std::fabs(want[i]))) << where << " element " << i;
    }
  };
  check(gathered, own, "three encoded ranks");
  // By hand: shared indices, padding, and a rank that sends nothing new.
  std::vector<float> by_hand = {index_slot(1), 0.5f,  index_slot(3),  1.0f,   // rank 0
                                index_slot(1), 0.25f, index_slot(-1), 0.0f,   // rank 1
                                index_slot(3), -2.0f, index_slot(0),  4.0f};  // rank 2
  check(by_hand, std::vector<float>(by_hand.begin(), by_hand.begin() + 4), "by hand");
}

TEST(DgcKernels, DgcMomentumRejectsBadEncodings) {
  const int64_t n = 200;
  auto run = [&](const std::vector<float>& gathered, const std::vector<float>& encoded) {
    Tensor p(DType::kFloat32, {n}), velocity(DType::kFloat32, {n}), dense(DType::kFloat32, {n});
    run_op("DgcMomentum",
           {p, velocity, dense, tensor_of(gathered, {static_cast<int64_t>(gathered.size())}),
            tensor_of(encoded, {static_cast<int64_t>(encoded.size())}), Tensor::scalar<float>(0.1f),
            Tensor::scalar<int64_t>(1)},
           {}, 2);
  };
  const std::vector<float> pair = {index_slot(3), 1.0f};
  EXPECT_NO_THROW(run({index_slot(3), 1.0f, index_slot(4), 2.0f}, pair));
  EXPECT_THROW(run({index_slot(3), 1.0f, index_slot(4)}, pair), Error);  // not a whole number of encodings
  EXPECT_THROW(run({index_slot(3), 1.0f, 2.0f}, {index_slot(3), 1.0f, 2.0f}), Error);  // odd encoding
  EXPECT_THROW(run({}, {}), Error);                                                   // empty encoding
  EXPECT_THROW(run({index_slot(-2), 1.0f}, pair), Error);
  try {
    run({index_slot(3), 1.0f, index_slot(200), 1.0f}, pair);
    FAIL() << "index 200 of 200 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 200"), std::string::npos) << e.what();
  }
}

TEST(DgcKernels, BadTypesAndAttributesAreRefused) {
  const int64_t n = 8;
  Tensor d(DType::kFloat64, {n});
  EXPECT_THROW(run_op("DgcEncode", {d, d.clone(), d.clone(), d.clone(), Tensor::scalar<int64_t>(1)}), Error);
  Tensor f(DType::kFloat32, {n});
  auto encode_with = [&](std::map<std::string, Attribute> attrs) {
    run_op("DgcEncode", {f, f.clone(), f.clone(), f.clone(), Tensor::scalar<int64_t>(1)}, std::move(attrs));
  };
  EXPECT_NO_THROW(encode_with({}));
  EXPECT_THROW(encode_with({{"rampup_step", Attribute(int64_t{0})}}), Error);
  EXPECT_THROW(encode_with({{"sparsity", Attribute(std::vector<double>{1.0})}}), Error);
  EXPECT_THROW(encode_with({{"sparsity", Attribute(std::vector<double>{})}}), Error);
  EXPECT_THROW(run_op("DgcEncode", {f, f.clone(), f.clone(), Tensor(DType::kFloat32, {n + 1}),
                                    Tensor::scalar<int64_t>(1)}),
               Error);
  EXPECT_THROW(run_op("DgcEncode", {f, f.clone(), f.clone(), f.clone(), Tensor::scalar<int64_t>(0)}), Error);
}

}  // namespace
}  // namespace weir
