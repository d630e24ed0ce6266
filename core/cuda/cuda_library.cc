#include "core/cuda/cuda_library.h"

#include <dlfcn.h>

#include <utility>

#include "core/error.h"

namespace weir::cuda {

CudaLibrary::CudaLibrary(std::string name, const std::string& file, const std::string& needed_by,
                         const std::string& directory)
    : name_(std::move(name)) {
  handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string first_error = handle_ == nullptr ? dlerror() : "";
#ifdef WEIR_CUDA_LIBRARY_DIR
  // A library opened by its full path still finds its own sub-libraries (cuDNN's
  // libcudnn_cnn, _ops, _graph and engines) by its RUNPATH, $ORIGIN.
  if (handle_ == nullptr) {
    handle_ = dlopen((std::string(WEIR_CUDA_LIBRARY_DIR) + "/" + file).c_str(), RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (handle_ == nullptr) {
    throw Error(ErrorKind::kUnsupported, needed_by + ", and " + file + " could not be loaded (" + first_error +
                                             "); put " + directory + " on LD_LIBRARY_PATH");
  }
}

void* CudaLibrary::find(const char* symbol) const {
  void* function = dlsym(handle_, symbol);
  if (function == nullptr) throw Error(ErrorKind::kUnsupported, name_ + " has no " + symbol + ": " + dlerror());
  return function;
}

}  // namespace weir::cuda
