// Deep gradient compression (DGC; Lin et al., ICLR 2018, with PaddlePaddle's
// step and rampup conventions): each rank sends only the largest entries of
// its locally accumulated gradient, as (index, value) pairs, and keeps the
// rest for later steps.
//
//   DgcEncode(grad, param, u, v, step) -> encoded              u, v in place
//   DgcMomentum(param, velocity, dense_grad, gathered, encoded, lr, step)
//       -> param_out, velocity_out                             in place
//
// `step` is the 1-based training step (i64 or i32 scalar); dgc_step = step - 1.
// Before `rampup_begin_step` (dgc_step < rampup_begin_step, the dense phase)
// DgcEncode outputs nothing and DgcMomentum is exactly Momentum on
// dense_grad (the AllReduce average). From then on (the sparse phase):
//
//   DgcEncode: g = grad (scaled to L2 norm clip_norm when above it)
//                + weight_decay * param;
//              u = momentum * u + g, v += u       (nesterov: u = momentum * (u + g), v += u + g);
//              k = dgc_k(...); threshold = dgc_threshold(v, numel, k);
//              the entries with |v| > threshold, at most the k largest, are
//              sent as 2k floats: (int32 index bits, v) in ascending index
//              order, then (-1, 0) padding; u and v are zeroed where sent.
//   DgcMomentum: d = the sum of every rank's pairs (the AllGather of all
//              ranks' `encoded`, in rank order); param -= lr * d / N.
//              The velocity (= u) is not touched: the momentum lives in u.
//
// Arithmetic is per element in double with u and v stored as f32 (v adds
// the stored u). Only f32 tensors are supported. DgcEncode's output length
// depends on the step, so its shape is one symbolic dim, "<node>/2k".
//
//   Value* enc = g.add_node("DgcEncode", {grad, param, u, v, step}, 1,
//                           {{"sparsity", Attribute(std::vector<double>{0.75, 0.999})},
//                            {"rampup_begin_step", Attribute(int64_t{100})}})->output(0);
//   Value* all = <AllGather of enc>;
//   g.add_node("DgcMomentum", {param, u, averaged_grad, all, enc, lr, step}, 2,
//              {{"momentum", Attribute(0.9)}});
//
// What this does not do: the communication (AllReduce in the dense phase,
// AllGather in the sparse one) and the choice between them are the graph
// pass's; nothing here checks that all ranks used the same step.
#pragma once

#include <cstdint>
#include <vector>

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

// The number of entries DgcEncode keeps at 0-based step `dgc_step`: 0 in
// the dense phase (dgc_step < rampup_begin_step); otherwise
// max(1, floor(numel * (1 - s))), at most numel, where s is
// sparsity[min(size - 1, (dgc_step - rampup_begin_step) * size / rampup_step)].
// The encoded output has 2 * dgc_k(...) floats. Throws weir::Error
// (kInvalidArgument) for numel < 1, rampup_step < 1 or a sparsity list that
// is empty or has a value outside [0, 1).
int64_t dgc_k(int64_t numel, int64_t dgc_step, int64_t rampup_begin_step, int64_t rampup_step,
              const std::vector<double>& sparsity);

// DGC's sampled estimate of the k-th largest |v| (not an exact top-k):
// r = max(1, min(32, k / 2)), f = k / numel; v is cut into B = min(16, numel)
// contiguous blocks [b * numel / B, (b + 1) * numel / B); a block of length L
// samples s = min(L, max(r, ceil(r / f))) values |v| with stride max(1, L / s)
// from its start and contributes the min(r, s)-th largest sample; the
// threshold is the mean of the B contributions. Throws weir::Error
// (kInvalidArgument) unless 1 <= k <= numel.
double dgc_threshold(const float* v, int64_t numel, int64_t k);

// dgc_threshold's sampling for k of numel: r (the rank within a block's
// samples), the samples a block wants (max(r, ceil(r / f))) and the blocks
// B; the same throws.
struct DgcSampling {
  int64_t rank = 1;
  int64_t wanted = 1;
  int64_t blocks = 1;
};
DgcSampling dgc_sampling(int64_t numel, int64_t k);

// The attributes of a DgcEncode or DgcMomentum node (DgcMomentum has no
// clip_norm, rampup_step or sparsity: those keep their defaults).
struct DgcRule {
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double clip_norm = 0.0;
  int64_t rampup_begin_step = 0;
  int64_t rampup_step = 1;
  std::vector<double> sparsity;
  static DgcRule of(const Node& node);
};

// What every backend's kernels check before they touch memory, failing
// naming the input: DgcEncode's grad, param, u and v are f32 of one shape
// with 1 to 2^31 - 1 elements, in distinct buffers, and the rule's ramp is
// usable; DgcMomentum's inputs are f32, param, velocity and dense_grad of
// one shape, and the buffers the phase updates and reads are distinct.
void check_dgc_encode_inputs(const KernelContext& ctx, const DgcRule& rule);
void check_dgc_momentum_inputs(const KernelContext& ctx, bool sparse_phase);
// The ranks whose pairs DgcMomentum's `gathered` holds: numel(gathered) /
// numel(encoded); fails unless encoded is a positive even length that
// divides gathered's.
int64_t dgc_gathered_ranks(const KernelContext& ctx);

void register_dgc_schemas(OpRegistry& registry);
void register_dgc_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
