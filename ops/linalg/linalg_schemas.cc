#include "ops/linalg/linalg_schemas.h"

#include "ops/elementwise/fused_activation.h"

#include "core/error.h"
#include "core/graph.h"
#include "ops/gradient_util.h"
#include "ops/shape_inference.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

const std::vector<DType> kMatmulTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                         DType::kBFloat16, DType::kInt32, DType::kInt64};

void check_inner(const Dim& a, const Dim& b, const Shape& sa, const Shape& sb, const InferenceContext& ctx) {
  if (a.is_static() && b.is_static() && a.size() != b.size()) {
    ctx.fail("inner dimensions of " + sa.to_string() + " and " + sb.to_string() + " differ (" +
             std::to_string(a.size()) + " vs " + std::to_string(b.size()) + ")");
  }
}

void infer_matmul(InferenceContext& ctx) {
  const TensorType* a = ctx.input_type(0);
  const TensorType* b = ctx.input_type(1);
  if (a == nullptr || b == nullptr) return;
  if (!a->shape.has_rank() || !b->shape.has_rank()) {
    ctx.set_output_type(0, TensorType{a->dtype, Shape::unknown_rank()});
    return;
  }
  if (a->shape.rank() == 0 || b->shape.rank() == 0) ctx.fail("MatMul inputs must have rank >= 1");
  // 1-D operands are promoted to matrices, and the added axis removed after.
  std::vector<Dim> da = a->shape.dims();
  std::vector<Dim> db = b->shape.dims();
  bool a_vector = da.size() == 1;
  bool b_vector = db.size() == 1;
  if (a_vector) da.insert(da.begin(), Dim(1));
  if (b_vector) db.push_back(Dim(1));
  check_inner(da.back(), db[db.size() - 2], a->shape, b->shape, ctx);
  Shape batch = broadcast_shapes(Shape(std::vector<Dim>(da.begin(), da.end() - 2)),
                                 Shape(std::vector<Dim>(db.begin(), db.end() - 2)), ctx);
  std::vector<Dim> out = batch.dims();
  if (!a_vector) out.push_back(da[da.size() - 2]);
  if (!b_vector) out.push_back(db.back());
  ctx.set_output_type(0, TensorType{a->dtype, Shape(std::move(out))});
}

void infer_gemm(InferenceContext& ctx) {
  const TensorType* a = ctx.input_type(0);
  const TensorType* b = ctx.input_type(1);
  if (a == nullptr || b == nullptr) return;
  if (!a->shape.has_rank() || !b->shape.has_rank()) return;
  if (a->shape.rank() != 2 || b->shape.rank() != 2) {
    ctx.fail("Gemm needs 2-D A and B, got " + a->shape.to_string() + " and " + b->shape.to_string());
  }
  bool trans_a = ctx.attr_int("transA") != 0;
  bool trans_b = ctx.attr_int("transB") != 0;
  const Dim& m = a->shape[trans_a ? 1 : 0];
  const Dim& k_a = a->shape[trans_a ? 0 : 1];
  const Dim& k_b = b->shape[trans_b ? 1 : 0];
  const Dim& n = b->shape[trans_b ? 0 : 1];
  check_inner(k_a, k_b, a->shape, b->shape, ctx);
  Shape out{m, n};
  DType dtype = inferred_output_dtype(ctx, a->dtype);
  const TensorType* c = ctx.input_type(2);
  if (c != nullptr && dtype != a->dtype) ctx.fail("a Gemm with a wider output_dtype than its inputs takes no C");
  if (c != nullptr && c->shape.has_rank()) {
    Shape broadcast = broadcast_shapes(out, c->shape, ctx);
    if (broadcast.rank() != 2) ctx.fail("Gemm's C " + c->shape.to_string() + " does not broadcast to " + out.to_string());
  }
  ctx.set_output_type(0, TensorType{dtype, out});
}

// Transpose of the last two axes of a rank-`rank` value.
Value* swap_last_two(GradientContext& ctx, Value* value, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
  return ctx.emit("Transpose", {value}, 1, {{"perm", Attribute(perm)}})[0];
}

