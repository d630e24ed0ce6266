#include "ops/optimizer/onnx_training_ops.h"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {

using Rule = OnnxTrainingRule;

std::vector<const char*> group_roles(Rule rule) { return onnx_training_roles(rule); }

// "X..., G..., H..." for messages.
std::string layout(Rule rule) {
  std::string text;
  for (const char* role : group_roles(rule)) text += (text.empty() ? "" : ", ") + std::string(role) + "...";
  return text;
}

// The number of optimized tensors n, from `num_inputs` (R, T, then k groups of
// n); an error message in `why` when the count does not split so.
size_t tensor_count(Rule rule, size_t num_inputs, std::string& why) {
  const size_t k = group_roles(rule).size();
  const size_t rest = num_inputs < 2 ? 0 : num_inputs - 2;
  if (rest == 0 || rest % k != 0) {
    why = "has " + std::to_string(rest) + " inputs after R and T; expected a positive multiple of " +
          std::to_string(k) + " (" + layout(rule) + ", one of each per optimized tensor)";
    return 0;
  }
  return rest / k;
}

// Output `o` of a node optimizing n tensors is the new value of input
// 2 + role·n + i: X_i for o < n, then the state tensors (role 2, 3, ...).
size_t output_source(size_t o, size_t n) {
  size_t role = o / n, i = o % n;
  return 2 + (role == 0 ? 0 : role + 1) * n + i;
}

std::string expected_outputs(Rule rule, size_t n) {
  const size_t k = group_roles(rule).size();
  return "at most " + std::to_string((k - 1) * n) + " outputs (the new X..." +
         (k == 4 ? ", V..., H..." : rule == Rule::kAdagrad ? ", H..." : ", V...") + " of " + std::to_string(n) +
         " optimized tensors)";
}

void check_mode(const std::string& mode, const std::function<void(const std::string&)>& fail) {
  if (mode != "standard" && mode != "nesterov") fail("mode must be \"standard\" or \"nesterov\", got \"" + mode + "\"");
}

// tensor_count, and a message in `why` too when there are more outputs than
// the (k - 1) n new values.
size_t checked_tensor_count(Rule rule, size_t num_inputs, size_t num_outputs, std::string& why) {
  const size_t n = tensor_count(rule, num_inputs, why);
  if (!why.empty()) return n;
  const size_t k = group_roles(rule).size();
  if (num_outputs > (k - 1) * n) why = "has " + std::to_string(num_outputs) + " outputs; expected " + expected_outputs(rule, n);
  return n;
}

void infer_training(InferenceContext& ctx, Rule rule) {
  std::string why;
  const size_t n = checked_tensor_count(rule, ctx.num_inputs(), ctx.num_outputs(), why);
  if (!why.empty()) ctx.fail(why);
  const size_t k = group_roles(rule).size();
  if (rule == Rule::kMomentum) {
    check_mode(ctx.attr("mode").s(), [&](const std::string& message) { ctx.fail(message); });
  }
  check_scalar_input(ctx, 0, "R");
  check_scalar_input(ctx, 1, "T");
  const std::vector<const char*> roles = group_roles(rule);
  const TensorType* first = ctx.input_type(2);
  for (size_t i = 0; i < n; ++i) {
    const TensorType* x = ctx.input_type(2 + i);
    for (size_t role = 0; role < k; ++role) {
      const TensorType* t = ctx.input_type(2 + role * n + i);
      if (t == nullptr) continue;
      std::string name = std::string(roles[role]) + "_" + std::to_string(i + 1);
      if (first != nullptr && first->dtype != DType::kUndefined && t->dtype != DType::kUndefined &&
          t->dtype != first->dtype) {
        ctx.fail(name + " is " + t->to_string() + "; every optimized tensor, gradient and state must have X_1's type " +
                 std::string(dtype_name(first->dtype)));
      }
      if (x != nullptr && role > 0 && x->shape.is_static() && t->shape.is_static() && t->shape != x->shape) {
        ctx.fail(name + " has shape " + t->shape.to_string() + "; X_" + std::to_string(i + 1) + " has " +
                 x->shape.to_string());
      }
    }
  }
  for (size_t o = 0; o < ctx.num_outputs(); ++o) {
    if (const TensorType* source = ctx.input_type(output_source(o, n))) ctx.set_output_type(o, *source);
  }
}

