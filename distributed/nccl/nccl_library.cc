#include "distributed/nccl/nccl_library.h"

#include "core/cuda/cuda_library.h"
#include "core/error.h"

namespace weir {

namespace {

NcclApi load_nccl() {
  const cuda::CudaLibrary library("NCCL", "libnccl.so." + std::to_string(NCCL_MAJOR), "an NCCL world needs NCCL",
                                  "CUDA's lib64 directory");
  // Never closed: communicators live until the process ends.
  NcclApi api{};
  library.resolve("ncclGetVersion", api.get_version);
  library.resolve("ncclGetUniqueId", api.get_unique_id);
  library.resolve("ncclCommInitRankConfig", api.comm_init_rank_config);
  library.resolve("ncclCommAbort", api.comm_abort);
  library.resolve("ncclCommDestroy", api.comm_destroy);
  library.resolve("ncclCommGetAsyncError", api.comm_get_async_error);
  library.resolve("ncclGetErrorString", api.get_error_string);
  library.resolve("ncclGetLastError", api.get_last_error);
  library.resolve("ncclAllReduce", api.all_reduce);
  library.resolve("ncclBroadcast", api.broadcast);
  library.resolve("ncclAllGather", api.all_gather);
  library.resolve("ncclReduceScatter", api.reduce_scatter);
  library.resolve("ncclSend", api.send);
  library.resolve("ncclRecv", api.recv);
  library.resolve("ncclGroupStart", api.group_start);
  library.resolve("ncclGroupEnd", api.group_end);
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
