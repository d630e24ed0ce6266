#include "ops/optimizer/dgc.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "core/error.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/scalar_input.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

const std::vector<double> kDefaultSparsity = {0.999};

// Why these attributes cannot drive DGC, or "" when they can.
std::string rampup_problem(int64_t rampup_step, const std::vector<double>& sparsity) {
  if (rampup_step < 1) return "rampup_step must be at least 1, got " + std::to_string(rampup_step);
  if (sparsity.empty()) return "sparsity must list at least one value";
  for (double s : sparsity) {
    if (!(s >= 0 && s < 1)) return "every sparsity must be in [0, 1), got " + std::to_string(s);
  }
  return "";
}

void require_f32(const KernelContext& ctx, size_t index, const char* name) {
  const Tensor& t = ctx.input(index);
  if (t.dtype() != DType::kFloat32) {
    ctx.fail(std::string("supports f32 only; ") + name + " is " + t.type_string());
  }
}

// The update loops treat the inputs at `indices` as separate buffers.
void require_distinct(const KernelContext& ctx, const std::vector<size_t>& indices) {
  for (size_t a = 0; a < indices.size(); ++a) {
    for (size_t b = a + 1; b < indices.size(); ++b) {
      const Tensor& x = ctx.input(indices[a]);
      const Tensor& y = ctx.input(indices[b]);
      const char* px = static_cast<const char*>(x.raw_data());
      const char* py = static_cast<const char*>(y.raw_data());
      if (x.nbytes() > 0 && y.nbytes() > 0 && px < py + y.nbytes() && py < px + x.nbytes()) {
        ctx.fail("inputs " + std::to_string(indices[a]) + " and " + std::to_string(indices[b]) +
                 " share memory; they must be distinct tensors");
      }
    }
  }
}

float index_bits(int32_t index) {
  float slot = 0;
  std::memcpy(&slot, &index, sizeof(slot));
  return slot;
}

int32_t index_of(float slot) {
  int32_t index = 0;
  std::memcpy(&index, &slot, sizeof(index));
  return index;
}

class DgcEncodeKernel final : public OpKernel {
 public:
  explicit DgcEncodeKernel(const Node& node) : rule_(DgcRule::of(node)) {}

  void compute(KernelContext& ctx) override {
    check_dgc_encode_inputs(ctx, rule_);
    const Tensor& grad = ctx.input(0);
    const int64_t numel = grad.num_elements();
    const int64_t dgc_step = step_input(ctx, 4) - 1;
    if (dgc_step < rule_.rampup_begin_step) {  // the dense phase: nothing to send, the state rests
      ctx.allocate_output(0, DType::kFloat32, {0});
      return;
    }
    const int64_t k = dgc_k(numel, dgc_step, rule_.rampup_begin_step, rule_.rampup_step, rule_.sparsity);
    float* u = ctx.input(2).data<float>();
    float* v = ctx.input(3).data<float>();
    accumulate(grad.data<float>(), ctx.input(1).data<float>(), u, v, numel);

    const double threshold = dgc_threshold(v, numel, k);
    // The entries above the threshold, in index order: fixed chunks scanned
    // on any threads, joined in chunk order.
    constexpr int64_t kChunk = 65536;
    const int64_t chunks = (numel + kChunk - 1) / kChunk;
    std::vector<std::vector<int64_t>> found(static_cast<size_t>(chunks));
    parallel_for(chunks, 1, [&](int64_t first, int64_t last) {
      for (int64_t c = first; c < last; ++c) {
        std::vector<int64_t>& mine = found[static_cast<size_t>(c)];
        for (int64_t i = c * kChunk, end = std::min(numel, (c + 1) * kChunk); i < end; ++i) {
          if (static_cast<double>(std::fabs(v[i])) > threshold) mine.push_back(i);
        }
      }
    });
    std::vector<int64_t> kept;
    for (const std::vector<int64_t>& chunk : found) kept.insert(kept.end(), chunk.begin(), chunk.end());
    if (static_cast<int64_t>(kept.size()) > k) {
      // The k largest |v|; among equal magnitudes the smaller index first:
      // the k-th largest magnitude t, everything above it, and as many
      // entries equal to t as are still wanted, in index order. (Selecting
      // on a copy of the magnitudes keeps the kept indices sorted.)
      std::vector<float> magnitudes(kept.size());
      for (size_t j = 0; j < kept.size(); ++j) magnitudes[j] = std::fabs(v[kept[j]]);
      std::nth_element(magnitudes.begin(), magnitudes.begin() + (k - 1), magnitudes.end(), std::greater<float>());
      const float kth = magnitudes[static_cast<size_t>(k - 1)];
      int64_t ties = k;
      for (int64_t i : kept) ties -= std::fabs(v[i]) > kth ? 1 : 0;
      size_t written = 0;
      for (int64_t i : kept) {
        const float magnitude = std::fabs(v[i]);
        if (magnitude > kth || (magnitude == kth && ties-- > 0)) kept[written++] = i;
      }
      kept.resize(written);
    }

    Tensor& encoded = ctx.allocate_output(0, DType::kFloat32, {2 * k}, KernelContext::Fill::kUninitialized);
    float* out = encoded.data<float>();
    for (int64_t j = 0; j < k; ++j) {
      const bool sent = j < static_cast<int64_t>(kept.size());
      const int64_t i = sent ? kept[static_cast<size_t>(j)] : -1;
      out[2 * j] = index_bits(static_cast<int32_t>(i));
      out[2 * j + 1] = sent ? v[i] : 0.0f;
    }
    // Momentum factor masking: what was sent starts over.
    for (int64_t i : kept) u[i] = v[i] = 0.0f;
  }

