// ONNX's random ops: statistics of 1e5 draws with fixed seeds (bounds of about
// five standard errors, so a wrong distribution fails and a right one passes
// for these seeds), reproducibility by seed, fresh draws per run without one,
// replay from the run counter, dtypes and shapes, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/error.h"
#include "ops/kernel.h"
#include "ops/threading.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::error_of;
using testing::make_tensor;
using testing::run_op;
using testing::to_doubles;

using Attributes = std::map<std::string, Attribute>;

constexpr int64_t kDraws = 100000;

double mean_of(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double variance_of(const std::vector<double>& values) {
  const double mean = mean_of(values);
  double sum = 0;
  for (double v : values) sum += (v - mean) * (v - mean);
  return sum / static_cast<double>(values.size() - 1);
}

// Uniform on [low, high): every value inside, mean, variance and a 10-bin histogram.
void expect_uniform(const std::vector<double>& values, double low, double high) {
  const double n = static_cast<double>(values.size());
  const double width = high - low;
  std::vector<double> bins(10, 0);
  for (double v : values) {
    ASSERT_GE(v, low);
    ASSERT_LT(v, high);
    bins[static_cast<size_t>(std::min(9.0, std::floor((v - low) / width * 10)))] += 1;
  }
  // Standard errors: mean width / sqrt(12 n); variance width^2 sqrt((1/80 - 1/144) / n).
  EXPECT_NEAR(mean_of(values), (low + high) / 2, 5 * width / std::sqrt(12 * n));
  EXPECT_NEAR(variance_of(values), width * width / 12, 5 * width * width * std::sqrt((1.0 / 80 - 1.0 / 144) / n));
  for (double count : bins) EXPECT_NEAR(count / n, 0.1, 5 * std::sqrt(0.09 / n));
}

// Normal(mean, stddev): mean, standard deviation, and the mass within one stddev.
void expect_normal(const std::vector<double>& values, double mean, double stddev) {
  const double n = static_cast<double>(values.size());
  EXPECT_NEAR(mean_of(values), mean, 5 * stddev / std::sqrt(n));
  EXPECT_NEAR(std::sqrt(variance_of(values)), stddev, 5 * stddev / std::sqrt(2 * n));
  double within = 0;
  for (double v : values) within += std::fabs(v - mean) < stddev ? 1 : 0;
  EXPECT_NEAR(within / n, 0.682689, 5 * std::sqrt(0.682689 * 0.317311 / n));
}

// A graph holding one node, its kernel, and runs of it with or without a run counter.
struct KernelRunner {
  Graph graph{"random"};
  Node* node = nullptr;
  std::unique_ptr<OpKernel> kernel;

  KernelRunner(const std::string& op, const std::vector<Tensor>& inputs, Attributes attributes,
               const std::string& name = "rand") {
    std::vector<Value*> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      values.push_back(graph.add_input("in" + std::to_string(i), {inputs[i].dtype(), inputs[i].shape()}));
    }
    node = graph.add_node(op, values, 1, std::move(attributes), name);
    infer_graph_types(graph, default_op_registry());
    kernel = default_kernel_registry().create(*node, DeviceType::kCpu);
  }

  std::vector<double> run(const std::vector<Tensor>& inputs, std::optional<uint64_t> counter = std::nullopt) {
    KernelContext ctx(*node, inputs, cpu_allocator());
    if (counter) ctx.set_rng_counter(*counter);
    kernel->compute(ctx);
    return to_doubles(ctx.output(0));
  }
};

TEST(RandomOps, UniformStaysInRangeWithTheRightMoments) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Attributes attributes = {{"shape", Attribute(std::vector<int64_t>{250, 400})},
                             {"dtype", Attribute(static_cast<int64_t>(dtype))},
                             {"low", Attribute(-2.0)},
                             {"high", Attribute(3.0)},
                             {"seed", Attribute(1.5)}};
    Tensor y = run_op("RandomUniform", {}, attributes)[0];
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{250, 400}));
    expect_uniform(to_doubles(y), -2, 3);
  }
  // Defaults: f32 in [0, 1).
  Tensor y = run_op("RandomUniform", {}, {{"shape", Attribute(std::vector<int64_t>{kDraws})}, {"seed", Attribute(3.0)}})[0];
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  expect_uniform(to_doubles(y), 0, 1);
}

