// GRU's cell (gates z r h in W and R), forward and back through time (see
// recurrent.h):
//   zt = f(Xt Wz^T + Ht-1 Rz^T + Wbz + Rbz)      rt likewise
//   ht = g(Xt Wh^T + (rt . Ht-1) Rh^T + Rbh + Wbh)        linear_before_reset = 0
//   ht = g(Xt Wh^T + rt . (Ht-1 Rh^T + Rbh) + Wbh)        linear_before_reset = 1
//   Ht = (1 - zt) . ht + zt . Ht-1
#include <algorithm>

#include "ops/nn/recurrent_kernel.h"

namespace weir {

namespace {

template <typename C>
class GruCell {
 public:
  static constexpr RecurrentCell kCell = RecurrentCell::kGru;

  // Per row (t, b) of the steps run: the three pre-activations before clip
  // [rows, 3H], the state the step started from, and the recurrent term of
  // h: rt . Ht-1 (linear_before_reset = 0) or Ht-1 Rh^T + Rbh (= 1).
  struct Record {
    std::vector<C> pre, h_prev, h_term;
  };

  GruCell(const RecurrentAttributes& attributes, const RecurrentData<C>& data, RecurrentCompute<C>& compute)
      : a_(attributes), data_(data), compute_(compute) {}

