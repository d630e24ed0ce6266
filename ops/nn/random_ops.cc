#include "ops/nn/random_ops.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/splitmix.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;       // SplitMix64's increment
constexpr uint64_t kSeededDomain = 0x52414E44'5345454DULL;  // "RANDSEEM"
constexpr uint64_t kUnseededDomain = 0x52414E44'52554E53ULL;  // "RANDRUNS"

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// The `seed` attribute (a float in ONNX; an int is taken as that float), as
// the bits of the double, so that 1.0 and 1.5 are different seeds.
std::optional<uint64_t> seed_of(const Node& node) {
  if (!node.has_attr("seed")) return std::nullopt;
  const Attribute& attr = node.attr("seed");
  double seed = attr.type() == AttrType::kInt ? static_cast<double>(attr.i()) : attr.f();
  if (seed == 0) seed = 0;  // -0 and 0 are one seed
  return std::bit_cast<uint64_t>(seed);
}

// FNV-1a of the node's name and its output's name: what tells two unseeded
// nodes of one run apart.
uint64_t node_key(const Node& node) {
  uint64_t hash = 0xCBF29CE484222325ULL;
  auto add = [&](const std::string& text) {
    for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
    hash = (hash ^ 0xFFu) * 0x100000001B3ULL;
  };
  add(node.name());
  if (node.num_outputs() > 0 && node.output(0) != nullptr) add(node.output(0)->name());
  return hash;
}

// Where a node's draws start for one run (see random_ops.h).
class RandomStream {
 public:
  explicit RandomStream(const Node& node) : seed_(seed_of(node)), node_key_(node_key(node)) {}

  uint64_t start(const KernelContext& ctx) {
    if (seed_) return splitmix64_keyed(*seed_, kSeededDomain, 0);
    std::optional<uint64_t> counter = ctx.rng_counter();
    const uint64_t run = counter ? *counter : runs_.fetch_add(1);
    return splitmix64_keyed(node_key_, kUnseededDomain, run);
  }

 private:
  std::optional<uint64_t> seed_;
  uint64_t node_key_;
  std::atomic<uint64_t> runs_{0};
};

// Element i's uniform in [0, 1): position i + 1 of the sequence from `start`.
inline double unit_at(uint64_t start, int64_t i) {
  uint64_t state = start + static_cast<uint64_t>(i) * kGolden;
  return splitmix64_unit(state);
}

// Element i's standard normal: one of the Box-Muller pair of elements 2j, 2j + 1.
inline double normal_at(uint64_t start, int64_t i) {
  uint64_t state = start + static_cast<uint64_t>(i / 2) * 2 * kGolden;
  auto [first, second] = splitmix64_normal_pair(state);
  return (i & 1) != 0 ? second : first;
}

// The neighbouring representable value of `value` upwards or downwards.
template <typename T>
T step(T value, bool up) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nextafter(value, up ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity());
  } else {
    const uint16_t bits = value.bits;
    if ((bits & 0x7FFFu) == 0) return T::from_bits(up ? uint16_t{0x0001} : uint16_t{0x8001});
    const bool negative = (bits & 0x8000u) != 0;
    return T::from_bits(static_cast<uint16_t>(up != negative ? bits + 1 : bits - 1));
  }
}

template <typename T>
T store_double(double value) {
  return store<T>(static_cast<ComputeType<T>>(value));
}

// The output dtype of RandomUniform/RandomNormal(Like): a floating type.
template <typename Fail>
DType floating_dtype(int64_t code, Fail&& fail) {
  if (code <= 0 || code > 0x7fffffff || !is_valid_dtype(static_cast<int32_t>(code)) ||
      !is_floating(static_cast<DType>(code))) {
    fail("dtype " + std::to_string(code) + " is not a floating type (f16 10, f32 1, f64 11, bf16 16)");
  }
  return static_cast<DType>(code);
}

template <typename Fail>
DType any_dtype(int64_t code, Fail&& fail) {
  if (code <= 0 || code > 0x7fffffff || !is_valid_dtype(static_cast<int32_t>(code))) {
    fail("dtype " + std::to_string(code) + " is not a dtype Weir supports");
  }
  return static_cast<DType>(code);
}

