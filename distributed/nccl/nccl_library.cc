#include "distributed/nccl/nccl_library.h"

#include <dlfcn.h>

#include "core/error.h"

namespace weir {

namespace {

template <typename Function>
void resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  if (function == nullptr) {
    throw Error(ErrorKind::kUnsupported, std::string("NCCL has no ") + name + ": " + dlerror());
  }
}

NcclApi load_nccl() {
  const std::string name = "libnccl.so." + std::to_string(NCCL_MAJOR);
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string first_error = library == nullptr ? dlerror() : "";
#ifdef WEIR_CUDA_LIBRARY_DIR
  if (library == nullptr) library = dlopen((std::string(WEIR_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  if (library == nullptr) {
    throw Error(ErrorKind::kUnsupported, "an NCCL world needs NCCL, and " + name + " could not be loaded (" +
                                             first_error + "); put CUDA's lib64 directory on LD_LIBRARY_PATH");
  }
  // Never closed: communicators live until the process ends.
  NcclApi api{};
  resolve(library, "ncclGetVersion", api.get_version);
  resolve(library, "ncclGetUniqueId", api.get_unique_id);
  resolve(library, "ncclCommInitRankConfig", api.comm_init_rank_config);
  resolve(library, "ncclCommAbort", api.comm_abort);
  resolve(library, "ncclCommDestroy", api.comm_destroy);
  resolve(library, "ncclCommGetAsyncError", api.comm_get_async_error);
  resolve(library, "ncclGetErrorString", api.get_error_string);
  resolve(library, "ncclGetLastError", api.get_last_error);
  resolve(library, "ncclAllReduce", api.all_reduce);
  resolve(library, "ncclBroadcast", api.broadcast);
  resolve(library, "ncclAllGather", api.all_gather);
  resolve(library, "ncclReduceScatter", api.reduce_scatter);
  resolve(library, "ncclSend", api.send);
  resolve(library, "ncclRecv", api.recv);
  resolve(library, "ncclGroupStart", api.group_start);
  resolve(library, "ncclGroupEnd", api.group_end);
  return api;
}

const char* result_name(ncclResult_t status) {
  switch (status) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult";
  }
}

}  // namespace

const NcclApi& nccl() {
  static const NcclApi api = load_nccl();
  return api;
}

std::string nccl_message(ncclResult_t status) {
  std::string message = std::string(result_name(status)) + ": " + nccl().get_error_string(status);
  if (status != ncclSuccess && status != ncclInProgress) {
    const char* last = nccl().get_last_error(nullptr);  // the thread's last error, with NCCL's details
    if (last != nullptr && *last != '\0') message += " (" + std::string(last) + ")";
  }
  return message;
}

void nccl_check(ncclResult_t status, const std::string& what) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  throw Error(ErrorKind::kCommunication, what + " failed: " + nccl_message(status));
}

}  // namespace weir
