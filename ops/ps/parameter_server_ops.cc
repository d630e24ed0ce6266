#include "ops/ps/parameter_server_ops.h"

#include <algorithm>
#include <vector>

#include "core/graph.h"
#include "core/parameter_client.h"
#include "ops/optimizer/scalar_input.h"

namespace weir {

namespace {

const std::vector<DType> kIdTypes = {DType::kInt64, DType::kInt32};
const std::vector<DType> kScalarTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

// What every kernel of these ops shares: the table, the client, the round.
// What the client throws needs no node added: the session names it.
class ParameterServerKernel : public OpKernel {
 public:
  explicit ParameterServerKernel(const Node& node)
      : table_(node.attr("table").s()), width_(node.has_attr("width") ? node.attr("width").i() : 0) {}

 protected:
  ParameterClient& client(KernelContext& ctx) const {
    ParameterClient* client = ctx.parameter_client();
    if (client == nullptr) {
      ctx.fail("table '" + table_ + "' lives on parameter servers, and this session has none "
               "(SessionOptions::parameter_client; graph-runner train --ps)");
    }
    return *client;
  }
  // The optional round input at `index` (0 when absent).
  static int64_t round(KernelContext& ctx, size_t index) {
    if (!ctx.has_input(index)) return 0;
    const Tensor& round = ctx.input(index);
    if (round.dtype() != DType::kInt64 || round.num_elements() != 1) {
      ctx.fail("round must be an int64 scalar, got " + round.type_string());
    }
    return round.data<int64_t>()[0];
  }
  // The ids as int64, whatever their integer type.
  static std::vector<int64_t> ids_of(const Tensor& ids) {
    std::vector<int64_t> out(static_cast<size_t>(ids.num_elements()));
    if (ids.dtype() == DType::kInt64) {
      std::copy(ids.data<int64_t>(), ids.data<int64_t>() + out.size(), out.begin());
    } else {
      std::copy(ids.data<int32_t>(), ids.data<int32_t>() + out.size(), out.begin());
    }
    return out;
  }
  std::string table_;
  int64_t width_;
};

class PullSparseKernel final : public ParameterServerKernel {
 public:
  using ParameterServerKernel::ParameterServerKernel;
  void compute(KernelContext& ctx) override {
    const Tensor& ids = ctx.input(0);
    std::vector<int64_t> sizes = ids.sizes();
    sizes.push_back(width_);
    Tensor& rows = ctx.allocate_output(0, DType::kFloat32, sizes, KernelContext::Fill::kUninitialized);
    const std::vector<int64_t> keys = ids_of(ids);
    client(ctx).pull_sparse(table_, keys, rows.data<float>(), width_, round(ctx, 1));
  }
};

class PushSparseKernel final : public ParameterServerKernel {
 public:
  using ParameterServerKernel::ParameterServerKernel;
  void compute(KernelContext& ctx) override {
    const Tensor& ids = ctx.input(0);
    const Tensor& grad = ctx.input(1);
    if (grad.dtype() != DType::kFloat32 || grad.num_elements() != ids.num_elements() * width_) {
      ctx.fail("grad must be f32 with " + std::to_string(width_) + " values per id (" +
               std::to_string(ids.num_elements()) + " ids), got " + grad.type_string());
    }
    const double lr = scalar_input(ctx, 2, "lr");
    const std::vector<int64_t> keys = ids_of(ids);
    client(ctx).push_sparse(table_, keys, grad.data<float>(), width_, static_cast<float>(lr), round(ctx, 3));
  }
};

class PullDenseKernel final : public ParameterServerKernel {
 public:
  using ParameterServerKernel::ParameterServerKernel;
  void compute(KernelContext& ctx) override {
    const Tensor& param = ctx.input(0);
    if (param.dtype() != DType::kFloat32) ctx.fail("the parameter must be f32, got " + param.type_string());
    client(ctx).pull_dense(table_, param.data<float>(), param.num_elements(), round(ctx, 1));
    ctx.set_output(0, param);
  }
};

class PushDenseKernel final : public ParameterServerKernel {
 public:
  using ParameterServerKernel::ParameterServerKernel;
  void compute(KernelContext& ctx) override {
    const Tensor& grad = ctx.input(0);
    if (grad.dtype() != DType::kFloat32) ctx.fail("grad must be f32, got " + grad.type_string());
    const double lr = scalar_input(ctx, 1, "lr");
    client(ctx).push_dense(table_, grad.data<float>(), grad.num_elements(), static_cast<float>(lr), round(ctx, 2));
  }
};

void check_round(InferenceContext& ctx, size_t index) {
  const TensorType* round = ctx.input_type(index);
  if (round != nullptr && round->shape.is_static() && round->shape.num_elements() != 1) {
    ctx.fail("round must be a scalar, got " + round->shape.to_string());
  }
}

int64_t positive_width(InferenceContext& ctx) {
  const int64_t width = ctx.attr_int("width");
  if (width < 1) ctx.fail("width must be positive, got " + std::to_string(width));
  return width;
}

constexpr OpTrait kRemote = OpTrait::kSideEffects | OpTrait::kStateful;

}  // namespace

void register_parameter_server_schemas(OpRegistry& registry) {
  OpSchema pull_sparse("PsPullSparse");
  pull_sparse.input("ids", "I").input("round", "R", Arity::kOptional).output("rows", "F")
      .type_constraint("I", kIdTypes).type_constraint("R", {DType::kInt64}).type_constraint("F", {DType::kFloat32})
      .required_attr("table", AttrType::kString).required_attr("width", AttrType::kInt)
      .attr("init", AttrType::kString, Attribute(std::string("zeros")))
      .attr("init_scale", AttrType::kFloat, Attribute(0.0))
      .attr("init_seed", AttrType::kInt, Attribute(int64_t{0}))
      .attr("admit_after", AttrType::kInt, Attribute(int64_t{1}))
      .traits(kRemote)
      .infer([](InferenceContext& ctx) {
        const int64_t width = positive_width(ctx);
        check_round(ctx, 1);
        const TensorType* ids = ctx.input_type(0);
        if (ids == nullptr || !ids->shape.has_rank()) return;
        std::vector<Dim> dims = ids->shape.dims();
        dims.emplace_back(width);
        ctx.set_output_type(0, {DType::kFloat32, Shape(std::move(dims))});
      })
      .doc("the rows of sparse table `table` (parameter servers) for ids: rows[..., width]; rows are created on "
           "first touch; each distinct id travels once");
  registry.add(std::move(pull_sparse));

  OpSchema push_sparse("PsPushSparse");
  push_sparse.input("ids", "I").input("grad", "F").input("lr", "S").input("round", "R", Arity::kOptional)
      .type_constraint("I", kIdTypes).type_constraint("F", {DType::kFloat32}).type_constraint("S", kScalarTypes)
      .type_constraint("R", {DType::kInt64})
      .required_attr("table", AttrType::kString).required_attr("width", AttrType::kInt)
      .traits(kRemote)
      .infer([](InferenceContext& ctx) {
        positive_width(ctx);
        check_round(ctx, 3);
      })
      .doc("pushes grad[..., width] of the ids' rows to sparse table `table`; equal ids are summed and the "
           "servers apply the table's rule at lr");
  registry.add(std::move(push_sparse));

  OpSchema pull_dense("PsPullDense");
  pull_dense.input("param", "F").input("round", "R", Arity::kOptional).output("param_out", "F")
      .type_constraint("F", {DType::kFloat32}).type_constraint("R", {DType::kInt64})
      .required_attr("table", AttrType::kString)
      .traits(kRemote | OpTrait::kInplaceable)
      .infer([](InferenceContext& ctx) {
        check_round(ctx, 1);
        if (const TensorType* param = ctx.input_type(0)) ctx.set_output_type(0, *param);
      })
      .doc("overwrites param (a persistent value) with dense table `table`, in place; the output aliases param");
  registry.add(std::move(pull_dense));

  OpSchema push_dense("PsPushDense");
  push_dense.input("grad", "F").input("lr", "S").input("round", "R", Arity::kOptional)
      .type_constraint("F", {DType::kFloat32}).type_constraint("S", kScalarTypes).type_constraint("R", {DType::kInt64})
      .required_attr("table", AttrType::kString)
      .traits(kRemote)
      .infer([](InferenceContext& ctx) { check_round(ctx, 2); })
      .doc("pushes grad, the gradient of dense table `table`; the servers apply the table's rule at lr");
  registry.add(std::move(push_dense));
}

void register_parameter_server_cpu_kernels(KernelRegistry& registry) {
  registry.add("PsPullSparse", DeviceType::kCpu, kIdTypes, [](const Node& node) { return std::make_unique<PullSparseKernel>(node); });
  registry.add("PsPushSparse", DeviceType::kCpu, kIdTypes, [](const Node& node) { return std::make_unique<PushSparseKernel>(node); });
  registry.add("PsPullDense", DeviceType::kCpu, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<PullDenseKernel>(node); });
  registry.add("PsPushDense", DeviceType::kCpu, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<PushDenseKernel>(node); });
}

}  // namespace weir
