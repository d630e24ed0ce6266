#include "runtime/device_support.h"

#include "core/error.h"

#if WEIR_HAVE_CUDA
#include "runtime/cuda_backend.h"
#endif

namespace weir {

bool built_with_cuda() {
#if WEIR_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void check_device_usable(const Device& device) {
  if (device.type == DeviceType::kCpu) return;
#if WEIR_HAVE_CUDA
  require_cuda_device(device);
#else
  throw Error(ErrorKind::kUnsupported, device.to_string() +
                                           ": this build of Weir has no CUDA backend (nvcc was not found when it was "
                                           "configured; configure with -DWEIR_CUDA=ON and CUDA_HOME set)");
#endif
}

}  // namespace weir
