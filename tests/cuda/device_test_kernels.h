// Small device kernels for the backend tests (device_test_kernels.cu),
// behind plain launchers so the tests are ordinary C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace weir::testing {

// Busy-waits on the GPU for about `nanoseconds`, then writes `value` to *flag:
// work that is still running when the host looks. `threads` > 1024 makes the
// launch itself fail, for the launch-error test.
void launch_spin_then_write(cudaStream_t stream, int64_t nanoseconds, float* flag, float value, int threads = 1);

}  // namespace weir::testing
