// Layers with parameters. Each creates its parameters (seeded from the
// builder's generator, in creation order) when constructed, named
// "<scope>/<layer name>/weight", and adds nodes when called.
//
//   weir::GraphBuilder b("lenet", 42);
//   weir::nn::Conv2d conv1(b, "conv1", {.in_channels = 1, .out_channels = 32, .kernel = 5, .padding = 2});
//   weir::nn::Linear fc(b, "fc", 3136, 10);
//   weir::Var logits = fc(weir::nn::flatten(weir::nn::relu(conv1(x))));
//
// `training` (BatchNorm2d, Dropout) picks the training-graph form: batch
// statistics with running statistics updated in place, a random mask.
#pragma once

#include <cstdint>
#include <string>

#include "frontend/builder/graph_builder.h"

namespace weir::nn {

// y = x W + b, W: [in, out]. Weights and bias U(±1/sqrt(in)).
class Linear {
 public:
  Linear(GraphBuilder& b, const std::string& name, int64_t in_features, int64_t out_features, bool bias = true);
  Var operator()(Var x) const;
  Var weight, bias;
};

struct Conv2dOptions {
  int64_t in_channels = 1;
  int64_t out_channels = 1;
  int64_t kernel = 3;
  int64_t stride = 1;
  int64_t padding = 0;
  bool bias = true;
  int64_t groups = 1;  // in and out channels split into this many groups (in_channels: depthwise)
};

// NCHW convolution, W: [out, in / groups, k, k]. Kaiming-uniform like Linear.
class Conv2d {
 public:
  Conv2d(GraphBuilder& b, const std::string& name, Conv2dOptions options);
  Var operator()(Var x) const;
  Var weight, bias;
  Conv2dOptions options;
};

// Per-channel normalization of NCHW input. Training: batch statistics, and
// running = running * momentum + batch * (1 - momentum) written back in
// place; inference: the running statistics.
class BatchNorm2d {
 public:
  BatchNorm2d(GraphBuilder& b, const std::string& name, int64_t channels, bool training, double momentum = 0.9,
              double epsilon = 1e-5);
  Var operator()(Var x) const;
  Var scale, bias, running_mean, running_var;
  bool training;
  double momentum, epsilon;
};

// Normalization over the last axis, with learned scale and bias.
class LayerNorm {
 public:
  LayerNorm(GraphBuilder& b, const std::string& name, int64_t features, double epsilon = 1e-5);
  Var operator()(Var x) const;
  Var scale, bias;
  double epsilon;
};

class Dropout {
 public:
  Dropout(double drop_ratio, bool is_training) : ratio(drop_ratio), training(is_training) {}
  Var operator()(Var x) const;
  double ratio;
  bool training;
};

// Rows of a [num, dim] table, N(0, 1)-initialized, looked up by int64 ids.
class Embedding {
 public:
  Embedding(GraphBuilder& b, const std::string& name, int64_t num, int64_t dim);
  Var operator()(Var ids) const;
  Var weight;
};

// Scaled dot-product multi-head self-attention on [batch, seq, hidden]
// (Vaswani et al. 2017): Q, K, V projections, softmax(Q Kᵀ / sqrt(d)) V per
// head, output projection. `mask`, when given, is added to the scores
// (0 to keep, a large negative number to drop), broadcast to [batch, heads, seq, seq].
class MultiHeadAttention {
 public:
  MultiHeadAttention(GraphBuilder& b, const std::string& name, int64_t hidden, int64_t heads,
                     double dropout = 0.0, bool training = false);
  Var operator()(Var x, Var mask = Var()) const;
  Linear query, key, value, out;
  int64_t hidden, heads;
  Dropout attention_dropout;
};

}  // namespace weir::nn