TEST(RandomOps, UniformInHalfPrecisionNeverRoundsUpToHigh) {
  // In f16 draws in (1 - 2^-12, 1) round to 1.0 (about 1 in 4096 of them):
  // they must come out as the largest f16 below 1 instead.
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor y = run_op("RandomUniform", {},
                      {{"shape", Attribute(std::vector<int64_t>{kDraws})},
                       {"dtype", Attribute(static_cast<int64_t>(dtype))},
                       {"seed", Attribute(2.0)}})[0];
    EXPECT_EQ(y.dtype(), dtype);
    std::vector<double> values = to_doubles(y);
    double top = *std::max_element(values.begin(), values.end());
    EXPECT_LT(top, 1.0);
    EXPECT_GT(top, 0.99);
    // Bins and moments still hold in f16 (rounding moves values by < 2^-11);
    // bf16's 8-bit significand shifts bin edges too much for the histogram.
    if (dtype == DType::kFloat16) {
      expect_uniform(values, 0, 1);
    } else {
      EXPECT_NEAR(mean_of(values), 0.5, 0.005);
      EXPECT_GE(*std::min_element(values.begin(), values.end()), 0.0);
    }
  }
}

TEST(RandomOps, NormalHasTheMeanAndStandardDeviation) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    // An odd count: the last element takes the first of its Box-Muller pair.
    Tensor y = run_op("RandomNormal", {},
                      {{"shape", Attribute(std::vector<int64_t>{3, kDraws / 3})},
                       {"dtype", Attribute(static_cast<int64_t>(dtype))},
                       {"mean", Attribute(2.0)},
                       {"scale", Attribute(0.5)},
                       {"seed", Attribute(7.0)}})[0];
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, kDraws / 3}));
    // f16 keeps ~3 significant digits: its rounding error (< 2^-10 here) is far inside the bounds.
    expect_normal(to_doubles(y), 2.0, 0.5);
  }
  // Defaults: standard normal; scale 0 gives the mean exactly.
  expect_normal(to_doubles(run_op("RandomNormal", {}, {{"shape", Attribute(std::vector<int64_t>{kDraws})}})[0]), 0, 1);
  std::vector<double> constant = to_doubles(
      run_op("RandomNormal", {}, {{"shape", Attribute(std::vector<int64_t>{5})}, {"mean", Attribute(1.25)}, {"scale", Attribute(0.0)}})[0]);
  EXPECT_EQ(constant, std::vector<double>(5, 1.25));
}

TEST(RandomOps, LikeFormsTakeShapeAndDtypeFromTheInput) {
  Tensor x64 = make_tensor(DType::kFloat64, std::vector<double>(kDraws, 0), {10, 100, 100});
  Tensor u = run_op("RandomUniformLike", {x64}, {{"low", Attribute(10.0)}, {"high", Attribute(12.0)}, {"seed", Attribute(4.0)}})[0];
  EXPECT_EQ(u.dtype(), DType::kFloat64);
  EXPECT_EQ(u.sizes(), x64.sizes());
  expect_uniform(to_doubles(u), 10, 12);

  Tensor n = run_op("RandomNormalLike", {x64}, {{"mean", Attribute(-1.0)}, {"scale", Attribute(3.0)}, {"seed", Attribute(5.0)}})[0];
  EXPECT_EQ(n.dtype(), DType::kFloat64);
  EXPECT_EQ(n.sizes(), x64.sizes());
  expect_normal(to_doubles(n), -1, 3);

  // An integer input gives only its shape; dtype says the output's type.
  Tensor ints = make_tensor(DType::kInt64, std::vector<double>(6, 3), {2, 3});
  for (const char* op : {"RandomUniformLike", "RandomNormalLike"}) {
    Tensor y = run_op(op, {ints}, {{"dtype", Attribute(static_cast<int64_t>(DType::kFloat16))}})[0];
    EXPECT_EQ(y.dtype(), DType::kFloat16);
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3}));
    EXPECT_NE(error_of(op, {ints}).find("not floating"), std::string::npos) << error_of(op, {ints});
  }
  // The input's values are not read: a different input of the same shape gives the same draws.
  Tensor other = make_tensor(DType::kFloat64, std::vector<double>(kDraws, 5), {10, 100, 100});
  EXPECT_EQ(to_doubles(run_op("RandomUniformLike", {other}, {{"low", Attribute(10.0)}, {"high", Attribute(12.0)}, {"seed", Attribute(4.0)}})[0]),
            to_doubles(u));
}