 private:
  // Steps 1-3: clipping, weight decay, momentum correction and local
  // accumulation, elementwise (so independent of the thread count).
  void accumulate(const float* grad, const float* param, float* u, float* v, int64_t numel) const {
    double scale = 1.0;
    if (rule_.clip_norm > 0) {
      double squares = 0;
      for (int64_t i = 0; i < numel; ++i) squares += static_cast<double>(grad[i]) * static_cast<double>(grad[i]);
      const double norm = std::sqrt(squares);
      if (norm > rule_.clip_norm) scale = rule_.clip_norm / norm;
    }
    const double mu = rule_.momentum, wd = rule_.weight_decay;
    const bool nesterov = rule_.nesterov;
    // One loop per (nesterov, decay), so the common case reads no param.
    auto update = [&]<bool kNesterov, bool kDecay>() {
      parallel_for(numel, kElementwiseGrain, [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          double g = static_cast<double>(grad[i]) * scale;
          if constexpr (kDecay) g += wd * static_cast<double>(param[i]);
          if constexpr (kNesterov) {
            u[i] = static_cast<float>(mu * (static_cast<double>(u[i]) + g));
            v[i] = static_cast<float>(static_cast<double>(v[i]) + static_cast<double>(u[i]) + g);
          } else {
            u[i] = static_cast<float>(mu * static_cast<double>(u[i]) + g);
            v[i] = static_cast<float>(static_cast<double>(v[i]) + static_cast<double>(u[i]));
          }
        }
      });
    };
    const bool decay = wd != 0;
    if (nesterov) {
      decay ? update.template operator()<true, true>() : update.template operator()<true, false>();
    } else {
      decay ? update.template operator()<false, true>() : update.template operator()<false, false>();
    }
  }

  DgcRule rule_;
};

class DgcMomentumKernel final : public OpKernel {
 public:
  explicit DgcMomentumKernel(const Node& node) : rule_(DgcRule::of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& param = ctx.input(0);
    const double lr = scalar_input(ctx, 5, "lr");
    const bool sparse = step_input(ctx, 6) - 1 >= rule_.rampup_begin_step;
    check_dgc_momentum_inputs(ctx, sparse);
    if (sparse) {
      sparse_sgd(ctx, lr);
    } else {
      dense_momentum(param.data<float>(), ctx.input(2).data<float>(), ctx.input(1).data<float>(),
                     param.num_elements(), lr);
    }
    // Outputs alias the updated inputs.
    ctx.set_output(0, param);
    ctx.set_output(1, ctx.input(1));
  }

