// BatchNormalization (inference and training, running statistics),
// LayerNormalization (every axis, Mean/InvStdDev outputs) and
// InstanceNormalization against plain references, in every float dtype;
// their gradient rules against finite differences; errors for bad parameters.
#include <gtest/gtest.h>

#include <cmath>

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

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return 1e-12;
    case DType::kFloat32: return 2e-5;
    case DType::kFloat16: return 4e-3;
    default: return 3e-2;
  }
}

void expect_close(const std::vector<double>& got, const std::vector<double>& expected, DType dtype, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], tolerance(dtype) * std::max(1.0, std::fabs(expected[i]))) << what << " element " << i;
  }
}

// Normalizes x [outer, n, inner] over (n) for each (outer, inner)... written per op below for clarity.
TEST(NormalizationKernels, BatchNormMatchesTheReference) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{4, 3}, {2, 3, 5}, {3, 2, 4, 3}, {1, 1, 1, 1}, {2, 4, 2, 2, 2}}) {
      int64_t n = sizes[0], c = sizes[1], plane = count_of(sizes) / (n * c);
      std::vector<Tensor> in = {make_tensor(dtype, random_values(dtype, count_of(sizes), seed++), sizes),
                                make_tensor(dtype, random_values(dtype, c, seed++), {c}),
                                make_tensor(dtype, random_values(dtype, c, seed++), {c}),
                                make_tensor(dtype, random_values(dtype, c, seed++), {c}),
                                make_tensor(dtype, random_values(dtype, c, seed++, 0.5, 2.0), {c})};
      std::vector<double> x = to_doubles(in[0]), scale = to_doubles(in[1]), bias = to_doubles(in[2]);
      std::vector<double> mean_in = to_doubles(in[3]), var_in = to_doubles(in[4]);
      for (bool training : {false, true}) {
        double eps = 1e-3, momentum = 0.8;
        std::vector<double> y(x.size()), running_mean(static_cast<size_t>(c)), running_var(static_cast<size_t>(c));
        for (int64_t k = 0; k < c; ++k) {
          auto at = [&](int64_t b, int64_t i) { return static_cast<size_t>((b * c + k) * plane + i); };
          double mean = mean_in[static_cast<size_t>(k)], var = var_in[static_cast<size_t>(k)];
          if (training) {
            double sum = 0, squares = 0;
            for (int64_t b = 0; b < n; ++b) for (int64_t i = 0; i < plane; ++i) sum += x[at(b, i)];
            mean = sum / static_cast<double>(n * plane);
            for (int64_t b = 0; b < n; ++b) for (int64_t i = 0; i < plane; ++i) squares += (x[at(b, i)] - mean) * (x[at(b, i)] - mean);
            var = squares / static_cast<double>(n * plane);
          }
          running_mean[static_cast<size_t>(k)] = training ? mean_in[static_cast<size_t>(k)] * momentum + mean * (1 - momentum) : mean;
          running_var[static_cast<size_t>(k)] = training ? var_in[static_cast<size_t>(k)] * momentum + var * (1 - momentum) : var;
          for (int64_t b = 0; b < n; ++b) {
            for (int64_t i = 0; i < plane; ++i) {
              y[at(b, i)] = (x[at(b, i)] - mean) / std::sqrt(var + eps) * scale[static_cast<size_t>(k)] + bias[static_cast<size_t>(k)];
            }
          }
        }
        std::vector<Tensor> out = run_op("BatchNormalization", in,
                                         {{"epsilon", Attribute(eps)}, {"momentum", Attribute(momentum)},
                                          {"training_mode", Attribute(int64_t{training ? 1 : 0})}}, 3);
        std::string what = "BatchNorm " + std::string(dtype_name(dtype)) + " " + format_sizes(sizes) + (training ? " training" : "");
        // A size-1 group has variance 0: the output is bias alone, exactly.
        expect_close(to_doubles(out[0]), y, dtype, what);
        expect_close(to_doubles(out[1]), running_mean, dtype, what + " running_mean");
        expect_close(to_doubles(out[2]), running_var, dtype, what + " running_var");
      }
    }
  }
}

