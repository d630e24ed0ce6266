// A communicator over NCCL: one process per GPU, the ranks' NCCL unique ids
// exchanged through Weir's TCP store (distributed/tcp_store.h, served by
// rank 0 at the launch's master address), collectives enqueued on the CUDA
// stream of the call.
//
//   weir::NcclGroupOptions options{.master_port = 29500, .device = weir::Device::cuda(local_rank)};
//   std::shared_ptr<weir::Communicator> comm = weir::make_nccl_communicator(rank, size, options);
//   comm->all_reduce(grad, reduced, weir::ReduceOp::kAvg, {.tag = "grad/w", .stream = &comm_stream});
//
// Streams. A call on a stream (CommCall::stream, a CUDA stream of this
// rank's GPU) is enqueued there and has finished when the stream gets
// there: the runtime orders it by the stream's events like any kernel. Each
// stream (by its id, the same on every rank: "communication:1") has its own
// NCCL communicator, made at its first call, so collectives on several
// communication streams run at once (Paddle's nccl_comm_num). A call without
// a stream is host code: host tensors are staged through device memory, the
// call runs on a stream of the communicator's own and returns once done.
//
// Rendezvous. For each (group, stream) the group's first rank makes an
// ncclUniqueId and sets it in the store under the job's namespace; the others
// read it. Communicators are made non-blocking (ncclConfig_t::blocking = 0)
// and polled, so a rank that never arrives fails the others at the timeout,
// naming the store, the group and the stream, instead of hanging in NCCL.
//
// Failures. abort() aborts every NCCL communicator of the world
// (ncclCommAbort), which ends kernels waiting on a dead peer. A call on a
// stream is watched (distributed/nccl/nccl_watchdog.h): if the stream has
// not passed it by the call's timeout (a rank never called it, or is gone),
// the world is aborted naming the call; the runtime aborts it too when a
// step fails. After an abort or an NCCL error every call fails with
// kCommunication naming the reason. NCCL does not check that ranks call
// matching collectives (Gloo's tags do): a mismatch is undefined there.
//
// Reductions: sum, avg (ncclAvg), max, min of f32, f64, f16, bf16, int8,
// uint8, int32, int64, uint32, uint64; broadcast, all-gather and send/recv
// move any dtype as bytes.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/communicator.h"
#include "core/device.h"

namespace weir {

struct NcclGroupOptions {
  // The TCP store rank 0 serves on master_port, every rank reaching it at master_addr.
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string job = "weir";  // the job's namespace in the store
  Device device = Device::cuda(0);  // this rank's GPU
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // rendezvous, and calls without their own
};

// Rank `rank` of a group of `size` processes. Checks that the GPU exists and
// NCCL loads, and connects to the store; the NCCL communicators themselves
// are made at each stream's first call. Throws weir::Error (kDevice,
// kUnsupported, kCommunication) naming the rank, the device and the store.
std::shared_ptr<Communicator> make_nccl_communicator(int rank, int size, const NcclGroupOptions& options);

// The unique id of NCCL communicator `key` of a group: made by the group's
// first rank (`first`) and set in the store at `store_key`, read from there
// by the others (waiting at most the store's timeout). Exposed for tests: it
// needs no GPU.
class TcpStore;
std::string exchange_nccl_unique_id(TcpStore& store, const std::string& store_key, bool first);

}  // namespace weir
