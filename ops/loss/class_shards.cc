#include "ops/loss/class_shards.h"

#include <algorithm>
#include <string>

#include "core/communicator.h"
#include "core/error.h"
#include "ops/node_attributes.h"

namespace weir {

namespace {

class ShardLabelsKernel final : public OpKernel {
 public:
  explicit ShardLabelsKernel(const Node& node) : classes_(int_attr(node, "classes", 0)) {}

  void compute(KernelContext& ctx) override {
    const Communicator* comm = ctx.communicator();
    const int64_t ranks = comm != nullptr ? comm->size() : 1;
    const int64_t rank = comm != nullptr ? comm->rank() : 0;
    ClassShard shard;
    try {
      shard = class_shard(classes_, ranks, rank);
    } catch (const Error& error) {
      ctx.fail(error.message());
    }
    const Tensor& labels = ctx.input(0);
    Tensor& local = ctx.allocate_output(0, labels.dtype(), labels.sizes(), KernelContext::Fill::kUninitialized);
    auto map = [&]<typename T>(const T* in, T* out) {
      for (int64_t i = 0; i < labels.num_elements(); ++i) {
        const int64_t label = static_cast<int64_t>(in[i]);
        if (label < 0 || label >= classes_) {
          ctx.fail("label " + std::to_string(label) + " at position " + std::to_string(i) + " is not a class of " +
                   std::to_string(classes_));
        }
        const int64_t column = label - shard.start;
        out[i] = static_cast<T>(column >= 0 && column < shard.count ? column : -1);
      }
    };
    if (labels.dtype() == DType::kInt64) {
      map(labels.data<int64_t>(), local.data<int64_t>());
    } else if (labels.dtype() == DType::kInt32) {
      map(labels.data<int32_t>(), local.data<int32_t>());
    } else {
      ctx.fail("labels must be i64 or i32, got " + labels.type_string());
    }
  }

 private:
  int64_t classes_;
};

}  // namespace

ClassShard class_shard(int64_t classes, int64_t ranks, int64_t rank) {
  if (ranks < 1 || classes < ranks || rank < 0 || rank >= ranks) {
    throw Error(ErrorKind::kInvalidArgument, "cannot shard " + std::to_string(classes) + " classes over " +
                                                 std::to_string(ranks) + " ranks for rank " + std::to_string(rank) +
                                                 " (every rank needs at least one class)");
  }
  const int64_t base = classes / ranks, extra = classes % ranks;
  return {.start = rank * base + std::min(rank, extra), .count = base + (rank < extra ? 1 : 0),
          .width = base + (extra > 0 ? 1 : 0)};
}

void register_class_shard_schemas(OpRegistry& registry) {
  OpSchema shard("ShardLabels");
  shard.input("labels", "T")
      .output("local", "T")
      .type_constraint("T", {DType::kInt64, DType::kInt32})
      .required_attr("classes", AttrType::kInt)
      .infer([](InferenceContext& ctx) {
        if (ctx.attr_int("classes") < 1) ctx.fail("classes must be positive, got " + std::to_string(ctx.attr_int("classes")));
        if (const TensorType* labels = ctx.input_type(0)) ctx.set_output_type(0, *labels);
      })
      .doc("each label as a column of this rank's shard of the classes (C / N each, the first C % N ranks one "
           "more), or -1 when another rank holds it");
  registry.add(std::move(shard));
}

void register_class_shard_cpu_kernels(KernelRegistry& registry) {
  registry.add("ShardLabels", DeviceType::kCpu, {DType::kInt64, DType::kInt32},
               [](const Node& node) { return std::make_unique<ShardLabelsKernel>(node); });
}

}  // namespace weir