  void forward(int64_t d, RecurrentOutputs<C>& out, Record* record) {
    const RecurrentSizes& s = data_.sizes;
    const int64_t hidden = s.hidden, width = 3 * hidden, span = s.batch * hidden;
    const bool linear = a_.linear_before_reset;
    // With linear_before_reset, Rbh is inside the product with rt: not folded.
    const std::vector<C> xw = project_inputs(compute_.matmul, data_, d, linear ? 2 * hidden : width);
    const C* r = data_.r.data() + d * width * hidden;
    const C* rbh = data_.b.data() + d * 2 * width + width + 2 * hidden;
    std::vector<C> h(data_.h0.begin() + out.state_offset(s, d, 0), data_.h0.begin() + out.state_offset(s, d + 1, 0));
    // Ht-1 R^T: all three blocks with linear_before_reset, else z and r only.
    const int64_t hr_width = linear ? width : 2 * hidden;
    std::vector<C> hr(static_cast<size_t>(s.batch * hr_width));
    // One step's gates, gate by gate ([z r][batch, H], then h's); entries
    // past a length hold stale values and are not read.
    std::vector<C> update_reset(static_cast<size_t>(2 * span), C(0)), candidate(static_cast<size_t>(span), C(0));
    const C* update = update_reset.data();
    const C* reset = update + span;
    std::vector<C> reset_h(static_cast<size_t>(span)), reset_h_r(static_cast<size_t>(span));
    if (record != nullptr) {
      record->pre.assign(static_cast<size_t>(s.rows() * width), C(0));
      record->h_prev.assign(static_cast<size_t>(s.rows() * hidden), C(0));
      record->h_term.assign(record->h_prev.size(), C(0));
    }
    for (int64_t step = 0; step < data_.max_length; ++step) {
      compute_.matmul.run(false, true, s.batch, hr_width, hidden, h.data(), r, hr.data());
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        for (int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<size_t>(b * hidden + j);
          update_reset[at] = xw[static_cast<size_t>(row * width + j)] + hr[static_cast<size_t>(b * hr_width + j)];
          update_reset[static_cast<size_t>(span) + at] =
              xw[static_cast<size_t>(row * width + hidden + j)] + hr[static_cast<size_t>(b * hr_width + hidden + j)];
          if (record != nullptr) {
            record->pre[static_cast<size_t>(row * width + j)] = update_reset[at];
            record->pre[static_cast<size_t>(row * width + hidden + j)] = update_reset[static_cast<size_t>(span) + at];
            record->h_prev[static_cast<size_t>(row * hidden + j)] = h[at];
          }
        }
      });
      compute_.activations.apply(a_.activation(d, 0), a_.clip, update_reset.data(), 2 * span);
      if (!linear) {
        // (rt . Ht-1) Rh^T, zero rows past a length.
        std::fill(reset_h.begin(), reset_h.end(), C(0));
        for_each_batch_entry(s.batch, hidden, [&](int64_t b) {
          if (data_.time(a_.reversed(d), step, b) < 0) return;
          for (int64_t j = b * hidden; j < (b + 1) * hidden; ++j) reset_h[static_cast<size_t>(j)] = reset[j] * h[static_cast<size_t>(j)];
        });
        compute_.matmul.run(false, true, s.batch, hidden, hidden, reset_h.data(), r + 2 * hidden * hidden, reset_h_r.data());
      }
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        for (int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<size_t>(b * hidden + j);
          const C x_part = xw[static_cast<size_t>(row * width + 2 * hidden + j)];
          C term = reset_h[at];
          if (linear) {
            term = hr[static_cast<size_t>(b * hr_width + 2 * hidden + j)] + rbh[j];
            candidate[at] = x_part + reset[at] * term;
          } else {
            candidate[at] = x_part + reset_h_r[at];
          }
          if (record != nullptr) {
            record->pre[static_cast<size_t>(row * width + 2 * hidden + j)] = candidate[at];
            record->h_term[static_cast<size_t>(row * hidden + j)] = term;
          }
        }
      });
      compute_.activations.apply(a_.activation(d, 1), a_.clip, candidate.data(), span);
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        for (int64_t j = b * hidden; j < (b + 1) * hidden; ++j) {
          const auto at = static_cast<size_t>(j);
          h[at] = (C(1) - update[j]) * candidate[at] + update[j] * h[at];
        }
        std::copy_n(h.begin() + b * hidden, hidden, out.y.begin() + out.y_offset(s, t, d, b));
      });
    }
    std::copy(h.begin(), h.end(), out.yh.begin() + out.state_offset(s, d, 0));
  }

  void backward(int64_t d, const Record& record, const RecurrentOutputs<C>& out_grads, RecurrentGrads<C>& grads) {
    const RecurrentSizes& s = data_.sizes;
    const int64_t hidden = s.hidden, width = 3 * hidden;
    const bool linear = a_.linear_before_reset;
    const RecurrentActivation& f = a_.activation(d, 0);
    const RecurrentActivation& g = a_.activation(d, 1);
    const C* r = data_.r.data() + d * width * hidden;
    // d(pre-activations) [rows, 3H] as X W^T + Wb sees them; with
    // linear_before_reset, h's recurrent side sees dh_pre . rt instead.
    std::vector<C> dpre(static_cast<size_t>(s.rows() * width), C(0));
    std::vector<C> dh_term(linear ? static_cast<size_t>(s.rows() * hidden) : 0, C(0));
    std::vector<C> carry(out_grads.yh.begin() + out_grads.state_offset(s, d, 0),
                         out_grads.yh.begin() + out_grads.state_offset(s, d + 1, 0));
    const int64_t step_width = linear ? width : 2 * hidden;
    std::vector<C> step_grad(static_cast<size_t>(s.batch * step_width)), dh_direct(carry.size()), dh_prev(carry.size());
    std::vector<C> dcandidate_pre(carry.size()), d_reset_h(carry.size()), reset(carry.size()), dreset(carry.size());
    for (int64_t step = data_.max_length - 1; step >= 0; --step) {
      std::fill(step_grad.begin(), step_grad.end(), C(0));
      std::fill(dcandidate_pre.begin(), dcandidate_pre.end(), C(0));
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        const C* dy = out_grads.y.data() + out_grads.y_offset(s, t, d, b);
        const C* pre = record.pre.data() + row * width;
        for (int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<size_t>(b * hidden + j), row_at = static_cast<size_t>(row * hidden + j);
          const C dh = dy[j] + carry[at];
          const C z = f.value(a_.clipped(pre[j]));
          reset[at] = f.value(a_.clipped(pre[hidden + j]));
          const C candidate = g.value(a_.clipped(pre[2 * hidden + j]));
          const C h_prev = record.h_prev[row_at];
          const C dz_pre = dh * (h_prev - candidate) * f.derivative(a_.clipped(pre[j])) * a_.clip_derivative(pre[j]);
          const C dh_pre = dh * (C(1) - z) * g.derivative(a_.clipped(pre[2 * hidden + j])) * a_.clip_derivative(pre[2 * hidden + j]);
          dh_direct[at] = dh * z;
          dpre[static_cast<size_t>(row * width + j)] = dz_pre;
          dpre[static_cast<size_t>(row * width + 2 * hidden + j)] = dh_pre;
          step_grad[static_cast<size_t>(b * step_width + j)] = dz_pre;
          dcandidate_pre[at] = dh_pre;
          if (linear) {
            dreset[at] = dh_pre * record.h_term[row_at];
            dh_term[row_at] = dh_pre * reset[at];
            step_grad[static_cast<size_t>(b * step_width + 2 * hidden + j)] = dh_term[row_at];
          }
        }
      });
      if (!linear) {
        // d(rt . Ht-1) = dh_pre Rh: to rt and to Ht-1.
        compute_.matmul.run(false, false, s.batch, hidden, hidden, dcandidate_pre.data(), r + 2 * hidden * hidden, d_reset_h.data());
      }
      for_each_batch_entry(s.batch, width, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        const C* pre = record.pre.data() + row * width;
        for (int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<size_t>(b * hidden + j), row_at = static_cast<size_t>(row * hidden + j);
          if (!linear) {
            dreset[at] = d_reset_h[at] * record.h_prev[row_at];
            dh_direct[at] += d_reset_h[at] * reset[at];
          }
          const C dr_pre = dreset[at] * f.derivative(a_.clipped(pre[hidden + j])) * a_.clip_derivative(pre[hidden + j]);
          dpre[static_cast<size_t>(row * width + hidden + j)] = dr_pre;
          step_grad[static_cast<size_t>(b * step_width + hidden + j)] = dr_pre;
        }
      });
      compute_.matmul.run(false, false, s.batch, hidden, step_width, step_grad.data(), r, dh_prev.data());
      for (int64_t b = 0; b < s.batch; ++b) {
        if (data_.time(a_.reversed(d), step, b) < 0) continue;
        for (int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<size_t>(b * hidden + j);
          carry[at] = dh_direct[at] + dh_prev[at];
        }
      }
    }
    std::copy(carry.begin(), carry.end(), grads.h0.begin() + out_grads.state_offset(s, d, 0));
    input_weight_grads(compute_.matmul, data_, d, dpre, grads);
    const std::vector<C> dzr = copy_columns(dpre, s.rows(), width, 0, 2 * hidden);
    recurrent_weight_grads(compute_.matmul, data_, d, 0, 2 * hidden, dzr, record.h_prev, grads);
    if (linear) {
      recurrent_weight_grads(compute_.matmul, data_, d, 2 * hidden, hidden, dh_term, record.h_prev, grads);
    } else {
      const std::vector<C> dh_pre = copy_columns(dpre, s.rows(), width, 2 * hidden, hidden);
      recurrent_weight_grads(compute_.matmul, data_, d, 2 * hidden, hidden, dh_pre, record.h_term, grads);
    }
  }

 private:
  const RecurrentAttributes& a_;
  const RecurrentData<C>& data_;
  RecurrentCompute<C>& compute_;
};

}  // namespace

void register_gru_cpu_kernels(KernelRegistry& registry) { register_recurrent_cell_kernels<GruCell>(registry); }

}  // namespace weir
