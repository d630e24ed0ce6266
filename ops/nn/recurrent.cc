#include "ops/nn/recurrent.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "core/graph.h"
#include "core/half.h"
#include "ops/dtype_dispatch.h"
#include "ops/shape_inference.h"
#include "ops/tensor/indexing.h"

namespace weir {

const char* recurrent_op_name(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kRnn: return "RNN";
    case RecurrentCell::kGru: return "GRU";
    case RecurrentCell::kLstm: return "LSTM";
  }
  return "RNN";
}

int64_t recurrent_gates(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kRnn: return 1;
    case RecurrentCell::kGru: return 3;
    case RecurrentCell::kLstm: return 4;
  }
  return 1;
}

int64_t recurrent_activations_per_direction(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kRnn: return 1;
    case RecurrentCell::kGru: return 2;
    case RecurrentCell::kLstm: return 3;
  }
  return 1;
}

namespace {

const std::vector<DType> kRecurrentTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

struct ActivationName {
  const char* name;
  RecurrentActivation::Kind kind;
  bool takes_alpha, takes_beta;
  double default_alpha, default_beta;
};

// ONNX's defaults are those of the ops of the same name (Affine and
// ScaledTanh, which have none today, take the identity's 1 and 0 / 1 and 1).
constexpr ActivationName kActivations[] = {
    {"Relu", RecurrentActivation::Kind::kRelu, false, false, 0.0, 0.0},
    {"Tanh", RecurrentActivation::Kind::kTanh, false, false, 0.0, 0.0},
    {"Sigmoid", RecurrentActivation::Kind::kSigmoid, false, false, 0.0, 0.0},
    {"Affine", RecurrentActivation::Kind::kAffine, true, true, 1.0, 0.0},
    {"LeakyRelu", RecurrentActivation::Kind::kLeakyRelu, true, false, 0.01, 0.0},
    {"ThresholdedRelu", RecurrentActivation::Kind::kThresholdedRelu, true, false, 1.0, 0.0},
    {"ScaledTanh", RecurrentActivation::Kind::kScaledTanh, true, true, 1.0, 1.0},
    {"HardSigmoid", RecurrentActivation::Kind::kHardSigmoid, true, true, 0.2, 0.5},
    {"Elu", RecurrentActivation::Kind::kElu, true, false, 1.0, 0.0},
    {"Softsign", RecurrentActivation::Kind::kSoftsign, false, false, 0.0, 0.0},
    {"Softplus", RecurrentActivation::Kind::kSoftplus, false, false, 0.0, 0.0},
};

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::vector<std::string> default_activations(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kRnn: return {"Tanh"};
    case RecurrentCell::kGru: return {"Sigmoid", "Tanh"};
    case RecurrentCell::kLstm: return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

RecurrentAttributes RecurrentAttributes::from_node(const Node& node, RecurrentCell cell) {
  auto fail = [&](const std::string& message) {
    throw Error(ErrorKind::kInvalidArgument, node.op_type() + " '" + node.name() + "': " + message).with_node(node.name());
  };
  RecurrentAttributes a;
  a.cell = cell;
  std::string direction = node.has_attr("direction") ? node.attr("direction").s() : "forward";
  if (direction == "bidirectional") {
    a.directions = 2;
  } else if (direction == "reverse") {
    a.reverse = true;
  } else if (direction != "forward") {
    fail("direction '" + direction + "' is not forward, reverse or bidirectional");
  }
  if (node.has_attr("hidden_size")) {
    a.hidden_size = node.attr("hidden_size").i();
    if (*a.hidden_size < 1) fail("hidden_size " + std::to_string(*a.hidden_size) + " must be at least 1");
  }
  a.layout = node.has_attr("layout") ? node.attr("layout").i() : 0;
  if (a.layout != 0 && a.layout != 1) fail("layout " + std::to_string(a.layout) + " is not 0 or 1");
  if (node.has_attr("clip")) {
    a.clip = node.attr("clip").f();
    if (!(*a.clip > 0)) fail("clip " + std::to_string(*a.clip) + " must be positive");
  }
  if (node.has_attr("linear_before_reset")) a.linear_before_reset = node.attr("linear_before_reset").i() != 0;
  if (node.has_attr("input_forget")) a.input_forget = node.attr("input_forget").i() != 0;

  std::vector<std::string> names = node.has_attr("activations") ? node.attr("activations").strings() : default_activations(cell);
  std::vector<double> alphas = node.has_attr("activation_alpha") ? node.attr("activation_alpha").floats() : std::vector<double>{};
  std::vector<double> betas = node.has_attr("activation_beta") ? node.attr("activation_beta").floats() : std::vector<double>{};
  const auto per_direction = static_cast<size_t>(recurrent_activations_per_direction(cell));
  const auto wanted = per_direction * static_cast<size_t>(a.directions);
  // One direction's list serves both directions; a one-direction op may
  // carry two lists (RNN's ONNX default is ["Tanh", "Tanh"]) and uses the first.
  if (names.size() != wanted && names.size() != per_direction && !(a.directions == 1 && names.size() == 2 * per_direction)) {
    fail("activations [" + join(names) + "] must list " + std::to_string(wanted) + " functions (" +
         std::to_string(per_direction) + " per direction), got " + std::to_string(names.size()));
  }
  size_t next_alpha = 0, next_beta = 0;
  std::vector<RecurrentActivation> parsed;
  for (const std::string& name : names) {
    const ActivationName* found = nullptr;
    for (const ActivationName& known : kActivations) {
      if (lowercase(known.name) == lowercase(name)) found = &known;
    }
    if (found == nullptr) {
      std::vector<std::string> known_names;
      for (const ActivationName& known : kActivations) known_names.emplace_back(known.name);
      fail("activation '" + name + "' is not one of " + join(known_names));
    }
    RecurrentActivation activation{found->kind, found->default_alpha, found->default_beta};
    if (found->takes_alpha && next_alpha < alphas.size()) activation.alpha = alphas[next_alpha++];
    if (found->takes_beta && next_beta < betas.size()) activation.beta = betas[next_beta++];
    parsed.push_back(activation);
  }
  for (size_t i = 0; i < wanted; ++i) a.activations.push_back(parsed[i % std::min(parsed.size(), wanted)]);
  return a;
}

// ---------------------------------------------------------------------------
// Sizes and the canonical layout

RecurrentSizes recurrent_sizes(const KernelContext& ctx, const RecurrentAttributes& a) {
  const bool lstm = a.cell == RecurrentCell::kLstm;
  const Tensor& x = ctx.input(0);
  if (std::find(kRecurrentTypes.begin(), kRecurrentTypes.end(), x.dtype()) == kRecurrentTypes.end()) {
    ctx.fail("X " + x.type_string() + " must be f32, f64, f16 or bf16");
  }
  if (x.rank() != 3) {
    ctx.fail("X " + x.type_string() + " must be " +
             (a.layout == 0 ? "[seq_length, batch_size, input_size]" : "[batch_size, seq_length, input_size]"));
  }
  RecurrentSizes s;
  s.seq = x.sizes()[a.layout == 0 ? 0 : 1];
  s.batch = x.sizes()[a.layout == 0 ? 1 : 0];
  s.input = x.sizes()[2];
  s.directions = a.directions;
  s.gates = recurrent_gates(a.cell);
  const Tensor& r = ctx.input(2);
  if (a.hidden_size) {
    s.hidden = *a.hidden_size;
  } else if (r.rank() == 3) {
    s.hidden = r.sizes()[2];
  } else {
    ctx.fail("R " + r.type_string() + " must be [num_directions, " + std::to_string(s.gates) + "*hidden_size, hidden_size]");
  }
  const std::string g = std::to_string(s.gates);
  auto check = [&](size_t index, const char* name, const std::vector<int64_t>& expected, const std::string& form) {
    if (!ctx.has_input(index)) return;
    const Tensor& t = ctx.input(index);
    if (t.dtype() != x.dtype()) ctx.fail(std::string(name) + " " + t.type_string() + " must have X's dtype " + x.type_string());
    if (t.sizes() != expected) {
      ctx.fail(std::string(name) + " has shape " + format_sizes(t.sizes()) + "; expected " + form + " = " +
               format_sizes(expected) + (a.hidden_size ? " (hidden_size " + std::to_string(s.hidden) + ")" : ""));
    }
  };
  const int64_t dirs = s.directions, h = s.hidden;
  check(1, "W", {dirs, s.gates * h, s.input}, "[num_directions, " + g + "*hidden_size, input_size]");
  check(2, "R", {dirs, s.gates * h, h}, "[num_directions, " + g + "*hidden_size, hidden_size]");
  check(3, "B", {dirs, 2 * s.gates * h}, "[num_directions, " + std::to_string(2 * s.gates) + "*hidden_size]");
  const std::vector<int64_t> state = a.layout == 0 ? std::vector<int64_t>{dirs, s.batch, h} : std::vector<int64_t>{s.batch, dirs, h};
  const std::string state_form = a.layout == 0 ? "[num_directions, batch_size, hidden_size]" : "[batch_size, num_directions, hidden_size]";
  check(5, "initial_h", state, state_form);
  if (lstm) {
    check(6, "initial_c", state, state_form);
    check(7, "P", {dirs, 3 * h}, "[num_directions, 3*hidden_size]");
  }
  if (ctx.has_input(4)) {
    const Tensor& lengths = ctx.input(4);
    if (lengths.sizes() != std::vector<int64_t>{s.batch}) {
      ctx.fail("sequence_lens has shape " + format_sizes(lengths.sizes()) + "; expected [batch_size] = [" +
               std::to_string(s.batch) + "]");
    }
  }
  return s;
}

namespace {

// Element i of a floating tensor in the compute type.
template <typename C>
std::vector<C> to_compute(const Tensor& t) {
  std::vector<C> values(static_cast<size_t>(t.num_elements()));
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      const T* data = t.data<T>();
      for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<C>(load(data[i]));
    }
  });
  return values;
}

