#include "ops/cuda/optimizer_device.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <vector>

#include "ops/cuda/deterministic_sum.cuh"
#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/device_scalar.cuh"
#include "ops/cuda/multi_tensor.h"
#include "ops/cuda/rounded_arithmetic.cuh"

namespace weir::cuda {

namespace {

constexpr int kThreads = 256;

// lr and step as the update reads them; false when nothing may change
// (skip is set, or an Adam-family step is below 1).
struct StepScalars {
  double lr = 0, step = 1;
};

__device__ bool update_applies(DeviceScalar step, const bool* skip, bool has_step) {
  if (skip != nullptr && *skip) return false;
  return !(has_step && read_scalar(step) < 1);
}

__device__ bool read_step_scalars(DeviceScalar lr, DeviceScalar step, const bool* skip, bool has_step, StepScalars& out) {
  if (!update_applies(step, skip, has_step)) return false;
  out.lr = read_scalar(lr);
  out.step = has_step ? read_scalar(step) : 1.0;
  return true;
}

// [begin, end) of the chunk this block updates, and its tensor's slot.
struct BlockChunk {
  int slot;
  int64_t begin, end;
};

template <int kLists>
__device__ BlockChunk block_chunk(const TensorListBatch<kLists>& batch) {
  BlockChunk chunk;
  chunk.slot = batch.block_tensor[blockIdx.x];
  chunk.begin = static_cast<int64_t>(batch.block_chunk[blockIdx.x]) * kListChunk;
  const int64_t end = chunk.begin + kListChunk;
  chunk.end = end < batch.count[chunk.slot] ? end : batch.count[chunk.slot];
  return chunk;
}

// SGD, Momentum and Adagrad: in f64 from the f32 values, as the CPU's
// UpdateKernel::apply writes them.
template <UpdateRule kRule>
__global__ void plain_update(TensorListBatch<4> batch, UpdateHyperparameters hyper, DeviceScalar lr_in, const bool* skip) {
  StepScalars scalars;
  if (!read_step_scalars(lr_in, DeviceScalar{}, skip, false, scalars)) return;
  const double lr = scalars.lr, wd = hyper.weight_decay, mu = hyper.momentum, eps = hyper.epsilon;
  const BlockChunk chunk = block_chunk(batch);
  float* p = static_cast<float*>(batch.data[0][chunk.slot]);
  const float* g = static_cast<const float*>(batch.data[1][chunk.slot]);
  float* s0 = static_cast<float*>(batch.data[2][chunk.slot]);
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const double param = p[i];
    const double grad = dadd(g[i], dmul(wd, param));
    if constexpr (kRule == UpdateRule::kSgd) {
      p[i] = fsub(p[i], static_cast<float>(dmul(lr, grad)));
    } else if constexpr (kRule == UpdateRule::kMomentum) {
      const double v = dadd(dmul(mu, s0[i]), grad);
      s0[i] = static_cast<float>(v);
      p[i] = fsub(p[i], static_cast<float>(dmul(lr, hyper.nesterov ? dadd(grad, dmul(mu, v)) : v)));
    } else {  // Adagrad
      const double sum = dadd(s0[i], dmul(grad, grad));
      s0[i] = static_cast<float>(sum);
      p[i] = fsub(p[i], static_cast<float>(ddiv(dmul(lr, grad), dadd(__dsqrt_rn(sum), eps))));
    }
  }
}

// Adam and AdamW: in f32 with the bias corrections folded into constants
// computed in f64, exactly the CPU's vectorized loop.
template <bool kL2>
__global__ void adam_update(TensorListBatch<4> batch, UpdateHyperparameters hyper, DeviceScalar lr_in,
                            DeviceScalar step_in, const bool* skip) {
  StepScalars scalars;
  if (!read_step_scalars(lr_in, step_in, skip, true, scalars)) return;
  const double lr = scalars.lr, b1 = hyper.beta1, b2 = hyper.beta2, wd = hyper.weight_decay;
  const double c1 = dsub(1.0, pow(b1, scalars.step)), c2 = dsub(1.0, pow(b2, scalars.step));
  const float tb1 = static_cast<float>(b1), tb2 = static_cast<float>(b2), one_b1 = static_cast<float>(dsub(1.0, b1)),
              one_b2 = static_cast<float>(dsub(1.0, b2)), teps = static_cast<float>(hyper.epsilon),
              twd = static_cast<float>(wd);
  const float step_size = static_cast<float>(ddiv(lr, c1)), inv_sqrt_c2 = static_cast<float>(ddiv(1.0, __dsqrt_rn(c2))),
              decoupled = static_cast<float>(kL2 ? 0.0 : dmul(lr, wd)), coupled = kL2 ? twd : 0.0f;
  const BlockChunk chunk = block_chunk(batch);
  float* p = static_cast<float*>(batch.data[0][chunk.slot]);
  const float* g = static_cast<const float*>(batch.data[1][chunk.slot]);
  float* mm = static_cast<float*>(batch.data[2][chunk.slot]);
  float* vv = static_cast<float*>(batch.data[3][chunk.slot]);
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const float param = p[i];
    const float grad = fadd(g[i], fmul(coupled, param));
    const float m = fadd(fmul(tb1, mm[i]), fmul(one_b1, grad));
    const float v = fadd(fmul(tb2, vv[i]), fmul(fmul(one_b2, grad), grad));
    mm[i] = m;
    vv[i] = v;
    const float denominator = fadd(fmul(__fsqrt_rn(v), inv_sqrt_c2), teps);
    p[i] = fsub(param, fadd(fdiv(fmul(step_size, m), denominator), fmul(decoupled, param)));
  }
}

