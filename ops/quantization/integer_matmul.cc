#include "ops/quantization/integer_matmul.h"

#include <algorithm>

#include "core/graph.h"
#include "core/shape.h"
#include "ops/elementwise/broadcast.h"
#include "ops/linalg/matmul_shapes.h"
#include "ops/quantization/dnnl_int8_matmul.h"
#include "ops/quantization/quantization_common.h"
#include "ops/shape_inference.h"
#include "ops/threading.h"

namespace weir {

namespace {


// NumPy matmul's shapes of A and B, each i8 or u8 (not necessarily the same).
MatmulShapes integer_matmul_shapes(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (!is_quantized_dtype(a.dtype()) || !is_quantized_dtype(b.dtype())) {
    ctx.fail("A and B must be i8 or u8, got " + a.type_string() + " and " + b.type_string());
  }
  return matmul_shapes_of_any_dtypes(ctx, a, b);
}

// The flat index in `sizes` (right-aligned against `out`, size-1 axes
// broadcast) of item `flat` of `out`.
int64_t broadcast_item(int64_t flat, const std::vector<int64_t>& out, const std::vector<int64_t>& sizes) {
  int64_t offset = 0, stride = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    size_t axis = out.size() - 1 - i;
    int64_t coordinate = flat % out[axis];
    flat /= out[axis];
    if (i < sizes.size()) {
      size_t own = sizes.size() - 1 - i;
      if (sizes[own] != 1) offset += coordinate * stride;
      stride *= sizes[own];
    }
  }
  return offset;
}

// Where a scale or zero point of one operand sits: one value (per tensor),
// or one per row of A ([M], or [..., M, 1] whose batch axes broadcast to A's)
// or per column of B ([N], or [..., 1, N]). index(item, position) is the
// value of the operand's batch item `item`, row or column `position`.
class OperandParams {
 public:
  OperandParams(const KernelContext& ctx, const Tensor& param, const std::vector<int64_t>& batch, int64_t length,
                bool rows, const std::string& name) {
    int64_t items = sizes_product(batch);
    if (param.num_elements() == 1) return;
    per_tensor_ = false;
    const std::vector<int64_t>& sizes = param.sizes();
    std::string expected = rows ? "[" + std::to_string(length) + "] or [..., " + std::to_string(length) + ", 1]"
                                : "[" + std::to_string(length) + "] or [..., 1, " + std::to_string(length) + "]";
    auto mismatch = [&] {
      ctx.fail(name + " " + param.type_string() + " must be one value or " + (rows ? "per row: " : "per column: ") +
               expected + " over batch " + format_sizes(batch));
    };
    std::vector<int64_t> param_batch;
    if (sizes.size() == 1) {
      if (sizes[0] != length) mismatch();
    } else {
      if (sizes.size() < 2 || sizes.size() - 2 > batch.size()) mismatch();
      int64_t along = rows ? sizes[sizes.size() - 2] : sizes.back();
      int64_t across = rows ? sizes.back() : sizes[sizes.size() - 2];
      if (along != length || across != 1) mismatch();
      param_batch.assign(sizes.begin(), sizes.end() - 2);
      for (size_t i = 0; i < param_batch.size(); ++i) {
        int64_t own = param_batch[param_batch.size() - 1 - i];
        if (own != 1 && own != batch[batch.size() - 1 - i]) mismatch();
      }
    }
    bases_.resize(static_cast<size_t>(items));
    for (int64_t item = 0; item < items; ++item) {
      bases_[static_cast<size_t>(item)] = broadcast_item(item, batch, param_batch) * length;
    }
  }

  int64_t index(int64_t item, int64_t position) const {
    return per_tensor_ ? 0 : bases_[static_cast<size_t>(item)] + position;
  }

 private:
  bool per_tensor_ = true;
  std::vector<int64_t> bases_;  // per batch item: the offset of its values
};

// The operand's (batch, rows, columns) minus its zero points, as int16.
// `per_row`: the zero point index runs along rows (A), else columns (B).
std::vector<int16_t> centered(const Tensor& x, int64_t items, int64_t rows, int64_t columns,
                              const std::vector<int32_t>& zero_points, const OperandParams& params, bool per_row) {
  std::vector<int16_t> out(static_cast<size_t>(items * rows * columns));
  auto run = [&]<typename Q>() {
    const Q* in = x.data<Q>();
    int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(columns, 1));
    parallel_for(items * rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t item = row / rows, r = row % rows, offset = row * columns;
        if (per_row) {
          const int64_t index = params.index(item, r);
          subtract_zero_points(
              in + offset, columns, zero_points, [index](int64_t) { return index; }, out.data() + offset);
        } else {
          subtract_zero_points(
              in + offset, columns, zero_points, [&](int64_t j) { return params.index(item, j); }, out.data() + offset);
        }
      }
    });
  };
  if (x.dtype() == DType::kInt8) {
    run.template operator()<int8_t>();
  } else {
    run.template operator()<uint8_t>();
  }
  return out;
}