TEST(RandomOps, BernoulliFrequencyFollowsEachProbability) {
  const std::vector<double> probabilities = {0.0, 1.0, 0.1, 0.5, 0.9, 0.25, 0.999};
  const int64_t per = kDraws;
  std::vector<double> p;
  for (int64_t i = 0; i < per; ++i) p.insert(p.end(), probabilities.begin(), probabilities.end());
  const auto count = static_cast<int64_t>(p.size());
  for (DType in : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(in));
    Tensor probs = make_tensor(in, p, {per, static_cast<int64_t>(probabilities.size())});
    Tensor y = run_op("Bernoulli", {probs}, {{"seed", Attribute(11.0)}})[0];
    EXPECT_EQ(y.dtype(), in);
    EXPECT_EQ(y.sizes(), probs.sizes());
    std::vector<double> draws = to_doubles(y);
    std::vector<double> stored = to_doubles(probs);  // f16 rounds 0.1 etc.
    for (size_t k = 0; k < probabilities.size(); ++k) {
      double ones = 0;
      for (int64_t i = 0; i < count; i += 1) {
        if (static_cast<size_t>(i) % probabilities.size() != k) continue;
        ASSERT_TRUE(draws[static_cast<size_t>(i)] == 0 || draws[static_cast<size_t>(i)] == 1);
        ones += draws[static_cast<size_t>(i)];
      }
      const double q = stored[k];
      if (q == 0 || q == 1) {
        EXPECT_EQ(ones, q * per) << "p = " << q;  // exact
      } else {
        EXPECT_NEAR(ones / per, q, 5 * std::sqrt(q * (1 - q) / per)) << "p = " << q;
      }
    }
  }
}

TEST(RandomOps, BernoulliOutputDtypesDrawTheSameValues) {
  Tensor probs = make_tensor(DType::kFloat32, testing::random_values(DType::kFloat32, 4000, 3, 0.0, 1.0), {40, 100});
  std::vector<double> reference = to_doubles(run_op("Bernoulli", {probs}, {{"seed", Attribute(9.0)}})[0]);
  double ones = std::accumulate(reference.begin(), reference.end(), 0.0);
  EXPECT_GT(ones, 1500);  // E = 2000, sd ~ 26
  EXPECT_LT(ones, 2500);
  for (DType dtype : {DType::kBool, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kInt8, DType::kFloat64,
                      DType::kFloat16, DType::kBFloat16, DType::kUInt64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor y = run_op("Bernoulli", {probs}, {{"seed", Attribute(9.0)}, {"dtype", Attribute(static_cast<int64_t>(dtype))}})[0];
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(to_doubles(y), reference);
  }
}

TEST(RandomOps, MultinomialDrawsFromTheSoftmaxOfEachRow) {
  // Unnormalized log-probabilities: row 0 is log(0.1, 0.2, 0.7, 0) + 5,
  // row 1 is log(0.5, 0.25, 0.25) with a class of probability 0 first.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> logits = {std::log(0.1) + 5, std::log(0.2) + 5, std::log(0.7) + 5, -inf,
                                -inf, std::log(0.5) - 3, std::log(0.25) - 3, std::log(0.25) - 3};
  const std::vector<std::vector<double>> expected = {{0.1, 0.2, 0.7, 0}, {0, 0.5, 0.25, 0.25}};
  for (DType in : {DType::kFloat32, DType::kFloat64}) {
    SCOPED_TRACE(dtype_name(in));
    Tensor x = make_tensor(in, logits, {2, 4});
    Tensor y = run_op("Multinomial", {x}, {{"sample_size", Attribute(kDraws)}, {"seed", Attribute(13.0)}})[0];
    EXPECT_EQ(y.dtype(), DType::kInt32);
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, kDraws}));
    std::vector<double> classes = to_doubles(y);
    for (size_t b = 0; b < 2; ++b) {
      std::vector<double> counts(4, 0);
      for (int64_t s = 0; s < kDraws; ++s) {
        double c = classes[b * static_cast<size_t>(kDraws) + static_cast<size_t>(s)];
        ASSERT_TRUE(c >= 0 && c < 4) << c;
        counts[static_cast<size_t>(c)] += 1;
      }
      for (size_t c = 0; c < 4; ++c) {
        const double q = expected[b][c];
        if (q == 0) {
          EXPECT_EQ(counts[c], 0) << "row " << b << " class " << c;
        } else {
          EXPECT_NEAR(counts[c] / kDraws, q, 5 * std::sqrt(q * (1 - q) / kDraws)) << "row " << b << " class " << c;
        }
      }
    }
  }
  // int64 output; one sample per row by default.
  Tensor x = make_tensor(DType::kFloat32, {0, 0, 0, 0, 0, 0}, {3, 2});
  Tensor y = run_op("Multinomial", {x}, {{"dtype", Attribute(static_cast<int64_t>(DType::kInt64))}})[0];
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 1}));
}