// LAMB's per-element moments and update in f64 (the CPU's moment_update
// with l2 false), from the state as it was before this step.
struct LambElement {
  double m, v, update;
};

__device__ LambElement lamb_element(double param, double grad_in, double m_in, double v_in, const UpdateHyperparameters& h,
                                    double c1, double c2) {
  LambElement e;
  const double grad = dadd(grad_in, 0.0);
  e.m = dadd(dmul(h.beta1, m_in), dmul(dsub(1.0, h.beta1), grad));
  e.v = dadd(dmul(h.beta2, v_in), dmul(dmul(dsub(1.0, h.beta2), grad), grad));
  e.update = ddiv(ddiv(e.m, c1), dadd(__dsqrt_rn(ddiv(e.v, c2)), h.epsilon));
  e.update = dadd(e.update, dmul(h.weight_decay, param));
  return e;
}

struct LambCorrections {
  double c1, c2;
};

__device__ LambCorrections lamb_corrections(const UpdateHyperparameters& h, double step) {
  return {dsub(1.0, pow(h.beta1, step)), dsub(1.0, pow(h.beta2, step))};
}

// Stage 1: per chunk, the sums of param^2 and update^2 into
// partials[2 * global chunk + {0, 1}]. Nothing is written to the tensors.
__global__ void lamb_partial_norms(TensorListBatch<4> batch, UpdateHyperparameters hyper, DeviceScalar lr_in,
                                   DeviceScalar step_in, const bool* skip, double* partials) {
  StepScalars scalars;
  if (!read_step_scalars(lr_in, step_in, skip, true, scalars)) return;
  const LambCorrections c = lamb_corrections(hyper, scalars.step);
  const BlockChunk chunk = block_chunk(batch);
  const float* p = static_cast<const float*>(batch.data[0][chunk.slot]);
  const float* g = static_cast<const float*>(batch.data[1][chunk.slot]);
  const float* mm = static_cast<const float*>(batch.data[2][chunk.slot]);
  const float* vv = static_cast<const float*>(batch.data[3][chunk.slot]);
  double param_squares = 0, update_squares = 0;
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const LambElement e = lamb_element(p[i], g[i], mm[i], vv[i], hyper, c.c1, c.c2);
    param_squares = dadd(param_squares, dmul(p[i], p[i]));
    update_squares = dadd(update_squares, dmul(e.update, e.update));
  }
  param_squares = block_sum<kThreads>(param_squares);
  update_squares = block_sum<kThreads>(update_squares);
  if (threadIdx.x == 0) {
    const int64_t at = static_cast<int64_t>(batch.first_chunk[chunk.slot]) + batch.block_chunk[blockIdx.x];
    partials[2 * at] = param_squares;
    partials[2 * at + 1] = update_squares;
  }
}

