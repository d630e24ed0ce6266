// Graphs and helpers the runtime tests share: gradients through the autodiff
// pass, builders for an MLP and a ResNet-style conv net, and error_of.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"
#include "passes/autodiff/autodiff.h"
#include "tests/test_util.h"

namespace weir::testing {

inline Tensor random_tensor(std::vector<int64_t> sizes, uint32_t seed, float scale = 1.0f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return Tensor::from_vector(random_floats(static_cast<size_t>(n), seed, -scale, scale), sizes);
}

// Appends d(loss)/d(w) for each w in `wrt` with the autodiff pass; backward
// nodes run on the device of the forward node they come from.
inline std::vector<Value*> append_gradients(Graph& g, Value* loss, const std::vector<Value*>& wrt) {
  std::vector<Value*> grads = append_backward(g, loss, wrt, default_op_registry());
  infer_graph_types(g, default_op_registry());
  return grads;
}

struct MlpParams {
  Value* w1;
  Value* b1;
  Value* w2;
  Value* b2;
};

inline MlpParams add_mlp_params(Graph& g, int64_t in, int64_t hidden, int64_t classes) {
  auto param = [&](const std::string& name, std::vector<int64_t> sizes, uint32_t seed) {
    return g.add_persistent(name, {DType::kFloat32, Shape::from_sizes(sizes)}, PersistentRole::kParameter,
                            random_tensor(sizes, seed, 0.3f));
  };
  return {param("w1", {in, hidden}, 11), param("b1", {hidden}, 12), param("w2", {hidden, classes}, 13),
          param("b2", {classes}, 14)};
}

// logits = relu(x w1 + b1) w2 + b2; returns the mean softmax cross-entropy.
inline Value* add_mlp_loss(Graph& g, const MlpParams& p, Value* x, Value* labels, const std::string& prefix) {
  Value* h = g.add_node("MatMul", {x, p.w1}, 1, {}, prefix + "mm1")->output(0);
  h = g.add_node("Add", {h, p.b1}, 1, {}, prefix + "add1")->output(0);
  h = g.add_node("Relu", {h}, 1, {}, prefix + "relu")->output(0);
  Value* logits = g.add_node("MatMul", {h, p.w2}, 1, {}, prefix + "mm2")->output(0);
  logits = g.add_node("Add", {logits, p.b2}, 1, {}, prefix + "add2")->output(0);
  return g.add_node("SoftmaxCrossEntropyLoss", {logits, labels}, 1, {}, prefix + "loss")->output(0);
}

// A ResNet-style net: a stem conv, `blocks` residual blocks of
// conv-bn-relu-conv-bn + skip + relu, global average pool and a classifier.
inline std::unique_ptr<Graph> resnet_style_graph(int blocks, int64_t channels, int64_t size) {
  auto g = std::make_unique<Graph>("resnet_style");
  Value* x = g->add_input("x", {DType::kFloat32, Shape{1, 3, size, size}});
  uint32_t seed = 100;
  auto conv = [&](Value* in, int64_t cin, int64_t cout, const std::string& name) {
    Value* w = g->add_constant(name + "_w", random_tensor({cout, cin, 3, 3}, seed++, 0.2f));
    Value* b = g->add_constant(name + "_b", random_tensor({cout}, seed++, 0.1f));
    return g->add_node("Conv", {in, w, b}, 1,
                       {{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})},
                        {"kernel_shape", Attribute(std::vector<int64_t>{3, 3})}},
                       name)
        ->output(0);
  };
  auto bn = [&](Value* in, const std::string& name) {
    Value* scale = g->add_constant(name + "_s", random_tensor({channels}, seed++, 1.0f));
    Value* bias = g->add_constant(name + "_b", random_tensor({channels}, seed++, 0.1f));
    Value* mean = g->add_constant(name + "_m", random_tensor({channels}, seed++, 0.1f));
    Tensor var = random_tensor({channels}, seed++, 0.5f);
    for (int64_t i = 0; i < channels; ++i) var.data<float>()[i] = 1.0f + std::abs(var.data<float>()[i]);
    Value* v = g->add_constant(name + "_v", var);
    return g->add_node("BatchNormalization", {in, scale, bias, mean, v}, 1, {}, name)->output(0);
  };
  Value* h = g->add_node("Relu", {conv(x, 3, channels, "stem")}, 1, {}, "stem_relu")->output(0);
  for (int b = 0; b < blocks; ++b) {
    std::string n = "block" + std::to_string(b);
    Value* y = g->add_node("Relu", {bn(conv(h, channels, channels, n + "_conv1"), n + "_bn1")}, 1, {}, n + "_relu1")
                   ->output(0);
    y = bn(conv(y, channels, channels, n + "_conv2"), n + "_bn2");
    y = g->add_node("Add", {y, h}, 1, {}, n + "_add")->output(0);
    h = g->add_node("Relu", {y}, 1, {}, n + "_relu2")->output(0);
  }
  Value* pooled = g->add_node("GlobalAveragePool", {h}, 1, {}, "pool")->output(0);
  Value* flat = g->add_node("Flatten", {pooled}, 1, {}, "flatten")->output(0);
  Value* fc_w = g->add_constant("fc_w", random_tensor({channels, 10}, seed++, 0.2f));
  Value* logits = g->add_node("MatMul", {flat, fc_w}, 1, {}, "fc")->output(0);
  g->add_output(logits);
  infer_graph_types(*g, default_op_registry());
  return g;
}

}  // namespace weir::testing
