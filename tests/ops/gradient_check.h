// Checks an op's gradient rule against central finite differences, in f64.
//
// For inputs x and a random output weighting w, the scalar f(x) = sum(op(x) * w)
// has gradient df/dx_i = (backward graph fed with dY = w)_i. The rule builds
// that backward graph; each of its input gradients is compared with
// (f(x + h e_j) - f(x - h e_j)) / 2h for every element j.
#pragma once

#include <gtest/gtest.h>

#include <cmath>

#include "core/verifier.h"
#include "tests/ops/op_test_util.h"

namespace weir::testing {

struct GradientCheckOptions {
  double step = 1e-6;
  double absolute_tolerance = 1e-7;
  double relative_tolerance = 1e-6;
  // Outputs the op node has (TopK has 2); only output 0 is differentiated.
  size_t num_outputs = 1;
};

inline double weighted_sum(const std::string& op_type, const std::vector<Tensor>& inputs,
                           const std::map<std::string, Attribute>& attributes, const std::vector<double>& weights,
                           size_t num_outputs) {
  std::vector<double> out = to_doubles(run_op(op_type, inputs, attributes, num_outputs)[0]);
  double sum = 0;
  for (size_t i = 0; i < out.size(); ++i) sum += out[i] * weights[i];
  return sum;
}

// Inputs of f64 are differentiated; others are constants. Checks every input
// the rule gives a gradient for,
// and that the rule gives one for each input listed in `differentiable`.
inline void check_gradient(const std::string& op_type, const std::vector<Tensor>& inputs,
                           const std::vector<size_t>& differentiable,
                           std::map<std::string, Attribute> attributes = {}, GradientCheckOptions options = {}) {
  // Forward graph with the op, then the backward nodes its rule emits.
  Graph g("gradient_check");
  std::vector<Value*> values;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    // Non-f64 inputs (shapes, indices) are constants: not differentiated, and
    // visible to shape inference.
    if (inputs[i].dtype() != DType::kFloat64) {
      values.push_back(g.add_constant(name, inputs[i]));
      continue;
    }
    values.push_back(g.add_input(name, {inputs[i].dtype(), inputs[i].shape()}));
    feeds[name] = inputs[i];
  }
  Node* node = g.add_node(op_type, values, options.num_outputs, attributes, "forward");
  infer_graph_types(g, default_op_registry());
  const Value* y = node->output(0);
  Value* dy = g.add_input("dY", y->type());
  const OpSchema& schema = default_op_registry().get(op_type);
  ASSERT_TRUE(schema.differentiable()) << op_type << " has no gradient rule";
  std::vector<Value*> output_grads(options.num_outputs, nullptr);
  output_grads[0] = dy;
  GradientContext ctx(g, *node, output_grads);
  schema.gradient_rule()(ctx);
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (ctx.input_grads()[i] == nullptr) continue;
    g.add_output(ctx.input_grads()[i]);
    checked.push_back(i);
  }
  ASSERT_EQ(checked, differentiable) << op_type << ": the rule gives gradients for other inputs than expected";
  infer_graph_types(g, default_op_registry());
  verify_graph(g, default_op_registry(), {.require_types = true});

  std::vector<double> weights = random_values(DType::kFloat64, y->shape().num_elements(), 4242, -1.0, 1.0);
  feeds["dY"] = make_tensor(DType::kFloat64, weights, y->shape().sizes());
  std::vector<Tensor> analytic = evaluate_graph(g, feeds);

  for (size_t k = 0; k < checked.size(); ++k) {
    size_t index = checked[k];
    ASSERT_EQ(analytic[k].sizes(), inputs[index].sizes()) << op_type << " gradient of input " << index;
    std::vector<double> grad = to_doubles(analytic[k]);
    for (int64_t j = 0; j < inputs[index].num_elements(); ++j) {
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[index] = inputs[index].clone();
      minus[index] = inputs[index].clone();
      double x = plus[index].data<double>()[j];
      double h = options.step * std::max(1.0, std::fabs(x));
      plus[index].data<double>()[j] = x + h;
      minus[index].data<double>()[j] = x - h;
      double numeric = (weighted_sum(op_type, plus, attributes, weights, options.num_outputs) -
                        weighted_sum(op_type, minus, attributes, weights, options.num_outputs)) / (2 * h);
      double allowed = options.absolute_tolerance + options.relative_tolerance * std::fabs(numeric);
      ASSERT_NEAR(grad[static_cast<size_t>(j)], numeric, allowed)
          << op_type << ": d/d input " << index << " element " << j << " at " << x;
    }
  }
}

}  // namespace weir::testing