// [a, b, rest] <-> [b, a, rest]: swaps the first two axes.
template <typename C>
std::vector<C> swap_leading(const std::vector<C>& in, int64_t a, int64_t b, int64_t rest) {
  std::vector<C> out(in.size());
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      std::copy_n(in.begin() + (i * b + j) * rest, rest, out.begin() + (j * a + i) * rest);
    }
  }
  return out;
}

// Writes `values` into output `index` in X's dtype.
template <typename C>
void store_output(KernelContext& ctx, size_t index, DType dtype, const std::vector<int64_t>& sizes, const std::vector<C>& values) {
  if (index >= ctx.num_outputs()) return;
  Tensor& out = ctx.allocate_output(index, dtype, sizes, KernelContext::Fill::kUninitialized);
  dispatch_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      T* data = out.data<T>();
      for (size_t i = 0; i < values.size(); ++i) data[i] = store<T>(static_cast<ComputeType<T>>(values[i]));
    }
  });
}

// A canonical state [dirs, batch, H] in the node's layout.
template <typename C>
std::vector<C> state_to_layout(const std::vector<C>& state, const RecurrentAttributes& a, const RecurrentSizes& s) {
  return a.layout == 0 ? state : swap_leading(state, s.directions, s.batch, s.hidden);
}

std::vector<int64_t> state_sizes(const RecurrentAttributes& a, const RecurrentSizes& s) {
  return a.layout == 0 ? std::vector<int64_t>{s.directions, s.batch, s.hidden}
                       : std::vector<int64_t>{s.batch, s.directions, s.hidden};
}