template <typename Fail>
std::vector<int64_t> checked_shape(const std::vector<int64_t>& shape, Fail&& fail) {
  for (int64_t size : shape) {
    if (size < 0) fail("shape " + format_sizes(shape) + " has a negative size");
  }
  if (!checked_num_elements(shape)) fail("shape " + format_sizes(shape) + " has too many elements");
  return shape;
}

enum class Distribution { kUniform, kNormal };

// low/high (uniform) or mean/scale (normal).
struct Parameters {
  double a = 0, b = 1;
};

template <typename Fail>
void check_parameters(Distribution distribution, Parameters p, Fail&& fail) {
  if (distribution == Distribution::kUniform) {
    if (!std::isfinite(p.a) || !std::isfinite(p.b) || p.b < p.a) {
      fail("low " + number(p.a) + " and high " + number(p.b) + " must be finite with low <= high");
    }
  } else if (!std::isfinite(p.a) || !std::isfinite(p.b) || p.b < 0) {
    fail("mean " + number(p.a) + " and scale " + number(p.b) + " must be finite with scale >= 0");
  }
}

Parameters parameters_of(Distribution distribution, const Node& node) {
  if (distribution == Distribution::kUniform) return {float_attr(node, "low", 0.0), float_attr(node, "high", 1.0)};
  return {float_attr(node, "mean", 0.0), float_attr(node, "scale", 1.0)};
}

template <typename T>
void fill_uniform(T* out, int64_t count, uint64_t start, double low, double high) {
  if (high == low) {
    std::fill_n(out, count, store_double<T>(low));
    return;
  }
  // The extreme values of T in [low, high), for draws that round out of it.
  T top = store_double<T>(high);
  while (static_cast<double>(load(top)) >= high) top = step(top, false);
  T bottom = store_double<T>(low);
  while (static_cast<double>(load(bottom)) < low) bottom = step(bottom, true);
  const double width = high - low;
  parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T value = store_double<T>(low + width * unit_at(start, i));
      const double back = static_cast<double>(load(value));
      if (back >= high) value = top;
      else if (back < low) value = bottom;
      out[i] = value;
    }
  });
}

template <typename T>
void fill_normal(T* out, int64_t count, uint64_t start, double mean, double scale) {
  parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = store_double<T>(mean + scale * normal_at(start, i));
  });
}

// RandomUniform, RandomNormal and their *Like forms.
class RandomFillKernel final : public OpKernel {
 public:
  RandomFillKernel(const Node& node, Distribution distribution, bool like)
      : distribution_(distribution),
        like_(like),
        parameters_(parameters_of(distribution, node)),
        has_dtype_(node.has_attr("dtype")),
        dtype_code_(int_attr(node, "dtype", 1)),
        shape_(!like && node.has_attr("shape") ? node.attr("shape").ints() : std::vector<int64_t>{}),
        stream_(node) {}

  void compute(KernelContext& ctx) override {
    auto fail = [&](const std::string& message) { ctx.fail(message); };
    check_parameters(distribution_, parameters_, fail);
    DType dtype = DType::kFloat32;
    std::vector<int64_t> sizes;
    if (like_) {
      const Tensor& x = ctx.input(0);
      sizes = x.sizes();
      if (has_dtype_) {
        dtype = floating_dtype(dtype_code_, fail);
      } else if (!is_floating(x.dtype())) {
        ctx.fail("input " + x.type_string() + " is not floating and no dtype is given");
      } else {
        dtype = x.dtype();
      }
    } else {
      dtype = floating_dtype(dtype_code_, fail);
      sizes = checked_shape(shape_, fail);
    }
    Tensor& y = ctx.allocate_output(0, dtype, sizes, KernelContext::Fill::kUninitialized);
    const uint64_t start = stream_.start(ctx);
    dispatch_dtype(dtype, [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        if (distribution_ == Distribution::kUniform) {
          fill_uniform(y.data<T>(), y.num_elements(), start, parameters_.a, parameters_.b);
        } else {
          fill_normal(y.data<T>(), y.num_elements(), start, parameters_.a, parameters_.b);
        }
      }
    });
  }

 private:
  Distribution distribution_;
  bool like_;
  Parameters parameters_;
  bool has_dtype_;
  int64_t dtype_code_;
  std::vector<int64_t> shape_;
  RandomStream stream_;
};