// One operand's quantization: its zero points (zeros when absent) and where they lie.
struct OperandZeros {
  std::vector<int32_t> values{0};
  OperandParams params;
};

OperandZeros operand_zeros(const KernelContext& ctx, const Tensor* zero, DType dtype, const std::vector<int64_t>& batch,
                           int64_t length, bool rows, const std::string& name) {
  if (zero == nullptr) return {{0}, OperandParams(ctx, Tensor::scalar<int32_t>(0), batch, length, rows, name)};
  return {zero_point_values(ctx, *zero, dtype, name), OperandParams(ctx, *zero, batch, length, rows, name)};
}

// The i32 product of a and b centered on their zero points, into `out`
// (sized s.out_batch x m x n).
void integer_matmul(const Tensor& a, const Tensor& b, const MatmulShapes& s, const OperandZeros& a_zeros,
                    const OperandZeros& b_zeros, int32_t* out) {
  int64_t a_items = sizes_product(s.a_batch), b_items = sizes_product(s.b_batch);
  std::vector<int16_t> a16 = centered(a, a_items, s.m, s.k, a_zeros.values, a_zeros.params, /*per_row=*/true);
  std::vector<int16_t> b16 = centered(b, b_items, s.k, s.n, b_zeros.values, b_zeros.params, /*per_row=*/false);
  int64_t items = sizes_product(s.out_batch);
  std::vector<IntGemmItem> gemm(static_cast<size_t>(items));
  for (int64_t o = 0; o < items; ++o) {
    int64_t ia = broadcast_item(o, s.out_batch, s.a_batch), ib = broadcast_item(o, s.out_batch, s.b_batch);
    gemm[static_cast<size_t>(o)] = {a16.data() + ia * s.m * s.k, b16.data() + ib * s.k * s.n, out + o * s.m * s.n};
  }
  int_gemm(s.m, s.n, s.k, gemm);
}

// Whether oneDNN can take this product: B s8 with rank <= 2 (A's batch axes
// then fold into rows) and zero points all 0, A's zero point (and scale)
// one value; and the reference loops are not forced.
bool dnnl_eligible(const Tensor& b, const MatmulShapes& s, const OperandZeros& a_zeros, const OperandZeros& b_zeros) {
  if (quantized_reference_forced() || b.dtype() != DType::kInt8 || b.rank() > 2 || !s.b_batch.empty()) return false;
  if (a_zeros.values.size() != 1) return false;
  return std::all_of(b_zeros.values.begin(), b_zeros.values.end(), [](int32_t z) { return z == 0; });
}

bool is_constant_input(const Node& node, size_t index) {
  return node.num_inputs() > index && node.input(index) != nullptr && node.input(index)->is_constant();
}

class MatMulIntegerKernel final : public OpKernel {
 public:
  explicit MatMulIntegerKernel(const Node& node) : constant_b_(is_constant_input(node, 1)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    MatmulShapes s = integer_matmul_shapes(ctx, a, b);
    OperandZeros a_zeros = operand_zeros(ctx, ctx.has_input(2) ? &ctx.input(2) : nullptr, a.dtype(), s.a_batch, s.m,
                                         /*rows=*/true, "a_zero_point");
    OperandZeros b_zeros = operand_zeros(ctx, ctx.has_input(3) ? &ctx.input(3) : nullptr, b.dtype(), s.b_batch, s.n,
                                         /*rows=*/false, "b_zero_point");
    Tensor& y = ctx.allocate_output(0, DType::kInt32, s.out_sizes, KernelContext::Fill::kUninitialized);
    if (dnnl_eligible(b, s, a_zeros, b_zeros)) {
      Int8MatmulSetup setup{a.dtype(), DType::kInt32, {}, a_zeros.values[0] != 0, false};
      if (dnnl_.run(sizes_product(s.a_batch) * s.m, s.k, s.n, setup,
                    {a.raw_data(), a_zeros.values[0], b.data<int8_t>(), 0, y.raw_data()}, constant_b_)) {
        return;
      }
    }
    integer_matmul(a, b, s, a_zeros, b_zeros, y.data<int32_t>());
  }