// An optional input in the canonical layout, or zeros of `count`.
template <typename C>
std::vector<C> optional_input(const KernelContext& ctx, size_t index, int64_t count) {
  return ctx.has_input(index) ? to_compute<C>(ctx.input(index)) : std::vector<C>(static_cast<size_t>(count), C(0));
}

}  // namespace

template <typename C>
RecurrentData<C> load_recurrent_inputs(const KernelContext& ctx, const RecurrentAttributes& a, const RecurrentSizes& s) {
  RecurrentData<C> data;
  data.sizes = s;
  data.x = to_compute<C>(ctx.input(0));
  if (a.layout == 1) data.x = swap_leading(data.x, s.batch, s.seq, s.input);
  data.w = to_compute<C>(ctx.input(1));
  data.r = to_compute<C>(ctx.input(2));
  data.b = optional_input<C>(ctx, 3, s.directions * 2 * s.gate_width());
  const int64_t state_count = s.directions * s.batch * s.hidden;
  data.h0 = optional_input<C>(ctx, 5, state_count);
  if (a.layout == 1 && ctx.has_input(5)) data.h0 = swap_leading(data.h0, s.batch, s.directions, s.hidden);
  if (a.cell == RecurrentCell::kLstm) {
    data.c0 = optional_input<C>(ctx, 6, state_count);
    if (a.layout == 1 && ctx.has_input(6)) data.c0 = swap_leading(data.c0, s.batch, s.directions, s.hidden);
    data.p = optional_input<C>(ctx, 7, s.directions * 3 * s.hidden);
  }
  data.lengths.assign(static_cast<size_t>(s.batch), s.seq);
  if (ctx.has_input(4)) {
    data.lengths = index_values(ctx, ctx.input(4), "sequence_lens");
    for (size_t b = 0; b < data.lengths.size(); ++b) {
      if (data.lengths[b] < 0 || data.lengths[b] > s.seq) {
        ctx.fail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(data.lengths[b]) +
                 " is outside [0, seq_length = " + std::to_string(s.seq) + "]");
      }
    }
  }
  for (int64_t length : data.lengths) data.max_length = std::max(data.max_length, length);
  return data;
}

template <typename C>
RecurrentOutputs<C> load_output_grads(const KernelContext& ctx, const RecurrentAttributes& a, const RecurrentSizes& s,
                                      size_t first_input) {
  RecurrentOutputs<C> grads;
  const std::vector<int64_t> y_sizes = a.layout == 0 ? std::vector<int64_t>{s.seq, s.directions, s.batch, s.hidden}
                                                     : std::vector<int64_t>{s.batch, s.seq, s.directions, s.hidden};
  const std::vector<int64_t> state = state_sizes(a, s);
  auto load_grad = [&](size_t index, const std::vector<int64_t>& sizes, const char* name) {
    if (!ctx.has_input(index)) {
      int64_t count = 1;
      for (int64_t size : sizes) count *= size;
      return std::vector<C>(static_cast<size_t>(count), C(0));
    }
    const Tensor& t = ctx.input(index);
    if (t.sizes() != sizes || t.dtype() != ctx.input(0).dtype()) {
      ctx.fail(std::string(name) + " " + t.type_string() + " must be " + std::string(dtype_name(ctx.input(0).dtype())) +
               format_sizes(sizes));
    }
    return to_compute<C>(t);
  };
  grads.y = load_grad(first_input, y_sizes, "dY");
  if (a.layout == 1) {
    // [batch, seq, dirs, H] -> [seq, dirs, batch, H].
    std::vector<C> y(grads.y.size());
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t t = 0; t < s.seq; ++t) {
        for (int64_t d = 0; d < s.directions; ++d) {
          std::copy_n(grads.y.begin() + ((b * s.seq + t) * s.directions + d) * s.hidden, s.hidden,
                      y.begin() + grads.y_offset(s, t, d, b));
        }
      }
    }
    grads.y = std::move(y);
  }
  grads.yh = load_grad(first_input + 1, state, "dY_h");
  if (a.layout == 1 && ctx.has_input(first_input + 1)) grads.yh = swap_leading(grads.yh, s.batch, s.directions, s.hidden);
  if (a.cell == RecurrentCell::kLstm) {
    grads.yc = load_grad(first_input + 2, state, "dY_c");
    if (a.layout == 1 && ctx.has_input(first_input + 2)) grads.yc = swap_leading(grads.yc, s.batch, s.directions, s.hidden);
  }
  return grads;
}