 private:
  // Momentum's rule (ops/optimizer/optimizer_kernels.cc) with the same
  // arithmetic, so that the dense phase is bitwise what Momentum does.
  void dense_momentum(float* p, const float* g, float* s0, int64_t n, double lr) const {
    const double wd = rule_.weight_decay, mu = rule_.momentum;
    const bool nesterov = rule_.nesterov;
    parallel_for(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        double grad = g[i] + wd * p[i];
        double v = mu * s0[i] + grad;
        s0[i] = static_cast<float>(v);
        p[i] -= static_cast<float>(lr * (nesterov ? grad + mu * v : v));
      }
    });
  }

  // param -= lr * (the sum of all ranks' pairs) / N, the sum in gathered order.
  void sparse_sgd(const KernelContext& ctx, double lr) const {
    const Tensor& gathered = ctx.input(3);
    const int64_t ranks = dgc_gathered_ranks(ctx), total = gathered.num_elements();
    const int64_t numel = ctx.input(0).num_elements();
    const float* pairs = gathered.data<float>();
    for (int64_t j = 0; j < total; j += 2) {
      const int32_t index = index_of(pairs[j]);
      if (index < -1 || index >= numel) {
        ctx.fail("gathered pair " + std::to_string(j / 2) + " has index " + std::to_string(index) +
                 "; expected -1 (padding) or an index below " + std::to_string(numel));
      }
    }
    // The sums live in a buffer of this thread's that stays zero between
    // calls (only the touched entries are written and reset), so a step
    // costs the pairs, not a pass over the whole parameter. Kernels are
    // shared by the ranks of an in-process world, hence per thread.
    thread_local std::vector<double> sum;
    thread_local std::vector<int64_t> touched;
    if (static_cast<int64_t>(sum.size()) < numel) sum.resize(static_cast<size_t>(numel), 0.0);
    touched.clear();
    for (int64_t j = 0; j < total; j += 2) {
      const int32_t index = index_of(pairs[j]);
      if (index == -1) continue;  // padding
      double& entry = sum[static_cast<size_t>(index)];
      if (entry == 0.0) touched.push_back(index);  // a repeat that summed to zero is listed twice: harmless
      entry += static_cast<double>(pairs[j + 1]);
    }
    float* p = ctx.input(0).data<float>();
    const double n = static_cast<double>(ranks);
    for (int64_t i : touched) {
      double& entry = sum[static_cast<size_t>(i)];
      p[i] -= static_cast<float>(lr * (entry / n));
      entry = 0.0;
    }
  }

  DgcRule rule_;
};

// Input `index`, when its static shape is known, must equal `reference`'s.
void check_same_shape(InferenceContext& ctx, size_t index, const char* name, const TensorType* reference,
                      const char* reference_name) {
  const TensorType* other = ctx.input_type(index);
  if (other != nullptr && reference != nullptr && other->shape.is_static() && reference->shape.is_static() &&
      other->shape != reference->shape) {
    ctx.fail(std::string(name) + " is " + other->to_string() + " and " + reference_name + " " +
             reference->to_string() + "; they must have the same shape");
  }
}

void check_rank1(InferenceContext& ctx, size_t index, const char* name) {
  const TensorType* t = ctx.input_type(index);
  if (t != nullptr && t->shape.has_rank() && t->shape.rank() != 1) {
    ctx.fail(std::string(name) + " must be rank 1 ((index, value) pairs), got " + t->to_string());
  }
}

}  // namespace

int64_t dgc_k(int64_t numel, int64_t dgc_step, int64_t rampup_begin_step, int64_t rampup_step,
              const std::vector<double>& sparsity) {
  if (numel < 1) throw Error(ErrorKind::kInvalidArgument, "dgc_k: numel must be at least 1, got " + std::to_string(numel));
  if (std::string problem = rampup_problem(rampup_step, sparsity); !problem.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "dgc_k: " + problem);
  }
  if (dgc_step < rampup_begin_step) return 0;
  const int64_t count = static_cast<int64_t>(sparsity.size());
  const int64_t index = std::min(count - 1, (dgc_step - rampup_begin_step) * count / rampup_step);
  const double s = sparsity[static_cast<size_t>(index)];
  const int64_t k = static_cast<int64_t>(std::floor(static_cast<double>(numel) * (1.0 - s)));
  return std::min(numel, std::max<int64_t>(1, k));
}

DgcSampling dgc_sampling(int64_t numel, int64_t k) {
  if (numel < 1 || k < 1 || k > numel) {
    throw Error(ErrorKind::kInvalidArgument, "dgc_threshold: needs 1 <= k <= numel, got k " + std::to_string(k) +
                                                 " and numel " + std::to_string(numel));
  }
  DgcSampling sampling;
  sampling.rank = std::max<int64_t>(1, std::min<int64_t>(32, k / 2));
  const double fraction = static_cast<double>(k) / static_cast<double>(numel);
  sampling.wanted =
      std::max(sampling.rank, static_cast<int64_t>(std::ceil(static_cast<double>(sampling.rank) / fraction)));
  sampling.blocks = std::min<int64_t>(16, numel);
  return sampling;
}

