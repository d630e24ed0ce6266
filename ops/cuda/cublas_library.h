// cuBLAS, opened with dlopen on first use instead of linked: libcublasLt is
// half a gigabyte, and linking it costs every Weir process (every test, every
// CPU-only graph-runner call) about 0.1 s and 200 MB to load. Only a process
// that builds a CUDA MatMul or Gemm kernel loads it.
//
//   cuda::CublasHandle handle(device_index);          // a pooled handle of that device
//   cuda::cublas_check(cuda::cublas().set_stream(handle.get(), stream), "cublasSetStream");
//   cuda::cublas_check(cuda::cublas().sgemm(handle.get(), ...), "cublasSgemm");
//
// The library is found as libcublas.so.<major of the headers built against>
// on the loader's path (LD_LIBRARY_PATH, the binary's RUNPATH), then in the
// toolkit directory the build was configured with.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace weir::cuda {

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// The functions, loaded on the first call; throws weir::Error(kUnsupported)
// naming the library and the loader's message when it cannot be loaded.
const CublasApi& cublas();

// Throws weir::Error(kDevice) "<what> failed: CUBLAS_STATUS_...: <message>" unless `status` is success.
void cublas_check(cublasStatus_t status, const std::string& what);

// A cuBLAS handle of one device, taken from a process-wide pool for as long
// as this object lives: a handle must not be used by two threads at once,
// and creating one costs milliseconds. Pooled handles are never destroyed
// (destroying them at exit races the driver's own teardown).
class CublasHandle {
 public:
  explicit CublasHandle(int device_index);  // that device must be current
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  int device_index_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace weir::cuda
