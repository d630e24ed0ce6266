// ONNX RNN, GRU and LSTM (opset 14, with `layout`), and their backward ops
// RNNGrad, GRUGrad and LSTMGrad: schemas with shape inference, gradient
// rules, and CPU kernels for f32, f64, f16 and bf16 (f16/bf16 computed in f32).
//
//   register_recurrent_schemas(op_registry);      // RNN GRU LSTM + the three *Grad ops
//   register_recurrent_cpu_kernels(kernels);
//
// What the kernels share lives here: the activation functions with their
// derivatives, the attributes read once per node, the sizes checked against
// the inputs, the inputs converted to one canonical, time-major layout in
// the compute type, and the matrix products. Each cell (rnn.cc, gru.cc,
// lstm.cc) is a class template over the compute type C with
//
//   static constexpr RecurrentCell kCell;
//   struct Record;                                           // what backward needs of a forward pass
//   Cell(const RecurrentAttributes&, const RecurrentData<C>&, RecurrentCompute<C>&);
//   void forward(int64_t direction, RecurrentOutputs<C>& out, Record* record);
//   void backward(int64_t direction, const Record& record, const RecurrentOutputs<C>& out_grads,
//                 RecurrentGrads<C>& grads);
//
// and RecurrentKernel<Cell> / RecurrentGradKernel<Cell> load, run every
// direction and store.
//
// Semantics (ONNX leaves some open; these follow ONNX Runtime):
// - X's input projection of every step is one GEMM (X · W^T over all
//   seq_length * batch rows) through oneDNN for f32 (f64: plain loops), the
//   recurrence one small GEMM per step.
// - sequence_lens: entries of a batch row past its length are zero in Y, and
//   Y_h / Y_c hold its last valid step (its initial state for length 0). The
//   reverse direction of a row runs from its own last valid step back to 0.
// - activation_alpha / activation_beta are consumed in order by the
//   activations that take them (Affine, LeakyRelu, ThresholdedRelu,
//   ScaledTanh, HardSigmoid, Elu), over the forward then the reverse list;
//   missing ones take ONNX's defaults. Names are matched case-insensitively.
//   A bidirectional op given one direction's list uses it for both.
// - clip bounds the pre-activation of every gate (after LSTM peepholes), not
//   LSTM's cell state before h.
// - LSTM input_forget=1 couples the gates as f = 1 - i.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/op_schema.h"
#include "ops/kernel.h"
#include "ops/linalg/dnnl_matmul.h"
#include "ops/threading.h"

namespace weir {

void register_recurrent_schemas(OpRegistry& registry);
void register_recurrent_cpu_kernels(KernelRegistry& registry);

enum class RecurrentCell { kRnn, kGru, kLstm };

// "RNN", "GRU", "LSTM".
const char* recurrent_op_name(RecurrentCell cell);
// Gate blocks in W and R: 1, 3 (z r h), 4 (i o f c).
int64_t recurrent_gates(RecurrentCell cell);
// Activations per direction: 1 (f), 2 (f g), 3 (f g h).
int64_t recurrent_activations_per_direction(RecurrentCell cell);

// One activation with its alpha and beta (ONNX's RNN activation list).
struct RecurrentActivation {
  enum class Kind {
    kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus
  };
  Kind kind = Kind::kTanh;
  double alpha = 0.0;
  double beta = 0.0;

  template <typename C> static C sigmoid(C x) {
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    C e = std::exp(x);
    return e / (C(1) + e);
  }

  template <typename C> C value(C x) const {
    const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
    switch (kind) {
      case Kind::kRelu: return x > C(0) ? x : C(0);
      case Kind::kTanh: return std::tanh(x);
      case Kind::kSigmoid: return sigmoid(x);
      case Kind::kAffine: return a * x + b;
      case Kind::kLeakyRelu: return x >= C(0) ? x : a * x;
      case Kind::kThresholdedRelu: return x >= a ? x : C(0);
      case Kind::kScaledTanh: return a * std::tanh(b * x);
      case Kind::kHardSigmoid: return std::min(C(1), std::max(C(0), a * x + b));
      case Kind::kElu: return x >= C(0) ? x : a * std::expm1(x);
      case Kind::kSoftsign: return x / (C(1) + std::fabs(x));
      case Kind::kSoftplus: return std::max(x, C(0)) + std::log1p(std::exp(-std::fabs(x)));
    }
    return x;
  }

