// RNN, GRU and LSTM against references written here as plain per-step loops
// over each batch entry, straight from ONNX's equations (matrix-vector
// products by explicit sums, no shared code with the kernels), on random
// inputs: every direction and layout, with and without B, sequence_lens,
// initial states, peepholes, clip, linear_before_reset, input_forget, every
// activation with its alpha/beta, f64 f32 f16 bf16; shape inference; errors;
// the backward ops against central finite differences of Y, Y_h and Y_c.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/type_inference.h"
#include "core/verifier.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::make_tensor;
using testing::random_values;
using testing::to_doubles;

// ---------------------------------------------------------------------------
// Running one node with absent optional inputs (undefined tensors).

std::unique_ptr<Graph> one_node(const std::string& op, const std::vector<Tensor>& inputs,
                                const std::map<std::string, Attribute>& attributes, size_t num_outputs,
                                std::map<std::string, Tensor>& feeds, bool constant_non_f64 = false) {
  auto graph = std::make_unique<Graph>("recurrent");
  Graph& g = *graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (!inputs[i].defined()) {
      values.push_back(nullptr);
    } else if (constant_non_f64 && inputs[i].dtype() != DType::kFloat64) {
      values.push_back(g.add_constant(name, inputs[i]));
    } else {
      values.push_back(g.add_input(name, {inputs[i].dtype(), inputs[i].shape()}));
      feeds[name] = inputs[i];
    }
  }
  Node* node = g.add_node(op, values, num_outputs, attributes, "op");
  for (Value* output : node->outputs()) g.add_output(output);
  return graph;
}

std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs,
                        const std::map<std::string, Attribute>& attributes, size_t num_outputs) {
  std::map<std::string, Tensor> feeds;
  std::unique_ptr<Graph> g = one_node(op, inputs, attributes, num_outputs, feeds);
  infer_graph_types(*g, default_op_registry());
  return evaluate_graph(*g, feeds);
}

