// Communicator — one rank's handle on a group of ranks that exchange tensors.
//
// Collective kernels in ops/ call it; the runtime gives each device's kernels
// the communicator of that device's rank. Implementations: the in-process
// group for virtual devices (runtime/in_process_communicator.h); Gloo and
// NCCL backends (distributed/) come behind the same interface.
//
//   weir::Communicator& comm = ...;                  // rank comm.rank() of comm.size()
//   comm.all_reduce(grad, weir::ReduceOp::kAvg, "grad/w1");
//   weir::Tensor all = comm.all_gather(shard, "acts");    // [size * d0, ...]
//   std::shared_ptr<weir::Communicator> pair = comm.subgroup({0, 2});
//
// Matching: every rank of a group calls the same collectives with the same
// tags in the same order; the n-th call with tag T on one rank meets the
// n-th call with tag T on the others. A rank that calls a different
// collective, dtype or shape under the same tag gets a kCommunication error,
// and so do all its peers. abort() wakes every rank blocked in a collective
// with a kCommunication error naming the reason: the runtime calls it when a
// kernel on any rank fails, so no rank waits forever for a dead peer.
//
// Tensors are dense host tensors; in-place calls overwrite their argument.
// Calls on one Communicator object come from one thread at a time (a device's
// communication stream); different ranks' objects are used concurrently.
#pragma once

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

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // What a message names: "in-process group of 4".
  virtual std::string description() const = 0;

  // Every rank's `tensor` becomes the elementwise reduction over all ranks.
  virtual void all_reduce(Tensor& tensor, ReduceOp op, const std::string& tag) = 0;
  // Every rank's `tensor` becomes root's.
  virtual void broadcast(Tensor& tensor, int root, const std::string& tag) = 0;
  // Ranks' inputs concatenated along axis 0, in rank order.
  virtual Tensor all_gather(const Tensor& input, const std::string& tag) = 0;
  // The reduction over ranks of `input`, split along axis 0 into size() equal
  // parts; this rank gets part rank(). Axis 0 must divide by size().
  virtual Tensor reduce_scatter(const Tensor& input, ReduceOp op, const std::string& tag) = 0;
  // Point to point: send() hands `tensor` to rank `peer`; recv() fills
  // `tensor` (whose dtype and shape must match the sender's) from `peer`.
  virtual void send(const Tensor& tensor, int peer, const std::string& tag) = 0;
  virtual void recv(Tensor& tensor, int peer, const std::string& tag) = 0;
  virtual void barrier(const std::string& tag) = 0;

  // The communicator of the group formed by `ranks` (ranks of this group, in
  // the order that defines the new ranks). This rank must be one of them and
  // every member must ask for the same list.
  virtual std::shared_ptr<Communicator> subgroup(const std::vector<int>& ranks) = 0;

  // Makes every blocked and future collective of the whole group fail with
  // kCommunication naming `reason`. Safe to call from any thread, repeatedly.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace weir
