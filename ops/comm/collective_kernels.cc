#include "ops/comm/collective_kernels.h"

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/backend.h"
#include "core/collective_group.h"
#include "core/error.h"
#include "ops/dtype_sets.h"

namespace weir {

namespace {

// What every collective kernel reads from its node once: the tag and the
// group, and how to reach the group's communicator.
class CollectiveKernel : public OpKernel {
 public:
  explicit CollectiveKernel(const Node& node) {
    tag_ = node.has_attr("tag") ? node.attr("tag").s() : "";
    if (tag_.empty()) tag_ = node.op_type();
  }

 protected:
  // The communicator of the node's group: the world's, or a subgroup of it
  // (core/collective_group.h). The ranks of an in-process world share the
  // plan's kernels, so the group is resolved once per (rank, world size).
  std::shared_ptr<Communicator> communicator(KernelContext& ctx) {
    Communicator* world = ctx.communicator();
    if (world == nullptr) {
      ctx.fail("needs a communicator: run it in a Session over several devices or processes");
    }
    if (!ctx.node().has_attr("group") || ctx.node().attr("group").ints().empty()) {
      return std::shared_ptr<Communicator>(std::shared_ptr<void>(), world);
    }
    std::vector<int> group;
    {
      std::lock_guard<std::mutex> lock(groups_mutex_);
      std::vector<int>& resolved = groups_[{world->rank(), world->size()}];
      if (resolved.empty()) {
        for (int64_t r : collective_group(ctx.node(), world->rank(), world->size())) resolved.push_back(static_cast<int>(r));
      }
      group = resolved;
    }
    return world->subgroup(group);
  }

  // Adds the node and the rank to errors thrown by the communicator.
  template <typename Fn>
  void call(KernelContext& ctx, Fn&& fn) {
    try {
      fn();
    } catch (Error& error) {
      if (ctx.communicator() != nullptr) error.with_rank(ctx.communicator()->rank());
      error.with_node(ctx.node().name());
      throw;
    }
  }

  // Whether the optional `skip` input says this run does not communicate
  // (every rank computes the same flag: see the schemas).
  static bool skipped(KernelContext& ctx) {
    if (ctx.num_inputs() < 2) return false;
    const Tensor& skip = ctx.input(1);
    if (skip.dtype() != DType::kBool || skip.num_elements() != 1) {
      ctx.fail("skip must be a bool scalar, got " + skip.type_string());
    }
    if (skip.device().type == DeviceType::kCpu || ctx.backend() == nullptr) return skip.data<bool>()[0];
    // On a GPU the flag decides what to launch, so the host reads it (a
    // one-byte copy, waited for within the collective's timeout).
    Tensor host(DType::kBool, skip.sizes());
    const std::chrono::milliseconds limit =
        ctx.collective_timeout().count() > 0 ? ctx.collective_timeout() : std::chrono::milliseconds(60000);
    ctx.backend()->copy(skip, host, *ctx.stream())->synchronize(limit, "reading the skip flag of '" + ctx.node().name() + "'");
    return host.data<bool>()[0];
  }

  // y = x, or y = 0, where the tensors live: on a device through its
  // backend, in the step's stream order.
  static void copy_into(KernelContext& ctx, const Tensor& x, Tensor& y) {
    if (ctx.backend() != nullptr && y.device().type != DeviceType::kCpu) {
      ctx.backend()->copy(x, y, *ctx.stream());
    } else if (x.nbytes() > 0) {
      std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    }
  }
  static void zero(KernelContext& ctx, Tensor& y) {
    if (ctx.backend() != nullptr && y.device().type != DeviceType::kCpu) {
      ctx.backend()->fill_zero(y, *ctx.stream());
    } else if (y.nbytes() > 0) {  // an empty tensor has no storage
      std::memset(y.raw_data(), 0, y.nbytes());
    }
  }

  // This call's tag, timeout and stream.
  CommCall comm_call(const KernelContext& ctx) const {
    return CommCall{.tag = tag_, .timeout = ctx.collective_timeout(), .stream = ctx.stream()};
  }

 private:
  std::string tag_;
  std::mutex groups_mutex_;
  std::map<std::pair<int, int>, std::vector<int>> groups_;  // (rank, world size) -> the group's ranks
};

ReduceOp reduction_of(const Node& node) {
  return parse_reduce_op(node.has_attr("reduction") ? node.attr("reduction").s() : "sum");
}

// The output of a collective that writes every element, allocated through
// the context (so the memory planner's buffer is used when it planned one).
Tensor& output_like(KernelContext& ctx, DType dtype, std::vector<int64_t> sizes) {
  return ctx.allocate_output(0, dtype, std::move(sizes), KernelContext::Fill::kUninitialized);
}

class AllReduceKernel final : public CollectiveKernel {
 public:
  explicit AllReduceKernel(const Node& node) : CollectiveKernel(node), op_(reduction_of(node)) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = output_like(ctx, x.dtype(), x.sizes());
    if (skipped(ctx)) {
      copy_into(ctx, x, y);
      return;
    }
    call(ctx, [&] { communicator(ctx)->all_reduce(x, y, op_, comm_call(ctx)); });
  }

