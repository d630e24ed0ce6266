#include "ops/loss/sharded_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "ops/dtype_dispatch.h"
#include "ops/loss/class_shards.h"
#include "ops/threading.h"

namespace weir {

namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64};

// The shapes every kernel of the family checks: logits [B, W], row_max,
// exp_sum and labels [B], labels in [-1, W).
struct Rows {
  int64_t rows = 0, width = 0;
  std::vector<int64_t> labels;
};

Rows rows_of(const KernelContext& ctx, size_t logits_index) {
  const Tensor& logits = ctx.input(logits_index);
  if (logits.sizes().size() != 2) ctx.fail("logits must be [batch, shard width], got " + logits.type_string());
  Rows r{logits.sizes()[0], logits.sizes()[1], {}};
  for (size_t i = logits_index + 1; i < logits_index + 3; ++i) {
    const Tensor& stat = ctx.input(i);
    if (stat.dtype() != logits.dtype() || stat.num_elements() != r.rows) {
      ctx.fail(std::string(i == logits_index + 1 ? "row_max" : "exp_sum") + " must be " +
               std::string(dtype_name(logits.dtype())) + "[" + std::to_string(r.rows) + "], got " + stat.type_string());
    }
  }
  r.labels = shard_column_labels(ctx, ctx.input(logits_index + 3), r.rows, r.width);
  return r;
}

class ShardedCrossEntropyKernel final : public OpKernel {
 public:
  explicit ShardedCrossEntropyKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Rows r = rows_of(ctx, 0);
    const Tensor& logits = ctx.input(0);
    Tensor& part = ctx.allocate_output(0, logits.dtype(), {r.rows}, KernelContext::Fill::kUninitialized);
    auto run = [&]<typename T>() {
      const T* x = logits.data<T>();
      const T* m = ctx.input(1).data<T>();
      const T* s = ctx.input(2).data<T>();
      T* out = part.data<T>();
      for (int64_t b = 0; b < r.rows; ++b) {
        const int64_t label = r.labels[static_cast<size_t>(b)];
        out[b] = label < 0 ? T(0)
                           : static_cast<T>(-(static_cast<double>(x[b * r.width + label]) - static_cast<double>(m[b]) -
                                              std::log(static_cast<double>(s[b]))));
      }
    };
    if (!dispatch_f32_f64(logits.dtype(), run)) ctx.fail("supports f32 and f64, got " + logits.type_string());
  }
};

class ShardedCrossEntropyGradKernel final : public OpKernel {
 public:
  explicit ShardedCrossEntropyGradKernel(const Node&) {}

  void compute(KernelContext& ctx) override {
    const Rows r = rows_of(ctx, 1);
    const Tensor& logits = ctx.input(1);
    const Tensor& dpart = ctx.input(0);
    if (dpart.dtype() != logits.dtype() || dpart.num_elements() != r.rows) {
      ctx.fail("dPart must be " + std::string(dtype_name(logits.dtype())) + "[" + std::to_string(r.rows) + "], got " +
               dpart.type_string());
    }
    Tensor& dlogits = ctx.allocate_output(0, logits.dtype(), logits.sizes(), KernelContext::Fill::kUninitialized);
    auto run = [&]<typename T>() {
      const T* x = logits.data<T>();
      const T* m = ctx.input(2).data<T>();
      const T* s = ctx.input(3).data<T>();
      const T* g = dpart.data<T>();
      T* out = dlogits.data<T>();
      const int64_t width = r.width;
      parallel_for(r.rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(width, 1)), [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const double scale = static_cast<double>(g[b]) / static_cast<double>(s[b]);
          const double shift = static_cast<double>(m[b]);
          for (int64_t j = 0; j < width; ++j) {
            out[b * width + j] = static_cast<T>(scale * std::exp(static_cast<double>(x[b * width + j]) - shift));
          }
          const int64_t label = r.labels[static_cast<size_t>(b)];
          if (label >= 0) out[b * width + label] = static_cast<T>(static_cast<double>(out[b * width + label]) - static_cast<double>(g[b]));
        }
      });
    };
    if (!dispatch_f32_f64(logits.dtype(), run)) ctx.fail("supports f32 and f64, got " + logits.type_string());
  }
};

void infer_rows(InferenceContext& ctx, size_t logits_index, bool per_row_output) {
  const TensorType* logits = ctx.input_type(logits_index);
  if (logits == nullptr) return;
  if (logits->shape.has_rank() && logits->shape.rank() != 2) {
    ctx.fail("logits must be [batch, shard width], got " + logits->shape.to_string());
  }
  for (size_t i = logits_index + 1; i < logits_index + 4; ++i) {
    const TensorType* t = ctx.input_type(i);
    if (t != nullptr && t->shape.has_rank() && t->shape.rank() != 1) {
      ctx.fail("input " + std::to_string(i) + " must be [batch], got " + t->shape.to_string());
    }
  }
  if (!per_row_output) {
    ctx.set_output_type(0, *logits);
  } else if (logits->shape.has_rank()) {
    ctx.set_output_type(0, {logits->dtype, Shape{logits->shape[0]}});
  } else {
    ctx.set_output_type(0, {logits->dtype, Shape::unknown_rank()});
  }
}

}  // namespace

void register_sharded_cross_entropy_schemas(OpRegistry& registry) {
  OpSchema forward("ShardedCrossEntropy");
  forward.input("logits", "T")
      .input("row_max", "T")
      .input("exp_sum", "T")
      .input("local_labels", "Tind")
      .output("part", "T")
      .type_constraint("T", kFloating)
      .type_constraint("Tind", {DType::kInt64, DType::kInt32})
      .traits(OpTrait::kFullPrecisionCompute)
      .infer([](InferenceContext& ctx) { infer_rows(ctx, 0, /*per_row_output=*/true); })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        ctx.set_input_grad(0, ctx.emit("ShardedCrossEntropyGrad",
                                       {grad, node.input(0), node.input(1), node.input(2), node.input(3)}, 1, {})[0]);
      })
      .doc("this rank's part of each row's softmax cross-entropy over classes sharded across ranks: "
           "-(logit[label] - row_max - log(exp_sum)) where it holds the label, else 0; gradient: the whole "
           "softmax's, exp(logit - row_max) / exp_sum - one_hot, times dPart");
  registry.add(std::move(forward));

  OpSchema backward("ShardedCrossEntropyGrad");
  backward.input("dPart", "T")
      .input("logits", "T")
      .input("row_max", "T")
      .input("exp_sum", "T")
      .input("local_labels", "Tind")
      .output("dLogits", "T")
      .type_constraint("T", kFloating)
      .type_constraint("Tind", {DType::kInt64, DType::kInt32})
      .infer([](InferenceContext& ctx) { infer_rows(ctx, 1, /*per_row_output=*/false); })
      .doc("dPart * (exp(logits - row_max) / exp_sum - one_hot(local_labels)), per row");
  registry.add(std::move(backward));
}

void register_sharded_cross_entropy_cpu_kernels(KernelRegistry& registry) {
  registry.add("ShardedCrossEntropy", DeviceType::kCpu, kFloating,
               [](const Node& node) { return std::make_unique<ShardedCrossEntropyKernel>(node); });
  registry.add("ShardedCrossEntropyGrad", DeviceType::kCpu, kFloating,
               [](const Node& node) { return std::make_unique<ShardedCrossEntropyGradKernel>(node); });
}

}  // namespace weir