template <typename C>
void store_outputs(KernelContext& ctx, const RecurrentAttributes& a, const RecurrentSizes& s, const RecurrentOutputs<C>& out) {
  const DType dtype = ctx.input(0).dtype();
  if (a.layout == 0) {
    store_output(ctx, 0, dtype, {s.seq, s.directions, s.batch, s.hidden}, out.y);
  } else {
    // [seq, dirs, batch, H] -> [batch, seq, dirs, H].
    std::vector<C> y(out.y.size());
    for (int64_t t = 0; t < s.seq; ++t) {
      for (int64_t d = 0; d < s.directions; ++d) {
        for (int64_t b = 0; b < s.batch; ++b) {
          std::copy_n(out.y.begin() + out.y_offset(s, t, d, b), s.hidden,
                      y.begin() + ((b * s.seq + t) * s.directions + d) * s.hidden);
        }
      }
    }
    store_output(ctx, 0, dtype, {s.batch, s.seq, s.directions, s.hidden}, y);
  }
  store_output(ctx, 1, dtype, state_sizes(a, s), state_to_layout(out.yh, a, s));
  if (a.cell == RecurrentCell::kLstm) store_output(ctx, 2, dtype, state_sizes(a, s), state_to_layout(out.yc, a, s));
}

template <typename C>
void store_input_grads(KernelContext& ctx, const RecurrentAttributes& a, const RecurrentSizes& s, const RecurrentGrads<C>& grads) {
  const DType dtype = ctx.input(0).dtype();
  store_output(ctx, 0, dtype, ctx.input(0).sizes(), a.layout == 0 ? grads.x : swap_leading(grads.x, s.seq, s.batch, s.input));
  store_output(ctx, 1, dtype, ctx.input(1).sizes(), grads.w);
  store_output(ctx, 2, dtype, ctx.input(2).sizes(), grads.r);
  store_output(ctx, 3, dtype, {s.directions, 2 * s.gate_width()}, grads.b);
  store_output(ctx, 4, dtype, state_sizes(a, s), state_to_layout(grads.h0, a, s));
  if (a.cell == RecurrentCell::kLstm) {
    store_output(ctx, 5, dtype, state_sizes(a, s), state_to_layout(grads.c0, a, s));
    store_output(ctx, 6, dtype, {s.directions, 3 * s.hidden}, grads.p);
  }
}

// ---------------------------------------------------------------------------
// Matrix products

template <typename C>
void RecurrentMatmul<C>::run(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const C* a, const C* b, C* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill_n(c, m * n, C(0));
    return;
  }
  if constexpr (std::is_same_v<C, float>) {
    dnnl_.run({.dtype = DType::kFloat32, .m = m, .k = k, .n = n, .transpose_a = transpose_a, .transpose_b = transpose_b},
              a, b, c);
  } else {
    // Row i of C accumulates a[i, p] * row p of op(B); op(B) rows are
    // contiguous unless transposed, when each output is a dot product.
    for (int64_t i = 0; i < m; ++i) {
      C* row = c + i * n;
      if (transpose_b) {
        for (int64_t j = 0; j < n; ++j) {
          C sum = 0;
          for (int64_t p = 0; p < k; ++p) sum += a[transpose_a ? p * m + i : i * k + p] * b[j * k + p];
          row[j] = sum;
        }
      } else {
        std::fill_n(row, n, C(0));
        for (int64_t p = 0; p < k; ++p) {
          const C factor = a[transpose_a ? p * m + i : i * k + p];
          const C* b_row = b + p * n;
          for (int64_t j = 0; j < n; ++j) row[j] += factor * b_row[j];
        }
      }
    }
  }
}

template <typename C>
void RecurrentMatmul<C>::accumulate(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const C* a,
                                    const C* b, C* c) {
  scratch_.resize(static_cast<size_t>(m * n));
  run(transpose_a, transpose_b, m, n, k, a, b, scratch_.data());
  for (size_t i = 0; i < scratch_.size(); ++i) c[i] += scratch_[i];
}

template <typename C>
struct ActivationRunner<C>::Primitives {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;
  std::map<std::tuple<int, float, float, int64_t>, std::shared_ptr<dnnl::eltwise_forward>> cache;

