// LSTM's cell (gates i o f c in W and R, peepholes i o f in P), forward and
// back through time (see recurrent.h):
//   it = f(Xt Wi^T + Ht-1 Ri^T + Pi . Ct-1 + Wbi + Rbi)
//   ft = f(Xt Wf^T + Ht-1 Rf^T + Pf . Ct-1 + Wbf + Rbf)    (1 - it with input_forget)
//   ct = g(Xt Wc^T + Ht-1 Rc^T + Wbc + Rbc)
//   Ct = ft . Ct-1 + it . ct
//   ot = f(Xt Wo^T + Ht-1 Ro^T + Po . Ct + Wbo + Rbo)
//   Ht = ot . h(Ct)
#include <algorithm>

#include "ops/nn/recurrent_kernel.h"

namespace weir {

namespace {

template <typename C>
class LstmCell {
 public:
  static constexpr RecurrentCell kCell = RecurrentCell::kLstm;

  // Per row (t, b) of the steps run: the four pre-activations before clip
  // [rows, 4H] (i o f c), and the states the step started from and made.
  struct Record {
    std::vector<C> pre, h_prev, c_prev, c_new;
  };

  LstmCell(const RecurrentAttributes& attributes, const RecurrentData<C>& data, RecurrentCompute<C>& compute)
      : a_(attributes), data_(data), compute_(compute) {}

