#include "ops/signal/window_functions.h"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/shape_inference.h"
#include "ops/signal/signal_output.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

struct Coefficients {
  const char* op;
  double a0, a1, a2;
};

constexpr Coefficients kHann{"HannWindow", 0.5, 0.5, 0.0};
constexpr Coefficients kHamming{"HammingWindow", 25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr Coefficients kBlackman{"BlackmanWindow", 0.42, 0.5, 0.08};

class WindowKernel final : public OpKernel {
 public:
  WindowKernel(const Node& node, Coefficients coefficients)
      : coefficients_(coefficients), periodic_(int_attr(node, "periodic", 1) != 0),
        output_dtype_(signal_output_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    std::vector<int64_t> values = index_values(ctx, ctx.input(0), "size");
    if (values.size() != 1) ctx.fail("size must be a scalar, got " + ctx.input(0).type_string());
    int64_t size = values[0];
    if (size < 0) ctx.fail("size must not be negative, got " + std::to_string(size));
    std::vector<double> window(static_cast<size_t>(size));
    const double period = static_cast<double>(periodic_ ? size : size - 1);
    for (int64_t n = 0; n < size; ++n) {
      double angle = 2.0 * std::numbers::pi * static_cast<double>(n) / period;
      window[static_cast<size_t>(n)] =
          period == 0 ? 1.0 : coefficients_.a0 - coefficients_.a1 * std::cos(angle) + coefficients_.a2 * std::cos(2.0 * angle);
    }
    store_doubles(ctx.allocate_output(0, output_dtype_, {size}, KernelContext::Fill::kUninitialized), window);
  }

 private:
  Coefficients coefficients_;
  bool periodic_;
  DType output_dtype_;
};

void infer_window(InferenceContext& ctx) {
  DType dtype = signal_output_dtype(ctx);
  check_scalar_input(ctx, 0, "size");
  Dim size = symbolic_dim(ctx, 0);
  if (std::optional<std::vector<int64_t>> values = constant_ints(ctx, 0); values && values->size() == 1) {
    if ((*values)[0] < 0) ctx.fail("size must not be negative, got " + std::to_string((*values)[0]));
    size = Dim((*values)[0]);
  }
  ctx.set_output_type(0, {dtype, Shape{size}});
}

void add_window_schema(OpRegistry& registry, const Coefficients& coefficients, const std::string& doc) {
  OpSchema schema(coefficients.op);
  schema.input("size", "T1").output("output", "T2")
      .type_constraint("T1", {DType::kInt32, DType::kInt64}).type_constraint("T2", kNumericDTypes)
      .attr("output_datatype", AttrType::kInt, Attribute(static_cast<int64_t>(DType::kFloat32)))
      .attr("periodic", AttrType::kInt, Attribute(int64_t{1}))
      .infer(infer_window)
      .doc(doc);
  registry.add(std::move(schema));
}

}  // namespace

void register_window_function_schemas(OpRegistry& registry) {
  add_window_schema(registry, kHann, "the [size] Hann window 0.5 - 0.5 cos(2 pi n / N), N = size (periodic) or size - 1");
  add_window_schema(registry, kHamming,
                    "the [size] Hamming window 25/46 - 21/46 cos(2 pi n / N), N = size (periodic) or size - 1");
  add_window_schema(registry, kBlackman,
                    "the [size] Blackman window 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N), N = size (periodic) "
                    "or size - 1");
}

void register_window_function_cpu_kernels(KernelRegistry& registry) {
  for (const Coefficients& coefficients : {kHann, kHamming, kBlackman}) {
    registry.add(coefficients.op, DeviceType::kCpu, {DType::kInt32, DType::kInt64},
                 [coefficients](const Node& node) { return std::make_unique<WindowKernel>(node, coefficients); });
  }
}

}  // namespace weir