  // The primitive for `activation` over `count` floats, or nullptr when
  // oneDNN has no such function.
  std::shared_ptr<dnnl::eltwise_forward> find(const RecurrentActivation& activation, int64_t count) {
    using Kind = RecurrentActivation::Kind;
    using dnnl::algorithm;
    algorithm kind = algorithm::undef;
    float alpha = 0.0f, beta = 0.0f;
    switch (activation.kind) {
      case Kind::kTanh: kind = algorithm::eltwise_tanh; break;
      case Kind::kSigmoid: kind = algorithm::eltwise_logistic; break;
      case Kind::kRelu: kind = algorithm::eltwise_relu; break;
      // oneDNN's relu with alpha: x > 0 ? x : alpha x, equal to x >= 0 ? x : alpha x.
      case Kind::kLeakyRelu: kind = algorithm::eltwise_relu; alpha = static_cast<float>(activation.alpha); break;
      case Kind::kAffine:
        kind = algorithm::eltwise_linear;
        alpha = static_cast<float>(activation.alpha);
        beta = static_cast<float>(activation.beta);
        break;
      case Kind::kElu: kind = algorithm::eltwise_elu; alpha = static_cast<float>(activation.alpha); break;
      default: return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex);
    auto key = std::make_tuple(static_cast<int>(kind), alpha, beta, count);
    auto found = cache.find(key);
    if (found != cache.end()) return found->second;
    dnnl::memory::desc desc({count}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, kind, desc, alpha, beta), engine);
    auto primitive = std::make_shared<dnnl::eltwise_forward>(pd);
    cache.emplace(key, primitive);
    return primitive;
  }
};

template <typename C>
ActivationRunner<C>::ActivationRunner() : primitives_(std::make_unique<Primitives>()) {}

template <typename C>
ActivationRunner<C>::~ActivationRunner() = default;