// Y = A B: dA = dY B^T and dB = A^T dY, each summed over the batch axes its
// input was broadcast along. A 1-D operand is promoted as the forward op does
// ([K] -> [1, K] for A, [K, 1] for B), so dY gains the axis the forward op
// dropped, and the promoted gradient loses it again.
void matmul_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  Value* a = ctx.node().input(0);
  Value* b = ctx.node().input(1);
  const Shape& y = ctx.node().output(0)->shape();
  if (!a->shape().has_rank() || !b->shape().has_rank() || !y.has_rank()) {
    throw Error(ErrorKind::kUnsupported, "MatMul gradient needs inputs of known rank").with_node(ctx.node().name());
  }
  bool vector_a = a->shape().rank() == 1, vector_b = b->shape().rank() == 1;
  if (a->shape().rank() == 2 && b->shape().rank() == 2) {
    // Plain matrices: Gemm reads the operands transposed in place, so no
    // Transpose copies (of a weight matrix, in every training step).
    auto gemm = [&](Value* x, Value* z, int64_t trans_x, int64_t trans_z) {
      return ctx.emit("Gemm", {x, z}, 1, {{"transA", Attribute(trans_x)}, {"transB", Attribute(trans_z)}})[0];
    };
    ctx.set_input_grad(0, gemm(grad, b, 0, 1));
    ctx.set_input_grad(1, gemm(a, grad, 1, 0));
    return;
  }
  auto unsqueeze = [&](Value* value, std::vector<int64_t> axes) {
    return ctx.emit("Unsqueeze", {value}, 1, {{"axes", Attribute(std::move(axes))}})[0];
  };
  auto squeeze = [&](Value* value, int64_t axis) {
    return ctx.emit("Squeeze", {value}, 1, {{"axes", Attribute(std::vector<int64_t>{axis})}})[0];
  };
  Value* a2 = vector_a ? unsqueeze(a, {0}) : a;
  Value* b2 = vector_b ? unsqueeze(b, {1}) : b;
  std::vector<int64_t> dropped;
  if (vector_a) dropped.push_back(-2);
  if (vector_b) dropped.push_back(-1);
  Value* grad2 = dropped.empty() ? grad : unsqueeze(grad, dropped);
  int64_t rank_a = std::max<int64_t>(a->shape().rank(), 2), rank_b = std::max<int64_t>(b->shape().rank(), 2);
  std::vector<Dim> y_dims = y.dims();
  if (vector_a) y_dims.insert(y_dims.end() - (vector_b ? 0 : 1), Dim(1));
  if (vector_b) y_dims.push_back(Dim(1));
  // An input was broadcast when its batch axes differ from the output's.
  auto batch = [](const std::vector<Dim>& dims, size_t rank) {
    return std::vector<Dim>(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(rank - 2));
  };
  Value* full_da = ctx.emit("MatMul", {grad2, swap_last_two(ctx, b2, rank_b)})[0];
  Value* full_db = ctx.emit("MatMul", {swap_last_two(ctx, a2, rank_a), grad2})[0];
  if (vector_a) full_da = squeeze(full_da, -2);
  if (vector_b) full_db = squeeze(full_db, -1);
  std::vector<Dim> y_batch = batch(y_dims, y_dims.size());
  bool broadcast_a = vector_a ? !y_batch.empty() : batch(a->shape().dims(), a->shape().dims().size()) != y_batch;
  bool broadcast_b = vector_b ? !y_batch.empty() : batch(b->shape().dims(), b->shape().dims().size()) != y_batch;
  ctx.set_input_grad(0, sum_to_input_shape(ctx, full_da, 0, broadcast_a));
  ctx.set_input_grad(1, sum_to_input_shape(ctx, full_db, 1, broadcast_b));
}

// Y = alpha op(A) op(B) + beta C. Each product gradient is one Gemm whose
// transpose flags undo op(); C's is beta dY summed to C's shape.
void gemm_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  const Node& node = ctx.node();
  auto flag = [&](const char* name) { return node.has_attr(name) ? node.attr(name).i() : int64_t{0}; };
  double alpha = node.has_attr("alpha") ? node.attr("alpha").f() : 1.0;
  double beta = node.has_attr("beta") ? node.attr("beta").f() : 1.0;
  int64_t trans_a = flag("transA"), trans_b = flag("transB");
  Value* a = node.input(0);
  Value* b = node.input(1);
  auto gemm = [&](Value* x, Value* y, int64_t tx, int64_t ty) {
    return ctx.emit("Gemm", {x, y}, 1, {{"alpha", Attribute(alpha)}, {"transA", Attribute(tx)}, {"transB", Attribute(ty)}})[0];
  };
  // dA = alpha dY op(B)^T, stored transposed when transA.
  ctx.set_input_grad(0, trans_a ? gemm(b, grad, trans_b, 1) : gemm(grad, b, 0, 1 - trans_b));
  // dB = alpha op(A)^T dY, stored transposed when transB.
  ctx.set_input_grad(1, trans_b ? gemm(grad, a, 1, trans_a) : gemm(a, grad, 1 - trans_a, 0));
  if (node.num_inputs() > 2 && node.input(2) != nullptr) {
    Value* scaled = grad;
    if (beta != 1.0) {
      scaled = ctx.emit("Mul", {grad, scalar_constant(ctx.graph(), grad->dtype() == DType::kUndefined
                                                                       ? node.output(0)->dtype() : grad->dtype(),
                                                      beta, node.name() + "_beta")})[0];
    }
    bool same = node.input(2)->shape().has_rank() && node.input(2)->shape() == node.output(0)->shape();
    ctx.set_input_grad(2, sum_to_input_shape(ctx, scaled, 2, !same));
  }
}

}  // namespace

