#include "ops/cuda/cublaslt_library.h"

#include <string>

#include "core/cuda/cuda_library.h"
#include "core/error.h"

namespace weir::cuda {

namespace {

CublasLtApi load_cublaslt() {
  const CudaLibrary library("cuBLASLt", "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR),
                            "CUDA MatMul, Gemm and FusedMatMul need cuBLASLt", "CUDA's lib64 directory");
  // Never closed: kernels hold handles into it for the life of the process.
  CublasLtApi api{};
  library.resolve("cublasLtCreate", api.create);
  library.resolve("cublasLtMatmulDescCreate", api.matmul_desc_create);
  library.resolve("cublasLtMatmulDescDestroy", api.matmul_desc_destroy);
  library.resolve("cublasLtMatmulDescSetAttribute", api.matmul_desc_set_attribute);
  library.resolve("cublasLtMatrixLayoutCreate", api.layout_create);
  library.resolve("cublasLtMatrixLayoutDestroy", api.layout_destroy);
  library.resolve("cublasLtMatrixLayoutSetAttribute", api.layout_set_attribute);
  library.resolve("cublasLtMatmulPreferenceCreate", api.preference_create);
  library.resolve("cublasLtMatmulPreferenceDestroy", api.preference_destroy);
  library.resolve("cublasLtMatmulPreferenceSetAttribute", api.preference_set_attribute);
  library.resolve("cublasLtMatmulAlgoGetHeuristic", api.algo_get_heuristic);
  library.resolve("cublasLtMatmul", api.matmul);
  library.resolve("cublasLtGetStatusName", api.status_name);
  library.resolve("cublasLtGetStatusString", api.status_string);
  return api;
}

}  // namespace

const CublasLtApi& cublaslt() {
  // A failed load throws out of the initializer, so the next call tries again.
  static const CublasLtApi api = load_cublaslt();
  return api;
}

void cublaslt_check(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const CublasLtApi& api = cublaslt();
  throw Error(ErrorKind::kDevice, what + " failed: " + api.status_name(status) + ": " + api.status_string(status));
}

cublasLtHandle_t create_cublaslt_handle(int device_index) {
  cublasLtHandle_t handle = nullptr;
  cublaslt_check(cublaslt().create(&handle), "cublasLtCreate on cuda:" + std::to_string(device_index));
  return handle;
}

}  // namespace weir::cuda