OpSchema training_schema(const char* name, Rule rule, const char* doc) {
  OpSchema schema(name, kOnnxTrainingDomain);
  schema.input("R", "T1").input("T", "T2").input("inputs", "T3", Arity::kVariadic)
      .output("outputs", "T3", Arity::kVariadic)
      .type_constraint("T1", {DType::kFloat32, DType::kFloat64})
      .type_constraint("T2", {DType::kInt64})
      .type_constraint("T3", {DType::kFloat32, DType::kFloat64})
      .infer([rule](InferenceContext& ctx) { infer_training(ctx, rule); })
      .doc(doc);
  return schema;
}

class TrainingKernel final : public OpKernel {
 public:
  TrainingKernel(const Node& node, Rule rule)
      : rule_(rule),
        // ONNX's defaults are float attributes: their f32 values.
        norm_coefficient_(float_attr(node, "norm_coefficient", 0.0)),
        norm_coefficient_post_(float_attr(node, "norm_coefficient_post", 0.0)),
        epsilon_(float_attr(node, "epsilon", static_cast<double>(1e-6f))),
        decay_factor_(float_attr(node, "decay_factor", 0.0)),
        alpha_(float_attr(node, "alpha", static_cast<double>(0.9f))),
        beta_(float_attr(node, "beta", static_cast<double>(0.999f))),
        nesterov_(node.has_attr("mode") && node.attr("mode").s() == "nesterov") {
    check_onnx_training_node(node, rule);
  }

  void compute(KernelContext& ctx) override {
    const size_t n = onnx_training_tensor_count(ctx, rule_);
    const double r = learning_rate(ctx);
    const int64_t t = update_count(ctx);
    const DType dtype = check_onnx_training_tensors(ctx, rule_, n);
    const size_t k = group_roles(rule_).size();

    // Per-step scalars (the learning rate and the gradient's weight).
    double rate = r, gradient_weight = 1;
    switch (rule_) {
      case Rule::kAdagrad: rate = r / (1 + static_cast<double>(t) * decay_factor_); break;
      case Rule::kAdam:
        if (t > 0) {
          const double power = static_cast<double>(t);
          rate = r * std::sqrt(1 - std::pow(beta_, power)) / (1 - std::pow(alpha_, power));
        }
        break;
      case Rule::kMomentum: gradient_weight = t > 0 ? beta_ : 1.0; break;
    }

    for (size_t i = 0; i < n; ++i) {
      // Outputs the node has (trailing ones may be absent): nullptr otherwise.
      std::vector<Tensor*> out(k - 1, nullptr);
      for (size_t slot = 0; slot + 1 < k; ++slot) {
        size_t o = slot * n + i;
        if (o < ctx.num_outputs()) {
          out[slot] = &ctx.allocate_output(o, dtype, ctx.input(2 + i).sizes(), KernelContext::Fill::kUninitialized);
        }
      }
      if (dtype == DType::kFloat32) {
        update<float>(ctx, n, i, out, rate, gradient_weight);
      } else {
        update<double>(ctx, n, i, out, rate, gradient_weight);
      }
    }
  }

 private:
  double learning_rate(const KernelContext& ctx) const {
    const Tensor& r = ctx.input(0);
    if (r.num_elements() != 1) ctx.fail("R must be a scalar, got " + r.type_string());
    if (r.dtype() == DType::kFloat32) return static_cast<double>(r.data<float>()[0]);
    if (r.dtype() == DType::kFloat64) return r.data<double>()[0];
    ctx.fail("R must be f32 or f64, got " + r.type_string());
  }