// Which chunks of the partials each tensor owns, for the per-tensor stage.
struct ChunkRanges {
  int32_t first_chunk[kListMaxTensors];
  int32_t chunks[kListMaxTensors];
  int32_t tensor_index[kListMaxTensors];
  int tensors;
};

// Calls launch(ranges) for batches of tensors with at least one chunk.
template <typename Launch>
void for_each_chunk_range(const int64_t* counts, int num_tensors, Launch&& launch) {
  ChunkRanges ranges{};
  int32_t first = 0;
  for (int t = 0; t < num_tensors; ++t) {
    const auto chunks = static_cast<int32_t>(chunks_of(counts[t]));
    if (chunks == 0) continue;
    if (ranges.tensors == kListMaxTensors) {
      launch(ranges);
      ranges.tensors = 0;
    }
    ranges.first_chunk[ranges.tensors] = first;
    ranges.chunks[ranges.tensors] = chunks;
    ranges.tensor_index[ranges.tensors] = t;
    ++ranges.tensors;
    first += chunks;
  }
  if (ranges.tensors > 0) launch(ranges);
}

// Stage 2: a block per tensor sums its chunks' partials in a fixed order
// and stores the trust ratio ||param|| / ||update|| (1 when either is 0).
__global__ void lamb_trust_ratios(ChunkRanges ranges, DeviceScalar step_in, const bool* skip, const double* partials,
                                  double* trust) {
  if (!update_applies(step_in, skip, true)) return;
  const int t = blockIdx.x;
  double param_squares = 0, update_squares = 0;
  for (int32_t k = threadIdx.x; k < ranges.chunks[t]; k += blockDim.x) {
    const int64_t at = static_cast<int64_t>(ranges.first_chunk[t]) + k;
    param_squares = dadd(param_squares, partials[2 * at]);
    update_squares = dadd(update_squares, partials[2 * at + 1]);
  }
  param_squares = block_sum<kThreads>(param_squares);
  update_squares = block_sum<kThreads>(update_squares);
  if (threadIdx.x == 0) {
    const double param_norm = __dsqrt_rn(param_squares), update_norm = __dsqrt_rn(update_squares);
    trust[ranges.tensor_index[t]] = param_norm > 0 && update_norm > 0 ? ddiv(param_norm, update_norm) : 1.0;
  }
}

// Stage 3: the moments again from the old state (the same operations, so
// the same values), then the state and the parameter moved by lr * trust.
__global__ void lamb_apply(TensorListBatch<4> batch, UpdateHyperparameters hyper, DeviceScalar lr_in, DeviceScalar step_in,
                           const bool* skip, const double* trust) {
  StepScalars scalars;
  if (!read_step_scalars(lr_in, step_in, skip, true, scalars)) return;
  const LambCorrections c = lamb_corrections(hyper, scalars.step);
  const BlockChunk chunk = block_chunk(batch);
  const double rate = dmul(scalars.lr, trust[batch.tensor_index[chunk.slot]]);
  float* p = static_cast<float*>(batch.data[0][chunk.slot]);
  const float* g = static_cast<const float*>(batch.data[1][chunk.slot]);
  float* mm = static_cast<float*>(batch.data[2][chunk.slot]);
  float* vv = static_cast<float*>(batch.data[3][chunk.slot]);
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const LambElement e = lamb_element(p[i], g[i], mm[i], vv[i], hyper, c.c1, c.c2);
    mm[i] = static_cast<float>(e.m);
    vv[i] = static_cast<float>(e.v);
    p[i] = fsub(p[i], static_cast<float>(dmul(rate, e.update)));
  }
}

