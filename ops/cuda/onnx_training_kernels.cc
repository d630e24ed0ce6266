#include "ops/cuda/onnx_training_kernels.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/onnx_training_device.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/onnx_training_ops.h"

namespace weir {

namespace {

using cuda::OnnxTrainingRule;

// The roles of one tensor's inputs after R and T (X and G first), as the
// CPU kernel names them in its messages.
std::vector<const char*> group_roles(OnnxTrainingRule rule) {
  switch (rule) {
    case OnnxTrainingRule::kAdagrad: return {"X", "G", "H"};
    case OnnxTrainingRule::kAdam: return {"X", "G", "V", "H"};
    case OnnxTrainingRule::kMomentum: return {"X", "G", "V"};
  }
  return {};
}

class OnnxTrainingCudaKernel final : public OpKernel {
 public:
  OnnxTrainingCudaKernel(const Node& node, OnnxTrainingRule rule) : rule_(rule) {
    // ONNX's defaults are float attributes: their f32 values.
    hyper_.norm_coefficient = float_attr(node, "norm_coefficient", 0.0);
    hyper_.norm_coefficient_post = float_attr(node, "norm_coefficient_post", 0.0);
    hyper_.epsilon = float_attr(node, "epsilon", static_cast<double>(1e-6f));
    hyper_.decay_factor = float_attr(node, "decay_factor", 0.0);
    hyper_.alpha = float_attr(node, "alpha", static_cast<double>(0.9f));
    hyper_.beta = float_attr(node, "beta", static_cast<double>(0.999f));
    hyper_.nesterov = node.has_attr("mode") && node.attr("mode").s() == "nesterov";
    if (rule == OnnxTrainingRule::kMomentum) {
      for (const char* required : {"alpha", "beta", "mode", "norm_coefficient"}) {
        if (!node.has_attr(required)) {
          throw Error(ErrorKind::kInvalidArgument, "Momentum '" + node.name() + "': attribute '" + required + "' is required")
              .with_node(node.name());
        }
      }
      const std::string mode = node.attr("mode").s();
      if (mode != "standard" && mode != "nesterov") {
        throw Error(ErrorKind::kInvalidArgument,
                    "Momentum '" + node.name() + "': mode must be \"standard\" or \"nesterov\", got \"" + mode + "\"")
            .with_node(node.name());
      }
    }
  }

  void compute(KernelContext& ctx) override {
    const std::vector<const char*> roles = group_roles(rule_);
    const size_t k = roles.size();
    const size_t rest = ctx.num_inputs() < 2 ? 0 : ctx.num_inputs() - 2;
    if (rest == 0 || rest % k != 0) {
      ctx.fail("has " + std::to_string(rest) + " inputs after R and T; expected a positive multiple of " + std::to_string(k));
    }
    const size_t n = rest / k;
    if (ctx.num_outputs() > (k - 1) * n) {
      ctx.fail("has " + std::to_string(ctx.num_outputs()) + " outputs; expected at most " + std::to_string((k - 1) * n));
    }
    const Tensor& r = ctx.input(0);
    if (r.num_elements() != 1 || (r.dtype() != DType::kFloat32 && r.dtype() != DType::kFloat64)) {
      ctx.fail("R must be an f32 or f64 scalar, got " + r.type_string());
    }
    const Tensor& t = ctx.input(1);
    if (t.num_elements() != 1 || t.dtype() != DType::kInt64) ctx.fail("T must be an i64 scalar, got " + t.type_string());
    const DType dtype = ctx.input(2).dtype();
    if (dtype != DType::kFloat32 && dtype != DType::kFloat64) ctx.fail("X_1 must be f32 or f64, got " + ctx.input(2).type_string());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, r, "R");
    cuda::require_on_device(ctx, t, "T");
    std::vector<cuda::OnnxTrainingRefs> refs(n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = ctx.input(2 + i);
      for (size_t role = 0; role < k; ++role) {
        const Tensor& other = ctx.input(2 + role * n + i);
        if (other.dtype() != dtype || other.sizes() != x.sizes()) {
          ctx.fail(std::string(roles[role]) + "_" + std::to_string(i + 1) + " is " + other.type_string() + "; expected " +
                   std::string(dtype_name(dtype)) + " of X_" + std::to_string(i + 1) + "'s shape " + x.shape().to_string());
        }
        cuda::require_on_device(ctx, other, roles[role]);
      }
      cuda::OnnxTrainingRefs& ref = refs[i];
      ref.x = x.raw_data();
      ref.grad = ctx.input(2 + n + i).raw_data();
      ref.state0 = ctx.input(2 + 2 * n + i).raw_data();
      ref.state1 = k == 4 ? ctx.input(2 + 3 * n + i).raw_data() : nullptr;
      ref.count = x.num_elements();
      // Output slot*n + i is the new X (slot 0) or state (1, 2); trailing ones may be absent.
      void** news[] = {&ref.x_new, &ref.state0_new, &ref.state1_new};
      for (size_t slot = 0; slot + 1 < k; ++slot) {
        const size_t o = slot * n + i;
        if (o < ctx.num_outputs()) {
          *news[slot] = ctx.allocate_output(o, dtype, x.sizes(), KernelContext::Fill::kUninitialized).raw_data();
        }
      }
    }
    const cuda::DeviceScalar rate{r.raw_data(), r.dtype() == DType::kFloat64 ? cuda::ScalarType::kFloat64 : cuda::ScalarType::kFloat32};
    cuda::launch_onnx_training_update(rule_, hyper_, dtype == DType::kFloat64, refs.data(), static_cast<int>(n), rate,
                                      t.data<int64_t>(), stream);
    cuda::check_launch(ctx, "onnx_training_update");
  }

 private:
  OnnxTrainingRule rule_;
  cuda::OnnxTrainingHyperparameters hyper_;
};

}  // namespace

void register_onnx_training_cuda_kernels(KernelRegistry& registry) {
  // Keyed by R's type, as on the CPU; the tensors' type (f32 or f64) may differ.
  const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat64};
  registry.add({kOnnxTrainingDomain, "Adagrad"}, DeviceType::kCuda, dtypes,
               [](const Node& node) { return std::make_unique<OnnxTrainingCudaKernel>(node, OnnxTrainingRule::kAdagrad); });
  registry.add({kOnnxTrainingDomain, "Adam"}, DeviceType::kCuda, dtypes,
               [](const Node& node) { return std::make_unique<OnnxTrainingCudaKernel>(node, OnnxTrainingRule::kAdam); });
  registry.add({kOnnxTrainingDomain, "Momentum"}, DeviceType::kCuda, dtypes,
               [](const Node& node) { return std::make_unique<OnnxTrainingCudaKernel>(node, OnnxTrainingRule::kMomentum); });
}

}  // namespace weir