  int64_t update_count(const KernelContext& ctx) const {
    const Tensor& t = ctx.input(1);
    if (t.num_elements() != 1 || t.dtype() != DType::kInt64) ctx.fail("T must be an i64 scalar, got " + t.type_string());
    return t.data<int64_t>()[0];
  }

  template <typename T>
  void update(KernelContext& ctx, size_t n, size_t i, const std::vector<Tensor*>& out, double rate,
              double gradient_weight) const {
    const T* x = ctx.input(2 + i).data<T>();
    const T* g = ctx.input(2 + n + i).data<T>();
    const T* s0 = ctx.input(2 + 2 * n + i).data<T>();
    const T* s1 = rule_ == Rule::kAdam ? ctx.input(2 + 3 * n + i).data<T>() : nullptr;
    T* x_new = out[0] != nullptr ? out[0]->data<T>() : nullptr;
    T* s0_new = out.size() > 1 && out[1] != nullptr ? out[1]->data<T>() : nullptr;
    T* s1_new = out.size() > 2 && out[2] != nullptr ? out[2]->data<T>() : nullptr;
    const int64_t count = ctx.input(2 + i).num_elements();
    const double norm = norm_coefficient_, post = norm_coefficient_post_, eps = epsilon_, alpha = alpha_, beta = beta_;
    const Rule rule = rule_;
    const bool nesterov = nesterov_;
    parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        const double xv = static_cast<double>(x[e]);
        const double gr = norm * xv + static_cast<double>(g[e]);  // G_regularized
        double xn = 0, a = 0, b = 0;
        switch (rule) {
          case Rule::kAdagrad:
            a = static_cast<double>(s0[e]) + gr * gr;
            xn = xv - rate * gr / (std::sqrt(a) + eps);
            break;
          case Rule::kAdam:
            a = alpha * static_cast<double>(s0[e]) + (1 - alpha) * gr;
            b = beta * static_cast<double>(s1[e]) + (1 - beta) * gr * gr;
            xn = (1 - post) * (xv - rate * a / (std::sqrt(b) + eps));
            break;
          case Rule::kMomentum:
            a = alpha * static_cast<double>(s0[e]) + gradient_weight * gr;
            xn = xv - rate * (nesterov ? gr + alpha * a : a);
            break;
        }
        if (x_new != nullptr) x_new[e] = static_cast<T>(xn);
        if (s0_new != nullptr) s0_new[e] = static_cast<T>(a);
        if (s1_new != nullptr) s1_new[e] = static_cast<T>(b);
      }
    });
  }

  Rule rule_;
  double norm_coefficient_, norm_coefficient_post_, epsilon_, decay_factor_, alpha_, beta_;
  bool nesterov_;
};

}  // namespace

void register_onnx_training_schemas(OpRegistry& registry) {
  registry.add(training_schema(
                   "Adagrad", Rule::kAdagrad,
                   "ONNX training preview: one ADAGRAD step of n tensors; inputs R, T, X..., G..., H...; outputs X_new..., "
                   "H_new...; r = R / (1 + T decay_factor), g = norm_coefficient X + G, H_new = H + g^2, "
                   "X_new = X - r g / (sqrt(H_new) + epsilon)")
                   .attr("decay_factor", AttrType::kFloat, Attribute(0.0f))
                   .attr("epsilon", AttrType::kFloat, Attribute(1e-6f))
                   .attr("norm_coefficient", AttrType::kFloat, Attribute(0.0f)));
  registry.add(training_schema(
                   "Adam", Rule::kAdam,
                   "ONNX training preview: one Adam step of n tensors; inputs R, T, X..., G..., V..., H...; outputs "
                   "X_new..., V_new..., H_new...; g = norm_coefficient X + G, V_new = alpha V + (1 - alpha) g, "
                   "H_new = beta H + (1 - beta) g^2, R_adj = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R, "
                   "X_new = (1 - norm_coefficient_post) (X - R_adj V_new / (sqrt(H_new) + epsilon))")
                   .attr("alpha", AttrType::kFloat, Attribute(0.9f))
                   .attr("beta", AttrType::kFloat, Attribute(0.999f))
                   .attr("epsilon", AttrType::kFloat, Attribute(1e-6f))
                   .attr("norm_coefficient", AttrType::kFloat, Attribute(0.0f))
                   .attr("norm_coefficient_post", AttrType::kFloat, Attribute(0.0f)));
  registry.add(training_schema(
                   "Momentum", Rule::kMomentum,
                   "ONNX training preview: one SG-with-momentum step of n tensors; inputs R, T, X..., G..., V...; "
                   "outputs X_new..., V_new...; g = norm_coefficient X + G, V_new = alpha V + (T > 0 ? beta : 1) g, "
                   "X_new = X - R V_new (standard) or X - R (g + alpha V_new) (nesterov)")
                   .required_attr("alpha", AttrType::kFloat)
                   .required_attr("beta", AttrType::kFloat)
                   .required_attr("mode", AttrType::kString)
                   .required_attr("norm_coefficient", AttrType::kFloat));
}