  // The derivative at input x (one-sided where the function has a kink).
  template <typename C> C derivative(C x) const {
    const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
    switch (kind) {
      case Kind::kRelu: return x > C(0) ? C(1) : C(0);
      case Kind::kTanh: { C t = std::tanh(x); return C(1) - t * t; }
      case Kind::kSigmoid: { C s = sigmoid(x); return s * (C(1) - s); }
      case Kind::kAffine: return a;
      case Kind::kLeakyRelu: return x >= C(0) ? C(1) : a;
      case Kind::kThresholdedRelu: return x >= a ? C(1) : C(0);
      case Kind::kScaledTanh: { C t = std::tanh(b * x); return a * b * (C(1) - t * t); }
      case Kind::kHardSigmoid: { C t = a * x + b; return t > C(0) && t < C(1) ? a : C(0); }
      case Kind::kElu: return x >= C(0) ? C(1) : a * std::exp(x);
      case Kind::kSoftsign: { C d = C(1) + std::fabs(x); return C(1) / (d * d); }
      case Kind::kSoftplus: return sigmoid(x);
    }
    return C(1);
  }
};

// A node's attributes with ONNX's defaults, checked once.
struct RecurrentAttributes {
  RecurrentCell cell = RecurrentCell::kRnn;
  int64_t directions = 1;
  bool reverse = false;  // direction "reverse" (bidirectional: direction 1 runs reversed)
  std::optional<int64_t> hidden_size;
  int64_t layout = 0;
  std::optional<double> clip;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM
  std::vector<RecurrentActivation> activations;  // directions * per direction, forward's first

  // Throws weir::Error(kInvalidArgument) naming the node for an unknown
  // direction or activation, a wrong activation count, layout not 0/1, a
  // hidden_size < 1 or a clip that is not positive.
  static RecurrentAttributes from_node(const Node& node, RecurrentCell cell);

  bool reversed(int64_t direction) const { return reverse || direction == 1; }
  const RecurrentActivation& activation(int64_t direction, int64_t index) const {
    return activations[static_cast<size_t>(direction * recurrent_activations_per_direction(cell) + index)];
  }
  // x bounded to [-clip, clip] when clip is set.
  template <typename C> C clipped(C x) const {
    if (!clip) return x;
    const C bound = static_cast<C>(*clip);
    return std::min(bound, std::max(-bound, x));
  }
  // d clipped(x) / dx: 0 where the bound holds x.
  template <typename C> C clip_derivative(C x) const {
    if (!clip) return C(1);
    const C bound = static_cast<C>(*clip);
    return x > -bound && x < bound ? C(1) : C(0);
  }
};

// Sizes read from the inputs. Input indices follow ONNX: X W R B
// sequence_lens initial_h, then LSTM's initial_c P.
struct RecurrentSizes {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1, gates = 1;
  int64_t rows() const { return seq * batch; }
  int64_t gate_width() const { return gates * hidden; }
};

// Checks every input's dtype and shape against X, W and the attributes;
// fails naming the input and the shape it should have.
RecurrentSizes recurrent_sizes(const KernelContext& ctx, const RecurrentAttributes& attributes);

// The inputs in the compute type C, in one layout whatever `layout` says:
// x [seq, batch, input]; w [dirs, gates*H, input]; r [dirs, gates*H, H];
// b [dirs, 2*gates*H] (zeros when absent); p [dirs, 3H] (zeros when absent);
// h0, c0 [dirs, batch, H] (zeros when absent); lengths [batch].
template <typename C>
struct RecurrentData {
  RecurrentSizes sizes;
  std::vector<C> x, w, r, b, p, h0, c0;
  std::vector<int64_t> lengths;
  int64_t max_length = 0;

  // Row of time `t` of batch entry `item` in x and the per-row buffers.
  int64_t row(int64_t t, int64_t item) const { return t * sizes.batch + item; }
  // Time of recurrence step `step` for batch entry `item`, or -1 past its length.
  int64_t time(bool reversed, int64_t step, int64_t item) const {
    int64_t length = lengths[static_cast<size_t>(item)];
    if (step >= length) return -1;
    return reversed ? length - 1 - step : step;
  }
};

// Outputs (or their gradients) in the canonical layout: y [seq, dirs, batch, H]
// (zeros past each length), yh and yc [dirs, batch, H].
template <typename C>
struct RecurrentOutputs {
  std::vector<C> y, yh, yc;
  int64_t y_offset(const RecurrentSizes& s, int64_t t, int64_t d, int64_t b) const {
    return ((t * s.directions + d) * s.batch + b) * s.hidden;
  }
  int64_t state_offset(const RecurrentSizes& s, int64_t d, int64_t b) const { return (d * s.batch + b) * s.hidden; }
};

// Input gradients, shaped as RecurrentData's buffers.
template <typename C>
struct RecurrentGrads {
  std::vector<C> x, w, r, b, p, h0, c0;
};

// Matrix products of the compute type: oneDNN for float, loops for double.
template <typename C>
class RecurrentMatmul {
 public:
  // c[m, n] = op(a) · op(b): a is [m, k] ([k, m] when transpose_a), b is
  // [k, n] ([n, k] when transpose_b); all row-major and contiguous.
  void run(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const C* a, const C* b, C* c);
  // c += op(a) · op(b).
  void accumulate(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const C* a, const C* b, C* c);