template <typename C>
void ActivationRunner<C>::apply(const RecurrentActivation& activation, std::optional<double> clip, C* values, int64_t count) {
  if (count <= 0) return;
  if (clip) {
    const C bound = static_cast<C>(*clip);
    for (int64_t i = 0; i < count; ++i) values[i] = std::min(bound, std::max(-bound, values[i]));
  }
  if constexpr (std::is_same_v<C, float>) {
    if (std::shared_ptr<dnnl::eltwise_forward> primitive = primitives_->find(activation, count)) {
      try {
        dnnl::stream stream(primitives_->engine);
        dnnl::memory memory({{count}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a}, primitives_->engine, values);
        primitive->execute(stream, {{DNNL_ARG_SRC, memory}, {DNNL_ARG_DST, memory}});
        stream.wait();
      } catch (const dnnl::error& e) {
        throw Error(ErrorKind::kInternal, std::string("oneDNN eltwise failed: ") + e.what());
      }
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i) values[i] = activation.value(values[i]);
}

template <typename C>
std::vector<C> project_inputs(RecurrentMatmul<C>& matmul, const RecurrentData<C>& data, int64_t direction,
                              int64_t folded_recurrent_bias) {
  const RecurrentSizes& s = data.sizes;
  const int64_t width = s.gate_width();
  std::vector<C> xw(static_cast<size_t>(s.rows() * width));
  matmul.run(false, true, s.rows(), width, s.input, data.x.data(), data.w.data() + direction * width * s.input, xw.data());
  std::vector<C> bias(data.b.begin() + direction * 2 * width, data.b.begin() + direction * 2 * width + width);
  for (int64_t j = 0; j < folded_recurrent_bias; ++j) bias[static_cast<size_t>(j)] += data.b[static_cast<size_t>(direction * 2 * width + width + j)];
  for (int64_t row = 0; row < s.rows(); ++row) {
    C* values = xw.data() + row * width;
    for (int64_t j = 0; j < width; ++j) values[j] += bias[static_cast<size_t>(j)];
  }
  return xw;
}

template <typename C>
void input_weight_grads(RecurrentMatmul<C>& matmul, const RecurrentData<C>& data, int64_t direction, const std::vector<C>& dgx,
                        RecurrentGrads<C>& grads) {
  const RecurrentSizes& s = data.sizes;
  const int64_t width = s.gate_width();
  matmul.run(true, false, width, s.input, s.rows(), dgx.data(), data.x.data(), grads.w.data() + direction * width * s.input);
  matmul.accumulate(false, false, s.rows(), s.input, width, dgx.data(), data.w.data() + direction * width * s.input,
                    grads.x.data());
  C* db = grads.b.data() + direction * 2 * width;
  for (int64_t row = 0; row < s.rows(); ++row) {
    for (int64_t j = 0; j < width; ++j) db[j] += dgx[static_cast<size_t>(row * width + j)];
  }
}

template <typename C>
void recurrent_weight_grads(RecurrentMatmul<C>& matmul, const RecurrentData<C>& data, int64_t direction, int64_t first,
                            int64_t columns, const std::vector<C>& dgr, const std::vector<C>& in, RecurrentGrads<C>& grads) {
  const RecurrentSizes& s = data.sizes;
  const int64_t width = s.gate_width();
  matmul.run(true, false, columns, s.hidden, s.rows(), dgr.data(), in.data(),
             grads.r.data() + (direction * width + first) * s.hidden);
  C* db = grads.b.data() + direction * 2 * width + width + first;
  for (int64_t row = 0; row < s.rows(); ++row) {
    for (int64_t j = 0; j < columns; ++j) db[j] += dgr[static_cast<size_t>(row * columns + j)];
  }
}

template <typename C>
std::vector<C> copy_columns(const std::vector<C>& matrix, int64_t rows, int64_t width, int64_t first, int64_t count) {
  std::vector<C> out(static_cast<size_t>(rows * count));
  for (int64_t row = 0; row < rows; ++row) {
    std::copy_n(matrix.begin() + row * width + first, count, out.begin() + row * count);
  }
  return out;
}

#define WEIR_RECURRENT_INSTANTIATE(C)                                                                                   \
  template class RecurrentMatmul<C>;                                                                                   \
  template class ActivationRunner<C>;                                                                                  \
  template std::vector<C> project_inputs(RecurrentMatmul<C>&, const RecurrentData<C>&, int64_t, int64_t);              \
  template void input_weight_grads(RecurrentMatmul<C>&, const RecurrentData<C>&, int64_t, const std::vector<C>&,       \
                                   RecurrentGrads<C>&);                                                                \
  template void recurrent_weight_grads(RecurrentMatmul<C>&, const RecurrentData<C>&, int64_t, int64_t, int64_t,        \
                                       const std::vector<C>&, const std::vector<C>&, RecurrentGrads<C>&);              \
  template std::vector<C> copy_columns(const std::vector<C>&, int64_t, int64_t, int64_t, int64_t);                     \
  template RecurrentData<C> load_recurrent_inputs(const KernelContext&, const RecurrentAttributes&,                    \
                                                  const RecurrentSizes&);                                              \
  template RecurrentOutputs<C> load_output_grads(const KernelContext&, const RecurrentAttributes&,                     \
                                                 const RecurrentSizes&, size_t);                                       \
  template void store_outputs(KernelContext&, const RecurrentAttributes&, const RecurrentSizes&,                       \
                              const RecurrentOutputs<C>&);                                                             \
  template void store_input_grads(KernelContext&, const RecurrentAttributes&, const RecurrentSizes&,                   \
                                  const RecurrentGrads<C>&);
WEIR_RECURRENT_INSTANTIATE(float)
WEIR_RECURRENT_INSTANTIATE(double)
#undef WEIR_RECURRENT_INSTANTIATE

// ---------------------------------------------------------------------------
// Schemas

namespace {

// What inference knows of the sizes: each dim, static or symbolic.
struct InferredSizes {
  Dim seq, batch, input, hidden;
  bool known_x = false;
};

// Fails when input `index` has a known rank other than expected's, or a
// static dim that differs from a static expected one.
void expect_shape(const InferenceContext& ctx, size_t index, const char* name, const std::vector<Dim>& expected,
                  const std::string& form) {
  const TensorType* type = index < ctx.num_inputs() ? ctx.input_type(index) : nullptr;
  if (type == nullptr || !type->shape.has_rank()) return;
  bool ok = type->shape.rank() == static_cast<int64_t>(expected.size());
  for (size_t i = 0; ok && i < expected.size(); ++i) {
    const Dim& got = type->shape[i];
    if (got.is_static() && expected[i].is_static() && got.size() != expected[i].size()) ok = false;
  }
  if (!ok) ctx.fail(std::string(name) + " has shape " + type->shape.to_string() + "; expected " + form + " = " + Shape(expected).to_string());
}

Dim times(int64_t factor, const Dim& dim, const std::string& symbol) {
  return dim.is_static() ? Dim(factor * dim.size()) : Dim::symbol(symbol);
}

// Checks the inputs of a recurrent op (or of its backward op, which takes
// the same first inputs) and returns the sizes it can tell.
InferredSizes infer_recurrent_sizes(InferenceContext& ctx, const RecurrentAttributes& a) {
  const TensorType* x = ctx.input_type(0);
  const bool lstm = a.cell == RecurrentCell::kLstm;
  const int64_t gates = recurrent_gates(a.cell);
  const std::string node = ctx.node().name();
  for (size_t index : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{6}, size_t{7}}) {
    if (!lstm && index > 5) break;
    const TensorType* t = index < ctx.num_inputs() ? ctx.input_type(index) : nullptr;
    if (t != nullptr && t->dtype != DType::kUndefined && t->dtype != x->dtype) {
      ctx.fail("input " + std::to_string(index) + " " + t->to_string() + " must have X's dtype " + x->to_string());
    }
  }
  InferredSizes s{Dim::symbol(node + ":seq_length"), Dim::symbol(node + ":batch_size"), Dim::symbol(node + ":input_size"),
                  Dim::symbol(node + ":hidden_size")};
  if (x->shape.has_rank()) {
    if (x->shape.rank() != 3) {
      ctx.fail("X has shape " + x->shape.to_string() + "; expected " +
               (a.layout == 0 ? "[seq_length, batch_size, input_size]" : "[batch_size, seq_length, input_size]"));
    }
    s.known_x = true;
    s.seq = x->shape[a.layout == 0 ? 0 : 1];
    s.batch = x->shape[a.layout == 0 ? 1 : 0];
    s.input = x->shape[2];
  }
  const TensorType* w = ctx.input_type(1);
  const TensorType* r = ctx.input_type(2);
  if (a.hidden_size) {
    s.hidden = Dim(*a.hidden_size);
  } else if (r != nullptr && r->shape.has_rank() && r->shape.rank() == 3 && r->shape[2].is_static()) {
    s.hidden = r->shape[2];
  } else if (w != nullptr && w->shape.has_rank() && w->shape.rank() == 3 && w->shape[1].is_static() &&
             w->shape[1].size() % gates == 0) {
    s.hidden = Dim(w->shape[1].size() / gates);
  }
  const Dim dirs(a.directions);
  const std::string g = std::to_string(gates);
  const Dim gate_rows = times(gates, s.hidden, node + ":gate_rows");
  expect_shape(ctx, 1, "W", {dirs, gate_rows, s.input}, "[num_directions, " + g + "*hidden_size, input_size]");
  expect_shape(ctx, 2, "R", {dirs, gate_rows, s.hidden}, "[num_directions, " + g + "*hidden_size, hidden_size]");
  expect_shape(ctx, 3, "B", {dirs, times(2 * gates, s.hidden, node + ":bias")},
               "[num_directions, " + std::to_string(2 * gates) + "*hidden_size]");
  expect_shape(ctx, 4, "sequence_lens", {s.batch}, "[batch_size]");
  const std::vector<Dim> state = a.layout == 0 ? std::vector<Dim>{dirs, s.batch, s.hidden} : std::vector<Dim>{s.batch, dirs, s.hidden};
  const std::string state_form = a.layout == 0 ? "[num_directions, batch_size, hidden_size]" : "[batch_size, num_directions, hidden_size]";
  expect_shape(ctx, 5, "initial_h", state, state_form);
  if (lstm) {
    expect_shape(ctx, 6, "initial_c", state, state_form);
    expect_shape(ctx, 7, "P", {dirs, times(3, s.hidden, node + ":peepholes")}, "[num_directions, 3*hidden_size]");
  }
  return s;
}

void infer_recurrent(InferenceContext& ctx, RecurrentCell cell) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  const RecurrentAttributes a = RecurrentAttributes::from_node(ctx.node(), cell);
  const InferredSizes s = infer_recurrent_sizes(ctx, a);
  const Dim dirs(a.directions);
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (!s.known_x) {
      ctx.set_output_type(i, {x->dtype, Shape::unknown_rank()});
    } else if (i == 0) {
      ctx.set_output_type(0, {x->dtype, a.layout == 0 ? Shape{s.seq, dirs, s.batch, s.hidden} : Shape{s.batch, s.seq, dirs, s.hidden}});
    } else {
      ctx.set_output_type(i, {x->dtype, a.layout == 0 ? Shape{dirs, s.batch, s.hidden} : Shape{s.batch, dirs, s.hidden}});
    }
  }
}

