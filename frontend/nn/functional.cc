#include "frontend/nn/functional.h"

namespace weir::nn {

namespace {

GraphBuilder* builder_of(Var x) { return x.builder(); }

Var unary(const char* op_type, Var x, std::map<std::string, Attribute> attributes = {}) {
  GraphBuilder* b = builder_of(x);
  return b != nullptr ? b->op(op_type, {x}, std::move(attributes)) : Var();
}

Attribute ints_attr(std::vector<int64_t> values) { return Attribute(std::move(values)); }

Var pool(const char* op_type, Var x, int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode = false) {
  std::map<std::string, Attribute> attrs = {{"kernel_shape", ints_attr({kernel, kernel})},
                                            {"strides", ints_attr({stride, stride})},
                                            {"pads", ints_attr({padding, padding, padding, padding})}};
  if (ceil_mode) attrs["ceil_mode"] = Attribute(int64_t{1});
  return unary(op_type, x, attrs);
}

}  // namespace

Var matmul(Var a, Var b) {
  GraphBuilder* builder = a.builder() != nullptr ? a.builder() : b.builder();
  return builder != nullptr ? builder->op("MatMul", {a, b}) : Var();
}

Var relu(Var x) { return unary("Relu", x); }
Var gelu(Var x) { return unary("Gelu", x); }
Var tanh(Var x) { return unary("Tanh", x); }
Var sigmoid(Var x) { return unary("Sigmoid", x); }
Var relu6(Var x) {
  GraphBuilder* b = x.builder();
  if (b == nullptr) return {};
  return b->op("Clip", {x, b->scalar(0.0, x.type().dtype), b->scalar(6.0, x.type().dtype)});
}
Var softmax(Var x, int64_t axis) { return unary("Softmax", x, {{"axis", Attribute(axis)}}); }
Var log_softmax(Var x, int64_t axis) { return unary("LogSoftmax", x, {{"axis", Attribute(axis)}}); }

Var reshape(Var x, const std::vector<int64_t>& shape) {
  GraphBuilder* b = builder_of(x);
  return b != nullptr ? b->op("Reshape", {x, b->ints(shape)}) : Var();
}

Var flatten(Var x, int64_t axis) { return unary("Flatten", x, {{"axis", Attribute(axis)}}); }
Var transpose(Var x, const std::vector<int64_t>& perm) { return unary("Transpose", x, {{"perm", ints_attr(perm)}}); }

Var concat(const std::vector<Var>& xs, int64_t axis) {
  if (xs.empty() || xs.front().builder() == nullptr) return {};
  return xs.front().builder()->op("Concat", xs, {{"axis", Attribute(axis)}});
}

Var max_pool2d(Var x, int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode) {
  return pool("MaxPool", x, kernel, stride, padding, ceil_mode);
}
Var avg_pool2d(Var x, int64_t kernel, int64_t stride, int64_t padding) {
  return pool("AveragePool", x, kernel, stride, padding);
}
Var global_avg_pool(Var x) { return unary("GlobalAveragePool", x); }

Var reduce_mean(Var x, const std::vector<int64_t>& axes, bool keepdims) {
  return unary("ReduceMean", x, {{"axes", ints_attr(axes)}, {"keepdims", Attribute(int64_t{keepdims})}});
}
Var reduce_sum(Var x, const std::vector<int64_t>& axes, bool keepdims) {
  return unary("ReduceSum", x, {{"axes", ints_attr(axes)}, {"keepdims", Attribute(int64_t{keepdims})}});
}

Var cross_entropy(Var logits, Var labels) {
  GraphBuilder* b = builder_of(logits);
  return b != nullptr ? b->op("SoftmaxCrossEntropyLoss", {logits, labels}, {{"reduction", Attribute(std::string("mean"))}})
                      : Var();
}

Var mse(Var prediction, Var target) {
  GraphBuilder* b = builder_of(prediction);
  return b != nullptr ? b->op("MeanSquaredError", {prediction, target}) : Var();
}

Var sigmoid_cross_entropy(Var logits, Var labels) {
  // softplus(z) - y z = -(y log sigmoid(z) + (1 - y) log(1 - sigmoid(z))),
  // without exp overflowing for large |z|.
  if (!logits.valid() || !logits.shape().has_rank()) return {};
  std::vector<int64_t> axes(static_cast<size_t>(logits.shape().rank()));
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  return reduce_mean(unary("Softplus", logits) - labels * logits, axes, false);
}

Var dropout(Var x, double ratio, bool training) {
  GraphBuilder* b = builder_of(x);
  if (b == nullptr || !training || ratio == 0) return x;
  if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) {
    b->fail(ErrorKind::kUnsupported, "dropout: input '" + x.name() + "' must be f32 or f64, got " + x.type().to_string());
    return {};
  }
  Var ratio_value = b->scalar(ratio, x.dtype());
  Var on = b->constant(Tensor::scalar<bool>(true), "training");
  return b->op("Dropout", {x, ratio_value, on}, 2, {{"seed", Attribute(b->next_op_seed())}}).front();
}

}  // namespace weir::nn