int total_chunks(const int64_t* counts, int num_tensors) {
  int64_t total = 0;
  for (int t = 0; t < num_tensors; ++t) total += chunks_of(counts[t]);
  return static_cast<int>(total);
}

std::vector<TensorRefs<4>> refs_of(const ParameterRefs* tensors, int num_tensors) {
  std::vector<TensorRefs<4>> refs(static_cast<size_t>(num_tensors));
  for (int t = 0; t < num_tensors; ++t) {
    refs[static_cast<size_t>(t)] = {{tensors[t].param, const_cast<float*>(tensors[t].grad), tensors[t].state0, tensors[t].state1},
                                    tensors[t].count};
  }
  return refs;
}

std::vector<int64_t> counts_of(const ParameterRefs* tensors, int num_tensors) {
  std::vector<int64_t> counts(static_cast<size_t>(num_tensors));
  for (int t = 0; t < num_tensors; ++t) counts[static_cast<size_t>(t)] = tensors[t].count;
  return counts;
}

// ClipByGlobalNorm stage 1: per chunk, the sum of squares.
template <typename T>
__global__ void clip_partial_squares(TensorListBatch<2> batch, double* partials) {
  const BlockChunk chunk = block_chunk(batch);
  const T* in = static_cast<const T*>(batch.data[0][chunk.slot]);
  double squares = 0;
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const double v = load(in[i]);
    squares = dadd(squares, dmul(v, v));
  }
  squares = block_sum<kThreads>(squares);
  if (threadIdx.x == 0) partials[static_cast<int64_t>(batch.first_chunk[chunk.slot]) + batch.block_chunk[blockIdx.x]] = squares;
}

// Stage 2 (one block): the norm, stored to `norm_out`, and the scale into
// partials[chunks].
template <typename T>
__global__ void clip_norm(double* partials, int chunks, double max_norm, T* norm_out) {
  double squares = 0;
  for (int k = threadIdx.x; k < chunks; k += blockDim.x) squares = dadd(squares, partials[k]);
  squares = block_sum<kThreads>(squares);
  if (threadIdx.x == 0) {
    const double norm = __dsqrt_rn(squares);
    partials[chunks] = norm > max_norm ? ddiv(max_norm, norm) : 1.0;
    *norm_out = store<T>(static_cast<float>(norm));
  }
}

// Stage 3: out = in * scale, in f64 as the CPU multiplies.
template <typename T>
__global__ void clip_scale(TensorListBatch<2> batch, const double* scale_at) {
  const double scale = *scale_at;
  const BlockChunk chunk = block_chunk(batch);
  const T* in = static_cast<const T*>(batch.data[0][chunk.slot]);
  T* out = static_cast<T*>(batch.data[1][chunk.slot]);
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    out[i] = store<T>(static_cast<float>(dmul(static_cast<double>(load(in[i])), scale)));
  }
}

template <typename T>
void clip_as(const void* const* grads, void* const* outs, const int64_t* counts, int num_tensors, double max_norm,
             void* norm_out, double* workspace, cudaStream_t stream) {
  std::vector<TensorRefs<2>> refs(static_cast<size_t>(num_tensors));
  for (int t = 0; t < num_tensors; ++t) refs[static_cast<size_t>(t)] = {{const_cast<void*>(grads[t]), outs[t]}, counts[t]};
  launch_in_batches<2>(refs.data(), num_tensors, [&](const TensorListBatch<2>& batch) {
    clip_partial_squares<T><<<batch.blocks, kThreads, 0, stream>>>(batch, workspace);
  });
  const int chunks = total_chunks(counts, num_tensors);
  clip_norm<T><<<1, kThreads, 0, stream>>>(workspace, chunks, max_norm, static_cast<T*>(norm_out));
  launch_in_batches<2>(refs.data(), num_tensors, [&](const TensorListBatch<2>& batch) {
    clip_scale<T><<<batch.blocks, kThreads, 0, stream>>>(batch, workspace + chunks);
  });
}

}  // namespace

