#include "ops/nn/dropout.h"

#include <atomic>
#include <memory>

#include "core/splitmix.h"
#include "ops/dtype_dispatch.h"
#include "ops/threading.h"

namespace weir {

namespace {

const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

uint64_t mix(uint64_t z) { return splitmix64_mix(z); }

// CPU inputs are in host memory already.
Tensor as_is(const Tensor& t, const char*) { return t; }

double scalar_of(const KernelContext& ctx, size_t index, double fallback) {
  return dropout_scalar(ctx, index, fallback, "", as_is);
}

double checked_ratio(const KernelContext& ctx, size_t index) { return dropout_ratio(ctx, index, as_is); }

class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(const Node& node) : seed_(dropout_seed(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    double ratio = checked_ratio(ctx, 1);
    bool training = scalar_of(ctx, 2, 0) != 0 && ratio > 0;
    bool want_mask = ctx.num_outputs() > 1;
    if (!training) {
      ctx.set_output(0, x);
      if (want_mask) {
        Tensor& mask = ctx.allocate_output(1, DType::kBool, x.sizes(), KernelContext::Fill::kUninitialized);
        std::fill_n(mask.data<bool>(), mask.num_elements(), true);
      }
      return;
    }
    uint64_t run = ctx.rng_counter().value_or(runs_.fetch_add(1));
    uint64_t stream = dropout_stream_key(seed_, run);
    // keep when the top 53 bits, as a fraction in [0, 1), are >= ratio
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    Tensor mask_storage = want_mask ? Tensor() : Tensor::uninitialized(DType::kBool, x.sizes());
    Tensor& mask = want_mask ? ctx.allocate_output(1, DType::kBool, x.sizes(), KernelContext::Fill::kUninitialized)
                             : mask_storage;
    bool* keep = mask.data<bool>();
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        using C = ComputeType<T>;
        const T* in = x.data<T>();
        T* out = y.data<T>();
        const C scale = static_cast<C>(1.0 / (1.0 - ratio));
        parallel_for(x.num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            double u = static_cast<double>(mix(stream + static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53;
            keep[i] = u >= ratio;
            out[i] = keep[i] ? store<T>(load(in[i]) * scale) : store<T>(C(0));
          }
        });
      } else {
        ctx.fail("needs a floating-point input, got " + x.type_string());
      }
    });
  }

 private:
  uint64_t seed_;
  std::atomic<uint64_t> runs_{0};
};

// DropoutGrad(dY, mask, ratio?, training_mode?) = dY * mask / (1 - ratio) in training, else dY.
class DropoutGradKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& mask = ctx.input(1);
    double ratio = checked_ratio(ctx, 2);
    bool training = scalar_of(ctx, 3, 0) != 0 && ratio > 0;
    if (!training) {
      ctx.set_output(0, dy);
      return;
    }
    check_dropout_mask(ctx, mask, dy);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.sizes(), KernelContext::Fill::kUninitialized);
    dispatch_dtype(dy.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        using C = ComputeType<T>;
        const C scale = static_cast<C>(1.0 / (1.0 - ratio));
        const T* g = dy.data<T>();
        const bool* keep = mask.data<bool>();
        T* out = dx.data<T>();
        for (int64_t i = 0; i < dy.num_elements(); ++i) out[i] = keep[i] ? store<T>(load(g[i]) * scale) : store<T>(C(0));
      }
    });
  }
};

}  // namespace

uint64_t dropout_seed(const Node& node) { return static_cast<uint64_t>(node.has_attr("seed") ? node.attr("seed").i() : 0); }

uint64_t dropout_stream_key(uint64_t seed, uint64_t run) { return mix(seed ^ mix(run + 0x9E3779B97F4A7C15ULL)); }

double dropout_scalar(const KernelContext& ctx, size_t index, double fallback, const char* what, const HostTensorFn& on_host) {
  if (!ctx.has_input(index)) return fallback;
  if (ctx.input(index).num_elements() != 1) {
    ctx.fail("input " + std::to_string(index) + " must be a scalar, got " + ctx.input(index).type_string());
  }
  const Tensor t = on_host(ctx.input(index), what);
  double value = 0;
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) value = t.data<bool>()[0] ? 1 : 0;
    else value = static_cast<double>(load(t.data<T>()[0]));
  });
  return value;
}

double dropout_ratio(const KernelContext& ctx, size_t index, const HostTensorFn& on_host) {
  double ratio = dropout_scalar(ctx, index, 0.5, "ratio", on_host);
  if (!(ratio >= 0 && ratio < 1)) ctx.fail("ratio must be in [0, 1), got " + std::to_string(ratio));
  return ratio;
}

void check_dropout_mask(const KernelContext& ctx, const Tensor& mask, const Tensor& dy) {
  if (mask.dtype() != DType::kBool || mask.sizes() != dy.sizes()) {
    ctx.fail("mask " + mask.type_string() + " must be bool shaped like dY " + dy.type_string());
  }
}

void register_dropout_schemas(OpRegistry& registry) {
  OpSchema dropout("Dropout");
  dropout.input("data", "T").input("ratio", "T1", Arity::kOptional).input("training_mode", "T2", Arity::kOptional)
      .output("output", "T").output("mask", "T2", Arity::kOptional)
      .type_constraint("T", kFloating).type_constraint("T1", kFloating).type_constraint("T2", {DType::kBool})
      .attr("seed", AttrType::kInt)
      .traits(OpTrait::kStateful | OpTrait::kViewOfInput)
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        if (x == nullptr) return;
        ctx.set_output_type(0, *x);
        if (ctx.num_outputs() > 1) ctx.set_output_type(1, {DType::kBool, x->shape});
      })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        if (node.num_outputs() < 2 || node.output(1) == nullptr) {
          throw Error(ErrorKind::kUnsupported, "Dropout '" + node.name() +
                                                   "': its gradient needs the mask output; give the node two outputs")
              .with_node(node.name());
        }
        std::vector<Value*> inputs = {grad, node.output(1)};
        for (size_t i = 1; i < 3; ++i) inputs.push_back(i < node.num_inputs() ? node.input(i) : nullptr);
        ctx.set_input_grad(0, ctx.emit("DropoutGrad", inputs)[0]);
      })
      .doc("zeroes elements with probability ratio (default 0.5) and scales the rest by 1 / (1 - ratio) when "
           "training_mode is true; the identity otherwise");
  registry.add(std::move(dropout));

  OpSchema grad("DropoutGrad");
  grad.input("dY", "T").input("mask", "T2").input("ratio", "T1", Arity::kOptional)
      .input("training_mode", "T2", Arity::kOptional).output("dX", "T")
      .type_constraint("T", kFloating).type_constraint("T1", kFloating).type_constraint("T2", {DType::kBool})
      .infer([](InferenceContext& ctx) {
        if (const TensorType* dy = ctx.input_type(0)) ctx.set_output_type(0, *dy);
      })
      .doc("dY * mask / (1 - ratio) in training, dY otherwise: the gradient of Dropout");
  registry.add(std::move(grad));
}

void register_dropout_cpu_kernels(KernelRegistry& registry) {
  registry.add("Dropout", DeviceType::kCpu, kFloating, [](const Node& node) { return std::make_unique<DropoutKernel>(node); });
  registry.add("DropoutGrad", DeviceType::kCpu, kFloating, [](const Node&) { return std::make_unique<DropoutGradKernel>(); });
}

}  // namespace weir