std::string error_message(const std::string& op, const std::vector<Tensor>& inputs,
                          const std::map<std::string, Attribute>& attributes, size_t num_outputs) {
  try {
    run(op, inputs, attributes, num_outputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// ---------------------------------------------------------------------------
// The reference.

struct Config {
  std::string op = "LSTM";
  int64_t seq = 4, batch = 3, input = 5, hidden = 3;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = false, lengths = false, initial_h = false, initial_c = false, peepholes = false;
  std::optional<double> clip;
  int64_t linear_before_reset = 0, input_forget = 0;
  std::vector<std::string> activations;  // empty: the defaults
  std::vector<double> alphas, betas;
  std::vector<int64_t> length_values;  // when lengths; else random in [0, seq]
};

int64_t gates_of(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
int64_t dirs_of(const Config& c) { return c.direction == "bidirectional" ? 2 : 1; }

// One activation as ONNX writes it.
struct Act {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Relu") return std::max(0.0, x);
    if (name == "Tanh") return std::tanh(x);
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Affine") return alpha * x + beta;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x >= alpha ? x : 0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::min(std::max(alpha * x + beta, 0.0), 1.0);
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::fabs(x));
    if (name == "Softplus") return std::log(1 + std::exp(x));
    ADD_FAILURE() << "unknown activation " << name;
    return 0;
  }
};

// The per-direction activations: alphas and betas go, in order, to the
// functions that take them; defaults are those of the ONNX ops.
std::vector<Act> activations_of(const Config& c) {
  std::vector<std::string> names = c.activations;
  if (names.empty()) {
    std::vector<std::string> one = c.op == "RNN" ? std::vector<std::string>{"Tanh"}
                                 : c.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                 : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < dirs_of(c); ++d) names.insert(names.end(), one.begin(), one.end());
  }
  std::vector<Act> acts;
  size_t next_alpha = 0, next_beta = 0;
  const std::set<std::string> with_alpha = {"Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"};
  const std::set<std::string> with_beta = {"Affine", "ScaledTanh", "HardSigmoid"};
  const std::map<std::string, double> alpha_default = {{"Affine", 1.0},     {"LeakyRelu", 0.01}, {"ThresholdedRelu", 1.0},
                                                       {"ScaledTanh", 1.0}, {"HardSigmoid", 0.2}, {"Elu", 1.0}};
  const std::map<std::string, double> beta_default = {{"Affine", 0.0}, {"ScaledTanh", 1.0}, {"HardSigmoid", 0.5}};
  for (const std::string& name : names) {
    Act act{name};
    if (with_alpha.count(name)) act.alpha = next_alpha < c.alphas.size() ? c.alphas[next_alpha++] : alpha_default.at(name);
    if (with_beta.count(name)) act.beta = next_beta < c.betas.size() ? c.betas[next_beta++] : beta_default.at(name);
    acts.push_back(act);
  }
  return acts;
}

struct Inputs {
  std::vector<double> x, w, r, b, p, h0, c0;
  std::vector<int64_t> lengths;
};

struct Outputs {
  std::vector<double> y, yh, yc;
};

Outputs reference(const Config& c, const Inputs& in) {
  const int64_t G = gates_of(c.op), H = c.hidden, D = dirs_of(c), S = c.seq, N = c.batch, I = c.input;
  auto X = [&](int64_t t, int64_t b, int64_t i) {
    return in.x[static_cast<size_t>(c.layout == 0 ? (t * N + b) * I + i : (b * S + t) * I + i)];
  };
  auto state_at = [&](int64_t d, int64_t b, int64_t j) {
    return static_cast<size_t>(c.layout == 0 ? (d * N + b) * H + j : (b * D + d) * H + j);
  };
  auto y_at = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return static_cast<size_t>(c.layout == 0 ? ((t * D + d) * N + b) * H + j : ((b * S + t) * D + d) * H + j);
  };
  auto W = [&](int64_t d, int64_t row, int64_t i) { return in.w[static_cast<size_t>((d * G * H + row) * I + i)]; };
  auto R = [&](int64_t d, int64_t row, int64_t k) { return in.r[static_cast<size_t>((d * G * H + row) * H + k)]; };
  auto Wb = [&](int64_t d, int64_t row) { return c.bias ? in.b[static_cast<size_t>(d * 2 * G * H + row)] : 0.0; };
  auto Rb = [&](int64_t d, int64_t row) { return c.bias ? in.b[static_cast<size_t>(d * 2 * G * H + G * H + row)] : 0.0; };
  auto P = [&](int64_t d, int64_t k) { return c.peepholes ? in.p[static_cast<size_t>(d * 3 * H + k)] : 0.0; };
  auto clip = [&](double v) { return c.clip ? std::min(*c.clip, std::max(-*c.clip, v)) : v; };
  const std::vector<Act> acts = activations_of(c);
  const size_t per = static_cast<size_t>(c.op == "RNN" ? 1 : c.op == "GRU" ? 2 : 3);

  Outputs out;
  out.y.assign(static_cast<size_t>(S * D * N * H), 0.0);
  out.yh.assign(static_cast<size_t>(D * N * H), 0.0);
  out.yc.assign(out.yh.size(), 0.0);
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    const Act& f = acts[static_cast<size_t>(d) * per];
    for (int64_t b = 0; b < N; ++b) {
      const int64_t length = c.lengths ? in.lengths[static_cast<size_t>(b)] : S;
      std::vector<double> h(static_cast<size_t>(H)), cell(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = c.initial_h ? in.h0[state_at(d, b, j)] : 0.0;
        cell[static_cast<size_t>(j)] = c.op == "LSTM" && c.initial_c ? in.c0[state_at(d, b, j)] : 0.0;
      }
      for (int64_t k = 0; k < length; ++k) {
        const int64_t t = reverse ? length - 1 - k : k;
        // x·W^T + Wb for gate row `row`, and h·R^T (of vector v) + Rb.
        auto xw = [&](int64_t row) {
          double sum = Wb(d, row);
          for (int64_t i = 0; i < I; ++i) sum += X(t, b, i) * W(d, row, i);
          return sum;
        };
        auto hr = [&](int64_t row, const std::vector<double>& v) {
          double sum = Rb(d, row);
          for (int64_t i = 0; i < H; ++i) sum += v[static_cast<size_t>(i)] * R(d, row, i);
          return sum;
        };
        std::vector<double> next(static_cast<size_t>(H)), next_cell(static_cast<size_t>(H));
        if (c.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) next[static_cast<size_t>(j)] = f(clip(xw(j) + hr(j, h)));
        } else if (c.op == "GRU") {
          const Act& g = acts[static_cast<size_t>(d) * per + 1];
          std::vector<double> z(static_cast<size_t>(H)), rg(static_cast<size_t>(H)), rh(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[static_cast<size_t>(j)] = f(clip(xw(j) + hr(j, h)));
            rg[static_cast<size_t>(j)] = f(clip(xw(H + j) + hr(H + j, h)));
            rh[static_cast<size_t>(j)] = rg[static_cast<size_t>(j)] * h[static_cast<size_t>(j)];
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre = c.linear_before_reset ? xw(2 * H + j) + rg[static_cast<size_t>(j)] * hr(2 * H + j, h)
                                               : xw(2 * H + j) + hr(2 * H + j, rh);
            double candidate = g(clip(pre));
            next[static_cast<size_t>(j)] =
                (1 - z[static_cast<size_t>(j)]) * candidate + z[static_cast<size_t>(j)] * h[static_cast<size_t>(j)];
          }
        } else {
          const Act& g = acts[static_cast<size_t>(d) * per + 1];
          const Act& hf = acts[static_cast<size_t>(d) * per + 2];
          for (int64_t j = 0; j < H; ++j) {
            const double cp = cell[static_cast<size_t>(j)];
            double i_gate = f(clip(xw(j) + hr(j, h) + P(d, j) * cp));
            double f_gate = c.input_forget ? 1 - i_gate : f(clip(xw(2 * H + j) + hr(2 * H + j, h) + P(d, 2 * H + j) * cp));
            double c_gate = g(clip(xw(3 * H + j) + hr(3 * H + j, h)));
            double cn = f_gate * cp + i_gate * c_gate;
            double o_gate = f(clip(xw(H + j) + hr(H + j, h) + P(d, H + j) * cn));
            next_cell[static_cast<size_t>(j)] = cn;
            next[static_cast<size_t>(j)] = o_gate * hf(cn);
          }
          cell = next_cell;
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) out.y[y_at(t, d, b, j)] = h[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        out.yh[state_at(d, b, j)] = h[static_cast<size_t>(j)];
        out.yc[state_at(d, b, j)] = cell[static_cast<size_t>(j)];
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Building a case

struct Case {
  Inputs values;
  std::vector<Tensor> tensors;
  std::map<std::string, Attribute> attributes;
  size_t num_outputs = 2;
};

Case make_case(const Config& c, DType dtype, uint32_t seed) {
  const int64_t G = gates_of(c.op), H = c.hidden, D = dirs_of(c);
  Case k;
  auto values = [&](int64_t count, double scale) {
    std::vector<double> v = random_values(DType::kFloat64, count, seed++, -scale, scale);
    // Through the dtype, so the reference sees what the kernel sees.
    return to_doubles(make_tensor(dtype, v, {count}));
  };
  const std::vector<int64_t> x_sizes = c.layout == 0 ? std::vector<int64_t>{c.seq, c.batch, c.input}
                                                     : std::vector<int64_t>{c.batch, c.seq, c.input};
  const std::vector<int64_t> state = c.layout == 0 ? std::vector<int64_t>{D, c.batch, H} : std::vector<int64_t>{c.batch, D, H};
  k.values.x = values(c.seq * c.batch * c.input, 1.0);
  k.values.w = values(D * G * H * c.input, 0.6);
  k.values.r = values(D * G * H * H, 0.6);
  k.tensors = {make_tensor(dtype, k.values.x, x_sizes), make_tensor(dtype, k.values.w, {D, G * H, c.input}),
               make_tensor(dtype, k.values.r, {D, G * H, H}), Tensor(), Tensor(), Tensor()};
  if (c.bias) {
    k.values.b = values(D * 2 * G * H, 0.5);
    k.tensors[3] = make_tensor(dtype, k.values.b, {D, 2 * G * H});
  }
  if (c.lengths) {
    if (!c.length_values.empty()) {
      k.values.lengths = c.length_values;
    } else {
      std::mt19937 engine(seed++);
      for (int64_t b = 0; b < c.batch; ++b) k.values.lengths.push_back(std::uniform_int_distribution<int64_t>(0, c.seq)(engine));
    }
    std::vector<double> as_doubles(k.values.lengths.begin(), k.values.lengths.end());
    k.tensors[4] = make_tensor(DType::kInt32, as_doubles, {c.batch});
  }
  if (c.initial_h) {
    k.values.h0 = values(D * c.batch * H, 1.0);
    k.tensors[5] = make_tensor(dtype, k.values.h0, state);
  }
  if (c.op == "LSTM") {
    k.tensors.resize(8);
    if (c.initial_c) {
      k.values.c0 = values(D * c.batch * H, 1.0);
      k.tensors[6] = make_tensor(dtype, k.values.c0, state);
    }
    if (c.peepholes) {
      k.values.p = values(D * 3 * H, 0.6);
      k.tensors[7] = make_tensor(dtype, k.values.p, {D, 3 * H});
    }
    k.num_outputs = 3;
  }
  // Trailing absent inputs are left off, as the importer does.
  while (!k.tensors.back().defined()) k.tensors.pop_back();
  k.attributes["hidden_size"] = Attribute(H);
  if (c.direction != "forward") k.attributes["direction"] = Attribute(c.direction);
  if (c.layout != 0) k.attributes["layout"] = Attribute(c.layout);
  if (c.clip) k.attributes["clip"] = Attribute(*c.clip);
  if (c.op == "GRU" && c.linear_before_reset) k.attributes["linear_before_reset"] = Attribute(c.linear_before_reset);
  if (c.op == "LSTM" && c.input_forget) k.attributes["input_forget"] = Attribute(c.input_forget);
  if (!c.activations.empty()) k.attributes["activations"] = Attribute(c.activations);
  if (!c.alphas.empty()) k.attributes["activation_alpha"] = Attribute(c.alphas);
  if (!c.betas.empty()) k.attributes["activation_beta"] = Attribute(c.betas);
  return k;
}

std::string describe(const Config& c, DType dtype) {
  std::string text = c.op + " " + c.direction + " layout " + std::to_string(c.layout) + " " + std::string(dtype_name(dtype));
  if (c.bias) text += " B";
  if (c.lengths) text += " sequence_lens";
  if (c.initial_h) text += " initial_h";
  if (c.initial_c) text += " initial_c";
  if (c.peepholes) text += " P";
  if (c.clip) text += " clip " + std::to_string(*c.clip);
  if (c.linear_before_reset) text += " linear_before_reset";
  if (c.input_forget) text += " input_forget";
  for (const std::string& name : c.activations) text += " " + name;
  return text;
}

void expect_matches(const Config& c, DType dtype, uint32_t seed, double tolerance) {
  Case k = make_case(c, dtype, seed);
  const Outputs want = reference(c, k.values);
  const std::vector<Tensor> got = run(c.op, k.tensors, k.attributes, k.num_outputs);
  const int64_t D = dirs_of(c);
  const std::vector<int64_t> y_sizes = c.layout == 0 ? std::vector<int64_t>{c.seq, D, c.batch, c.hidden}
                                                     : std::vector<int64_t>{c.batch, c.seq, D, c.hidden};
  const std::vector<int64_t> state = c.layout == 0 ? std::vector<int64_t>{D, c.batch, c.hidden}
                                                   : std::vector<int64_t>{c.batch, D, c.hidden};
  ASSERT_EQ(got[0].sizes(), y_sizes) << describe(c, dtype);
  ASSERT_EQ(got[1].sizes(), state) << describe(c, dtype);
  ASSERT_EQ(got[0].dtype(), dtype);
  std::vector<std::pair<const char*, const std::vector<double>*>> outputs = {{"Y", &want.y}, {"Y_h", &want.yh}};
  if (c.op == "LSTM") {
    ASSERT_EQ(got[2].sizes(), state);
    outputs.emplace_back("Y_c", &want.yc);
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::vector<double> values = to_doubles(got[o]);
    ASSERT_EQ(values.size(), outputs[o].second->size());
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_NEAR(values[i], (*outputs[o].second)[i], tolerance)
          << describe(c, dtype) << ": " << outputs[o].first << " element " << i;
    }
  }
}

const std::vector<std::string> kDirections = {"forward", "reverse", "bidirectional"};

// ---------------------------------------------------------------------------
// Forward

TEST(RecurrentKernels, EveryDirectionLayoutAndOptionalInput) {
  uint32_t seed = 1;
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    for (const std::string& direction : kDirections) {
      for (int64_t layout : {0, 1}) {
        for (int variant = 0; variant < 3; ++variant) {
          Config c;
          c.op = op;
          c.direction = direction;
          c.layout = layout;
          // 0: no optional input; 1: all of them; 2: all, uneven lengths incl. 0 and full.
          if (variant > 0) c.bias = c.initial_h = c.initial_c = c.peepholes = c.lengths = true;
          if (variant == 1) c.length_values = {4, 4, 4};
          if (variant == 2) c.length_values = {2, 0, 4};
          if (op == "RNN") c.hidden = 4;
          expect_matches(c, DType::kFloat64, seed++, 1e-12);
          expect_matches(c, DType::kFloat32, seed++, 2e-5);
        }
      }
    }
  }
}

TEST(RecurrentKernels, SequenceLengthsZeroTheTailAndKeepTheLastValidState) {
  // Beyond the comparison with the reference: explicit checks of the rule.
  Config c;
  c.op = "GRU";
  c.direction = "bidirectional";
  c.lengths = true;
  c.initial_h = true;
  c.length_values = {1, 3, 0};
  Case k = make_case(c, DType::kFloat64, 77);
  const std::vector<Tensor> got = run("GRU", k.tensors, k.attributes, 2);
  const std::vector<double> y = to_doubles(got[0]), yh = to_doubles(got[1]);
  const int64_t N = c.batch, H = c.hidden;
  for (int64_t b = 0; b < N; ++b) {
    const int64_t length = c.length_values[static_cast<size_t>(b)];
    for (int64_t d = 0; d < 2; ++d) {
      for (int64_t j = 0; j < H; ++j) {
        for (int64_t t = length; t < c.seq; ++t) EXPECT_EQ(y[static_cast<size_t>(((t * 2 + d) * N + b) * H + j)], 0.0);
        const double last = yh[static_cast<size_t>((d * N + b) * H + j)];
        if (length == 0) {
          EXPECT_EQ(last, k.values.h0[static_cast<size_t>((d * N + b) * H + j)]) << "length 0 keeps initial_h";
        } else {
          // Forward ends at its last valid step, reverse at step 0.
          const int64_t t = d == 0 ? length - 1 : 0;
          EXPECT_EQ(last, y[static_cast<size_t>(((t * 2 + d) * N + b) * H + j)]);
        }
      }
    }
  }
  expect_matches(c, DType::kFloat64, 77, 1e-12);
}

TEST(RecurrentKernels, ClipLinearBeforeResetAndInputForget) {
  uint32_t seed = 300;
  for (const std::string& direction : kDirections) {
    for (int64_t layout : {0, 1}) {
      Config gru;
      gru.op = "GRU";
      gru.direction = direction;
      gru.layout = layout;
      gru.bias = gru.initial_h = true;
      gru.linear_before_reset = 1;
      expect_matches(gru, DType::kFloat64, seed++, 1e-12);
      gru.clip = 0.4;
      expect_matches(gru, DType::kFloat64, seed++, 1e-12);
      gru.linear_before_reset = 0;
      expect_matches(gru, DType::kFloat64, seed++, 1e-12);

      Config lstm;
      lstm.direction = direction;
      lstm.layout = layout;
      lstm.bias = lstm.peepholes = lstm.initial_c = true;
      lstm.input_forget = 1;
      expect_matches(lstm, DType::kFloat64, seed++, 1e-12);
      lstm.clip = 0.5;
      expect_matches(lstm, DType::kFloat64, seed++, 1e-12);
      lstm.input_forget = 0;
      expect_matches(lstm, DType::kFloat64, seed++, 1e-12);

      Config rnn;
      rnn.op = "RNN";
      rnn.direction = direction;
      rnn.layout = layout;
      rnn.bias = true;
      rnn.clip = 0.3;
      expect_matches(rnn, DType::kFloat64, seed++, 1e-12);
    }
  }
}

TEST(RecurrentKernels, EveryActivationWithAlphaAndBeta) {
  const std::vector<std::string> all = {"Relu",        "Tanh", "Sigmoid",  "Affine",  "LeakyRelu", "ThresholdedRelu",
                                        "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  uint32_t seed = 500;
  for (const std::string& name : all) {
    // RNN: f alone, with ONNX's default alpha/beta, then given ones.
    Config rnn;
    rnn.op = "RNN";
    rnn.bias = true;
    rnn.activations = {name};
    expect_matches(rnn, DType::kFloat64, seed++, 1e-12);
    rnn.alphas = {0.7};
    rnn.betas = {-0.3};
    expect_matches(rnn, DType::kFloat64, seed++, 1e-12);
    // Bidirectional LSTM: the name in every slot of the reverse direction,
    // alphas/betas consumed in order by those that take them.
    Config lstm;
    lstm.direction = "bidirectional";
    lstm.bias = true;
    lstm.activations = {"Sigmoid", "Tanh", "Tanh", name, name, "HardSigmoid"};
    lstm.alphas = {0.9, 0.4, 0.15};
    lstm.betas = {0.2, 0.6, 0.45};
    expect_matches(lstm, DType::kFloat64, seed++, 1e-12);
    Config gru;
    gru.op = "GRU";
    gru.direction = "reverse";
    gru.activations = {"HardSigmoid", name};
    gru.alphas = {0.25, 1.5};
    expect_matches(gru, DType::kFloat64, seed++, 1e-12);
  }
  // Names are matched whatever their case; one direction's list serves both.
  Config lower;
  lower.op = "GRU";
  lower.direction = "bidirectional";
  lower.activations = {"sigmoid", "tanh"};
  Case k = make_case(lower, DType::kFloat64, 9);
  lower.activations = {"Sigmoid", "Tanh", "Sigmoid", "Tanh"};
  const Outputs want = reference(lower, k.values);
  const std::vector<double> got = to_doubles(run("GRU", k.tensors, k.attributes, 2)[1]);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want.yh[i], 1e-12);
}

TEST(RecurrentKernels, HalfPrecisionComputesInFloat) {
  uint32_t seed = 700;
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (const std::string op : {"RNN", "GRU", "LSTM"}) {
      Config c;
      c.op = op;
      c.direction = "bidirectional";
      c.layout = 1;
      c.bias = c.initial_h = c.lengths = true;
      // The reference sees the rounded inputs; only the outputs' rounding differs.
      expect_matches(c, dtype, seed++, dtype == DType::kFloat16 ? 2e-3 : 1.6e-2);
    }
  }
}