std::vector<const char*> onnx_training_roles(OnnxTrainingRule rule) {
  switch (rule) {
    case OnnxTrainingRule::kAdagrad: return {"X", "G", "H"};
    case OnnxTrainingRule::kAdam: return {"X", "G", "V", "H"};
    case OnnxTrainingRule::kMomentum: return {"X", "G", "V"};
  }
  return {};
}

void check_onnx_training_node(const Node& node, OnnxTrainingRule rule) {
  if (rule != OnnxTrainingRule::kMomentum) return;
  for (const char* required : {"alpha", "beta", "mode", "norm_coefficient"}) {
    if (!node.has_attr(required)) {
      throw Error(ErrorKind::kInvalidArgument, "Momentum '" + node.name() + "': attribute '" + required +
                                                   "' is required").with_node(node.name());
    }
  }
  check_mode(node.attr("mode").s(), [&](const std::string& message) {
    throw Error(ErrorKind::kInvalidArgument, "Momentum '" + node.name() + "': " + message).with_node(node.name());
  });
}

size_t onnx_training_tensor_count(const KernelContext& ctx, OnnxTrainingRule rule) {
  std::string why;
  const size_t n = checked_tensor_count(rule, ctx.num_inputs(), ctx.num_outputs(), why);
  if (!why.empty()) ctx.fail(why);
  return n;
}

DType check_onnx_training_tensors(const KernelContext& ctx, OnnxTrainingRule rule, size_t n) {
  const DType dtype = ctx.input(2).dtype();
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    ctx.fail("X_1 must be f32 or f64, got " + ctx.input(2).type_string());
  }
  const std::vector<const char*> roles = group_roles(rule);
  const size_t k = roles.size();
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    for (size_t role = 0; role < k; ++role) {
      const Tensor& other = ctx.input(2 + role * n + i);
      if (other.dtype() != dtype || other.sizes() != x.sizes()) {
        ctx.fail(std::string(roles[role]) + "_" + std::to_string(i + 1) + " is " + other.type_string() +
                 "; expected " + std::string(dtype_name(dtype)) + " of X_" + std::to_string(i + 1) + "'s shape " +
                 x.shape().to_string());
      }
    }
  }
  return dtype;
}

void register_onnx_training_cpu_kernels(KernelRegistry& registry) {
  // The kernel is keyed by R's type; the tensors' type (f32 or f64) may differ.
  const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat64};
  registry.add({kOnnxTrainingDomain, "Adagrad"}, DeviceType::kCpu, dtypes,
               [](const Node& node) { return std::make_unique<TrainingKernel>(node, Rule::kAdagrad); });
  registry.add({kOnnxTrainingDomain, "Adam"}, DeviceType::kCpu, dtypes,
               [](const Node& node) { return std::make_unique<TrainingKernel>(node, Rule::kAdam); });
  registry.add({kOnnxTrainingDomain, "Momentum"}, DeviceType::kCpu, dtypes,
               [](const Node& node) { return std::make_unique<TrainingKernel>(node, Rule::kMomentum); });
}

}  // namespace weir
