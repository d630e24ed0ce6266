#include "tests/cuda/device_test_kernels.h"

namespace weir::testing {

namespace {

// The GPU's nanosecond wall clock (PTX %globaltimer), unlike clock64 independent of the SM clock rate.
__device__ inline uint64_t global_nanoseconds() {
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void spin_then_write(int64_t nanoseconds, float* flag, float value) {
  const uint64_t start = global_nanoseconds();
  while (global_nanoseconds() - start < static_cast<uint64_t>(nanoseconds)) {
  }
  if (threadIdx.x == 0 && flag != nullptr) *flag = value;
}

}  // namespace

void launch_spin_then_write(cudaStream_t stream, int64_t nanoseconds, float* flag, float value, int threads) {
  spin_then_write<<<1, threads, 0, stream>>>(nanoseconds, flag, value);
}

}  // namespace weir::testing
