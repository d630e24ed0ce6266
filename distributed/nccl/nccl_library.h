// NCCL, opened with dlopen on first use instead of linked: libnccl is over
// 200 MB, and linking it would cost every Weir process (every CPU-only test
// and graph-runner call) its load. Only a process that makes an NCCL world
// loads it.
//
//   const weir::NcclApi& nccl = weir::nccl();              // throws kUnsupported when it cannot be loaded
//   weir::nccl_check(nccl.get_unique_id(&id), "ncclGetUniqueId");
//
// The library is found as libnccl.so.<major of the headers built against>
// on the loader's path (LD_LIBRARY_PATH, the binary's RUNPATH), then in the
// toolkit directory the build was configured with (cuda::CudaLibrary,
// core/cuda/cuda_library.h).
#pragma once

#include <nccl.h>

#include <string>

namespace weir {

struct NcclApi {
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRankConfig) comm_init_rank_config;
  decltype(&ncclCommAbort) comm_abort;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclCommGetAsyncError) comm_get_async_error;
  decltype(&ncclGetErrorString) get_error_string;
  decltype(&ncclGetLastError) get_last_error;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclReduceScatter) reduce_scatter;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
};

// The functions, loaded on the first call; throws weir::Error(kUnsupported)
// naming the library and the loader's message when it cannot be loaded. A
// failed load is retried by the next call.
const NcclApi& nccl();

// "ncclUnhandledCudaError: unhandled cuda error (run with NCCL_DEBUG=INFO for details)".
std::string nccl_message(ncclResult_t status);

// Throws weir::Error(kCommunication) "<what> failed: <nccl_message>" unless
// `status` is ncclSuccess (or ncclInProgress, which a non-blocking
// communicator returns for work it has accepted).
void nccl_check(ncclResult_t status, const std::string& what);

}  // namespace weir