  std::vector<PackedConstant> packed_constants() const override { return dnnl_.packed_weights(); }
  void adopt_packed_constants(std::vector<PackedConstant> packs) override {
    dnnl_.adopt_packed_weights(std::move(packs));
  }

 private:
  bool constant_b_;
  DnnlInt8Matmul dnnl_;
};

class QLinearMatMulKernel final : public OpKernel {
 public:
  explicit QLinearMatMulKernel(const Node& node) : constant_b_(is_constant_input(node, 3)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(3);
    MatmulShapes s = integer_matmul_shapes(ctx, a, b);
    check_pair(ctx, ctx.input(1), ctx.input(2), "a_scale", "a_zero_point");
    check_pair(ctx, ctx.input(4), ctx.input(5), "b_scale", "b_zero_point");
    OperandZeros a_zeros = operand_zeros(ctx, &ctx.input(2), a.dtype(), s.a_batch, s.m, true, "a_zero_point");
    OperandZeros b_zeros = operand_zeros(ctx, &ctx.input(5), b.dtype(), s.b_batch, s.n, false, "b_zero_point");
    std::vector<float> a_scales = scale_values(ctx, ctx.input(1), "a_scale");
    std::vector<float> b_scales = scale_values(ctx, ctx.input(4), "b_scale");
    const Tensor& y_scale = ctx.input(6);
    const Tensor& y_zero = ctx.input(7);
    if (y_scale.num_elements() != 1 || y_zero.num_elements() != 1) {
      ctx.fail("y_scale " + y_scale.type_string() + " and y_zero_point " + y_zero.type_string() +
               " must be one value each");
    }
    if (!is_quantized_dtype(y_zero.dtype())) ctx.fail("y_zero_point " + y_zero.type_string() + " must be i8 or u8");
    const float out_scale = scale_values(ctx, y_scale, "y_scale")[0];
    const int32_t out_zero = zero_point_values(ctx, y_zero, y_zero.dtype(), "y_zero_point")[0];

    const int64_t items = sizes_product(s.out_batch), per_item = s.m * s.n;
    Tensor& y = ctx.allocate_output(0, y_zero.dtype(), s.out_sizes, KernelContext::Fill::kUninitialized);
    if (a_scales.size() == 1 && dnnl_eligible(b, s, a_zeros, b_zeros)) {
      // As the reference computes them: (a_scale * b_scale) / y_scale in f32.
      std::vector<float> multipliers;
      if (b_scales.size() == 1) {
        multipliers.push_back(a_scales[0] * b_scales[0] / out_scale);
      } else {
        for (int64_t j = 0; j < s.n; ++j) {
          multipliers.push_back(a_scales[0] * b_scales[static_cast<size_t>(b_zeros.params.index(0, j))] / out_scale);
        }
      }
      Int8MatmulSetup setup{a.dtype(), y_zero.dtype(), multipliers, a_zeros.values[0] != 0, out_zero != 0};
      if (dnnl_.run(sizes_product(s.a_batch) * s.m, s.k, s.n, setup,
                    {a.raw_data(), a_zeros.values[0], b.data<int8_t>(), out_zero, y.raw_data()}, constant_b_)) {
        return;
      }
    }
    std::vector<int32_t> acc(static_cast<size_t>(items * per_item));
    integer_matmul(a, b, s, a_zeros, b_zeros, acc.data());
    auto run = [&]<typename Q>() {
      Q* out = y.data<Q>();
      int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(s.n, 1));
      parallel_for(items * s.m, grain, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          int64_t o = row / s.m, i = row % s.m;
          int64_t ia = broadcast_item(o, s.out_batch, s.a_batch), ib = broadcast_item(o, s.out_batch, s.b_batch);
          const float a_scale = a_scales[static_cast<size_t>(a_zeros.params.index(ia, i))];
          for (int64_t j = 0; j < s.n; ++j) {
            float multiplier = a_scale * b_scales[static_cast<size_t>(b_zeros.params.index(ib, j))] / out_scale;
            out[row * s.n + j] = requantize<Q>(acc[static_cast<size_t>(row * s.n + j)], multiplier, out_zero);
          }
        }
      });
    };
    if (y_zero.dtype() == DType::kInt8) {
      run.template operator()<int8_t>();
    } else {
      run.template operator()<uint8_t>();
    }
  }


  std::vector<PackedConstant> packed_constants() const override { return dnnl_.packed_weights(); }
  void adopt_packed_constants(std::vector<PackedConstant> packs) override {
    dnnl_.adopt_packed_weights(std::move(packs));
  }

 private:
  // A scale and its zero point must have the same shape (one value each counts as the same).
  static void check_pair(const KernelContext& ctx, const Tensor& scale, const Tensor& zero, const char* scale_name,
                         const char* zero_name) {
    if ((scale.num_elements() != 1 || zero.num_elements() != 1) && scale.sizes() != zero.sizes()) {
      ctx.fail(std::string(zero_name) + " " + zero.type_string() + " must have the shape of " + scale_name + " " +
               scale.type_string());
    }
  }

  bool constant_b_;
  DnnlInt8Matmul dnnl_;
};