TEST(NormalizationKernels, LayerNormMatchesTheReferenceOnEveryAxis) {
  uint32_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{4, 6}, {2, 3, 5}, {2, 1, 4}}) {
      auto rank = static_cast<int64_t>(sizes.size());
      for (int64_t axis = -rank; axis < rank; ++axis) {
        int64_t a = axis < 0 ? axis + rank : axis;
        std::vector<int64_t> normalized(sizes.begin() + a, sizes.end());
        int64_t m = count_of(normalized), outer = count_of(sizes) / m;
        std::vector<Tensor> in = {make_tensor(dtype, random_values(dtype, count_of(sizes), seed++), sizes),
                                  make_tensor(dtype, random_values(dtype, m, seed++), normalized),
                                  make_tensor(dtype, random_values(dtype, m, seed++), normalized)};
        std::vector<double> x = to_doubles(in[0]), scale = to_doubles(in[1]), bias = to_doubles(in[2]);
        std::vector<double> y(x.size()), means, inv_stds;
        for (int64_t o = 0; o < outer; ++o) {
          double mean = 0, var = 0;
          for (int64_t i = 0; i < m; ++i) mean += x[static_cast<size_t>(o * m + i)] / static_cast<double>(m);
          for (int64_t i = 0; i < m; ++i) var += std::pow(x[static_cast<size_t>(o * m + i)] - mean, 2) / static_cast<double>(m);
          double inv_std = 1 / std::sqrt(var + 1e-5);
          means.push_back(mean);
          inv_stds.push_back(inv_std);
          for (int64_t i = 0; i < m; ++i) {
            auto k = static_cast<size_t>(o * m + i);
            y[k] = (x[k] - mean) * inv_std * scale[static_cast<size_t>(i)] + bias[static_cast<size_t>(i)];
          }
        }
        std::vector<Tensor> out = run_op("LayerNormalization", in, {{"axis", Attribute(axis)}}, 3);
        std::string what = "LayerNorm " + std::string(dtype_name(dtype)) + " " + format_sizes(sizes) + " axis " + std::to_string(axis);
        expect_close(to_doubles(out[0]), y, dtype, what);
        std::vector<int64_t> stat_sizes(sizes.begin(), sizes.begin() + a);
        stat_sizes.resize(sizes.size(), 1);
        EXPECT_EQ(out[1].sizes(), stat_sizes);
        EXPECT_EQ(out[1].dtype(), dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32);
        expect_close(to_doubles(out[1]), means, DType::kFloat32, what + " Mean");
        expect_close(to_doubles(out[2]), inv_stds, DType::kFloat32, what + " InvStdDev");
      }
    }
  }
}

TEST(NormalizationKernels, InstanceNormMatchesTheReference) {
  uint32_t seed = 200;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{2, 3, 5}, {1, 2, 3, 4}, {2, 2, 1, 2, 3}}) {
      int64_t c = sizes[1], planes = sizes[0] * c, plane = count_of(sizes) / planes;
      std::vector<Tensor> in = {make_tensor(dtype, random_values(dtype, count_of(sizes), seed++), sizes),
                                make_tensor(dtype, random_values(dtype, c, seed++), {c}),
                                make_tensor(dtype, random_values(dtype, c, seed++), {c})};
      std::vector<double> x = to_doubles(in[0]), scale = to_doubles(in[1]), bias = to_doubles(in[2]), y(x.size());
      for (int64_t p = 0; p < planes; ++p) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < plane; ++i) mean += x[static_cast<size_t>(p * plane + i)] / static_cast<double>(plane);
        for (int64_t i = 0; i < plane; ++i) var += std::pow(x[static_cast<size_t>(p * plane + i)] - mean, 2) / static_cast<double>(plane);
        for (int64_t i = 0; i < plane; ++i) {
          auto k = static_cast<size_t>(p * plane + i);
          y[k] = (x[k] - mean) / std::sqrt(var + 1e-5) * scale[static_cast<size_t>(p % c)] + bias[static_cast<size_t>(p % c)];
        }
      }
      expect_close(to_doubles(run_op("InstanceNormalization", in)[0]), y, dtype,
                   "InstanceNorm " + std::string(dtype_name(dtype)) + " " + format_sizes(sizes));
    }
  }
}

TEST(NormalizationGradients, MatchFiniteDifferences) {
  uint32_t seed = 300;
  auto random = [&](std::vector<int64_t> sizes, double low = -2, double high = 2) {
    return make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(sizes), seed++, low, high), sizes);
  };
  for (int64_t training : {0, 1}) {
    check_gradient("BatchNormalization", {random({3, 2, 4}), random({2}), random({2}), random({2}), random({2}, 0.5, 2)},
                   {0, 1, 2}, {{"training_mode", Attribute(training)}, {"epsilon", Attribute(1e-3)}});
  }
  check_gradient("BatchNormalization", {random({2, 3, 2, 2}), random({3}), random({3}), random({3}), random({3}, 0.5, 2)},
                 {0, 1, 2}, {{"training_mode", Attribute(int64_t{1})}});
  check_gradient("LayerNormalization", {random({3, 5}), random({5}), random({5})}, {0, 1, 2});
  check_gradient("LayerNormalization", {random({2, 3, 4}), random({3, 4}), random({3, 4})}, {0, 1, 2},
                 {{"axis", Attribute(int64_t{1})}});
  check_gradient("LayerNormalization", {random({2, 3, 4}), random({4})}, {0, 1});
  check_gradient("InstanceNormalization", {random({2, 3, 5}), random({3}), random({3})}, {0, 1, 2});
}

TEST(NormalizationErrors, ParametersOfTheWrongSizeAreNamed) {
  Tensor x(DType::kFloat32, {2, 3, 4});
  Tensor c3(DType::kFloat32, {3}), c4(DType::kFloat32, {4});
  EXPECT_NE(error_of("BatchNormalization", {x, c4, c3, c3, c3}).find("scale has shape [4]; expected [3]"), std::string::npos);
  EXPECT_NE(error_of("InstanceNormalization", {x, c3, c4}).find("B has shape [4]"), std::string::npos);
  EXPECT_NE(error_of("LayerNormalization", {x, c3}).find("expected 4 values"), std::string::npos);
  EXPECT_NE(error_of("LayerNormalization", {x, c4}, {{"axis", Attribute(int64_t{3})}}).find("out of range"), std::string::npos);
}

}  // namespace
}  // namespace weir
