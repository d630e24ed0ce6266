#include "ops/cuda/cublas_library.h"

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
    throw Error(ErrorKind::kUnsupported, std::string("cuBLAS has no ") + name + ": " + dlerror());
  }
}

CublasApi load_cublas() {
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string first_error = library == nullptr ? dlerror() : "";
#ifdef WEIR_CUDA_LIBRARY_DIR
  if (library == nullptr) library = dlopen((std::string(WEIR_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  if (library == nullptr) {
    throw Error(ErrorKind::kUnsupported, "CUDA MatMul and Gemm need cuBLAS, and " + name + " could not be loaded (" +
                                             first_error + "); put CUDA's lib64 directory on LD_LIBRARY_PATH");
  }
  // Never closed: kernels hold handles into it for the life of the process.
  CublasApi api{};
  resolve(library, "cublasCreate_v2", api.create);
  resolve(library, "cublasSetStream_v2", api.set_stream);
  resolve(library, "cublasSetMathMode", api.set_math_mode);
  resolve(library, "cublasSgemm_v2", api.sgemm);
  resolve(library, "cublasSgemmStridedBatched", api.sgemm_strided_batched);
  resolve(library, "cublasGetStatusName", api.status_name);
  resolve(library, "cublasGetStatusString", api.status_string);
  return api;
}

struct HandlePool {
  std::mutex mutex;
  std::map<int, std::vector<cublasHandle_t>> free;  // by device index
};

HandlePool& handle_pool() {
  static auto* pool = new HandlePool();  // never destroyed, like the handles in it
  return *pool;
}

}  // namespace

const CublasApi& cublas() {
  // A failed load throws out of the initializer, so the next call tries again.
  static const CublasApi api = load_cublas();
  return api;
}

void cublas_check(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const CublasApi& api = cublas();
  throw Error(ErrorKind::kDevice, what + " failed: " + api.status_name(status) + ": " + api.status_string(status));
}

CublasHandle::CublasHandle(int device_index) : device_index_(device_index) {
  const CublasApi& api = cublas();
  {
    HandlePool& pool = handle_pool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    std::vector<cublasHandle_t>& free = pool.free[device_index];
    if (!free.empty()) {
      handle_ = free.back();
      free.pop_back();
      return;
    }
  }
  cublas_check(api.create(&handle_), "cublasCreate on cuda:" + std::to_string(device_index));
  // Plain f32 arithmetic (no TF32 tensor cores), so results match the CPU's
  // to f32 rounding; a mixed-precision mode is a later, explicit choice.
  cublas_check(api.set_math_mode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

CublasHandle::~CublasHandle() {
  HandlePool& pool = handle_pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free[device_index_].push_back(handle_);
}

}  // namespace weir::cuda