class BernoulliKernel final : public OpKernel {
 public:
  explicit BernoulliKernel(const Node& node)
      : has_dtype_(node.has_attr("dtype")), dtype_code_(int_attr(node, "dtype", 0)), stream_(node) {}

  void compute(KernelContext& ctx) override {
    const Tensor& p = ctx.input(0);
    if (!is_floating(p.dtype())) ctx.fail("probabilities " + p.type_string() + " must be floating");
    const DType dtype = has_dtype_ ? any_dtype(dtype_code_, [&](const std::string& m) { ctx.fail(m); }) : p.dtype();
    const int64_t count = p.num_elements();
    std::vector<double> probability(static_cast<size_t>(count));
    dispatch_dtype(p.dtype(), [&]<typename P>() {
      if constexpr (std::is_floating_point_v<ComputeType<P>>) {
        const P* in = p.data<P>();
        for (int64_t i = 0; i < count; ++i) probability[static_cast<size_t>(i)] = static_cast<double>(load(in[i]));
      }
    });
    for (int64_t i = 0; i < count; ++i) {
      const double value = probability[static_cast<size_t>(i)];
      if (!(value >= 0 && value <= 1)) {
        ctx.fail("probability " + number(value) + " at element " + std::to_string(i) + " is outside [0, 1]");
      }
    }
    Tensor& y = ctx.allocate_output(0, dtype, p.sizes(), KernelContext::Fill::kUninitialized);
    const uint64_t start = stream_.start(ctx);
    dispatch_dtype(dtype, [&]<typename T>() {
      T one, zero;
      if constexpr (std::is_same_v<T, bool>) {
        one = true;
        zero = false;
      } else {
        one = store<T>(ComputeType<T>(1));
        zero = store<T>(ComputeType<T>(0));
      }
      T* out = y.data<T>();
      // u < p: never for p = 0, always for p = 1 (u < 1).
      parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = unit_at(start, i) < probability[static_cast<size_t>(i)] ? one : zero;
      });
    });
  }

 private:
  bool has_dtype_;
  int64_t dtype_code_;
  RandomStream stream_;
};

template <typename Fail>
DType multinomial_dtype(int64_t code, Fail&& fail) {
  if (code != static_cast<int64_t>(DType::kInt32) && code != static_cast<int64_t>(DType::kInt64)) {
    fail("dtype " + std::to_string(code) + " must be int32 (6) or int64 (7)");
  }
  return static_cast<DType>(code);
}

template <typename Fail>
int64_t checked_sample_size(int64_t sample_size, Fail&& fail) {
  if (sample_size < 1) fail("sample_size " + std::to_string(sample_size) + " must be at least 1");
  return sample_size;
}

class MultinomialKernel final : public OpKernel {
 public:
  explicit MultinomialKernel(const Node& node)
      : dtype_code_(int_attr(node, "dtype", static_cast<int64_t>(DType::kInt32))),
        sample_size_(int_attr(node, "sample_size", 1)),
        stream_(node) {}