TEST(RandomOps, SeedMakesEveryRunTheSameAndThreadCountsAgree) {
  for (const char* op : {"RandomUniform", "RandomNormal"}) {
    SCOPED_TRACE(op);
    Attributes seeded = {{"shape", Attribute(std::vector<int64_t>{1000, 100})}, {"seed", Attribute(21.0)}};
    KernelRunner runner(op, {}, seeded);
    std::vector<double> first = runner.run({});
    EXPECT_EQ(runner.run({}), first);                     // the same kernel, a later run
    EXPECT_EQ(runner.run({}, uint64_t{77}), first);       // whatever the run counter
    EXPECT_EQ(to_doubles(run_op(op, {}, seeded)[0]), first);  // a fresh kernel, another node name
    Attributes other = seeded;
    other["seed"] = Attribute(22.0);
    std::vector<double> different = to_doubles(run_op(op, {}, other)[0]);
    size_t equal = 0;
    for (size_t i = 0; i < first.size(); ++i) equal += first[i] == different[i] ? 1 : 0;
    EXPECT_LT(equal, 10u);
    set_intra_op_threads(1);
    std::vector<double> one_thread = to_doubles(run_op(op, {}, seeded)[0]);
    set_intra_op_threads(0);
    EXPECT_EQ(one_thread, first);
  }
}

TEST(RandomOps, WithoutSeedEachRunDrawsAfreshAndACounterReplays) {
  Tensor probs = make_tensor(DType::kFloat32, std::vector<double>(20000, 0.5), {20000});
  Tensor logits = make_tensor(DType::kFloat32, std::vector<double>(20, 0), {2, 10});
  struct Case {
    const char* op;
    std::vector<Tensor> inputs;
    Attributes attributes;
  };
  std::vector<Case> cases = {
      {"RandomUniform", {}, {{"shape", Attribute(std::vector<int64_t>{20000})}}},
      {"RandomNormal", {}, {{"shape", Attribute(std::vector<int64_t>{20000})}}},
      {"RandomUniformLike", {probs}, {}},
      {"RandomNormalLike", {probs}, {}},
      {"Bernoulli", {probs}, {}},
      {"Multinomial", {logits}, {{"sample_size", Attribute(int64_t{10000})}}},
  };
  // Two values of 20000 draws agree in nearly every place only by design:
  // at most 2/3 here (Bernoulli(0.5) agrees in half, Multinomial over 10 classes in a tenth).
  auto mostly_different = [](const std::vector<double>& a, const std::vector<double>& b) {
    size_t equal = 0;
    for (size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i] ? 1 : 0;
    return equal < a.size() * 2 / 3;
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    KernelRunner runner(c.op, c.inputs, c.attributes);
    std::vector<double> first = runner.run(c.inputs);
    std::vector<double> second = runner.run(c.inputs);
    EXPECT_TRUE(mostly_different(first, second));
    // A runtime's run counter: the same counter replays, another differs.
    std::vector<double> at5 = runner.run(c.inputs, uint64_t{5});
    EXPECT_EQ(runner.run(c.inputs, uint64_t{5}), at5);
    EXPECT_TRUE(mostly_different(runner.run(c.inputs, uint64_t{6}), at5));
    // Another node of the same run draws other values.
    KernelRunner other(c.op, c.inputs, c.attributes, "rand_2");
    EXPECT_TRUE(mostly_different(other.run(c.inputs, uint64_t{5}), at5));
  }
}

