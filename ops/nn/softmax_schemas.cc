#include "ops/nn/softmax_schemas.h"

#include "ops/shape_inference.h"

namespace weir {

namespace {

OpSchema softmax_like(const char* name, const char* doc) {
  OpSchema schema(name);
  schema.input("input", "T")
      .output("output", "T")
      .type_constraint("T", {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
      .attr("axis", AttrType::kInt, Attribute(-1))
      .infer([](InferenceContext& ctx) {
        const TensorType* input = ctx.input_type(0);
        if (input == nullptr) return;
        if (input->shape.has_rank()) normalize_axis(ctx.attr_int("axis"), input->shape.rank(), ctx);
        ctx.set_output_type(0, *input);
      })
      .doc(doc);
  return schema;
}

}  // namespace

void register_softmax_schemas(OpRegistry& registry) {
  registry.add(softmax_like("Softmax", "exp(x - max) / sum(exp(x - max)) along `axis`"));
  registry.add(softmax_like("LogSoftmax", "log(Softmax(x)) along `axis`, computed stably"));
}

}  // namespace weir
