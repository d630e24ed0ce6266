// Communicator — one rank's handle on a group of ranks that exchange tensors.
//
// Collective kernels in ops/ call it; the runtime gives each rank's kernels
// its world's communicator (core/world.h). Implementations: the in-process
// group (runtime/in_process_communicator.h); Gloo and NCCL backends
// (distributed/) come behind the same interface.
//
//   weir::Communicator& comm = ...;                  // rank comm.rank() of comm.size()
//   weir::CommCall call{.tag = "grad/w1", .timeout = std::chrono::seconds(30), .stream = &comm_stream};
//   comm.all_reduce(grad, reduced, weir::ReduceOp::kAvg, call);   // `reduced` allocated by the caller
//   comm.all_gather(shard, gathered, call);                       // gathered: [size * d0, ...]
//   comm.all_reduce(grad, weir::ReduceOp::kSum, "grad/w1");       // host code: in place, default timeout
//   std::shared_ptr<weir::Communicator> pair = comm.subgroup({0, 2});
//
// Outputs are the caller's: kernels allocate them through their context, so
// the memory planner places them like any other value, and a communicator
// never allocates a result. Each call carries its tag, how long it may wait
// for its peers, and the stream it is ordered on: on a host stream it has
// finished when it returns; a device communicator (NCCL) enqueues it on the
// stream's native handle and it finishes when the stream gets there.
//
// Matching: every rank of a group calls the same collectives with the same
// tags in the same order; the n-th call with tag T on one rank meets the
// n-th call with tag T on the others. A rank that calls a different
// collective, dtype or shape under the same tag gets a kCommunication error,
// and so do all its peers. abort() wakes every rank blocked in a collective
// with a kCommunication error naming the reason: the runtime calls it when a
// kernel on any rank fails, so no rank waits forever for a dead peer.
//
// Tensors are dense; an output may be its input (in place). Calls on one
// Communicator object come from its rank's communication streams, one
// thread per stream (comm_streams), so several at once, each stream's in
// order and with tags of its own; an implementation keeps what they share
// (call counts, channels) locked. Different ranks' objects are used
// concurrently.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace weir {

enum class ReduceOp { kSum, kAvg, kMax, kMin };

// "sum", "avg", "max", "min"; throws weir::Error(kInvalidArgument) otherwise.
ReduceOp parse_reduce_op(std::string_view name);
const char* reduce_op_name(ReduceOp op);

class Stream;

// What one call carries besides its tensors.
struct CommCall {
  std::string tag;
  // How long this rank waits for its peers before failing with
  // kCommunication; zero: the communicator's default.
  std::chrono::milliseconds timeout{0};
  // The stream the call is ordered on; nullptr: the calling host thread.
  Stream* stream = nullptr;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // What a message names: "in-process group of 4".
  virtual std::string description() const = 0;

  // `output` (input's type) becomes the elementwise reduction of every
  // rank's `input`.
  virtual void all_reduce(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) = 0;
  // Every rank's `output` (input's type) becomes root's `input`.
  virtual void broadcast(const Tensor& input, Tensor& output, int root, const CommCall& call) = 0;
  // `output` [size() * d0, ...] becomes the ranks' inputs [d0, ...]
  // concatenated along axis 0, in rank order (a scalar input counts as [1]).
  virtual void all_gather(const Tensor& input, Tensor& output, const CommCall& call) = 0;
  // The reduction over ranks of `input`, split along axis 0 into size() equal
  // parts; `output` [d0 / size(), ...] gets part rank(). Axis 0 must divide
  // by size().
  virtual void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) = 0;
  // Point to point: send() hands `tensor` to rank `peer`; recv() fills
  // `tensor` (whose dtype and shape must match the sender's) from `peer`.
  virtual void send(const Tensor& tensor, int peer, const CommCall& call) = 0;
  virtual void recv(Tensor& tensor, int peer, const CommCall& call) = 0;
  virtual void barrier(const CommCall& call) = 0;

  // For host code: in place, or into a new host tensor, with the default
  // timeout on the calling thread.
  void all_reduce(Tensor& tensor, ReduceOp op, const std::string& tag) { all_reduce(tensor, tensor, op, {.tag = tag}); }
  void broadcast(Tensor& tensor, int root, const std::string& tag) { broadcast(tensor, tensor, root, {.tag = tag}); }
  Tensor all_gather(const Tensor& input, const std::string& tag);
  Tensor reduce_scatter(const Tensor& input, ReduceOp op, const std::string& tag);
  void send(const Tensor& tensor, int peer, const std::string& tag) { send(tensor, peer, CommCall{.tag = tag}); }
  void recv(Tensor& tensor, int peer, const std::string& tag) { recv(tensor, peer, CommCall{.tag = tag}); }
  void barrier(const std::string& tag) { barrier(CommCall{.tag = tag}); }

  // The output shapes all_gather and reduce_scatter expect for `input` in a
  // group of `size`; reduce_scatter's throws weir::Error(kShape) naming the
  // shape and the size when axis 0 does not divide.
  static std::vector<int64_t> all_gather_sizes(const std::vector<int64_t>& input, int size);
  static std::vector<int64_t> reduce_scatter_sizes(const std::vector<int64_t>& input, int size);

  // The communicator of the group formed by `ranks` (ranks of this group, in
  // the order that defines the new ranks). This rank must be one of them and
  // every member must ask for the same list.
  virtual std::shared_ptr<Communicator> subgroup(const std::vector<int>& ranks) = 0;

  // Makes every blocked and future collective of the whole group fail with
  // kCommunication naming `reason`. Safe to call from any thread, repeatedly.
  virtual void abort(const std::string& reason) = 0;
  // Why the group can no longer be used (the first abort's reason, or the
  // failure that broke it), or "" while it can. A device communicator's
  // abort ends the collectives it had enqueued without a device error (an
  // aborted NCCL kernel just stops), so the runtime asks this once a run's
  // device work is done: a run whose collectives were cut short fails.
  virtual std::string abort_reason() const = 0;

 protected:
  // The argument checks every implementation makes, with the same messages:
  // `r` is a rank of this group (kInvalidArgument "send peer 5 is not a rank
  // of a group of 2"); `output` has input's dtype and `sizes` (kShape naming
  // `what` and the tag); `ranks` name a subgroup containing this rank, whose
  // position in it is returned (kInvalidArgument).
  void check_rank(int r, const char* what) const;
  void check_output(const Tensor& input, const Tensor& output, const std::vector<int64_t>& sizes, const char* what,
                    const CommCall& call) const;
  int subgroup_position(const std::vector<int>& ranks) const;
};

}  // namespace weir
