// RNN's cell: Ht = f(clip(Xt W^T + Ht-1 R^T + Wb + Rb)), forward and back
// through time (see recurrent.h).
#include <algorithm>

#include "ops/nn/recurrent_kernel.h"

namespace weir {

namespace {

template <typename C>
class RnnCell {
 public:
  static constexpr RecurrentCell kCell = RecurrentCell::kRnn;

  // Per row (t, b) of the steps run: the pre-activation before clip, and
  // the state the step started from (zeros past a row's length).
  struct Record {
    std::vector<C> pre, h_prev;
  };

  RnnCell(const RecurrentAttributes& attributes, const RecurrentData<C>& data, RecurrentCompute<C>& compute)
      : a_(attributes), data_(data), compute_(compute) {}

  void forward(int64_t d, RecurrentOutputs<C>& out, Record* record) {
    const RecurrentSizes& s = data_.sizes;
    const int64_t hidden = s.hidden;
    const std::vector<C> xw = project_inputs(compute_.matmul, data_, d, hidden);
    const C* r = data_.r.data() + d * hidden * hidden;
    std::vector<C> h(data_.h0.begin() + out.state_offset(s, d, 0), data_.h0.begin() + out.state_offset(s, d + 1, 0));
    std::vector<C> hr(h.size()), pre(h.size(), C(0));
    if (record != nullptr) {
      record->pre.assign(static_cast<size_t>(s.rows() * hidden), C(0));
      record->h_prev.assign(record->pre.size(), C(0));
    }
    for (int64_t step = 0; step < data_.max_length; ++step) {
      compute_.matmul.run(false, true, s.batch, hidden, hidden, h.data(), r, hr.data());
      for_each_batch_entry(s.batch, hidden, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        for (int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<size_t>(b * hidden + j), row_at = static_cast<size_t>(row * hidden + j);
          pre[at] = xw[row_at] + hr[at];
          if (record != nullptr) {
            record->pre[row_at] = pre[at];
            record->h_prev[row_at] = h[at];
          }
        }
      });
      // Entries past their length hold stale values here; they are not read.
      compute_.activations.apply(a_.activation(d, 0), a_.clip, pre.data(), s.batch * hidden);
      for_each_batch_entry(s.batch, hidden, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        std::copy_n(pre.begin() + b * hidden, hidden, h.begin() + b * hidden);
        std::copy_n(pre.begin() + b * hidden, hidden, out.y.begin() + out.y_offset(s, t, d, b));
      });
    }
    std::copy(h.begin(), h.end(), out.yh.begin() + out.state_offset(s, d, 0));
  }

  void backward(int64_t d, const Record& record, const RecurrentOutputs<C>& out_grads, RecurrentGrads<C>& grads) {
    const RecurrentSizes& s = data_.sizes;
    const int64_t hidden = s.hidden;
    const RecurrentActivation& f = a_.activation(d, 0);
    const C* r = data_.r.data() + d * hidden * hidden;
    std::vector<C> dpre(static_cast<size_t>(s.rows() * hidden), C(0));
    // dH of the state each step produces: from Y_h, then from the later step.
    std::vector<C> carry(out_grads.yh.begin() + out_grads.state_offset(s, d, 0),
                         out_grads.yh.begin() + out_grads.state_offset(s, d + 1, 0));
    std::vector<C> step_dpre(carry.size()), dh_prev(carry.size());
    for (int64_t step = data_.max_length - 1; step >= 0; --step) {
      std::fill(step_dpre.begin(), step_dpre.end(), C(0));
      for_each_batch_entry(s.batch, hidden, [&](int64_t b) {
        const int64_t t = data_.time(a_.reversed(d), step, b);
        if (t < 0) return;
        const int64_t row = data_.row(t, b);
        const C* dy = out_grads.y.data() + out_grads.y_offset(s, t, d, b);
        for (int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<size_t>(b * hidden + j), row_at = static_cast<size_t>(row * hidden + j);
          const C pre = record.pre[row_at];
          const C grad = (dy[j] + carry[at]) * f.derivative(a_.clipped(pre)) * a_.clip_derivative(pre);
          dpre[row_at] = grad;
          step_dpre[at] = grad;
        }
      });
      compute_.matmul.run(false, false, s.batch, hidden, hidden, step_dpre.data(), r, dh_prev.data());
      for (int64_t b = 0; b < s.batch; ++b) {
        if (data_.time(a_.reversed(d), step, b) < 0) continue;
        std::copy_n(dh_prev.begin() + b * hidden, hidden, carry.begin() + b * hidden);
      }
    }
    std::copy(carry.begin(), carry.end(), grads.h0.begin() + out_grads.state_offset(s, d, 0));
    input_weight_grads(compute_.matmul, data_, d, dpre, grads);
    recurrent_weight_grads(compute_.matmul, data_, d, 0, hidden, dpre, record.h_prev, grads);
  }

 private:
  const RecurrentAttributes& a_;
  const RecurrentData<C>& data_;
  RecurrentCompute<C>& compute_;
};

}  // namespace

void register_rnn_cpu_kernels(KernelRegistry& registry) { register_recurrent_cell_kernels<RnnCell>(registry); }

}  // namespace weir
