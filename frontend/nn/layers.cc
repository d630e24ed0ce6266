#include "frontend/nn/layers.h"

#include <cmath>

#include "frontend/nn/functional.h"
#include "frontend/nn/init.h"

namespace weir::nn {

Linear::Linear(GraphBuilder& b, const std::string& name, int64_t in_features, int64_t out_features, bool has_bias) {
  auto scope = b.scope(name);
  if (in_features <= 0 || out_features <= 0) {
    b.fail(ErrorKind::kInvalidArgument, "Linear '" + b.scoped("") + "': features must be positive, got " +
                                            std::to_string(in_features) + " -> " + std::to_string(out_features));
    return;
  }
  weight = b.parameter("weight", init::kaiming_uniform({in_features, out_features}, in_features, b.rng()));
  if (has_bias) bias = b.parameter("bias", init::kaiming_uniform({out_features}, in_features, b.rng()));
}

Var Linear::operator()(Var x) const {
  Var y = matmul(x, weight);
  return bias.valid() ? y + bias : y;
}

Conv2d::Conv2d(GraphBuilder& b, const std::string& name, Conv2dOptions opts) : options(opts) {
  auto scope = b.scope(name);
  if (opts.in_channels <= 0 || opts.out_channels <= 0 || opts.kernel <= 0 || opts.stride <= 0 || opts.padding < 0 ||
      opts.groups <= 0 || opts.in_channels % opts.groups != 0 || opts.out_channels % opts.groups != 0) {
    b.fail(ErrorKind::kInvalidArgument, "Conv2d '" + b.scoped("") + "': channels, kernel, stride and groups must be "
                                                                     "positive, padding non-negative, and both channel "
                                                                     "counts divisible by groups");
    return;
  }
  const int64_t group_in = opts.in_channels / opts.groups;
  int64_t fan_in = group_in * opts.kernel * opts.kernel;
  weight = b.parameter("weight",
                       init::kaiming_uniform({opts.out_channels, group_in, opts.kernel, opts.kernel}, fan_in, b.rng()));
  if (opts.bias) bias = b.parameter("bias", init::kaiming_uniform({opts.out_channels}, fan_in, b.rng()));
}

Var Conv2d::operator()(Var x) const {
  GraphBuilder* b = x.builder();
  if (b == nullptr) return {};
  const int64_t k = options.kernel, s = options.stride, p = options.padding;
  std::map<std::string, Attribute> attrs = {{"kernel_shape", Attribute(std::vector<int64_t>{k, k})},
                                            {"strides", Attribute(std::vector<int64_t>{s, s})},
                                            {"pads", Attribute(std::vector<int64_t>{p, p, p, p})}};
  if (options.groups != 1) attrs["group"] = Attribute(options.groups);
  return bias.valid() ? b->op("Conv", {x, weight, bias}, attrs) : b->op("Conv", {x, weight}, attrs);
}

BatchNorm2d::BatchNorm2d(GraphBuilder& b, const std::string& name, int64_t channels, bool train, double m, double eps)
    : training(train), momentum(m), epsilon(eps) {
  auto scope = b.scope(name);
  scale = b.parameter("scale", init::ones({channels}));
  bias = b.parameter("bias", init::zeros({channels}));
  running_mean = b.state("running_mean", init::zeros({channels}));
  running_var = b.state("running_var", init::ones({channels}));
}

Var BatchNorm2d::operator()(Var x) const {
  GraphBuilder* b = x.builder();
  if (b == nullptr) return {};
  std::map<std::string, Attribute> attrs = {{"epsilon", Attribute(epsilon)}, {"momentum", Attribute(momentum)}};
  if (!training) return b->op("BatchNormalization", {x, scale, bias, running_mean, running_var}, attrs);
  attrs["training_mode"] = Attribute(int64_t{1});
  std::vector<Var> out = b->op("BatchNormalization", {x, scale, bias, running_mean, running_var}, 3, attrs);
  // The new running statistics go back into the persistent values. The
  // BatchNormalization node reads the old ones, so the copies wait for it.
  b->op("Assign", {running_mean, out[1]});
  b->op("Assign", {running_var, out[2]});
  return out[0];
}

LayerNorm::LayerNorm(GraphBuilder& b, const std::string& name, int64_t features, double eps) : epsilon(eps) {
  auto scope = b.scope(name);
  scale = b.parameter("scale", init::ones({features}));
  bias = b.parameter("bias", init::zeros({features}));
}

Var LayerNorm::operator()(Var x) const {
  GraphBuilder* b = x.builder();
  if (b == nullptr) return {};
  return b->op("LayerNormalization", {x, scale, bias}, {{"axis", Attribute(int64_t{-1})}, {"epsilon", Attribute(epsilon)}});
}

Var Dropout::operator()(Var x) const { return dropout(x, ratio, training); }

Embedding::Embedding(GraphBuilder& b, const std::string& name, int64_t num, int64_t dim) {
  auto scope = b.scope(name);
  weight = b.parameter("weight", init::normal({num, dim}, 0.0f, 1.0f, b.rng()));
}

Var Embedding::operator()(Var ids) const {
  GraphBuilder* b = ids.builder();
  return b != nullptr ? b->op("Gather", {weight, ids}, {{"axis", Attribute(int64_t{0})}}) : Var();
}

MultiHeadAttention::MultiHeadAttention(GraphBuilder& b, const std::string& name, int64_t hidden_size, int64_t num_heads,
                                       double dropout_ratio, bool training)
    : query(b, name + "/query", hidden_size, hidden_size),
      key(b, name + "/key", hidden_size, hidden_size),
      value(b, name + "/value", hidden_size, hidden_size),
      out(b, name + "/out", hidden_size, hidden_size),
      hidden(hidden_size),
      heads(num_heads),
      attention_dropout(dropout_ratio, training) {
  if (num_heads <= 0 || hidden_size % num_heads != 0) {
    b.fail(ErrorKind::kInvalidArgument, "MultiHeadAttention '" + b.scoped(name) + "': hidden size " +
                                            std::to_string(hidden_size) + " is not a multiple of " +
                                            std::to_string(num_heads) + " heads");
  }
}

Var MultiHeadAttention::operator()(Var x, Var mask) const {
  GraphBuilder* b = x.builder();
  if (b == nullptr) return {};
  const int64_t head_dim = hidden / heads;
  // [B, S, hidden] -> [B, heads, S, head_dim]
  auto split_heads = [&](Var t) { return transpose(reshape(t, {0, 0, heads, head_dim}), {0, 2, 1, 3}); };
  Var q = split_heads(query(x));
  Var k = split_heads(key(x));
  Var v = split_heads(value(x));
  Var scores = matmul(q, transpose(k, {0, 1, 3, 2})) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  if (mask.valid()) scores = scores + mask;
  Var weights = attention_dropout(softmax(scores, -1));
  Var context = transpose(matmul(weights, v), {0, 2, 1, 3});  // [B, S, heads, head_dim]
  return out(reshape(context, {0, 0, hidden}));
}

}  // namespace weir::nn
