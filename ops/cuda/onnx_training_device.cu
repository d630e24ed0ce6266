#include "ops/cuda/onnx_training_device.h"

#include <vector>

#include "ops/cuda/multi_tensor.h"
#include "ops/cuda/rounded_arithmetic.cuh"

namespace weir::cuda {

namespace {

constexpr int kThreads = 256;

__device__ double read_rate(DeviceScalar r) {
  return r.type == ScalarType::kFloat64 ? *static_cast<const double*>(r.data)
                                        : static_cast<double>(*static_cast<const float*>(r.data));
}

// Lists: x, grad, state0, state1, x_new, state0_new, state1_new.
constexpr int kLists = 7;

template <typename T, OnnxTrainingRule kRule>
__global__ void onnx_training_update(TensorListBatch<kLists> batch, OnnxTrainingHyperparameters h, DeviceScalar r_in,
                                     const int64_t* t_in) {
  // The per-step scalars, as TrainingKernel::compute derives them.
  const double r = read_rate(r_in);
  const int64_t t = *t_in;
  double rate = r, gradient_weight = 1;
  if constexpr (kRule == OnnxTrainingRule::kAdagrad) rate = ddiv(r, dadd(1.0, dmul(static_cast<double>(t), h.decay_factor)));
  if constexpr (kRule == OnnxTrainingRule::kAdam) {
    if (t > 0) {
      const double power = static_cast<double>(t);
      rate = ddiv(dmul(r, __dsqrt_rn(dsub(1.0, pow(h.beta, power)))), dsub(1.0, pow(h.alpha, power)));
    }
  }
  if constexpr (kRule == OnnxTrainingRule::kMomentum) gradient_weight = t > 0 ? h.beta : 1.0;

  const int slot = batch.block_tensor[blockIdx.x];
  const int64_t begin = static_cast<int64_t>(batch.block_chunk[blockIdx.x]) * kListChunk;
  const int64_t end = begin + kListChunk < batch.count[slot] ? begin + kListChunk : batch.count[slot];
  const T* x = static_cast<const T*>(batch.data[0][slot]);
  const T* g = static_cast<const T*>(batch.data[1][slot]);
  const T* s0 = static_cast<const T*>(batch.data[2][slot]);
  const T* s1 = static_cast<const T*>(batch.data[3][slot]);
  T* x_new = static_cast<T*>(batch.data[4][slot]);
  T* s0_new = static_cast<T*>(batch.data[5][slot]);
  T* s1_new = static_cast<T*>(batch.data[6][slot]);
  for (int64_t e = begin + threadIdx.x; e < end; e += blockDim.x) {
    const double xv = static_cast<double>(x[e]);
    const double gr = dadd(dmul(h.norm_coefficient, xv), static_cast<double>(g[e]));  // G_regularized
    double xn = 0, a = 0, b = 0;
    if constexpr (kRule == OnnxTrainingRule::kAdagrad) {
      a = dadd(static_cast<double>(s0[e]), dmul(gr, gr));
      xn = dsub(xv, ddiv(dmul(rate, gr), dadd(__dsqrt_rn(a), h.epsilon)));
    } else if constexpr (kRule == OnnxTrainingRule::kAdam) {
      a = dadd(dmul(h.alpha, static_cast<double>(s0[e])), dmul(dsub(1.0, h.alpha), gr));
      b = dadd(dmul(h.beta, static_cast<double>(s1[e])), dmul(dmul(dsub(1.0, h.beta), gr), gr));
      xn = dmul(dsub(1.0, h.norm_coefficient_post), dsub(xv, ddiv(dmul(rate, a), dadd(__dsqrt_rn(b), h.epsilon))));
    } else {
      a = dadd(dmul(h.alpha, static_cast<double>(s0[e])), dmul(gradient_weight, gr));
      xn = dsub(xv, dmul(rate, h.nesterov ? dadd(gr, dmul(h.alpha, a)) : a));
    }
    if (x_new != nullptr) x_new[e] = static_cast<T>(xn);
    if (s0_new != nullptr) s0_new[e] = static_cast<T>(a);
    if (s1_new != nullptr) s1_new[e] = static_cast<T>(b);
  }
}

template <typename T, OnnxTrainingRule kRule>
void update_as(const OnnxTrainingHyperparameters& hyper, const std::vector<TensorRefs<kLists>>& refs, DeviceScalar r,
               const int64_t* t, cudaStream_t stream) {
  launch_in_batches<kLists>(refs.data(), static_cast<int>(refs.size()), [&](const TensorListBatch<kLists>& batch) {
    onnx_training_update<T, kRule><<<batch.blocks, kThreads, 0, stream>>>(batch, hyper, r, t);
  });
}

template <typename T>
void update_typed(OnnxTrainingRule rule, const OnnxTrainingHyperparameters& hyper, const std::vector<TensorRefs<kLists>>& refs,
                  DeviceScalar r, const int64_t* t, cudaStream_t stream) {
  switch (rule) {
    case OnnxTrainingRule::kAdagrad: return update_as<T, OnnxTrainingRule::kAdagrad>(hyper, refs, r, t, stream);
    case OnnxTrainingRule::kAdam: return update_as<T, OnnxTrainingRule::kAdam>(hyper, refs, r, t, stream);
    case OnnxTrainingRule::kMomentum: return update_as<T, OnnxTrainingRule::kMomentum>(hyper, refs, r, t, stream);
  }
}

}  // namespace

void launch_onnx_training_update(OnnxTrainingRule rule, const OnnxTrainingHyperparameters& hyper, bool f64,
                                 const OnnxTrainingRefs* tensors, int num_tensors, DeviceScalar r, const int64_t* t,
                                 cudaStream_t stream) {
  std::vector<TensorRefs<kLists>> refs(static_cast<size_t>(num_tensors));
  for (int i = 0; i < num_tensors; ++i) {
    const OnnxTrainingRefs& in = tensors[i];
    refs[static_cast<size_t>(i)] = {{const_cast<void*>(in.x), const_cast<void*>(in.grad), const_cast<void*>(in.state0),
                                     const_cast<void*>(in.state1), in.x_new, in.state0_new, in.state1_new},
                                    in.count};
  }
  if (f64) {
    update_typed<double>(rule, hyper, refs, r, t, stream);
  } else {
    update_typed<float>(rule, hyper, refs, r, t, stream);
  }
}

}  // namespace weir::cuda
