#include "ops/cuda/onnx_training_kernels.h"

#include <string>
#include <vector>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/onnx_training_device.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/onnx_training_ops.h"

namespace weir {

namespace {

using cuda::OnnxTrainingRule;

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
    check_onnx_training_node(node, rule);
  }

  void compute(KernelContext& ctx) override {
    const std::vector<const char*> roles = onnx_training_roles(rule_);
    const size_t k = roles.size();
    const size_t n = onnx_training_tensor_count(ctx, rule_);
    const Tensor& r = ctx.input(0);
    if (r.num_elements() != 1 || (r.dtype() != DType::kFloat32 && r.dtype() != DType::kFloat64)) {
      ctx.fail("R must be an f32 or f64 scalar, got " + r.type_string());
    }
    const Tensor& t = ctx.input(1);
    if (t.num_elements() != 1 || t.dtype() != DType::kInt64) ctx.fail("T must be an i64 scalar, got " + t.type_string());
    const DType dtype = check_onnx_training_tensors(ctx, rule_, n);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, r, "R");
    cuda::require_on_device(ctx, t, "T");
    std::vector<cuda::OnnxTrainingRefs> refs(n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = ctx.input(2 + i);
      for (size_t role = 0; role < k; ++role) cuda::require_on_device(ctx, ctx.input(2 + role * n + i), roles[role]);
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