double dgc_threshold(const float* v, int64_t numel, int64_t k) {
  const DgcSampling sampling = dgc_sampling(numel, k);
  const int64_t r = sampling.rank, wanted = sampling.wanted, blocks = sampling.blocks;
  // Each block on its own thread; the mean is summed in block order.
  std::vector<float> picked(static_cast<size_t>(blocks));
  parallel_for(blocks, 1, [&](int64_t first, int64_t last) {
    std::vector<float> samples;
    for (int64_t b = first; b < last; ++b) {
      const int64_t begin = b * numel / blocks, length = (b + 1) * numel / blocks - begin;
      const int64_t count = std::min(length, wanted);
      const int64_t stride = std::max<int64_t>(1, length / count);
      // The rank-th largest sample: the smallest of the `rank` largest,
      // kept in a min-heap (most samples fall below its top: one compare).
      const int64_t rank = std::min(r, count);
      samples.clear();
      for (int64_t j = 0; j < count; ++j) {
        const float sample = std::fabs(v[begin + j * stride]);
        if (static_cast<int64_t>(samples.size()) < rank) {
          samples.push_back(sample);
          std::push_heap(samples.begin(), samples.end(), std::greater<float>());
        } else if (sample > samples.front()) {
          std::pop_heap(samples.begin(), samples.end(), std::greater<float>());
          samples.back() = sample;
          std::push_heap(samples.begin(), samples.end(), std::greater<float>());
        }
      }
      picked[static_cast<size_t>(b)] = samples.front();
    }
  });
  double sum = 0;
  for (float t : picked) sum += static_cast<double>(t);
  return sum / static_cast<double>(blocks);
}

DgcRule DgcRule::of(const Node& node) {
  DgcRule rule;
  rule.momentum = float_attr(node, "momentum", 0.9);
  rule.nesterov = int_attr(node, "nesterov", 0) != 0;
  rule.weight_decay = float_attr(node, "weight_decay", 0.0);
  rule.clip_norm = float_attr(node, "clip_norm", 0.0);
  rule.rampup_begin_step = int_attr(node, "rampup_begin_step", 0);
  rule.rampup_step = int_attr(node, "rampup_step", 1);
  rule.sparsity = node.has_attr("sparsity") ? node.attr("sparsity").floats() : kDefaultSparsity;
  return rule;
}

void check_dgc_encode_inputs(const KernelContext& ctx, const DgcRule& rule) {
  const char* names[] = {"grad", "param", "u", "v"};
  const Tensor& grad = ctx.input(0);
  for (size_t i = 0; i < 4; ++i) {
    require_f32(ctx, i, names[i]);
    if (ctx.input(i).sizes() != grad.sizes()) {
      ctx.fail(std::string(names[i]) + " is " + ctx.input(i).type_string() + "; the gradient is " + grad.type_string() +
               " and they must have the same shape");
    }
  }
  const int64_t numel = grad.num_elements();
  if (numel < 1) ctx.fail("needs a gradient with at least one element, got " + grad.type_string());
  if (numel > std::numeric_limits<int32_t>::max()) {
    ctx.fail("encodes indices as int32; the gradient " + grad.type_string() + " has too many elements");
  }
  require_distinct(ctx, {0, 1, 2, 3});
  if (std::string problem = rampup_problem(rule.rampup_step, rule.sparsity); !problem.empty()) ctx.fail(problem);
}

void check_dgc_momentum_inputs(const KernelContext& ctx, bool sparse_phase) {
  const char* names[] = {"param", "velocity", "dense_grad", "gathered", "encoded"};
  for (size_t i = 0; i < 5; ++i) require_f32(ctx, i, names[i]);
  const Tensor& param = ctx.input(0);
  for (size_t i = 1; i < 3; ++i) {
    if (ctx.input(i).sizes() != param.sizes()) {
      ctx.fail(std::string(names[i]) + " is " + ctx.input(i).type_string() + "; the parameter is " + param.type_string() +
               " and they must have the same shape");
    }
  }
  // The dense phase updates param and velocity from dense_grad; the sparse
  // one param from gathered.
  sparse_phase ? require_distinct(ctx, {0, 3}) : require_distinct(ctx, {0, 1, 2});
}

int64_t dgc_gathered_ranks(const KernelContext& ctx) {
  const Tensor& gathered = ctx.input(3);
  const Tensor& encoded = ctx.input(4);
  const int64_t pairs_len = encoded.num_elements(), total = gathered.num_elements();
  if (pairs_len == 0 || pairs_len % 2 != 0) {
    ctx.fail("encoded must hold (index, value) pairs, a positive even length, got " + encoded.type_string());
  }
  if (total % pairs_len != 0) {
    ctx.fail("gathered " + gathered.type_string() + " is not a whole number of encodings of length " +
             std::to_string(pairs_len));
  }
  return total / pairs_len;
}