// Backward ops: dX dW dR dB d_initial_h (LSTM: d_initial_c dP), shaped as
// the forward inputs (dB and the state gradients also when those are absent).
void infer_recurrent_grad(InferenceContext& ctx, RecurrentCell cell) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  const RecurrentAttributes a = RecurrentAttributes::from_node(ctx.node(), cell);
  const InferredSizes s = infer_recurrent_sizes(ctx, a);
  const int64_t gates = recurrent_gates(a.cell);
  const std::string node = ctx.node().name();
  const Dim dirs(a.directions);
  const Shape unknown = Shape::unknown_rank();
  ctx.set_output_type(0, *x);
  for (size_t i = 1; i < 3; ++i) {
    const TensorType* t = ctx.input_type(i);
    ctx.set_output_type(i, t != nullptr ? *t : TensorType{x->dtype, unknown});
  }
  ctx.set_output_type(3, {x->dtype, Shape{dirs, times(2 * gates, s.hidden, node + ":bias")}});
  const Shape state = !s.known_x ? unknown : a.layout == 0 ? Shape{dirs, s.batch, s.hidden} : Shape{s.batch, dirs, s.hidden};
  ctx.set_output_type(4, {x->dtype, state});
  if (cell == RecurrentCell::kLstm) {
    ctx.set_output_type(5, {x->dtype, state});
    ctx.set_output_type(6, {x->dtype, Shape{dirs, times(3, s.hidden, node + ":peepholes")}});
  }
}

// The rule: one backward op that reruns the forward pass and goes back
// through time, given the gradients of whichever outputs have one.
GradientFn recurrent_gradient(RecurrentCell cell) {
  return [cell](GradientContext& ctx) {
    const Node& node = ctx.node();
    const bool lstm = cell == RecurrentCell::kLstm;
    const size_t forward_inputs = lstm ? 8 : 6, forward_outputs = lstm ? 3 : 2;
    std::vector<Value*> inputs;
    for (size_t i = 0; i < forward_inputs; ++i) inputs.push_back(i < node.num_inputs() ? node.input(i) : nullptr);
    bool any = false;
    for (size_t i = 0; i < forward_outputs; ++i) {
      Value* grad = i < node.num_outputs() ? ctx.output_grad(i) : nullptr;
      any = any || grad != nullptr;
      inputs.push_back(grad);
    }
    if (!any) return;
    std::vector<Value*> grads = ctx.emit(std::string(recurrent_op_name(cell)) + "Grad", inputs, lstm ? 7 : 5, node.attributes());
    ctx.set_input_grad(0, grads[0]);
    ctx.set_input_grad(1, grads[1]);
    ctx.set_input_grad(2, grads[2]);
    auto present = [&](size_t index) { return index < node.num_inputs() && node.input(index) != nullptr; };
    if (present(3)) ctx.set_input_grad(3, grads[3]);
    if (present(5)) ctx.set_input_grad(5, grads[4]);
    if (lstm && present(6)) ctx.set_input_grad(6, grads[5]);
    if (lstm && present(7)) ctx.set_input_grad(7, grads[6]);
  };
}

