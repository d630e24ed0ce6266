#include "ops/sequence/optional_ops.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

bool is_unknown(const TensorType& type) {
  return type.dtype == DType::kUndefined && type.is_tensor() && !type.shape.has_rank();
}

// The element type that Optional's `type` attribute encodes (optional_ops.h).
template <typename Fail>
TensorType decode_type(const std::vector<int64_t>& ints, const std::string& node, Fail&& fail) {
  if (ints.size() < 3) fail("attribute 'type' needs dtype, sequence flag and rank, got " + std::to_string(ints.size()) + " ints");
  const int64_t code = ints[0];
  if (code <= 0 || code > 0x7fffffff || !is_valid_dtype(static_cast<int32_t>(code))) {
    fail("attribute 'type' has dtype " + std::to_string(code) + ", not a dtype Weir supports");
  }
  if (ints[1] != 0 && ints[1] != 1) fail("attribute 'type' has sequence flag " + std::to_string(ints[1]) + ", expected 0 or 1");
  TensorType type{static_cast<DType>(code), Shape::unknown_rank(), ints[1] == 1};
  const int64_t rank = ints[2];
  if (rank >= 0) {
    if (ints.size() != static_cast<size_t>(rank) + 3) {
      fail("attribute 'type' has rank " + std::to_string(rank) + " but " + std::to_string(ints.size() - 3) + " dims");
    }
    std::vector<Dim> dims;
    for (int64_t axis = 0; axis < rank; ++axis) {
      const int64_t size = ints[static_cast<size_t>(3 + axis)];
      dims.push_back(size >= 0 ? Dim(size) : Dim::symbol(node + ":type:" + std::to_string(axis)));
    }
    type.shape = Shape(std::move(dims));
  }
  return type;
}

void infer_optional(InferenceContext& ctx) {
  const TensorType* input = ctx.input_type(0);
  if (input != nullptr) {
    if (is_unknown(*input)) return;
    if (input->optional) ctx.fail("input is " + input->to_string() + "; an optional cannot hold an optional");
    TensorType type = *input;
    type.optional = true;
    ctx.set_output_type(0, type);
    return;
  }
  if (!ctx.node().has_attr("type")) ctx.fail("needs an input or the 'type' attribute to say what it holds");
  TensorType type = decode_type(ctx.attr_ints("type"), ctx.node().name(), [&](const std::string& m) { ctx.fail(m); });
  type.optional = true;
  ctx.set_output_type(0, type);
}

// Output `index` = a copy of `tensor`, or the sequence handle itself (a
// sequence's elements own their memory and never change).
void pass_value(KernelContext& ctx, size_t index, const Tensor& value) {
  if (value.is_sequence()) {
    ctx.set_output(index, value);
    return;
  }
  Tensor& out = ctx.allocate_output(index, value.dtype(), value.sizes(), KernelContext::Fill::kUninitialized);
  if (value.nbytes() > 0) std::memcpy(out.raw_data(), value.raw_data(), value.nbytes());
}

class OptionalKernel final : public OpKernel {
 public:
  explicit OptionalKernel(const Node& node) {
    if (node.num_inputs() > 0 && node.input(0) != nullptr) return;
    if (!node.has_attr("type")) {
      throw Error(ErrorKind::kShape, "Optional '" + node.name() + "': needs an input or the 'type' attribute")
          .with_node(node.name());
    }
    empty_type_ = decode_type(node.attr("type").ints(), node.name(), [&](const std::string& message) {
      throw Error(ErrorKind::kShape, "Optional '" + node.name() + "': " + message).with_node(node.name());
    });
  }

  void compute(KernelContext& ctx) override {
    if (!ctx.has_input(0)) {
      ctx.set_output(0, Tensor::none(empty_type_.dtype, empty_type_.sequence));
      return;
    }
    const Tensor& input = ctx.input(0);
    if (input.is_none()) ctx.fail("input is " + input.type_string() + "; an optional cannot hold an optional");
    pass_value(ctx, 0, input);
  }

 private:
  TensorType empty_type_;
};

class OptionalHasElementKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    Tensor& out = ctx.allocate_output(0, DType::kBool, {}, KernelContext::Fill::kUninitialized);
    out.data<bool>()[0] = ctx.has_input(0) && !ctx.input(0).is_none();
  }
};

class OptionalGetElementKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& input = ctx.input(0);
    if (input.is_none()) ctx.fail("the optional input is empty (" + input.type_string() + "); there is no element to get");
    pass_value(ctx, 0, input);
  }
};

}  // namespace

void register_optional_schemas(OpRegistry& registry) {
  OpSchema optional("Optional");
  optional.input("input", "V", Arity::kOptional)
      .output("output", "O")
      .type_constraint("V", kAnyDTypes)
      .type_constraint("O", kAnyDTypes)
      .attr("type", AttrType::kInts)
      .infer(infer_optional)
      .doc("input as an optional value; without input, an empty optional of the 'type' attribute "
           "(ints: dtype, sequence flag, rank, dims)");
  registry.add(std::move(optional));

  OpSchema has("OptionalHasElement");
  has.input("input", "O", Arity::kOptional)
      .output("output", "B")
      .type_constraint("O", kAnyDTypes)
      .type_constraint("B", {DType::kBool})
      .infer([](InferenceContext& ctx) { ctx.set_output_type(0, TensorType{DType::kBool, Shape{}}); })
      .doc("true when input is present: a present optional, a tensor or a sequence; false for an empty "
           "optional or an absent input");
  registry.add(std::move(has));

  OpSchema get("OptionalGetElement");
  get.input("input", "O")
      .output("output", "V")
      .type_constraint("O", kAnyDTypes)
      .type_constraint("V", kAnyDTypes)
      .infer([](InferenceContext& ctx) {
        const TensorType* input = ctx.input_type(0);
        if (input == nullptr || is_unknown(*input)) return;
        TensorType type = *input;
        type.optional = false;
        ctx.set_output_type(0, type);
      })
      .doc("the value of a present optional (a tensor or a sequence); fails for an empty one; a tensor or "
           "sequence input is returned as it is");
  registry.add(std::move(get));
}

void register_optional_cpu_kernels(KernelRegistry& registry) {
  registry.add("Optional", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<OptionalKernel>(node); });
  registry.add("OptionalHasElement", DeviceType::kCpu, kAnyDTypes,
               [](const Node&) { return std::make_unique<OptionalHasElementKernel>(); });
  registry.add("OptionalGetElement", DeviceType::kCpu, kAnyDTypes,
               [](const Node&) { return std::make_unique<OptionalGetElementKernel>(); });
}

}  // namespace weir
