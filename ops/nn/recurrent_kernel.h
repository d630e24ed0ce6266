// The CPU kernels of RNN/GRU/LSTM and of their backward ops, over a cell
// class template (see recurrent.h for the cell's interface). Included by
// rnn.cc, gru.cc and lstm.cc only.
//
//   registry.add("LSTM", DeviceType::kCpu, types, [](const Node& n) { return std::make_unique<RecurrentKernel<LstmCell>>(n); });
#pragma once

#include <memory>

#include "ops/nn/recurrent.h"

namespace weir {

// Forward: loads the inputs, runs every direction, stores Y, Y_h (and Y_c).
// f64 computes in f64, the other types in f32.
template <template <typename> class Cell>
class RecurrentKernel final : public OpKernel {
 public:
  explicit RecurrentKernel(const Node& node) : attributes_(RecurrentAttributes::from_node(node, Cell<float>::kCell)) {}

  void compute(KernelContext& ctx) override {
    const RecurrentSizes sizes = recurrent_sizes(ctx, attributes_);
    if (ctx.input(0).dtype() == DType::kFloat64) {
      run<double>(ctx, sizes, compute64_);
    } else {
      run<float>(ctx, sizes, compute32_);
    }
  }

 private:
  template <typename C>
  void run(KernelContext& ctx, const RecurrentSizes& s, RecurrentCompute<C>& compute) {
    const RecurrentData<C> data = load_recurrent_inputs<C>(ctx, attributes_, s);
    RecurrentOutputs<C> out;
    out.y.assign(static_cast<size_t>(s.seq * s.directions * s.batch * s.hidden), C(0));
    out.yh.assign(static_cast<size_t>(s.directions * s.batch * s.hidden), C(0));
    out.yc.assign(out.yh.size(), C(0));
    Cell<C> cell(attributes_, data, compute);
    for (int64_t d = 0; d < s.directions; ++d) cell.forward(d, out, nullptr);
    store_outputs(ctx, attributes_, s, out);
  }

  RecurrentAttributes attributes_;
  RecurrentCompute<float> compute32_;
  RecurrentCompute<double> compute64_;
};

// Backward: reruns each direction's forward pass keeping what backward
// needs, then goes back through time; stores dX dW dR dB d_initial_h (LSTM:
// d_initial_c dP).
template <template <typename> class Cell>
class RecurrentGradKernel final : public OpKernel {
 public:
  explicit RecurrentGradKernel(const Node& node)
      : attributes_(RecurrentAttributes::from_node(node, Cell<float>::kCell)) {}

  void compute(KernelContext& ctx) override {
    const RecurrentSizes sizes = recurrent_sizes(ctx, attributes_);
    if (ctx.input(0).dtype() == DType::kFloat64) {
      run<double>(ctx, sizes, compute64_);
    } else {
      run<float>(ctx, sizes, compute32_);
    }
  }

 private:
  template <typename C>
  void run(KernelContext& ctx, const RecurrentSizes& s, RecurrentCompute<C>& compute) {
    const bool lstm = attributes_.cell == RecurrentCell::kLstm;
    const RecurrentData<C> data = load_recurrent_inputs<C>(ctx, attributes_, s);
    const RecurrentOutputs<C> out_grads = load_output_grads<C>(ctx, attributes_, s, lstm ? 8 : 6);
    RecurrentOutputs<C> out;
    out.y.assign(static_cast<size_t>(s.seq * s.directions * s.batch * s.hidden), C(0));
    out.yh.assign(static_cast<size_t>(s.directions * s.batch * s.hidden), C(0));
    out.yc.assign(out.yh.size(), C(0));
    RecurrentGrads<C> grads;
    grads.x.assign(data.x.size(), C(0));
    grads.w.assign(data.w.size(), C(0));
    grads.r.assign(data.r.size(), C(0));
    grads.b.assign(data.b.size(), C(0));
    grads.h0.assign(data.h0.size(), C(0));
    grads.c0.assign(data.c0.size(), C(0));
    grads.p.assign(data.p.size(), C(0));
    Cell<C> cell(attributes_, data, compute);
    for (int64_t d = 0; d < s.directions; ++d) {
      typename Cell<C>::Record record;
      cell.forward(d, out, &record);
      cell.backward(d, record, out_grads, grads);
    }
    store_input_grads(ctx, attributes_, s, grads);
  }

  RecurrentAttributes attributes_;
  RecurrentCompute<float> compute32_;
  RecurrentCompute<double> compute64_;
};

// Registers Op and OpGrad for f32, f64, f16 and bf16.
template <template <typename> class Cell>
void register_recurrent_cell_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  const std::string name = recurrent_op_name(Cell<float>::kCell);
  registry.add(name, DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<RecurrentKernel<Cell>>(node); });
  registry.add(name + "Grad", DeviceType::kCpu, types,
               [](const Node& node) { return std::make_unique<RecurrentGradKernel<Cell>>(node); });
}

}  // namespace weir
