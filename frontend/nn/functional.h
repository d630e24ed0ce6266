// Stateless layers: functions from Vars to a Var, one node (or a few) each.
//
//   weir::Var h = weir::nn::relu(weir::nn::matmul(x, w));
//   weir::Var p = weir::nn::max_pool2d(h, /*kernel=*/2, /*stride=*/2);
//   weir::Var loss = weir::nn::cross_entropy(logits, labels);   // mean over the batch
//
// Errors (a wrong shape, say) are kept by the builder, like any other call.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/builder/graph_builder.h"

namespace weir::nn {

Var matmul(Var a, Var b);
Var relu(Var x);
Var gelu(Var x);
Var tanh(Var x);
Var sigmoid(Var x);
Var relu6(Var x);  // min(max(x, 0), 6): Clip with constant bounds
Var softmax(Var x, int64_t axis = -1);
Var log_softmax(Var x, int64_t axis = -1);

Var reshape(Var x, const std::vector<int64_t>& shape);  // ONNX rules: 0 copies a dim, -1 is inferred
Var flatten(Var x, int64_t axis = 1);                   // to 2-D: [prod(dims < axis), prod(rest)]
Var transpose(Var x, const std::vector<int64_t>& perm);
Var concat(const std::vector<Var>& xs, int64_t axis);

// ceil_mode: a last, partial window where the stride leaves one (SqueezeNet's pools).
Var max_pool2d(Var x, int64_t kernel, int64_t stride, int64_t padding = 0, bool ceil_mode = false);
Var avg_pool2d(Var x, int64_t kernel, int64_t stride, int64_t padding = 0);
Var global_avg_pool(Var x);  // [N,C,H,W] -> [N,C,1,1]

Var reduce_mean(Var x, const std::vector<int64_t>& axes, bool keepdims = false);
Var reduce_sum(Var x, const std::vector<int64_t>& axes, bool keepdims = false);

// Mean softmax cross-entropy of logits [N, C] against int64 class labels [N].
Var cross_entropy(Var logits, Var labels);
// Mean binary cross-entropy of logits against labels in [0, 1] (the same
// shape; f32): softplus(z) - y z, averaged over every element.
Var sigmoid_cross_entropy(Var logits, Var labels);
// Mean squared error.
Var mse(Var prediction, Var target);
// Inverted dropout in training (a seeded mask, scaled by 1/(1-ratio));
// identity otherwise.
Var dropout(Var x, double ratio, bool training);

}  // namespace weir::nn
