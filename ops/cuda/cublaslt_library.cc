#include "ops/cuda/cublaslt_library.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace weir::cuda {

namespace {

template <typename Function>
void resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  if (function == nullptr) {
    throw Error(ErrorKind::kUnsupported, std::string("cuBLASLt has no ") + name + ": " + dlerror());
  }
}

CublasLtApi load_cublaslt() {
  const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string first_error = library == nullptr ? dlerror() : "";
#ifdef WEIR_CUDA_LIBRARY_DIR
  if (library == nullptr) library = dlopen((std::string(WEIR_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  if (library == nullptr) {
    throw Error(ErrorKind::kUnsupported, "CUDA MatMul, Gemm and FusedMatMul need cuBLASLt, and " + name +
                                             " could not be loaded (" + first_error +
                                             "); put CUDA's lib64 directory on LD_LIBRARY_PATH");
  }
  // Never closed: kernels hold handles into it for the life of the process.
  CublasLtApi api{};
  resolve(library, "cublasLtCreate", api.create);
  resolve(library, "cublasLtMatmulDescCreate", api.matmul_desc_create);
  resolve(library, "cublasLtMatmulDescDestroy", api.matmul_desc_destroy);
  resolve(library, "cublasLtMatmulDescSetAttribute", api.matmul_desc_set_attribute);
  resolve(library, "cublasLtMatrixLayoutCreate", api.layout_create);
  resolve(library, "cublasLtMatrixLayoutDestroy", api.layout_destroy);
  resolve(library, "cublasLtMatrixLayoutSetAttribute", api.layout_set_attribute);
  resolve(library, "cublasLtMatmulPreferenceCreate", api.preference_create);
  resolve(library, "cublasLtMatmulPreferenceDestroy", api.preference_destroy);
  resolve(library, "cublasLtMatmulPreferenceSetAttribute", api.preference_set_attribute);
  resolve(library, "cublasLtMatmulAlgoGetHeuristic", api.algo_get_heuristic);
  resolve(library, "cublasLtMatmul", api.matmul);
  resolve(library, "cublasLtGetStatusName", api.status_name);
  resolve(library, "cublasLtGetStatusString", api.status_string);
  return api;
}

struct HandlePool {
  std::mutex mutex;
  std::map<int, std::vector<cublasLtHandle_t>> free;  // by device index
};

HandlePool& handle_pool() {
  static auto* pool = new HandlePool();  // never destroyed, like the handles in it
  return *pool;
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

CublasLtHandle::CublasLtHandle(int device_index) : device_index_(device_index) {
  const CublasLtApi& api = cublaslt();
  {
    HandlePool& pool = handle_pool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    std::vector<cublasLtHandle_t>& free = pool.free[device_index];
    if (!free.empty()) {
      handle_ = free.back();
      free.pop_back();
      return;
    }
  }
  cublaslt_check(api.create(&handle_), "cublasLtCreate on cuda:" + std::to_string(device_index));
}

CublasLtHandle::~CublasLtHandle() {
  HandlePool& pool = handle_pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free[device_index_].push_back(handle_);
}

}  // namespace weir::cuda