 private:
  ReduceOp op_;
};

class BroadcastKernel final : public CollectiveKernel {
 public:
  explicit BroadcastKernel(const Node& node)
      : CollectiveKernel(node), root_(static_cast<int>(node.has_attr("root") ? node.attr("root").i() : 0)) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = output_like(ctx, x.dtype(), x.sizes());
    call(ctx, [&] { communicator(ctx)->broadcast(x, y, root_, comm_call(ctx)); });
  }

 private:
  int root_;
};

class AllGatherKernel final : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;
  void compute(KernelContext& ctx) override {
    call(ctx, [&] {
      std::shared_ptr<Communicator> comm = communicator(ctx);
      const Tensor& x = ctx.input(0);
      Tensor& y = output_like(ctx, x.dtype(), Communicator::all_gather_sizes(x.sizes(), comm->size()));
      if (skipped(ctx)) {
        zero(ctx, y);
        return;
      }
      comm->all_gather(x, y, comm_call(ctx));
    });
  }
};

class ReduceScatterKernel final : public CollectiveKernel {
 public:
  explicit ReduceScatterKernel(const Node& node) : CollectiveKernel(node), op_(reduction_of(node)) {}
  void compute(KernelContext& ctx) override {
    call(ctx, [&] {
      std::shared_ptr<Communicator> comm = communicator(ctx);
      const Tensor& x = ctx.input(0);
      Tensor& y = output_like(ctx, x.dtype(), Communicator::reduce_scatter_sizes(x.sizes(), comm->size()));
      if (skipped(ctx)) {
        zero(ctx, y);
        return;
      }
      comm->reduce_scatter(x, y, op_, comm_call(ctx));
    });
  }

 private:
  ReduceOp op_;
};

class SendKernel final : public CollectiveKernel {
 public:
  explicit SendKernel(const Node& node)
      : CollectiveKernel(node), peer_(static_cast<int>(node.attr("peer").i())) {}
  void compute(KernelContext& ctx) override {
    call(ctx, [&] { communicator(ctx)->send(ctx.input(0), peer_, comm_call(ctx)); });
  }

 private:
  int peer_;
};

class RecvKernel final : public CollectiveKernel {
 public:
  explicit RecvKernel(const Node& node)
      : CollectiveKernel(node),
        peer_(static_cast<int>(node.attr("peer").i())),
        dtype_(static_cast<DType>(node.attr("dtype").i())),
        sizes_(node.attr("shape").ints()) {}
  void compute(KernelContext& ctx) override {
    Tensor& y = output_like(ctx, dtype_, sizes_);
    call(ctx, [&] { communicator(ctx)->recv(y, peer_, comm_call(ctx)); });
  }

 private:
  int peer_;
  DType dtype_;
  std::vector<int64_t> sizes_;
};

class BarrierKernel final : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;
  void compute(KernelContext& ctx) override {
    call(ctx, [&] { communicator(ctx)->barrier(comm_call(ctx)); });
  }
};

template <typename K>
KernelFactory factory() {
  return [](const Node& node) { return std::make_unique<K>(node); };
}

}  // namespace

void register_collective_cpu_kernels(KernelRegistry& registry) { register_collective_kernels(registry, DeviceType::kCpu); }

void register_collective_kernels(KernelRegistry& registry, DeviceType device) {
  registry.add("AllReduce", device, kNumericDTypes, factory<AllReduceKernel>());
  registry.add("Broadcast", device, kAnyDTypes, factory<BroadcastKernel>());
  registry.add("AllGather", device, kAnyDTypes, factory<AllGatherKernel>());
  registry.add("ReduceScatter", device, kNumericDTypes, factory<ReduceScatterKernel>());
  registry.add("Send", device, kAnyDTypes, factory<SendKernel>());
  // Recv and Barrier have no inputs: their kernel dtype is that of their
  // output (Recv) or undefined (Barrier).
  registry.add("Recv", device, kAnyDTypes, factory<RecvKernel>());
  registry.add("Barrier", device, {DType::kUndefined}, factory<BarrierKernel>());
}

}  // namespace weir
