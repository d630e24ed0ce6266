#include "ops/comm/collective_kernels.h"

#include <cstring>
#include <memory>

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
    if (node.has_attr("group")) {
      for (int64_t r : node.attr("group").ints()) group_.push_back(static_cast<int>(r));
    }
  }

 protected:
  // The communicator of the node's group: the world's, or a subgroup of it.
  std::shared_ptr<Communicator> communicator(KernelContext& ctx) {
    Communicator* world = ctx.communicator();
    if (world == nullptr) {
      ctx.fail("needs a communicator: run it in a Session over several devices or processes");
    }
    if (group_.empty()) return std::shared_ptr<Communicator>(std::shared_ptr<void>(), world);
    return world->subgroup(group_);
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

  const std::string& tag() const { return tag_; }

 private:
  std::string tag_;
  std::vector<int> group_;
};

ReduceOp reduction_of(const Node& node) {
  return parse_reduce_op(node.has_attr("reduction") ? node.attr("reduction").s() : "sum");
}

Tensor copy_of(KernelContext& ctx, const Tensor& x) {
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
  if (x.nbytes() > 0) std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
  return y;
}

class AllReduceKernel final : public CollectiveKernel {
 public:
  explicit AllReduceKernel(const Node& node) : CollectiveKernel(node), op_(reduction_of(node)) {}
  void compute(KernelContext& ctx) override {
    Tensor y = copy_of(ctx, ctx.input(0));
    call(ctx, [&] { communicator(ctx)->all_reduce(y, op_, tag()); });
  }

 private:
  ReduceOp op_;
};

class BroadcastKernel final : public CollectiveKernel {
 public:
  explicit BroadcastKernel(const Node& node)
      : CollectiveKernel(node), root_(static_cast<int>(node.has_attr("root") ? node.attr("root").i() : 0)) {}
  void compute(KernelContext& ctx) override {
    Tensor y = copy_of(ctx, ctx.input(0));
    call(ctx, [&] { communicator(ctx)->broadcast(y, root_, tag()); });
  }

 private:
  int root_;
};

class AllGatherKernel final : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;
  void compute(KernelContext& ctx) override {
    call(ctx, [&] { ctx.set_output(0, communicator(ctx)->all_gather(ctx.input(0), tag())); });
  }
};

class ReduceScatterKernel final : public CollectiveKernel {
 public:
  explicit ReduceScatterKernel(const Node& node) : CollectiveKernel(node), op_(reduction_of(node)) {}
  void compute(KernelContext& ctx) override {
    call(ctx, [&] { ctx.set_output(0, communicator(ctx)->reduce_scatter(ctx.input(0), op_, tag())); });
  }

 private:
  ReduceOp op_;
};

class SendKernel final : public CollectiveKernel {
 public:
  explicit SendKernel(const Node& node)
      : CollectiveKernel(node), peer_(static_cast<int>(node.attr("peer").i())) {}
  void compute(KernelContext& ctx) override {
    call(ctx, [&] { communicator(ctx)->send(ctx.input(0), peer_, tag()); });
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
    Tensor y = ctx.allocate_output(0, dtype_, sizes_, KernelContext::Fill::kUninitialized);
    call(ctx, [&] { communicator(ctx)->recv(y, peer_, tag()); });
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
    call(ctx, [&] { communicator(ctx)->barrier(tag()); });
  }
};

template <typename K>
KernelFactory factory() {
  return [](const Node& node) { return std::make_unique<K>(node); };
}

}  // namespace

void register_collective_cpu_kernels(KernelRegistry& registry) {
  registry.add("AllReduce", DeviceType::kCpu, kNumericDTypes, factory<AllReduceKernel>());
  registry.add("Broadcast", DeviceType::kCpu, kAnyDTypes, factory<BroadcastKernel>());
  registry.add("AllGather", DeviceType::kCpu, kAnyDTypes, factory<AllGatherKernel>());
  registry.add("ReduceScatter", DeviceType::kCpu, kNumericDTypes, factory<ReduceScatterKernel>());
  registry.add("Send", DeviceType::kCpu, kAnyDTypes, factory<SendKernel>());
  // Recv and Barrier have no inputs: their kernel dtype is that of their
  // output (Recv) or undefined (Barrier).
  registry.add("Recv", DeviceType::kCpu, kAnyDTypes, factory<RecvKernel>());
  registry.add("Barrier", DeviceType::kCpu, {DType::kUndefined}, factory<BarrierKernel>());
}

}  // namespace weir
