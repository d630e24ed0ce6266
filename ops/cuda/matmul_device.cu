#include "ops/cuda/matmul_device.h"

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

namespace {

// FusedActivation::apply<float>, written the same way (Clip's comparisons
// included, so a NaN passes through as on the CPU); Sigmoid takes two
// branches so expf never overflows, as the elementwise Sigmoid does.
__device__ inline float activate(float x, const MatmulEpilogue& e) {
  switch (e.activation) {
    case MatmulActivation::kNone: return x;
    case MatmulActivation::kRelu: return x > 0.0f ? x : 0.0f;
    case MatmulActivation::kLeakyRelu: return x >= 0.0f ? x : e.alpha * x;
    case MatmulActivation::kClip: {
      const float low = x < e.alpha ? e.alpha : x;  // std::max(x, alpha)
      return e.beta < low ? e.beta : low;           // std::min(low, beta)
    }
    case MatmulActivation::kSigmoid: {
      if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
      const float ex = expf(x);
      return ex / (1.0f + ex);
    }
    case MatmulActivation::kTanh: return tanhf(x);
    case MatmulActivation::kSilu: return x / (1.0f + expf(-x));
    case MatmulActivation::kGelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case MatmulActivation::kGeluTanh:
      return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

template <typename X, typename B, typename Y>
__global__ void bias_activation_kernel(const X* x, const B* bias, Y* y, int64_t count, int64_t n,
                                       MatmulEpilogue epilogue) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    float v = load(x[i]);
    if (bias != nullptr) v = v + load(bias[i % n]);
    y[i] = store<Y>(activate(v, epilogue));
  }
}

template <typename X, typename B, typename Y>
void launch_as(const void* x, const void* bias, void* y, int64_t count, int64_t n, const MatmulEpilogue& epilogue,
               cudaStream_t stream) {
  bias_activation_kernel<X, B, Y><<<blocks_for(count), kThreads, 0, stream>>>(
      static_cast<const X*>(x), static_cast<const B*>(bias), static_cast<Y*>(y), count, n, epilogue);
}

}  // namespace

void launch_bias_activation(ElementType x_type, const void* x, ElementType bias_type, const void* bias,
                            ElementType y_type, void* y, int64_t rows, int64_t n, const MatmulEpilogue& epilogue,
                            cudaStream_t stream) {
  const int64_t count = rows * n;
  with_element_type(x_type, [&](auto x_value) {
    with_element_type(bias_type, [&](auto bias_value) {
      with_element_type(y_type, [&](auto y_value) {
        launch_as<decltype(x_value), decltype(bias_value), decltype(y_value)>(x, bias, y, count, n, epilogue, stream);
      });
    });
  });
}

}  // namespace weir::cuda