void register_dgc_schemas(OpRegistry& registry) {
  OpSchema encode("DgcEncode");
  encode.input("grad", "T")
      .input("param", "T")
      .input("u", "T")
      .input("v", "T")
      .input("step", "I")
      .output("encoded", "T")
      .type_constraint("T", {DType::kFloat32})
      .type_constraint("I", {DType::kInt64, DType::kInt32})
      .attr("momentum", AttrType::kFloat, Attribute(0.9))
      .attr("nesterov", AttrType::kInt, Attribute(int64_t{0}))
      .attr("weight_decay", AttrType::kFloat, Attribute(0.0))
      .attr("clip_norm", AttrType::kFloat, Attribute(0.0))
      .attr("rampup_begin_step", AttrType::kInt, Attribute(int64_t{0}))
      .attr("rampup_step", AttrType::kInt, Attribute(int64_t{1}))
      .attr("sparsity", AttrType::kFloats, Attribute(kDefaultSparsity))
      .traits(OpTrait::kSideEffects | OpTrait::kStateful)
      .infer([](InferenceContext& ctx) {
        const TensorType* grad = ctx.input_type(0);
        check_same_shape(ctx, 1, "param", grad, "the gradient");
        check_same_shape(ctx, 2, "u", grad, "the gradient");
        check_same_shape(ctx, 3, "v", grad, "the gradient");
        check_scalar_input(ctx, 4, "step");
        if (std::string problem = rampup_problem(ctx.attr_int("rampup_step"), ctx.attr("sparsity").floats());
            !problem.empty()) {
          ctx.fail(problem);
        }
        // 2k floats, k known only at run time (it follows the step).
        ctx.set_output_type(0, TensorType{DType::kFloat32, Shape{Dim::symbol(ctx.node().name() + "/2k")}});
      })
      .doc("DGC encoding, u and v in place: before rampup_begin_step outputs nothing; then accumulates the "
           "(clipped, decayed) gradient with momentum correction into u and v and outputs the entries of v "
           "above a sampled top-k threshold as 2k floats of (int32 index bits, value) pairs padded with "
           "(-1, 0), zeroing u and v where sent");
  registry.add(std::move(encode));

  OpSchema momentum("DgcMomentum");
  momentum.input("param", "T")
      .input("velocity", "T")
      .input("dense_grad", "T")
      .input("gathered", "T")
      .input("encoded", "T")
      .input("lr", "S")
      .input("step", "I")
      .output("param_out", "T")
      .output("velocity_out", "T")
      .type_constraint("T", {DType::kFloat32})
      .type_constraint("S", {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
      .type_constraint("I", {DType::kInt64, DType::kInt32})
      .attr("momentum", AttrType::kFloat, Attribute(0.9))
      .attr("nesterov", AttrType::kInt, Attribute(int64_t{0}))
      .attr("weight_decay", AttrType::kFloat, Attribute(0.0))
      .attr("rampup_begin_step", AttrType::kInt, Attribute(int64_t{0}))
      .traits(OpTrait::kSideEffects | OpTrait::kStateful | OpTrait::kInplaceable)
      .infer([](InferenceContext& ctx) {
        const TensorType* param = ctx.input_type(0);
        check_same_shape(ctx, 1, "velocity", param, "the parameter");
        check_same_shape(ctx, 2, "dense_grad", param, "the parameter");
        check_rank1(ctx, 3, "gathered");
        check_rank1(ctx, 4, "encoded");
        check_scalar_input(ctx, 5, "lr");
        check_scalar_input(ctx, 6, "step");
        if (param != nullptr) ctx.set_output_type(0, *param);
        if (const TensorType* velocity = ctx.input_type(1)) ctx.set_output_type(1, *velocity);
      })
      .doc("DGC update, param and velocity in place: before rampup_begin_step exactly Momentum on dense_grad; "
           "then param -= lr * (sum of every rank's (index, value) pairs in gathered) / N, N = "
           "numel(gathered) / numel(encoded), velocity untouched");
  registry.add(std::move(momentum));
}

void register_dgc_cpu_kernels(KernelRegistry& registry) {
  registry.add("DgcEncode", DeviceType::kCpu, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<DgcEncodeKernel>(node); });
  registry.add("DgcMomentum", DeviceType::kCpu, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<DgcMomentumKernel>(node); });
}

}  // namespace weir