size_t update_workspace_doubles(UpdateRule rule, const ParameterRefs* tensors, int num_tensors) {
  if (rule != UpdateRule::kLamb) return 0;
  std::vector<int64_t> counts = counts_of(tensors, num_tensors);
  return 2 * static_cast<size_t>(total_chunks(counts.data(), num_tensors)) + static_cast<size_t>(num_tensors);
}

void launch_update(UpdateRule rule, const UpdateHyperparameters& hyper, const ParameterRefs* tensors, int num_tensors,
                   DeviceScalar lr, DeviceScalar step, const bool* skip, double* workspace, cudaStream_t stream) {
  std::vector<TensorRefs<4>> refs = refs_of(tensors, num_tensors);
  auto each_batch = [&](auto&& launch) { launch_in_batches<4>(refs.data(), num_tensors, launch); };
  switch (rule) {
    case UpdateRule::kSgd:
      return each_batch([&](const TensorListBatch<4>& b) { plain_update<UpdateRule::kSgd><<<b.blocks, kThreads, 0, stream>>>(b, hyper, lr, skip); });
    case UpdateRule::kMomentum:
      return each_batch([&](const TensorListBatch<4>& b) { plain_update<UpdateRule::kMomentum><<<b.blocks, kThreads, 0, stream>>>(b, hyper, lr, skip); });
    case UpdateRule::kAdagrad:
      return each_batch([&](const TensorListBatch<4>& b) { plain_update<UpdateRule::kAdagrad><<<b.blocks, kThreads, 0, stream>>>(b, hyper, lr, skip); });
    case UpdateRule::kAdam:
      return each_batch([&](const TensorListBatch<4>& b) { adam_update<true><<<b.blocks, kThreads, 0, stream>>>(b, hyper, lr, step, skip); });
    case UpdateRule::kAdamW:
      return each_batch([&](const TensorListBatch<4>& b) { adam_update<false><<<b.blocks, kThreads, 0, stream>>>(b, hyper, lr, step, skip); });
    case UpdateRule::kLamb: {
      std::vector<int64_t> counts = counts_of(tensors, num_tensors);
      const int chunks = total_chunks(counts.data(), num_tensors);
      double* trust = workspace + 2 * static_cast<int64_t>(chunks);
      each_batch([&](const TensorListBatch<4>& b) {
        lamb_partial_norms<<<b.blocks, kThreads, 0, stream>>>(b, hyper, lr, step, skip, workspace);
      });
      for_each_chunk_range(counts.data(), num_tensors, [&](const ChunkRanges& ranges) {
        lamb_trust_ratios<<<ranges.tensors, kThreads, 0, stream>>>(ranges, step, skip, workspace, trust);
      });
      each_batch([&](const TensorListBatch<4>& b) { lamb_apply<<<b.blocks, kThreads, 0, stream>>>(b, hyper, lr, step, skip, trust); });
      return;
    }
  }
}

size_t clip_workspace_doubles(const int64_t* counts, int num_tensors) {
  return static_cast<size_t>(total_chunks(counts, num_tensors)) + 1;
}

void launch_clip_by_global_norm(ElementType type, const void* const* grads, void* const* outs, const int64_t* counts,
                                int num_tensors, double max_norm, void* norm_out, double* workspace,
                                cudaStream_t stream) {
  with_element_type(type, [&](auto t) {
    clip_as<decltype(t)>(grads, outs, counts, num_tensors, max_norm, norm_out, workspace, stream);
  });
}

}  // namespace weir::cuda
