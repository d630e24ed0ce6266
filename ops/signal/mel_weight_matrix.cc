#include "ops/signal/mel_weight_matrix.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"
#include "ops/signal/signal_output.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

int64_t scalar_int(const KernelContext& ctx, size_t index, const char* what) {
  std::vector<int64_t> values = index_values(ctx, ctx.input(index), what);
  if (values.size() != 1) ctx.fail(std::string(what) + " must be a scalar, got " + ctx.input(index).type_string());
  return values[0];
}

double scalar_float(const KernelContext& ctx, size_t index, const char* what) {
  const Tensor& t = ctx.input(index);
  if (t.num_elements() != 1) ctx.fail(std::string(what) + " must be a scalar, got " + t.type_string());
  double value = 0;
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_floating_point_v<ComputeType<T>>) {
      value = static_cast<double>(load(t.data<T>()[0]));
    } else {
      ctx.fail(std::string(what) + " must be floating point, got " + t.type_string());
    }
  });
  return value;
}

double hertz_to_mel(double hertz) { return 2595.0 * std::log10(1.0 + hertz / 700.0); }
double mel_to_hertz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

class MelWeightMatrixKernel final : public OpKernel {
 public:
  explicit MelWeightMatrixKernel(const Node& node) : output_dtype_(signal_output_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const int64_t mel_bins = scalar_int(ctx, 0, "num_mel_bins");
    const int64_t dft_length = scalar_int(ctx, 1, "dft_length");
    const int64_t sample_rate = scalar_int(ctx, 2, "sample_rate");
    const double lower = scalar_float(ctx, 3, "lower_edge_hertz");
    const double upper = scalar_float(ctx, 4, "upper_edge_hertz");
    if (mel_bins < 1) ctx.fail("num_mel_bins must be at least 1, got " + std::to_string(mel_bins));
    if (dft_length < 1) ctx.fail("dft_length must be at least 1, got " + std::to_string(dft_length));
    if (sample_rate < 1) ctx.fail("sample_rate must be at least 1, got " + std::to_string(sample_rate));
    if (!(lower >= 0 && lower <= upper && std::isfinite(upper))) {
      ctx.fail("needs 0 <= lower_edge_hertz <= upper_edge_hertz, got " + std::to_string(lower) + " and " + std::to_string(upper));
    }
    const int64_t rows = dft_length / 2 + 1;
    // The num_mel_bins + 2 triangle edges as spectrogram bins.
    const double low_mel = hertz_to_mel(lower);
    const double mel_step = (hertz_to_mel(upper) - low_mel) / static_cast<double>(mel_bins + 2);
    std::vector<int64_t> edges(static_cast<size_t>(mel_bins + 2));
    for (int64_t e = 0; e < mel_bins + 2; ++e) {
      double hertz = mel_to_hertz(static_cast<double>(e) * mel_step + low_mel);
      double bin = std::floor(static_cast<double>(dft_length + 1) * hertz / static_cast<double>(sample_rate));
      if (!(bin < 4.0e18)) ctx.fail("upper_edge_hertz " + std::to_string(upper) + " lies too far past the spectrogram's bins");
      edges[static_cast<size_t>(e)] = static_cast<int64_t>(bin);
    }
    std::vector<double> matrix(static_cast<size_t>(rows * mel_bins), 0.0);
    // Edges are not negative (lower_edge_hertz is not); rows past the last are dropped.
    auto set = [&](int64_t row, int64_t column, double value) { matrix[static_cast<size_t>(row * mel_bins + column)] = value; };
    for (int64_t i = 0; i < mel_bins; ++i) {
      const int64_t low = edges[static_cast<size_t>(i)], center = edges[static_cast<size_t>(i + 1)],
                    high = edges[static_cast<size_t>(i + 2)];
      if (center == low) {
        if (center < rows) set(center, i, 1.0);
      } else {
        for (int64_t j = low; j <= std::min(center, rows - 1); ++j) {
          set(j, i, static_cast<double>(j - low) / static_cast<double>(center - low));
        }
      }
      for (int64_t j = center; j < std::min(high, rows); ++j) set(j, i, static_cast<double>(high - j) / static_cast<double>(high - center));
    }
    store_doubles(ctx.allocate_output(0, output_dtype_, {rows, mel_bins}, KernelContext::Fill::kUninitialized), matrix);
  }

 private:
  DType output_dtype_;
};

void infer_mel_weight_matrix(InferenceContext& ctx) {
  DType dtype = signal_output_dtype(ctx);
  const char* names[] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"};
  for (size_t i = 0; i < 5; ++i) check_scalar_input(ctx, i, names[i]);
  Dim rows = symbolic_dim(ctx, 0), columns = symbolic_dim(ctx, 1);
  if (std::optional<std::vector<int64_t>> bins = constant_ints(ctx, 0); bins && bins->size() == 1 && (*bins)[0] >= 1) {
    columns = Dim((*bins)[0]);
  }
  if (std::optional<std::vector<int64_t>> length = constant_ints(ctx, 1); length && length->size() == 1 && (*length)[0] >= 1) {
    rows = Dim((*length)[0] / 2 + 1);
  }
  ctx.set_output_type(0, {dtype, Shape{rows, columns}});
}

}  // namespace

void register_mel_weight_matrix_schema(OpRegistry& registry) {
  OpSchema schema("MelWeightMatrix");
  schema.input("num_mel_bins", "T1").input("dft_length", "T1").input("sample_rate", "T1")
      .input("lower_edge_hertz", "T2").input("upper_edge_hertz", "T2").output("output", "T3")
      .type_constraint("T1", {DType::kInt32, DType::kInt64}).type_constraint("T2", kFloatDTypes)
      .type_constraint("T3", kNumericDTypes)
      .attr("output_datatype", AttrType::kInt, Attribute(static_cast<int64_t>(DType::kFloat32)))
      .infer(infer_mel_weight_matrix)
      .doc("[dft_length / 2 + 1, num_mel_bins] triangular filters, equally spaced on the mel scale between the edges");
  registry.add(std::move(schema));
}

void register_mel_weight_matrix_cpu_kernel(KernelRegistry& registry) {
  registry.add("MelWeightMatrix", DeviceType::kCpu, {DType::kInt32, DType::kInt64},
               [](const Node& node) { return std::make_unique<MelWeightMatrixKernel>(node); });
}

}  // namespace weir
