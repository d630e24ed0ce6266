// cuBLASLt, opened with dlopen on first use instead of linked: the library
// is half a gigabyte, and linking it costs every Weir process (every test,
// every CPU-only graph-runner call) about 0.1 s and 200 MB to load. Only a
// process that runs a CUDA MatMul, Gemm or FusedMatMul kernel loads it.
//
//   cuda::CublasLtHandle handle(device_index);       // a pooled handle of that device
//   const cuda::CublasLtApi& lt = cuda::cublaslt();
//   cuda::cublaslt_check(lt.matmul(handle.get(), ...), "cublasLtMatmul");
//
// The library is found as libcublasLt.so.<major of the headers built
// against> on the loader's path (LD_LIBRARY_PATH, the binary's RUNPATH),
// then in the toolkit directory the build was configured with
// (cuda::CudaLibrary, core/cuda/cuda_library.h).
#pragma once

#include <cublasLt.h>

#include <string>

#include "ops/cuda/pooled_handle.h"

namespace weir::cuda {

struct CublasLtApi {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtMatmulDescCreate) matmul_desc_create;
  decltype(&cublasLtMatmulDescDestroy) matmul_desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set_attribute;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic;
  decltype(&cublasLtMatmul) matmul;
  decltype(&cublasLtGetStatusName) status_name;
  decltype(&cublasLtGetStatusString) status_string;
};

// The functions, loaded on the first call; throws weir::Error(kUnsupported)
// naming the library and the loader's message when it cannot be loaded.
const CublasLtApi& cublaslt();

// Throws weir::Error(kDevice) "<what> failed: CUBLAS_STATUS_...: <message>" unless `status` is success.
void cublaslt_check(cublasStatus_t status, const std::string& what);

// A new cuBLASLt handle of cuda:`device_index` (current); throws naming the device.
cublasLtHandle_t create_cublaslt_handle(int device_index);

// A pooled cuBLASLt handle of one device (ops/cuda/pooled_handle.h): one per
// concurrent user, so nothing relies on the library's thread safety.
using CublasLtHandle = PooledHandle<cublasLtHandle_t, create_cublaslt_handle>;

}  // namespace weir::cuda