  void forward(int64_t d, RecurrentOutputs<C>& out, Record* record) {
    const RecurrentSizes& s = data_.sizes;
    const int64_t hidden = s.hidden, width = 4 * hidden, span = s.batch * hidden;
    const std::vector<C> xw = project_inputs(compute_.matmul, data_, d, width);
    const C* r = data_.r.data() + d * width * hidden;
    const C* p_i = data_.p.data() + d * 3 * hidden;
    const C* p_o = p_i + hidden;
    const C* p_f = p_i + 2 * hidden;
    std::vector<C> h(data_.h0.begin() + out.state_offset(s, d, 0), data_.h0.begin() + out.state_offset(s, d + 1, 0));
    std::vector<C> c(data_.c0.begin() + out.state_offset(s, d, 0), data_.c0.begin() + out.state_offset(s, d + 1, 0));
    std::vector<C> hr(static_cast<size_t>(s.batch * width));
    // One step's gates, gate by gate ([i f c o][batch, H]: i and f side by
    // side for one activation call), and h's input; entries past a length
    // hold stale values and are not read.
    std::vector<C> gates(static_cast<size_t>(4 * span), C(0)), cell_out(static_cast<size_t>(span), C(0));
    C* input_gate = gates.data();
    C* forget_gate = input_gate + span;
    C* candidate = forget_gate + span;
    C* output_gate = candidate + span;
    if (record != nullptr) {
      record->pre.assign(static_cast<size_t>(s.rows() * width), C(0));
      record->h_prev.assign(static_cast<size_t>(s.rows() * hidden), C(0));
      record->c_prev.assign(record->h_prev.size(), C(0));
      record->c_new.assign(record->h_prev.size(), C(0));
    }
    for (int64_t step = 0; step < data_.max_length; ++step) {
      compute_.matmul.run(false, true, s.batch, width, hidden, h.data(), r, hr.data());
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        const C* x_gates = xw.data() + row * width;
        const C* h_gates = hr.data() + b * width;
        for (int64_t j = 0; j < hidden; ++j) {
          const int64_t at = b * hidden + j;
          const C c_prev = c[static_cast<size_t>(at)];
          input_gate[at] = x_gates[j] + h_gates[j] + p_i[j] * c_prev;
          forget_gate[at] = x_gates[2 * hidden + j] + h_gates[2 * hidden + j] + p_f[j] * c_prev;
          candidate[at] = x_gates[3 * hidden + j] + h_gates[3 * hidden + j];
          output_gate[at] = x_gates[hidden + j] + h_gates[hidden + j];  // Po . Ct comes below
          if (record != nullptr) {
            C* pre = record->pre.data() + row * width;
            pre[j] = input_gate[at];
            pre[2 * hidden + j] = forget_gate[at];
            pre[3 * hidden + j] = candidate[at];
            const auto row_at = static_cast<size_t>(row * hidden + j);
            record->h_prev[row_at] = h[static_cast<size_t>(at)];
            record->c_prev[row_at] = c_prev;
          }
        }
      });
      const RecurrentActivation& f = a_.activation(d, 0);
      compute_.activations.apply(f, a_.clip, input_gate, a_.input_forget ? span : 2 * span);
      compute_.activations.apply(a_.activation(d, 1), a_.clip, candidate, span);
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        for (int64_t j = 0; j < hidden; ++j) {
          const int64_t at = b * hidden + j;
          const C forget = a_.input_forget ? C(1) - input_gate[at] : forget_gate[at];
          const C c_new = forget * c[static_cast<size_t>(at)] + input_gate[at] * candidate[at];
          output_gate[at] += p_o[j] * c_new;
          if (record != nullptr) {
            record->pre[static_cast<size_t>(row * width + hidden + j)] = output_gate[at];
            record->c_new[static_cast<size_t>(row * hidden + j)] = c_new;
          }
          c[static_cast<size_t>(at)] = c_new;
          cell_out[static_cast<size_t>(at)] = c_new;
        }
      });
      compute_.activations.apply(f, a_.clip, output_gate, span);
      compute_.activations.apply(a_.activation(d, 2), std::nullopt, cell_out.data(), span);
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        for (int64_t j = 0; j < hidden; ++j) {
          const int64_t at = b * hidden + j;
          h[static_cast<size_t>(at)] = output_gate[at] * cell_out[static_cast<size_t>(at)];
        }
        std::copy_n(h.begin() + b * hidden, hidden, out.y.begin() + out.y_offset(s, t, d, b));
      });
    }
    std::copy(h.begin(), h.end(), out.yh.begin() + out.state_offset(s, d, 0));
    std::copy(c.begin(), c.end(), out.yc.begin() + out.state_offset(s, d, 0));
  }

  void backward(int64_t d, const Record& record, const RecurrentOutputs<C>& out_grads, RecurrentGrads<C>& grads) {
    const RecurrentSizes& s = data_.sizes;
    const int64_t hidden = s.hidden, width = 4 * hidden;
    const RecurrentActivation& f = a_.activation(d, 0);
    const RecurrentActivation& g = a_.activation(d, 1);
    const RecurrentActivation& h_act = a_.activation(d, 2);
    const C* r = data_.r.data() + d * width * hidden;
    const C* p_i = data_.p.data() + d * 3 * hidden;
    const C* p_o = p_i + hidden;
    const C* p_f = p_i + 2 * hidden;
    C* dp_i = grads.p.data() + d * 3 * hidden;
    C* dp_o = dp_i + hidden;
    C* dp_f = dp_i + 2 * hidden;
    std::vector<C> dpre(static_cast<size_t>(s.rows() * width), C(0));
    std::vector<C> carry_h(out_grads.yh.begin() + out_grads.state_offset(s, d, 0),
                           out_grads.yh.begin() + out_grads.state_offset(s, d + 1, 0));
    std::vector<C> carry_c(out_grads.yc.begin() + out_grads.state_offset(s, d, 0),
                           out_grads.yc.begin() + out_grads.state_offset(s, d + 1, 0));
    std::vector<C> step_grad(static_cast<size_t>(s.batch * width)), dh_prev(carry_h.size());
    // d of an activation's output to d of its unclipped input.
    auto through = [&](const RecurrentActivation& act, C grad, C pre) {
      return grad * act.derivative(a_.clipped(pre)) * a_.clip_derivative(pre);
    };
    for (int64_t step = data_.max_length - 1; step >= 0; --step) {
      std::fill(step_grad.begin(), step_grad.end(), C(0));
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        const C* dy = out_grads.y.data() + out_grads.y_offset(s, t, d, b);
        const C* pre = record.pre.data() + row * width;
        C* grad = dpre.data() + row * width;
        for (int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<size_t>(b * hidden + j), row_at = static_cast<size_t>(row * hidden + j);
          const C i_pre = pre[j], o_pre = pre[hidden + j], f_pre = pre[2 * hidden + j], c_pre = pre[3 * hidden + j];
          const C c_prev = record.c_prev[row_at], c_new = record.c_new[row_at];
          const C input_gate = f.value(a_.clipped(i_pre));
          const C forget_gate = a_.input_forget ? C(1) - input_gate : f.value(a_.clipped(f_pre));
          const C candidate = g.value(a_.clipped(c_pre));
          const C output_gate = f.value(a_.clipped(o_pre));
          const C dh = dy[j] + carry_h[at];
          const C do_pre = through(f, dh * h_act.value(c_new), o_pre);
          const C dc = carry_c[at] + dh * output_gate * h_act.derivative(c_new) + do_pre * p_o[j];
          C dinput = dc * candidate;
          const C dforget = dc * c_prev;
          C df_pre = 0;
          if (a_.input_forget) {
            dinput -= dforget;
          } else {
            df_pre = through(f, dforget, f_pre);
          }
          const C di_pre = through(f, dinput, i_pre);
          const C dc_pre = through(g, dc * input_gate, c_pre);
          carry_c[at] = dc * forget_gate + di_pre * p_i[j] + df_pre * p_f[j];
          grad[j] = di_pre;
          grad[hidden + j] = do_pre;
          grad[2 * hidden + j] = df_pre;
          grad[3 * hidden + j] = dc_pre;
        }
        std::copy_n(grad, width, step_grad.begin() + b * width);
      });
      compute_.matmul.run(false, false, s.batch, hidden, width, step_grad.data(), r, dh_prev.data());
      for (int64_t b = 0; b < s.batch; ++b) {
        if (data_.time(a_.reversed(d), step, b) < 0) continue;
        std::copy_n(dh_prev.begin() + b * hidden, hidden, carry_h.begin() + b * hidden);
      }
    }
    // Peepholes: summed over every row run (the others' gradients are zero).
    for (int64_t row = 0; row < s.rows(); ++row) {
      const C* grad = dpre.data() + row * width;
      for (int64_t j = 0; j < hidden; ++j) {
        const auto row_at = static_cast<size_t>(row * hidden + j);
        dp_i[j] += grad[j] * record.c_prev[row_at];
        dp_o[j] += grad[hidden + j] * record.c_new[row_at];
        dp_f[j] += grad[2 * hidden + j] * record.c_prev[row_at];
      }
    }
    std::copy(carry_h.begin(), carry_h.end(), grads.h0.begin() + out_grads.state_offset(s, d, 0));
    std::copy(carry_c.begin(), carry_c.end(), grads.c0.begin() + out_grads.state_offset(s, d, 0));
    input_weight_grads(compute_.matmul, data_, d, dpre, grads);
    recurrent_weight_grads(compute_.matmul, data_, d, 0, width, dpre, record.h_prev, grads);
  }

 private:
  const RecurrentAttributes& a_;
  const RecurrentData<C>& data_;
  RecurrentCompute<C>& compute_;
};

}  // namespace

void register_lstm_cpu_kernels(KernelRegistry& registry) { register_recurrent_cell_kernels<LstmCell>(registry); }

}  // namespace weir