TEST(RecurrentKernels, LargerProblemThroughOneDnn) {
  // Sizes where oneDNN's blocked GEMMs take over (f32) against f64 loops.
  Config c;
  c.seq = 7;
  c.batch = 9;
  c.input = 33;
  c.hidden = 17;
  c.direction = "bidirectional";
  c.bias = c.peepholes = c.initial_h = c.initial_c = c.lengths = true;
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    c.op = op;
    expect_matches(c, DType::kFloat32, 800, 1e-4);
    expect_matches(c, DType::kFloat64, 801, 1e-11);
  }
}

TEST(RecurrentKernels, EmptySequencesAndBatches) {
  // seq_length 0 leaves Y empty and Y_h the initial state; batch 0 gives empty outputs.
  uint32_t seed = 850;
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    for (int64_t layout : {0, 1}) {
      Config c;
      c.op = op;
      c.layout = layout;
      c.direction = "bidirectional";
      c.initial_h = c.initial_c = c.bias = true;
      c.seq = 0;
      expect_matches(c, DType::kFloat32, seed++, 0);
      c.seq = 3;
      c.batch = 0;
      expect_matches(c, DType::kFloat64, seed++, 0);
    }
  }
}

TEST(RecurrentKernels, HiddenSizeComesFromRWhenAbsent) {
  Config c;
  c.op = "GRU";
  Case k = make_case(c, DType::kFloat64, 31);
  k.attributes.erase("hidden_size");
  const Outputs want = reference(c, k.values);
  const std::vector<double> got = to_doubles(run("GRU", k.tensors, k.attributes, 2)[1]);
  ASSERT_EQ(got.size(), want.yh.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want.yh[i], 1e-12);
}