 private:
  DnnlMatmul dnnl_;
  std::vector<C> scratch_;
};

// Applies activations to contiguous spans in place: values[i] =
// activation(clip(values[i])). For float, oneDNN's eltwise primitives
// (vectorized; cached per function and length) run Tanh, Sigmoid, Relu,
// LeakyRelu, Affine and Elu; a loop runs the rest, and double.
template <typename C>
class ActivationRunner {
 public:
  ActivationRunner();
  ~ActivationRunner();
  ActivationRunner(const ActivationRunner&) = delete;
  ActivationRunner& operator=(const ActivationRunner&) = delete;

  void apply(const RecurrentActivation& activation, std::optional<double> clip, C* values, int64_t count);

 private:
  struct Primitives;
  std::unique_ptr<Primitives> primitives_;
};

// What a cell computes with; one per kernel, reused by every run.
template <typename C>
struct RecurrentCompute {
  RecurrentMatmul<C> matmul;
  ActivationRunner<C> activations;
};

// xw [rows, gates*H] = x · W_d^T + Wb_d, plus Rb_d in the first
// `folded_recurrent_bias` columns (the gates whose recurrent bias adds
// outside any product).
template <typename C>
std::vector<C> project_inputs(RecurrentMatmul<C>& matmul, const RecurrentData<C>& data, int64_t direction,
                              int64_t folded_recurrent_bias);

// From d(pre-activation of X · W^T + Wb) per row, dgx [rows, gates*H]:
// grads.w[d] = dgx^T · x, grads.x += dgx · W_d, the Wb half of grads.b[d].
template <typename C>
void input_weight_grads(RecurrentMatmul<C>& matmul, const RecurrentData<C>& data, int64_t direction,
                        const std::vector<C>& dgx, RecurrentGrads<C>& grads);

// From d(pre-activation of in · R^T + Rb) per row for `columns` gate rows of R
// starting at `first` (dgr [rows, columns], contiguous) and the recurrent
// input per row (in [rows, H]): those rows of grads.r[d] = dgr^T · in, and
// the Rb half of grads.b[d] for them.
template <typename C>
void recurrent_weight_grads(RecurrentMatmul<C>& matmul, const RecurrentData<C>& data, int64_t direction,
                            int64_t first, int64_t columns, const std::vector<C>& dgr, const std::vector<C>& in,
                            RecurrentGrads<C>& grads);

// Columns [first, first + count) of a [rows, width] matrix, contiguous.
template <typename C>
std::vector<C> copy_columns(const std::vector<C>& matrix, int64_t rows, int64_t width, int64_t first, int64_t count);

// Loading the inputs and storing outputs/gradients in the node's dtype and layout.
template <typename C>
RecurrentData<C> load_recurrent_inputs(const KernelContext& ctx, const RecurrentAttributes& attributes,
                                       const RecurrentSizes& sizes);
template <typename C>
RecurrentOutputs<C> load_output_grads(const KernelContext& ctx, const RecurrentAttributes& attributes,
                                      const RecurrentSizes& sizes, size_t first_input);
template <typename C>
void store_outputs(KernelContext& ctx, const RecurrentAttributes& attributes, const RecurrentSizes& sizes,
                   const RecurrentOutputs<C>& out);
template <typename C>
void store_input_grads(KernelContext& ctx, const RecurrentAttributes& attributes, const RecurrentSizes& sizes,
                       const RecurrentGrads<C>& grads);

// Calls fn(b) for every batch entry b, spread over threads when the step's
// elementwise work (`work_per_entry` values per entry) is large enough.
template <typename Fn>
void for_each_batch_entry(int64_t batch, int64_t work_per_entry, Fn&& fn) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, work_per_entry));
  parallel_for(batch, grain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) fn(b);
  });
}

// Registers the forward and backward CPU kernels of each cell (rnn.cc, gru.cc, lstm.cc).
void register_rnn_cpu_kernels(KernelRegistry& registry);
void register_gru_cpu_kernels(KernelRegistry& registry);
void register_lstm_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
