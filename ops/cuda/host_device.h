// WEIR_HOST_DEVICE marks functions that device code calls and host tests
// check: __host__ __device__ under nvcc, plain functions elsewhere.
#pragma once

#if defined(__CUDACC__)
#define WEIR_HOST_DEVICE __host__ __device__
#else
#define WEIR_HOST_DEVICE
#endif