void register_linalg_schemas(OpRegistry& registry) {
  OpSchema matmul("MatMul");
  matmul.input("A", "T")
      .input("B", "T")
      .output("Y", "T")
      .type_constraint("T", kMatmulTypes)
      .infer(infer_matmul)
      .gradient(matmul_gradient)
      .add_traits(OpTrait::kLowPrecisionCompute)
      .doc("Matrix product with NumPy semantics: batched, broadcast, 1-D operands promoted");
  registry.add(std::move(matmul));

  OpSchema gemm("Gemm");
  gemm.input("A", "T")
      .input("B", "T")
      .input("C", "T", Arity::kOptional)
      .output("Y", "")
      .type_constraint("T", kMatmulTypes)
      .attr(kOutputDtypeAttr, AttrType::kInt, Attribute(int64_t{0}))
      .attr("alpha", AttrType::kFloat, Attribute(1.0))
      .attr("beta", AttrType::kFloat, Attribute(1.0))
      .attr("transA", AttrType::kInt, Attribute(0))
      .attr("transB", AttrType::kInt, Attribute(0))
      .infer(infer_gemm)
      .gradient(gemm_gradient)
      .add_traits(OpTrait::kLowPrecisionCompute)
      .doc("Y = alpha * op(A) * op(B) + beta * C, op transposing when transA/transB is set; Weir's "
           "output_dtype f32 (no ONNX form) multiplies bf16/f16 into f32, without C");
  registry.add(std::move(gemm));

  // What the matmul_fusion pass makes: a MatMul with a 2-D right operand,
  // its bias and an activation, in one oneDNN primitive. Inference only.
  OpSchema fused("FusedMatMul");
  fused.add_traits(OpTrait::kLowPrecisionCompute);
  fused.input("A", "T")
      .input("B", "T")
      .input("bias", "T", Arity::kOptional)
      .output("Y", "")
      .type_constraint("T", {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
      .attr(kOutputDtypeAttr, AttrType::kInt, Attribute(int64_t{0}))
      .attr("activation", AttrType::kString, Attribute("None"))
      .attr("activation_alpha", AttrType::kFloat, Attribute(0.0))
      .attr("activation_beta", AttrType::kFloat, Attribute(0.0))
      .infer([](InferenceContext& ctx) {
        const TensorType* a = ctx.input_type(0);
        const TensorType* b = ctx.input_type(1);
        if (a == nullptr || b == nullptr) return;
        FusedActivation::from_node(ctx.node());  // rejects an unknown activation at verification
        const DType y_dtype = inferred_output_dtype(ctx, a->dtype);
        if (!a->shape.has_rank() || !b->shape.has_rank()) {
          ctx.set_output_type(0, {y_dtype, Shape::unknown_rank()});
          return;
        }
        if (a->shape.rank() < 2 || b->shape.rank() != 2) {
          ctx.fail("A " + a->shape.to_string() + " must be [..., M, K] and B " + b->shape.to_string() + " [K, N]");
        }
        const Dim& ka = a->shape[static_cast<size_t>(a->shape.rank() - 1)];
        if (ka.is_static() && b->shape[0].is_static() && ka.size() != b->shape[0].size()) {
          ctx.fail("inner dimensions differ: A " + a->shape.to_string() + ", B " + b->shape.to_string());
        }
        const TensorType* bias = ctx.input_type(2);
        if (bias != nullptr && bias->shape.has_rank() &&
            (bias->shape.rank() != 1 || (bias->shape[0].is_static() && b->shape[1].is_static() &&
                                         bias->shape[0].size() != b->shape[1].size()))) {
          ctx.fail("bias " + bias->shape.to_string() + " must be [N] for B " + b->shape.to_string());
        }
        std::vector<Dim> dims = a->shape.dims();
        dims.back() = b->shape[1];
        ctx.set_output_type(0, {y_dtype, Shape(std::move(dims))});
      })
      .doc("activation(A B + bias): A [..., M, K], B [K, N], bias [N]; attributes activation, activation_alpha, "
           "activation_beta as FusedConv's; output_dtype f32 writes bf16/f16 products in f32 (the "
           "inference pipeline's wide_output_fusion)");
  registry.add(std::move(fused));
}

}  // namespace weir
