// A CUDA library (cuBLASLt, cuDNN, NCCL) opened with dlopen on first use
// instead of linked: each is hundreds of megabytes, and linking one would
// cost every Weir process, CPU-only ones included, its load. The library's
// own wrapper (ops/cuda/cublaslt_library.h, ops/cuda/cudnn_library.h,
// distributed/nccl/nccl_library.h) opens it and resolves its functions:
//
//   const cuda::CudaLibrary library("cuDNN", "libcudnn.so.9", "CUDA convolutions need cuDNN",
//                                   "cuDNN's lib directory");
//   library.resolve("cudnnCreate", api.create);
//
// The file is looked for on the loader's path (LD_LIBRARY_PATH, the
// binary's RUNPATH), then in the CUDA toolkit directory this build was
// configured with. It is never closed: kernels and communicators hold
// handles into it for the life of the process.
#pragma once

#include <string>

namespace weir::cuda {

class CudaLibrary {
 public:
  // Opens `file`; throws weir::Error(kUnsupported) "<needed_by>, and <file>
  // could not be loaded (<the loader's message>); put <directory> on
  // LD_LIBRARY_PATH" when it is in neither place. `name` is the library's
  // name in the errors of resolve().
  CudaLibrary(std::string name, const std::string& file, const std::string& needed_by, const std::string& directory);

  // Sets `function` to the library's function `symbol`; throws
  // weir::Error(kUnsupported) "<name> has no <symbol>: <the loader's message>".
  template <typename Function>
  void resolve(const char* symbol, Function& function) const {
    function = reinterpret_cast<Function>(find(symbol));
  }

 private:
  void* find(const char* symbol) const;

  std::string name_;
  void* handle_ = nullptr;
};

}  // namespace weir::cuda