TEST(RandomOps, AreStatefulSoNeitherFoldedNorMerged) {
  for (const char* op : {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli", "Multinomial"}) {
    EXPECT_TRUE(default_op_registry().get(op).has(OpTrait::kStateful)) << op;
  }
}

TEST(RandomOps, BadAttributesAndInputsAreErrors) {
  auto expect_error = [](const std::string& op, const std::vector<Tensor>& inputs, Attributes attributes,
                         const std::string& wanted) {
    std::string message = error_of(op, inputs, std::move(attributes));
    EXPECT_NE(message.find(wanted), std::string::npos) << op << ": " << message;
  };
  using Ints = std::vector<int64_t>;
  expect_error("RandomUniform", {}, {{"shape", Attribute(Ints{2, -1})}}, "negative size");
  expect_error("RandomNormal", {}, {{"shape", Attribute(Ints{-3})}}, "negative size");
  expect_error("RandomUniform", {}, {{"shape", Attribute(Ints{2})}, {"low", Attribute(2.0)}, {"high", Attribute(1.0)}},
               "low <= high");
  expect_error("RandomNormal", {}, {{"shape", Attribute(Ints{2})}, {"scale", Attribute(-1.0)}}, "scale >= 0");
  expect_error("RandomUniform", {}, {{"shape", Attribute(Ints{2})}, {"dtype", Attribute(int64_t{6})}},
               "not a floating type");
  Tensor x = make_tensor(DType::kFloat32, {0.5, 0.5}, {2});
  expect_error("RandomNormalLike", {x}, {{"dtype", Attribute(int64_t{7})}}, "not a floating type");

  // Probabilities outside [0, 1], or NaN, name the element.
  for (double bad : {1.5, -0.25, std::nan("")}) {
    Tensor p = make_tensor(DType::kFloat32, {0.5, 1.0, bad, 0.0}, {4});
    expect_error("Bernoulli", {p}, {}, "at element 2 is outside [0, 1]");
  }
  expect_error("Bernoulli", {x}, {{"dtype", Attribute(int64_t{99})}}, "not a dtype");

  const double inf = std::numeric_limits<double>::infinity();
  expect_error("Multinomial", {x}, {}, "must be 2-D");
  expect_error("Multinomial", {make_tensor(DType::kFloat32, {0, 1, -inf, -inf}, {2, 2})}, {}, "row 1 has no finite logit");
  expect_error("Multinomial", {make_tensor(DType::kFloat32, {0, std::nan(""), 0, 0}, {2, 2})}, {}, "row 0 has logit");
  expect_error("Multinomial", {make_tensor(DType::kFloat32, {0, 0, inf, 0}, {2, 2})}, {}, "row 1 has logit");
  Tensor logits = make_tensor(DType::kFloat32, {0, 0}, {1, 2});
  expect_error("Multinomial", {logits}, {{"sample_size", Attribute(int64_t{0})}}, "sample_size 0");
  expect_error("Multinomial", {logits}, {{"dtype", Attribute(int64_t{1})}}, "int32 (6) or int64 (7)");
}

}  // namespace
}  // namespace weir