// ---------------------------------------------------------------------------
// Shape inference and errors

TEST(RecurrentSchemas, InferShapesOfEveryOutputAndLayout) {
  for (int64_t layout : {0, 1}) {
    for (const std::string op : {"RNN", "GRU", "LSTM"}) {
      Graph g("shapes");
      const int64_t G = gates_of(op);
      Shape x_shape = layout == 0 ? Shape{Dim::symbol("S"), Dim::symbol("N"), 5} : Shape{Dim::symbol("N"), Dim::symbol("S"), 5};
      Value* x = g.add_input("x", {DType::kFloat32, x_shape});
      Value* w = g.add_input("w", {DType::kFloat32, Shape{2, G * 6, 5}});
      Value* r = g.add_input("r", {DType::kFloat32, Shape{2, G * 6, 6}});
      Node* node = g.add_node(op, {x, w, r}, op == "LSTM" ? 3 : 2, {{"direction", Attribute("bidirectional")}, {"layout", Attribute(layout)}});
      infer_graph_types(g, default_op_registry());
      const Shape y = layout == 0 ? Shape{Dim::symbol("S"), 2, Dim::symbol("N"), 6} : Shape{Dim::symbol("N"), Dim::symbol("S"), 2, 6};
      const Shape state = layout == 0 ? Shape{2, Dim::symbol("N"), 6} : Shape{Dim::symbol("N"), 2, 6};
      EXPECT_EQ(node->output(0)->type(), (TensorType{DType::kFloat32, y})) << op;
      for (size_t i = 1; i < node->num_outputs(); ++i) EXPECT_EQ(node->output(i)->type(), (TensorType{DType::kFloat32, state})) << op;
    }
  }
}

