// The CUDA backend: device allocator statistics, host<->device copies, and
// Weir's f16/bf16 conversions checked against the GPU's own conversion
// instructions. Skips when no GPU is present.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_device.h"
#include "core/error.h"
#include "core/half.h"

namespace weir {
namespace {

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device available";
  }
};

__global__ void widen_f16(const uint16_t* bits, float* out, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = __half2float(__ushort_as_half(bits[i]));
}

__global__ void narrow_f16(const float* in, uint16_t* out, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = __half_as_ushort(__float2half_rn(in[i]));
}

__global__ void narrow_bf16(const float* in, uint16_t* out, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
}

// Element type of a test buffer; raw 16-bit patterns travel as f16 tensors.
template <typename T>
constexpr DType buffer_dtype() {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return DType::kFloat16;
  } else {
    return DTypeOf<T>::value;
  }
}

// Runs `kernel` over `input` on the GPU and returns its output.
template <typename In, typename Out, typename Kernel>
std::vector<Out> run_on_gpu(Kernel kernel, const std::vector<In>& input) {
  CudaAllocator gpu(0);
  int count = static_cast<int>(input.size());
  Tensor host_in = Tensor::wrap(buffer_dtype<In>(), {count}, const_cast<In*>(input.data()), Device::cpu(), nullptr);
  Tensor device_in = copy_to_device(host_in, gpu);
  Tensor device_out(buffer_dtype<Out>(), {count}, gpu);
  kernel<<<(count + 255) / 256, 256>>>(static_cast<const In*>(device_in.raw_data()),
                                       static_cast<Out*>(device_out.raw_data()), count);
  cuda_check(cudaGetLastError(), "kernel launch");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  Tensor host_out = copy_to_host(device_out);
  const Out* out = static_cast<const Out*>(host_out.raw_data());
  return std::vector<Out>(out, out + count);
}

std::vector<float> probe_floats(uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_int_distribution<uint32_t> exponent(127 - 30, 127 + 20);
  std::vector<float> values(1 << 20);
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = any(engine);
    if (i % 4 != 0) bits = (bits & 0x807FFFFFu) | (exponent(engine) << 23);
    std::memcpy(&values[i], &bits, sizeof(bits));
  }
  return values;
}

TEST_F(CudaBackend, DeviceIsNamedAndBadIndexIsRefused) {
  EXPECT_FALSE(cuda_device_name(0).empty());
  EXPECT_THROW(CudaAllocator{cuda_device_count()}, Error);
}

TEST_F(CudaBackend, AllocatorTracksDeviceMemory) {
  CudaAllocator gpu(0);
  {
    Tensor a(DType::kFloat32, {1024, 256}, gpu);
    Tensor b(DType::kBFloat16, {100}, gpu);
    EXPECT_EQ(a.device(), Device::cuda(0));
    EXPECT_EQ(gpu.stats().bytes_in_use, 1024 * 256 * 4 + 200);
    EXPECT_EQ(gpu.stats().live_allocations, 2);
  }
  EXPECT_EQ(gpu.stats().bytes_in_use, 0);
  EXPECT_EQ(gpu.stats().peak_bytes, 1024 * 256 * 4 + 200);
}

TEST_F(CudaBackend, CopiesRoundTripRandomData) {
  CudaAllocator gpu(0);
  std::mt19937 engine(5);
  std::uniform_real_distribution<float> uniform(-10.0f, 10.0f);
  std::vector<float> values(1 << 16);
  for (float& value : values) value = uniform(engine);
  Tensor host = Tensor::from_vector(values, {256, 256});
  Tensor device = copy_to_device(host, gpu);
  Tensor back = copy_to_host(device);
  EXPECT_TRUE(back.bitwise_equal(host));
  EXPECT_THROW(copy_tensor(host, Tensor(DType::kFloat32, {255, 256}, gpu)), Error);
}

TEST_F(CudaBackend, F16WideningMatchesTheGpuOnAllBitPatterns) {
  std::vector<uint16_t> patterns(1 << 16);
  for (size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<uint16_t>(i);
  std::vector<float> gpu = run_on_gpu<uint16_t, float>(widen_f16, patterns);
  for (size_t i = 0; i < patterns.size(); ++i) {
    float ours = f16_bits_to_float(patterns[i]);
    if (std::isnan(gpu[i])) {
      ASSERT_TRUE(std::isnan(ours)) << std::hex << i;
    } else {
      ASSERT_EQ(std::memcmp(&ours, &gpu[i], sizeof(float)), 0) << std::hex << i;
    }
  }
}

TEST_F(CudaBackend, F16AndBf16NarrowingMatchTheGpuOnRandomFloats) {
  std::vector<float> values = probe_floats(17);
  std::vector<uint16_t> gpu_f16 = run_on_gpu<float, uint16_t>(narrow_f16, values);
  std::vector<uint16_t> gpu_bf16 = run_on_gpu<float, uint16_t>(narrow_bf16, values);
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      // The GPU returns a canonical NaN; Weir keeps the payload. Both are NaN.
      ASSERT_TRUE(std::isnan(f16_bits_to_float(float_to_f16_bits(values[i]))));
      continue;
    }
    ASSERT_EQ(float_to_f16_bits(values[i]), gpu_f16[i]) << values[i];
    ASSERT_EQ(float_to_bf16_bits(values[i]), gpu_bf16[i]) << values[i];
  }
}

}  // namespace
}  // namespace weir