  void compute(KernelContext& ctx) override {
    auto fail = [&](const std::string& message) { ctx.fail(message); };
    const DType dtype = multinomial_dtype(dtype_code_, fail);
    const int64_t samples = checked_sample_size(sample_size_, fail);
    const Tensor& x = ctx.input(0);
    if (x.rank() != 2) ctx.fail("input " + x.type_string() + " must be 2-D [batch_size, class_size]");
    if (!is_floating(x.dtype())) ctx.fail("input " + x.type_string() + " must be floating");
    const int64_t batch = x.sizes()[0], classes = x.sizes()[1];
    if (classes == 0 && batch > 0) ctx.fail("input " + x.type_string() + " has no classes to draw from");
    std::vector<double> logits(static_cast<size_t>(x.num_elements()));
    dispatch_dtype(x.dtype(), [&]<typename P>() {
      if constexpr (std::is_floating_point_v<ComputeType<P>>) {
        const P* in = x.data<P>();
        for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<double>(load(in[i]));
      }
    });
    // Each row's largest logit, checking the row on the way.
    std::vector<double> row_max(static_cast<size_t>(batch), -std::numeric_limits<double>::infinity());
    for (int64_t b = 0; b < batch; ++b) {
      double& top = row_max[static_cast<size_t>(b)];
      for (int64_t c = 0; c < classes; ++c) {
        const double value = logits[static_cast<size_t>(b * classes + c)];
        if (std::isnan(value) || value == std::numeric_limits<double>::infinity()) {
          ctx.fail("row " + std::to_string(b) + " has logit " + number(value) + " at class " + std::to_string(c) +
                   ": logits must be finite or -inf");
        }
        top = std::max(top, value);
      }
      if (!std::isfinite(top)) ctx.fail("row " + std::to_string(b) + " has no finite logit: no class can be drawn");
    }
    Tensor& y = ctx.allocate_output(0, dtype, {batch, samples}, KernelContext::Fill::kUninitialized);
    const uint64_t start = stream_.start(ctx);
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, classes + samples));
    dispatch_dtype(dtype, [&]<typename I>() {
      if constexpr (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>) {
        I* out = y.data<I>();
        parallel_for(batch, grain, [&](int64_t begin, int64_t end) {
          std::vector<double> cumulative(static_cast<size_t>(classes));
          for (int64_t b = begin; b < end; ++b) {
            // Cumulative softmax numerators exp(x - max); the last class with
            // weight takes a draw that rounds up to the total.
            double total = 0;
            int64_t last = 0;
            for (int64_t c = 0; c < classes; ++c) {
              const double weight = std::exp(logits[static_cast<size_t>(b * classes + c)] - row_max[static_cast<size_t>(b)]);
              total += weight;
              if (weight > 0) last = c;
              cumulative[static_cast<size_t>(c)] = total;
            }
            for (int64_t s = 0; s < samples; ++s) {
              const double target = unit_at(start, b * samples + s) * total;
              auto found = std::upper_bound(cumulative.begin(), cumulative.end(), target);
              int64_t c = static_cast<int64_t>(found - cumulative.begin());
              out[b * samples + s] = static_cast<I>(std::min(c, last));
            }
          }
        });
      }
    });
  }

 private:
  int64_t dtype_code_;
  int64_t sample_size_;
  RandomStream stream_;
};

void add_fill_schema(OpRegistry& registry, const char* name, Distribution distribution, bool like) {
  OpSchema schema(name);
  const bool uniform = distribution == Distribution::kUniform;
  if (like) {
    schema.input("input", "T1").output("output", "T2").type_constraint("T1", kAnyDTypes).type_constraint("T2", kFloatDTypes);
    schema.attr("dtype", AttrType::kInt);
  } else {
    schema.output("output", "T").type_constraint("T", kFloatDTypes);
    schema.attr("dtype", AttrType::kInt, Attribute(int64_t{1})).required_attr("shape", AttrType::kInts);
  }
  if (uniform) {
    schema.attr("low", AttrType::kFloat, Attribute(0.0)).attr("high", AttrType::kFloat, Attribute(1.0));
  } else {
    schema.attr("mean", AttrType::kFloat, Attribute(0.0)).attr("scale", AttrType::kFloat, Attribute(1.0));
  }
  schema.attr("seed", AttrType::kFloat)
      .traits(OpTrait::kStateful)
      .infer([distribution, like](InferenceContext& ctx) {
        auto fail = [&](const std::string& message) { ctx.fail(message); };
        Parameters p = distribution == Distribution::kUniform
                           ? Parameters{ctx.attr_float("low"), ctx.attr_float("high")}
                           : Parameters{ctx.attr_float("mean"), ctx.attr_float("scale")};
        check_parameters(distribution, p, fail);
        if (!like) {
          DType dtype = floating_dtype(ctx.attr_int("dtype"), fail);
          ctx.set_output_type(0, {dtype, Shape::from_sizes(checked_shape(ctx.attr_ints("shape"), fail))});
          return;
        }
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        DType dtype = x->dtype;
        if (ctx.has_attr("dtype")) {
          dtype = floating_dtype(ctx.attr_int("dtype"), fail);
        } else if (!is_floating(dtype)) {
          ctx.fail(std::string("input is ") + std::string(dtype_name(dtype)) + ", not floating, and no dtype is given");
        }
        ctx.set_output_type(0, {dtype, x->shape});
      })
      // Random values: nothing flows back (the *Like input gives only its shape).
      .gradient([](GradientContext&) {})
      .doc(uniform ? "values drawn uniformly from [low, high); `seed` makes them the same every run"
                   : "values drawn from a normal distribution (mean, scale = standard deviation); `seed` makes "
                     "them the same every run");
  registry.add(std::move(schema));
}

}  // namespace