TEST(RecurrentSchemas, InferenceRejectsShapesThatDisagree) {
  auto infer_error = [](const std::vector<TensorType>& types, std::map<std::string, Attribute> attributes) -> std::string {
    Graph g("bad");
    std::vector<Value*> inputs;
    for (size_t i = 0; i < types.size(); ++i) {
      inputs.push_back(types[i].dtype == DType::kUndefined ? nullptr : g.add_input("in" + std::to_string(i), types[i]));
    }
    g.add_node("LSTM", inputs, 3, std::move(attributes));
    try {
      infer_graph_types(g, default_op_registry());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const TensorType x{DType::kFloat32, Shape{4, 2, 5}};
  const TensorType w{DType::kFloat32, Shape{1, 12, 5}};
  const TensorType r{DType::kFloat32, Shape{1, 12, 3}};
  EXPECT_EQ(infer_error({x, w, r}, {}), "no error");
  EXPECT_NE(infer_error({x, {DType::kFloat32, Shape{1, 12, 4}}, r}, {}).find("W has shape [1,12,4]; expected [num_directions, 4*hidden_size, input_size] = [1,12,5]"),
            std::string::npos);
  EXPECT_NE(infer_error({x, w, r}, {{"hidden_size", Attribute(int64_t{4})}}).find("= [1,16,5]"), std::string::npos);
  EXPECT_NE(infer_error({x, w, r, {DType::kFloat32, Shape{1, 24}}, {}, {DType::kFloat32, Shape{1, 3, 3}}}, {}).find("initial_h has shape [1,3,3]"),
            std::string::npos);
  EXPECT_NE(infer_error({x, w, r, {DType::kFloat64, Shape{1, 24}}}, {}).find("must have X's dtype"), std::string::npos);
  EXPECT_NE(infer_error({x, w, r}, {{"direction", Attribute("sideways")}}).find("direction 'sideways'"), std::string::npos);
}

TEST(RecurrentKernels, ErrorsNameWhatWasExpected) {
  Config c;
  Case k = make_case(c, DType::kFloat32, 3);
  auto with = [&](size_t index, const Tensor& t) {
    std::vector<Tensor> inputs = k.tensors;
    if (inputs.size() <= index) inputs.resize(index + 1);
    inputs[index] = t;
    return error_message("LSTM", inputs, k.attributes, 3);
  };
  auto expect_has = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  expect_has(with(1, testing::random_tensor(DType::kFloat32, {1, 11, 5}, 1)),
             "W has shape [1,11,5]; expected [num_directions, 4*hidden_size, input_size] = [1,12,5]");
  expect_has(with(2, testing::random_tensor(DType::kFloat32, {1, 12, 4}, 1)), "R has shape [1,12,4]");
  expect_has(with(3, testing::random_tensor(DType::kFloat32, {1, 12}, 1)), "B has shape [1,12]; expected [num_directions, 8*hidden_size]");
  expect_has(with(7, testing::random_tensor(DType::kFloat32, {1, 12}, 1)), "P has shape [1,12]; expected [num_directions, 3*hidden_size] = [1,9]");
  expect_has(with(4, make_tensor(DType::kInt32, {1, 5, 2}, {3})), "sequence_lens[1] = 5 is outside [0, seq_length = 4]");
  expect_has(with(0, testing::random_tensor(DType::kFloat32, {4, 3}, 1)), "X");
  // hidden_size that W and R do not have.
  auto attributes = k.attributes;
  attributes["hidden_size"] = Attribute(int64_t{4});
  expect_has(error_message("LSTM", k.tensors, attributes, 3), "= [1,16,5]");
  attributes = k.attributes;
  attributes["activations"] = Attribute(std::vector<std::string>{"Sigmoid", "Tanh"});
  expect_has(error_message("LSTM", k.tensors, attributes, 3), "must list 3 functions");
  attributes["activations"] = Attribute(std::vector<std::string>{"Sigmoid", "Tanh", "Cube"});
  expect_has(error_message("LSTM", k.tensors, attributes, 3), "activation 'Cube' is not one of");
  attributes = k.attributes;
  attributes["layout"] = Attribute(int64_t{2});
  expect_has(error_message("LSTM", k.tensors, attributes, 3), "layout 2 is not 0 or 1");
  attributes = k.attributes;
  attributes["clip"] = Attribute(-1.0);
  expect_has(error_message("LSTM", k.tensors, attributes, 3), "clip");
  // W of another dtype.
  expect_has(with(1, testing::random_tensor(DType::kFloat64, {1, 12, 5}, 1)), "X's dtype");
}

// ---------------------------------------------------------------------------
// Gradients

// f(inputs) = sum over outputs o in `weights` of sum(Y_o * w_o).
double weighted(const std::string& op, const std::vector<Tensor>& inputs, const std::map<std::string, Attribute>& attributes,
                size_t num_outputs, const std::map<size_t, std::vector<double>>& weights) {
  std::vector<Tensor> out = run(op, inputs, attributes, num_outputs);
  double sum = 0;
  for (const auto& [index, w] : weights) {
    std::vector<double> values = to_doubles(out[index]);
    for (size_t i = 0; i < values.size(); ++i) sum += values[i] * w[i];
  }
  return sum;
}

// The op's gradient rule, run on random output weights for the outputs in
// `outputs`, against central differences for every f64 input it differentiates.
void check_recurrent_gradient(const Config& c, uint32_t seed, const std::vector<size_t>& outputs) {
  Case k = make_case(c, DType::kFloat64, seed);
  std::map<std::string, Tensor> feeds;
  std::unique_ptr<Graph> graph = one_node(c.op, k.tensors, k.attributes, k.num_outputs, feeds, /*constant_non_f64=*/true);
  Graph& g = *graph;
  infer_graph_types(g, default_op_registry());
  Node* node = g.nodes().front();
  std::map<size_t, std::vector<double>> weights;
  std::vector<Value*> output_grads(k.num_outputs, nullptr);
  for (size_t o : outputs) {
    const Value* y = node->output(o);
    output_grads[o] = g.add_input("d" + std::to_string(o), y->type());
    weights[o] = random_values(DType::kFloat64, y->shape().num_elements(), seed + 1000 + static_cast<uint32_t>(o), -1, 1);
    feeds["d" + std::to_string(o)] = make_tensor(DType::kFloat64, weights[o], y->shape().sizes());
  }
  const OpSchema& schema = default_op_registry().get(c.op);
  GradientContext ctx(g, *node, output_grads);
  schema.gradient_rule()(ctx);
  std::vector<size_t> checked;
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    if (ctx.input_grads()[i] == nullptr) continue;
    g.add_output(ctx.input_grads()[i]);
    checked.push_back(i);
  }
  // Every present floating input has a gradient; sequence_lens has none.
  std::vector<size_t> expected;
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    if (k.tensors[i].defined() && k.tensors[i].dtype() == DType::kFloat64) expected.push_back(i);
  }
  ASSERT_EQ(checked, expected) << describe(c, DType::kFloat64);
  infer_graph_types(g, default_op_registry());
  verify_graph(g, default_op_registry(), {.require_types = true});
  std::vector<Tensor> all = evaluate_graph(g, feeds);
  const size_t first_grad = all.size() - checked.size();
  for (size_t n = 0; n < checked.size(); ++n) {
    const size_t index = checked[n];
    const Tensor& analytic = all[first_grad + n];
    ASSERT_EQ(analytic.sizes(), k.tensors[index].sizes());
    const std::vector<double> grad = to_doubles(analytic);
    for (int64_t j = 0; j < k.tensors[index].num_elements(); ++j) {
      std::vector<Tensor> plus = k.tensors, minus = k.tensors;
      plus[index] = k.tensors[index].clone();
      minus[index] = k.tensors[index].clone();
      const double x = plus[index].data<double>()[j], h = 1e-6;
      plus[index].data<double>()[j] = x + h;
      minus[index].data<double>()[j] = x - h;
      const double numeric = (weighted(c.op, plus, k.attributes, k.num_outputs, weights) -
                              weighted(c.op, minus, k.attributes, k.num_outputs, weights)) / (2 * h);
      ASSERT_NEAR(grad[static_cast<size_t>(j)], numeric, 1e-6 + 1e-5 * std::fabs(numeric))
          << describe(c, DType::kFloat64) << ": d/d input " << index << " element " << j;
    }
  }
}

