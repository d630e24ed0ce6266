#include "ops/cuda/dgc_kernels.h"

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/dgc_device.h"
#include "ops/cuda/host_input.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/cuda/optimizer_device.h"
#include "ops/optimizer/dgc.h"
#include "ops/optimizer/scalar_input.h"

namespace weir {

namespace {

class DgcEncodeCudaKernel final : public OpKernel {
 public:
  explicit DgcEncodeCudaKernel(const Node& node) : rule_(DgcRule::of(node)) {}

  void compute(KernelContext& ctx) override {
    check_dgc_encode_inputs(ctx, rule_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    const char* names[] = {"grad", "param", "u", "v"};
    for (size_t i = 0; i < 4; ++i) cuda::require_on_device(ctx, ctx.input(i), names[i]);
    const int64_t dgc_step = step_value(ctx, cuda::host_input(ctx, 4, "step")) - 1;
    if (dgc_step < rule_.rampup_begin_step) {  // the dense phase: nothing to send, the state rests
      ctx.allocate_output(0, DType::kFloat32, {0});
      return;
    }
    const int64_t numel = ctx.input(0).num_elements();
    cuda::DgcSelection selection;
    selection.numel = numel;
    selection.k = dgc_k(numel, dgc_step, rule_.rampup_begin_step, rule_.rampup_step, rule_.sparsity);
    const DgcSampling sampling = dgc_sampling(numel, selection.k);
    selection.sample_rank = sampling.rank;
    selection.sample_wanted = sampling.wanted;
    selection.sample_blocks = sampling.blocks;
    cuda::DgcAccumulation accumulation;
    accumulation.momentum = rule_.momentum;
    accumulation.nesterov = rule_.nesterov;
    accumulation.weight_decay = rule_.weight_decay;
    accumulation.clip_norm = rule_.clip_norm;
    Tensor& encoded = ctx.allocate_output(0, DType::kFloat32, {2 * selection.k}, KernelContext::Fill::kUninitialized);
    const size_t bytes = cuda::dgc_encode_workspace_bytes(numel);
    const cuda::LaunchScratch workspace(ctx, {bytes});
    cuda::check_cuda_status(ctx,
                            cuda::launch_dgc_encode(ctx.input(0).data<float>(), ctx.input(1).data<float>(),
                                                    ctx.input(2).data<float>(), ctx.input(3).data<float>(),
                                                    encoded.data<float>(), accumulation, selection, workspace.part(0),
                                                    bytes, stream),
                            "encoding on the GPU");
    cuda::check_launch(ctx, "dgc_encode");
  }

 private:
  DgcRule rule_;
};

class DgcMomentumCudaKernel final : public OpKernel {
 public:
  explicit DgcMomentumCudaKernel(const Node& node) : rule_(DgcRule::of(node)) {}

  void compute(KernelContext& ctx) override {
    const bool sparse = step_value(ctx, cuda::host_input(ctx, 6, "step")) - 1 >= rule_.rampup_begin_step;
    check_dgc_momentum_inputs(ctx, sparse);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    // What the phase reads on the device (the other phase's inputs may be empty).
    cuda::require_on_device(ctx, ctx.input(0), "param");
    if (sparse) {
      cuda::require_on_device(ctx, ctx.input(3), "gathered");
    } else {
      cuda::require_on_device(ctx, ctx.input(1), "velocity");
      cuda::require_on_device(ctx, ctx.input(2), "dense_grad");
    }
    const cuda::DeviceScalar lr = cuda::device_scalar(ctx, 5, "lr");
    const Tensor& param = ctx.input(0);
    if (param.num_elements() > 0) sparse ? sparse_sgd(ctx, lr, stream) : dense_momentum(ctx, lr, stream);
    // Outputs alias the updated inputs.
    ctx.set_output(0, param);
    ctx.set_output(1, ctx.input(1));
  }

 private:
  // Exactly the CUDA Momentum update, as the CPU's dense phase is exactly Momentum.
  void dense_momentum(KernelContext& ctx, cuda::DeviceScalar lr, cudaStream_t stream) const {
    cuda::UpdateHyperparameters hyper;
    hyper.momentum = rule_.momentum;
    hyper.nesterov = rule_.nesterov;
    hyper.weight_decay = rule_.weight_decay;
    cuda::ParameterRefs refs;
    refs.param = ctx.input(0).data<float>();
    refs.grad = ctx.input(2).data<float>();
    refs.state0 = ctx.input(1).data<float>();
    refs.count = ctx.input(0).num_elements();
    cuda::launch_update(cuda::UpdateRule::kMomentum, hyper, &refs, 1, lr, cuda::DeviceScalar{}, nullptr, nullptr, stream);
    cuda::check_launch(ctx, "dgc dense momentum");
  }

  void sparse_sgd(KernelContext& ctx, cuda::DeviceScalar lr, cudaStream_t stream) const {
    const int64_t ranks = dgc_gathered_ranks(ctx);
    const Tensor& gathered = ctx.input(3);
    const int64_t pairs = gathered.num_elements() / 2, numel = ctx.input(0).num_elements();
    if (pairs > std::numeric_limits<int32_t>::max()) {
      ctx.fail("gathered " + gathered.type_string() + " holds more pairs than the GPU's sort takes (2^31 - 1)");
    }
    const size_t bytes = cuda::dgc_sparse_sgd_workspace_bytes(pairs, numel);
    const cuda::LaunchScratch workspace(ctx, {bytes});
    // The launch's own: its check reads it after the run.
    Tensor first_bad = Tensor::uninitialized(DType::kInt64, {1}, ctx.allocator());
    cuda::check_cuda_status(ctx,
                            cuda::launch_dgc_sparse_sgd(ctx.input(0).data<float>(), numel, gathered.data<float>(), pairs,
                                                        ranks, lr, first_bad.data<int64_t>(), workspace.part(0), bytes,
                                                        stream),
                            "applying the gathered pairs on the GPU");
    cuda::check_launch(ctx, "dgc sparse sgd");
    const Node& node = ctx.node();
    cuda::check_device_values(ctx, first_bad, [&node, gathered, numel](const std::vector<int64_t>& found) {
      if (found[0] < 0) return;
      // The pair's index bits, read as the i32 they are.
      const int64_t index = cuda::read_device_integers(gathered.device().index,
                                                       gathered.data<float>() + 2 * found[0], 1, false, node)[0];
      fail_node(node, "gathered pair " + std::to_string(found[0]) + " has index " + std::to_string(index) +
                          "; expected -1 (padding) or an index below " + std::to_string(numel));
    });
  }

  DgcRule rule_;
};

}  // namespace

void register_dgc_cuda_kernels(KernelRegistry& registry) {
  registry.add("DgcEncode", DeviceType::kCuda, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<DgcEncodeCudaKernel>(node); });
  registry.add("DgcMomentum", DeviceType::kCuda, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<DgcMomentumCudaKernel>(node); });
}

}  // namespace weir