// The attributes every recurrent op and its backward op declare, with ONNX's defaults.
void recurrent_attributes(OpSchema& schema, RecurrentCell cell) {
  schema.attr("activation_alpha", AttrType::kFloats)
      .attr("activation_beta", AttrType::kFloats)
      .attr("clip", AttrType::kFloat)
      .attr("direction", AttrType::kString, Attribute("forward"))
      .attr("hidden_size", AttrType::kInt)
      .attr("layout", AttrType::kInt, Attribute(int64_t{0}));
  if (cell == RecurrentCell::kRnn) {
    schema.attr("activations", AttrType::kStrings, Attribute(std::vector<std::string>{"Tanh", "Tanh"}));
  } else {
    schema.attr("activations", AttrType::kStrings);
  }
  if (cell == RecurrentCell::kGru) schema.attr("linear_before_reset", AttrType::kInt, Attribute(int64_t{0}));
  if (cell == RecurrentCell::kLstm) schema.attr("input_forget", AttrType::kInt, Attribute(int64_t{0}));
}

void forward_inputs(OpSchema& schema, RecurrentCell cell) {
  schema.input("X", "T").input("W", "T").input("R", "T").input("B", "T", Arity::kOptional)
      .input("sequence_lens", "T1", Arity::kOptional).input("initial_h", "T", Arity::kOptional);
  if (cell == RecurrentCell::kLstm) schema.input("initial_c", "T", Arity::kOptional).input("P", "T", Arity::kOptional);
  schema.type_constraint("T", kRecurrentTypes).type_constraint("T1", {DType::kInt32, DType::kInt64});
}

OpSchema recurrent_schema(RecurrentCell cell, const char* doc) {
  OpSchema schema(recurrent_op_name(cell));
  forward_inputs(schema, cell);
  schema.output("Y", "T", Arity::kOptional).output("Y_h", "T", Arity::kOptional);
  if (cell == RecurrentCell::kLstm) schema.output("Y_c", "T", Arity::kOptional);
  recurrent_attributes(schema, cell);
  schema.infer([cell](InferenceContext& ctx) { infer_recurrent(ctx, cell); })
      .gradient(recurrent_gradient(cell))
      .doc(doc);
  return schema;
}

OpSchema recurrent_grad_schema(RecurrentCell cell) {
  const bool lstm = cell == RecurrentCell::kLstm;
  OpSchema schema(std::string(recurrent_op_name(cell)) + "Grad");
  forward_inputs(schema, cell);
  schema.input("dY", "T", Arity::kOptional).input("dY_h", "T", Arity::kOptional);
  if (lstm) schema.input("dY_c", "T", Arity::kOptional);
  schema.output("dX", "T").output("dW", "T").output("dR", "T").output("dB", "T").output("d_initial_h", "T");
  if (lstm) schema.output("d_initial_c", "T").output("dP", "T");
  recurrent_attributes(schema, cell);
  schema.infer([cell](InferenceContext& ctx) { infer_recurrent_grad(ctx, cell); })
      .doc(std::string("gradients of ") + recurrent_op_name(cell) +
           " through time: reruns the forward pass, then goes back over the steps of every direction; absent output "
           "gradients count as zeros");
  return schema;
}

}  // namespace

void register_recurrent_schemas(OpRegistry& registry) {
  registry.add(recurrent_schema(RecurrentCell::kRnn, "one-layer simple RNN: Ht = f(Xt W^T + Ht-1 R^T + Wb + Rb)"));
  registry.add(recurrent_schema(RecurrentCell::kGru,
                                "one-layer GRU (gates z r h): Ht = (1 - zt) ht + zt Ht-1; linear_before_reset applies "
                                "R_h before the reset gate"));
  registry.add(recurrent_schema(RecurrentCell::kLstm,
                                "one-layer LSTM (gates i o f c) with optional peepholes P and input_forget (f = 1 - i)"));
  registry.add(recurrent_grad_schema(RecurrentCell::kRnn));
  registry.add(recurrent_grad_schema(RecurrentCell::kGru));
  registry.add(recurrent_grad_schema(RecurrentCell::kLstm));
}

void register_recurrent_cpu_kernels(KernelRegistry& registry) {
  register_rnn_cpu_kernels(registry);
  register_gru_cpu_kernels(registry);
  register_lstm_cpu_kernels(registry);
}

}  // namespace weir