TEST(RecurrentGradients, ThroughTimeForEveryDirectionAndLayout) {
  uint32_t seed = 900;
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    for (const std::string& direction : kDirections) {
      for (int64_t layout : {0, 1}) {
        Config c;
        c.op = op;
        c.seq = 3;
        c.batch = 2;
        c.input = 3;
        c.hidden = 2;
        c.direction = direction;
        c.layout = layout;
        c.bias = c.initial_h = c.initial_c = c.peepholes = true;
        c.lengths = layout == 1;
        c.length_values = {3, 1};
        const std::vector<size_t> all_outputs = op == "LSTM" ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0, 1};
        check_recurrent_gradient(c, seed++, all_outputs);
      }
    }
  }
}

TEST(RecurrentGradients, EachOutputAloneAndTheVariants) {
  uint32_t seed = 1200;
  Config c;
  c.seq = 3;
  c.batch = 2;
  c.input = 2;
  c.hidden = 2;
  c.bias = c.initial_h = c.initial_c = c.peepholes = c.lengths = true;
  c.length_values = {2, 0};
  for (size_t o : {0, 1, 2}) check_recurrent_gradient(c, seed++, {o});
  c.input_forget = 1;
  c.clip = 0.7;
  check_recurrent_gradient(c, seed++, {0, 1, 2});
  c.activations = {"HardSigmoid", "Softsign", "Elu"};
  check_recurrent_gradient(c, seed++, {0, 2});

  Config gru = c;
  gru.op = "GRU";
  gru.activations.clear();
  gru.direction = "bidirectional";
  for (int64_t linear : {0, 1}) {
    gru.linear_before_reset = linear;
    check_recurrent_gradient(gru, seed++, {0, 1});
    check_recurrent_gradient(gru, seed++, {1});
  }
  gru.activations = {"Softplus", "ScaledTanh", "Sigmoid", "LeakyRelu"};
  gru.alphas = {0.8, 0.3};
  gru.betas = {1.3};
  check_recurrent_gradient(gru, seed++, {0, 1});

  Config rnn = c;
  rnn.op = "RNN";
  rnn.activations = {"Affine"};
  rnn.alphas = {0.5};
  rnn.betas = {0.1};
  check_recurrent_gradient(rnn, seed++, {0, 1});
  rnn.activations = {"Tanh"};
  check_recurrent_gradient(rnn, seed++, {1});
}

TEST(RecurrentGradients, NoGradientWithoutOutputGradients) {
  Config c;
  Case k = make_case(c, DType::kFloat64, 5);
  std::map<std::string, Tensor> feeds;
  std::unique_ptr<Graph> g = one_node("LSTM", k.tensors, k.attributes, 3, feeds);
  infer_graph_types(*g, default_op_registry());
  GradientContext ctx(*g, *g->nodes().front(), {nullptr, nullptr, nullptr});
  default_op_registry().get("LSTM").gradient_rule()(ctx);
  for (Value* grad : ctx.input_grads()) EXPECT_EQ(grad, nullptr);
}

}  // namespace
}  // namespace weir
