#include "ops/loss/class_shards.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/error.h"
#include "ops/dtype_dispatch.h"
#include "ops/node_attributes.h"

namespace weir {

namespace {

// This rank's shard of `classes`, from the kernel's communicator.
ClassShard shard_of(const KernelContext& ctx, int64_t classes) {
  const Communicator* comm = ctx.communicator();
  try {
    return class_shard(classes, comm != nullptr ? comm->size() : 1, comm != nullptr ? comm->rank() : 0);
  } catch (const Error& error) {
    ctx.fail(error.message());
  }
}

class MaskShardPaddingKernel final : public OpKernel {
 public:
  explicit MaskShardPaddingKernel(const Node& node)
      : classes_(int_attr(node, "classes", 0)), fill_(float_attr(node, "fill", -std::numeric_limits<double>::infinity())) {}

  void compute(KernelContext& ctx) override {
    const ClassShard shard = shard_of(ctx, classes_);
    const Tensor& x = ctx.input(0);
    const bool sampled = ctx.has_input(1);
    const int64_t width = sampled ? ctx.input(1).num_elements() : shard.width;
    if (x.sizes().size() != 2 || x.sizes()[1] != width) {
      ctx.fail("expects [batch, " + std::to_string(width) + "] (" +
               (sampled ? std::string("one column per entry of 'columns'") :
                          "this world's shard width of " + std::to_string(classes_) + " classes") +
               "), got " + x.type_string());
    }
    // Which columns are padding: past the count, or (sampled) naming a
    // shard column past it.
    std::vector<int64_t> padding;
    if (sampled) {
      const Tensor& columns = ctx.input(1);
      if (columns.dtype() != DType::kInt64) ctx.fail("columns must be i64, got " + columns.type_string());
      for (int64_t j = 0; j < width; ++j) {
        const int64_t column = columns.data<int64_t>()[j];
        if (column < 0 || column >= shard.width) {
          ctx.fail("columns[" + std::to_string(j) + "] = " + std::to_string(column) + " is not a column of this rank's shard of width " +
                   std::to_string(shard.width));
        }
        if (column >= shard.count) padding.push_back(j);
      }
    } else {
      for (int64_t j = shard.count; j < width; ++j) padding.push_back(j);
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    const int64_t rows = x.sizes()[0];
    auto mask = [&]<typename T>() {
      const T* in = x.data<T>();
      T* out = y.data<T>();
      if (out != in && x.nbytes() > 0) std::memcpy(out, in, x.nbytes());
      for (int64_t b = 0; b < rows; ++b) {
        for (int64_t j : padding) out[b * width + j] = static_cast<T>(fill_);
      }
    };
    if (!dispatch_f32_f64(x.dtype(), mask)) ctx.fail("supports f32 and f64, got " + x.type_string());
  }

 private:
  int64_t classes_;
  double fill_;
};

class ShardLabelsKernel final : public OpKernel {
 public:
  explicit ShardLabelsKernel(const Node& node) : classes_(int_attr(node, "classes", 0)) {}

  void compute(KernelContext& ctx) override {
    const ClassShard shard = shard_of(ctx, classes_);
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

std::vector<int64_t> shard_column_labels(const KernelContext& ctx, const Tensor& labels, int64_t rows, int64_t columns) {
  if ((labels.dtype() != DType::kInt64 && labels.dtype() != DType::kInt32) || labels.num_elements() != rows) {
    ctx.fail("labels must be i64 or i32 [" + std::to_string(rows) + "] (one per row), got " + labels.type_string());
  }
  std::vector<int64_t> out(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t label = labels.dtype() == DType::kInt64 ? labels.data<int64_t>()[b] : labels.data<int32_t>()[b];
    if (label < -1 || label >= columns) {
      ctx.fail("label " + std::to_string(label) + " of row " + std::to_string(b) + " is outside [-1, " +
               std::to_string(columns) + ") (a column of this shard, or -1 for a class another rank holds)");
    }
    out[static_cast<size_t>(b)] = label;
  }
  return out;
}

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

  OpSchema mask("MaskShardPadding");
  mask.input("x", "T")
      .input("columns", "I", Arity::kOptional)
      .output("y", "T")
      .type_constraint("T", {DType::kFloat32, DType::kFloat64})
      .type_constraint("I", {DType::kInt64})
      .required_attr("classes", AttrType::kInt)
      .attr("fill", AttrType::kFloat, Attribute(-std::numeric_limits<double>::infinity()))
      .traits(OpTrait::kInplaceable)
      .infer([](InferenceContext& ctx) {
        if (ctx.attr_int("classes") < 1) ctx.fail("classes must be positive, got " + std::to_string(ctx.attr_int("classes")));
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        if (x->shape.has_rank() && x->shape.rank() != 2) ctx.fail("expects [batch, shard width], got " + x->shape.to_string());
        const TensorType* columns = ctx.input_type(1);
        if (columns != nullptr && columns->shape.has_rank() && columns->shape.rank() != 1) {
          ctx.fail("columns must be 1-D, got " + columns->shape.to_string());
        }
        ctx.set_output_type(0, *x);
      })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        std::vector<Value*> inputs = {grad};
        if (node.num_inputs() > 1 && node.input(1) != nullptr) inputs.push_back(node.input(1));
        ctx.set_input_grad(0, ctx.emit("MaskShardPadding", inputs, 1,
                                       {{"classes", node.attr("classes")}, {"fill", Attribute(0.0)}})[0]);
      })
      .doc("x with this rank's padding columns (past its count of the classes, up to ceil(C / N)) set to fill "
           "(-inf: out of the softmax); with columns (PartialFC's sampled shard columns), column j of x is shard "
           "column columns[j]");
  registry.add(std::move(mask));
}

void register_class_shard_cpu_kernels(KernelRegistry& registry) {
  registry.add("ShardLabels", DeviceType::kCpu, {DType::kInt64, DType::kInt32},
               [](const Node& node) { return std::make_unique<ShardLabelsKernel>(node); });
  registry.add("MaskShardPadding", DeviceType::kCpu, {DType::kFloat32, DType::kFloat64},
               [](const Node& node) { return std::make_unique<MaskShardPaddingKernel>(node); });
}

}  // namespace weir