void register_random_schemas(OpRegistry& registry) {
  add_fill_schema(registry, "RandomUniform", Distribution::kUniform, false);
  add_fill_schema(registry, "RandomNormal", Distribution::kNormal, false);
  add_fill_schema(registry, "RandomUniformLike", Distribution::kUniform, true);
  add_fill_schema(registry, "RandomNormalLike", Distribution::kNormal, true);

  OpSchema bernoulli("Bernoulli");
  bernoulli.input("input", "T1").output("output", "T2")
      .type_constraint("T1", kFloatDTypes).type_constraint("T2", kAnyDTypes)
      .attr("dtype", AttrType::kInt)
      .attr("seed", AttrType::kFloat)
      .traits(OpTrait::kStateful)
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        DType dtype = ctx.has_attr("dtype") ? any_dtype(ctx.attr_int("dtype"), [&](const std::string& m) { ctx.fail(m); })
                                            : x->dtype;
        ctx.set_output_type(0, {dtype, x->shape});
      })
      .gradient([](GradientContext&) {})
      .doc("1 with probability input[i], else 0 (probabilities outside [0, 1] are an error); dtype from the "
           "attribute, else the input's");
  registry.add(std::move(bernoulli));

  OpSchema multinomial("Multinomial");
  multinomial.input("input", "T1").output("output", "T2")
      .type_constraint("T1", kFloatDTypes).type_constraint("T2", {DType::kInt32, DType::kInt64})
      .attr("dtype", AttrType::kInt, Attribute(static_cast<int64_t>(DType::kInt32)))
      .attr("sample_size", AttrType::kInt, Attribute(int64_t{1}))
      .attr("seed", AttrType::kFloat)
      .traits(OpTrait::kStateful)
      .infer([](InferenceContext& ctx) {
        auto fail = [&](const std::string& message) { ctx.fail(message); };
        DType dtype = multinomial_dtype(ctx.attr_int("dtype"), fail);
        int64_t samples = checked_sample_size(ctx.attr_int("sample_size"), fail);
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        if (!x->shape.has_rank()) {
          ctx.set_output_type(0, {dtype, Shape{symbolic_dim(ctx, 0), Dim(samples)}});
          return;
        }
        if (x->shape.rank() != 2) ctx.fail("input " + x->shape.to_string() + " must be 2-D [batch_size, class_size]");
        ctx.set_output_type(0, {dtype, Shape{x->shape[0], Dim(samples)}});
      })
      .gradient([](GradientContext&) {})
      .doc("sample_size class indices per row of [batch_size, class_size] unnormalized log-probabilities");
  registry.add(std::move(multinomial));
}

void register_random_cpu_kernels(KernelRegistry& registry) {
  // The kernel dtype is the output's for the input-less ops, the input's otherwise.
  registry.add("RandomUniform", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<RandomFillKernel>(node, Distribution::kUniform, false); });
  registry.add("RandomNormal", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<RandomFillKernel>(node, Distribution::kNormal, false); });
  registry.add("RandomUniformLike", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<RandomFillKernel>(node, Distribution::kUniform, true); });
  registry.add("RandomNormalLike", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<RandomFillKernel>(node, Distribution::kNormal, true); });
  registry.add("Bernoulli", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<BernoulliKernel>(node); });
  registry.add("Multinomial", DeviceType::kCpu, kFloatDTypes,
               [](const Node& node) { return std::make_unique<MultinomialKernel>(node); });
}

}  // namespace weir