// Output type of a matmul of inputs `a_index` and `b_index`, NumPy's rules.
void infer_integer_matmul(InferenceContext& ctx, size_t a_index, size_t b_index, DType dtype) {
  const TensorType* a = ctx.input_type(a_index);
  const TensorType* b = ctx.input_type(b_index);
  if (a == nullptr || b == nullptr) return;
  if (!a->shape.has_rank() || !b->shape.has_rank()) {
    ctx.set_output_type(0, {dtype, Shape::unknown_rank()});
    return;
  }
  if (a->shape.rank() == 0 || b->shape.rank() == 0) {
    ctx.fail("inputs must have rank >= 1, got " + a->shape.to_string() + " and " + b->shape.to_string());
  }
  std::vector<Dim> da = a->shape.dims(), db = b->shape.dims();
  bool a_vector = da.size() == 1, b_vector = db.size() == 1;
  if (a_vector) da.insert(da.begin(), Dim(1));
  if (b_vector) db.push_back(Dim(1));
  const Dim &k_a = da.back(), &k_b = db[db.size() - 2];
  if (k_a.is_static() && k_b.is_static() && k_a.size() != k_b.size()) {
    ctx.fail("inner dimensions of " + a->shape.to_string() + " and " + b->shape.to_string() + " differ (" +
             std::to_string(k_a.size()) + " vs " + std::to_string(k_b.size()) + ")");
  }
  Shape batch = broadcast_shapes(Shape(std::vector<Dim>(da.begin(), da.end() - 2)),
                                 Shape(std::vector<Dim>(db.begin(), db.end() - 2)), ctx);
  std::vector<Dim> out = batch.dims();
  if (!a_vector) out.push_back(da[da.size() - 2]);
  if (!b_vector) out.push_back(db.back());
  ctx.set_output_type(0, {dtype, Shape(std::move(out))});
}

}  // namespace

void register_integer_matmul_schemas(OpRegistry& registry) {
  OpSchema integer("MatMulInteger");
  integer.input("A", "T1")
      .input("B", "T2")
      .input("a_zero_point", "T1", Arity::kOptional)
      .input("b_zero_point", "T2", Arity::kOptional)
      .output("Y", "T3")
      .type_constraint("T1", kQuantizedDTypes)
      .type_constraint("T2", kQuantizedDTypes)
      .type_constraint("T3", {DType::kInt32})
      .infer([](InferenceContext& ctx) { infer_integer_matmul(ctx, 0, 1, DType::kInt32); })
      .doc(
          "(A - a_zero_point)(B - b_zero_point) in i32 with NumPy matmul semantics; zero points per tensor, per "
          "row of A, per column of B");
  registry.add(std::move(integer));

  OpSchema qlinear("QLinearMatMul");
  qlinear.input("a", "T1")
      .input("a_scale", "F")
      .input("a_zero_point", "T1")
      .input("b", "T2")
      .input("b_scale", "F")
      .input("b_zero_point", "T2")
      .input("y_scale", "F")
      .input("y_zero_point", "T3")
      .output("y", "T3")
      .type_constraint("T1", kQuantizedDTypes)
      .type_constraint("T2", kQuantizedDTypes)
      .type_constraint("T3", kQuantizedDTypes)
      .type_constraint("F", {DType::kFloat32})
      .infer([](InferenceContext& ctx) {
        const TensorType* zero = ctx.input_type(7);
        if (zero == nullptr) return;
        infer_integer_matmul(ctx, 0, 3, zero->dtype);
      })
      .doc(
          "the i32 product of a and b centered on their zero points, requantized: saturate(round(acc * a_scale * "
          "b_scale / y_scale) + y_zero_point), halves to even");
  registry.add(std::move(qlinear));
}

void register_integer_matmul_cpu_kernels(KernelRegistry& registry) {
  registry.add("MatMulInteger", DeviceType::kCpu, kQuantizedDTypes,
               [](const Node& node) { return std::make_unique<MatMulIntegerKernel>(node); });
  registry.add("QLinearMatMul", DeviceType::kCpu, kQuantizedDTypes,
               [](const Node& node) { return std::make_unique<QLinearMatMulKernel>(node); });
}

}  // namespace weir
