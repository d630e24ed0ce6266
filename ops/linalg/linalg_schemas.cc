#include "ops/linalg/linalg_schemas.h"

#include "ops/shape_inference.h"

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
  if (const TensorType* c = ctx.input_type(2); c != nullptr && c->shape.has_rank()) {
    Shape broadcast = broadcast_shapes(out, c->shape, ctx);
    if (broadcast.rank() != 2) ctx.fail("Gemm's C " + c->shape.to_string() + " does not broadcast to " + out.to_string());
  }
  ctx.set_output_type(0, TensorType{a->dtype, out});
}

}  // namespace

void register_linalg_schemas(OpRegistry& registry) {
  OpSchema matmul("MatMul");
  matmul.input("A", "T")
      .input("B", "T")
      .output("Y", "T")
      .type_constraint("T", kMatmulTypes)
      .infer(infer_matmul)
      .doc("Matrix product with NumPy semantics: batched, broadcast, 1-D operands promoted");
  registry.add(std::move(matmul));

  OpSchema gemm("Gemm");
  gemm.input("A", "T")
      .input("B", "T")
      .input("C", "T", Arity::kOptional)
      .output("Y", "T")
      .type_constraint("T", kMatmulTypes)
      .attr("alpha", AttrType::kFloat, Attribute(1.0))
      .attr("beta", AttrType::kFloat, Attribute(1.0))
      .attr("transA", AttrType::kInt, Attribute(0))
      .attr("transB", AttrType::kInt, Attribute(0))
      .infer(infer_gemm)
      .doc("Y = alpha * op(A) * op(B) + beta * C, op transposing when transA/transB is set");
  registry.add(std::move(gemm));
}

}  // namespace weir
