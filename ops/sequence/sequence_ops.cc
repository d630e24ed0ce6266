#include "ops/sequence/sequence_ops.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "ops/control/control_flow_layout.h"
#include "ops/dtype_sets.h"
#include "ops/node_attributes.h"
#include "ops/register_ops.h"
#include "ops/shape_inference.h"
#include "ops/subgraph_runner.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

// --- type inference -------------------------------------------------------

bool is_unknown(const TensorType& type) {
  return type.dtype == DType::kUndefined && type.is_tensor() && !type.shape.has_rank();
}

// Input `index` where it must be a sequence: nullptr when absent or of
// unknown type; fails naming the input when it is anything else.
const TensorType* sequence_input_type(const InferenceContext& ctx, size_t index, const char* name) {
  const TensorType* type = ctx.input_type(index);
  if (type == nullptr || is_unknown(*type)) return nullptr;
  if (!type->sequence || type->optional) {
    ctx.fail(std::string("input '") + name + "' must be a sequence, got " + type->to_string());
  }
  return type;
}

// Input `index` where it must be a tensor (not a sequence or optional).
const TensorType* tensor_input_type(const InferenceContext& ctx, size_t index, const char* name) {
  const TensorType* type = ctx.input_type(index);
  if (type == nullptr || is_unknown(*type)) return nullptr;
  if (!type->is_tensor()) ctx.fail(std::string("input '") + name + "' must be a tensor, got " + type->to_string());
  return type;
}

TensorType element_of(const TensorType& sequence) {
  TensorType element = sequence;
  element.sequence = false;
  element.optional = false;
  return element;
}

TensorType sequence_of(TensorType element) {
  element.sequence = true;
  element.optional = false;
  return element;
}

// The shape that covers tensors of shapes `a` and `b` (elements of one
// sequence): dims that differ become symbolic, a rank that differs unknown.
Shape merge_shapes(const InferenceContext& ctx, const Shape& a, const Shape& b) {
  if (!a.has_rank() || !b.has_rank() || a.rank() != b.rank()) return Shape::unknown_rank();
  std::vector<Dim> dims;
  for (size_t axis = 0; axis < a.dims().size(); ++axis) {
    dims.push_back(a[axis] == b[axis] ? a[axis] : symbolic_dim(ctx, axis));
  }
  return Shape(std::move(dims));
}

// A position input holds one i32/i64 element.
void check_position_input(const InferenceContext& ctx, size_t index) {
  const TensorType* type = tensor_input_type(ctx, index, "position");
  if (type == nullptr) return;
  check_scalar_input(ctx, index, "position");
}

void check_element_dtype(const InferenceContext& ctx, const TensorType& sequence, const TensorType& tensor,
                         const std::string& what) {
  if (sequence.dtype != DType::kUndefined && tensor.dtype != DType::kUndefined && sequence.dtype != tensor.dtype) {
    ctx.fail(what + " is " + tensor.to_string() + ", the sequence holds " + std::string(dtype_name(sequence.dtype)));
  }
}

void infer_sequence_construct(InferenceContext& ctx) {
  TensorType element;
  bool first = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType* type = tensor_input_type(ctx, i, "inputs");
    if (type == nullptr) {
      element.shape = Shape::unknown_rank();
      continue;
    }
    if (first) {
      element = *type;
      first = false;
      continue;
    }
    if (element.dtype != DType::kUndefined && type->dtype != element.dtype) {
      ctx.fail("input " + std::to_string(i) + " is " + type->to_string() + ", input 0 " + element.to_string() +
               "; a sequence holds one dtype");
    }
    element.shape = merge_shapes(ctx, element.shape, type->shape);
  }
  ctx.set_output_type(0, sequence_of(element));
}

DType sequence_empty_dtype(int64_t code, const std::function<void(const std::string&)>& fail) {
  if (code <= 0 || code > 0x7fffffff || !is_valid_dtype(static_cast<int32_t>(code))) {
    fail("dtype " + std::to_string(code) + " is not a dtype Weir supports");
  }
  return static_cast<DType>(code);
}

void infer_sequence_insert(InferenceContext& ctx) {
  const TensorType* sequence = sequence_input_type(ctx, 0, "input_sequence");
  const TensorType* tensor = tensor_input_type(ctx, 1, "tensor");
  check_position_input(ctx, 2);
  if (sequence == nullptr) {
    if (tensor != nullptr) ctx.set_output_type(0, TensorType{tensor->dtype, Shape::unknown_rank(), true});
    return;
  }
  TensorType element = element_of(*sequence);
  if (tensor != nullptr) {
    check_element_dtype(ctx, *sequence, *tensor, "input 'tensor'");
    if (element.dtype == DType::kUndefined) element.dtype = tensor->dtype;
    element.shape = merge_shapes(ctx, element.shape, tensor->shape);
  } else {
    element.shape = Shape::unknown_rank();
  }
  ctx.set_output_type(0, sequence_of(element));
}

void infer_sequence_erase(InferenceContext& ctx) {
  const TensorType* sequence = sequence_input_type(ctx, 0, "input_sequence");
  check_position_input(ctx, 1);
  if (sequence != nullptr) ctx.set_output_type(0, sequence_of(element_of(*sequence)));
}

void infer_sequence_at(InferenceContext& ctx) {
  const TensorType* sequence = sequence_input_type(ctx, 0, "input_sequence");
  check_position_input(ctx, 1);
  if (sequence != nullptr) ctx.set_output_type(0, element_of(*sequence));
}

void infer_sequence_length(InferenceContext& ctx) {
  sequence_input_type(ctx, 0, "input_sequence");
  ctx.set_output_type(0, TensorType{DType::kInt64, Shape{}});
}

void infer_split_to_sequence(InferenceContext& ctx) {
  const TensorType* input = tensor_input_type(ctx, 0, "input");
  if (input == nullptr) return;
  const TensorType* split = tensor_input_type(ctx, 1, "split");
  if (split != nullptr && split->shape.has_rank() && split->shape.rank() > 1) {
    ctx.fail("split must be a scalar or 1-D, got " + split->to_string());
  }
  TensorType element{input->dtype, Shape::unknown_rank(), true};
  if (input->shape.has_rank()) {
    const int64_t rank = input->shape.rank();
    if (rank == 0) ctx.fail("input " + input->to_string() + " has no axis to split");
    const size_t axis = static_cast<size_t>(normalize_axis(ctx.attr_int("axis"), rank, ctx));
    std::vector<Dim> dims = input->shape.dims();
    if (split == nullptr) {
      if (ctx.attr_int("keepdims") == 0) {
        dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
      } else {
        dims[axis] = Dim(1);
      }
    } else {
      // Every chunk has one known length only when the split says so.
      std::optional<int64_t> length;
      if (std::optional<std::vector<int64_t>> values = constant_ints(ctx, 1); values && !values->empty()) {
        const bool scalar = split->shape.has_rank() && split->shape.rank() == 0;
        if (scalar && dims[axis].is_static() && (*values)[0] > 0 && dims[axis].size() % (*values)[0] == 0) {
          length = (*values)[0];
        } else if (!scalar && std::all_of(values->begin(), values->end(), [&](int64_t v) { return v == values->front(); })) {
          length = values->front();
        }
      }
      dims[axis] = length ? Dim(*length) : symbolic_dim(ctx, axis);
    }
    element.shape = Shape(std::move(dims));
  }
  ctx.set_output_type(0, element);
}

void infer_concat_from_sequence(InferenceContext& ctx) {
  const TensorType* sequence = sequence_input_type(ctx, 0, "input_sequence");
  if (sequence == nullptr) return;
  TensorType output = element_of(*sequence);
  if (output.shape.has_rank()) {
    const int64_t rank = output.shape.rank();
    const bool new_axis = ctx.attr_int("new_axis") != 0;
    std::vector<Dim> dims = output.shape.dims();
    const int64_t axis = ctx.attr_int("axis");
    if (new_axis) {
      const size_t at = static_cast<size_t>(normalize_axis(axis, rank + 1, ctx));
      dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(at), symbolic_dim(ctx, at));
    } else {
      if (rank == 0) ctx.fail("the elements " + output.to_string() + " have no axis to concatenate along");
      const size_t at = static_cast<size_t>(normalize_axis(axis, rank, ctx));
      dims[at] = symbolic_dim(ctx, at);
    }
    output.shape = Shape(std::move(dims));
  }
  ctx.set_output_type(0, output);
}

// SequenceMap: the body takes element i of each sequence input, each tensor
// input whole, then the captured values.
size_t sequence_map_captured(const InferenceContext& ctx) {
  const int64_t captured = ctx.attr_int("num_captured");
  if (captured < 0 || static_cast<size_t>(captured) >= ctx.num_inputs()) {
    ctx.fail("num_captured " + std::to_string(captured) + " must be in [0, " + std::to_string(ctx.num_inputs()) +
             "): input 0 is the sequence");
  }
  return static_cast<size_t>(captured);
}

void infer_sequence_map(InferenceContext& ctx) {
  const Node& node = ctx.node();
  const size_t captured = sequence_map_captured(ctx);
  const Graph& body = control_flow_subgraph(node, "body");
  if (body.inputs().size() != node.num_inputs()) {
    ctx.fail("body takes " + std::to_string(body.inputs().size()) + " inputs, the node gives " +
             std::to_string(node.num_inputs()) + " (sequence, additional inputs, captured values)");
  }
  if (body.outputs().size() != node.num_outputs()) {
    ctx.fail("body gives " + std::to_string(body.outputs().size()) + " outputs, the node has " +
             std::to_string(node.num_outputs()) + "; each body output makes one output sequence");
  }
  sequence_input_type(ctx, 0, "input_sequence");
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    const TensorType* type = ctx.input_type(i);
    if (type == nullptr) ctx.fail("input " + std::to_string(i) + " is absent; SequenceMap's inputs are all required");
    if (is_unknown(*type)) continue;
    if (type->optional) ctx.fail("input " + std::to_string(i) + " is " + type->to_string() + "; expected a sequence or a tensor");
    const DType given = type->dtype;
    const Value* formal = body.inputs()[i];
    if (given != DType::kUndefined && formal->dtype() != DType::kUndefined && given != formal->dtype()) {
      ctx.fail("body input " + std::to_string(i) + " '" + formal->name() + "' is " + formal->type().to_string() +
               ", the node gives " + (i + captured < node.num_inputs() && type->sequence ? "elements of " : "") +
               type->to_string());
    }
  }
  for (size_t k = 0; k < node.num_outputs(); ++k) {
    const TensorType& out = body.outputs()[k]->type();
    if (!out.is_tensor()) {
      ctx.fail("body output " + std::to_string(k) + " '" + body.outputs()[k]->name() + "' is " + out.to_string() +
               "; Weir's sequences hold tensors");
    }
    ctx.set_output_type(k, sequence_of(out));
  }
}

// --- kernels ----------------------------------------------------------------

const Tensor& sequence_input(const KernelContext& ctx, size_t index, const char* name) {
  const Tensor& tensor = ctx.input(index);
  if (!tensor.is_sequence()) {
    ctx.fail(std::string("input '") + name + "' must be a sequence, got " + tensor.type_string());
  }
  return tensor;
}

const Tensor& tensor_input(const KernelContext& ctx, size_t index, const char* name) {
  const Tensor& tensor = ctx.input(index);
  if (tensor.is_sequence() || tensor.is_none()) {
    ctx.fail(std::string("input '") + name + "' must be a tensor, got " + tensor.type_string());
  }
  return tensor;
}

// A position in [-length, length - 1] (insert: [-length, length]) as an
// index from the front.
int64_t read_position(const KernelContext& ctx, const Tensor& position, int64_t length, bool insert) {
  if (position.is_sequence() || position.is_none() || position.num_elements() != 1) {
    ctx.fail("position must be one i32 or i64 element, got " + position.type_string());
  }
  const int64_t value = index_values(ctx, position, "position")[0];
  const int64_t high = insert ? length : length - 1;
  if (value < -length || value > high) {
    ctx.fail("position " + std::to_string(value) + " is out of range for a sequence of length " +
             std::to_string(length) + " (valid: [" + std::to_string(-length) + ", " + std::to_string(high) + "])");
  }
  return value < 0 ? value + length : value;
}

// Output `index` = a copy of `tensor` (an element must not leave its sequence
// as a view: the output's memory belongs to the runtime).
void copy_to_output(KernelContext& ctx, size_t index, const Tensor& tensor) {
  Tensor& out = ctx.allocate_output(index, tensor.dtype(), tensor.sizes(), KernelContext::Fill::kUninitialized);
  if (tensor.nbytes() > 0) std::memcpy(out.raw_data(), tensor.raw_data(), tensor.nbytes());
}

int64_t product(const std::vector<int64_t>& sizes, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) result *= sizes[i];
  return result;
}

class SequenceConstructKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    std::vector<Tensor> elements;
    const DType dtype = tensor_input(ctx, 0, "inputs").dtype();
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = tensor_input(ctx, i, "inputs");
      if (x.dtype() != dtype) {
        ctx.fail("input " + std::to_string(i) + " is " + x.type_string() + ", input 0 " + ctx.input(0).type_string() +
                 "; a sequence holds one dtype");
      }
      elements.push_back(x.clone());
    }
    ctx.set_output(0, Tensor::sequence(dtype, std::move(elements)));
  }
};

class SequenceEmptyKernel final : public OpKernel {
 public:
  explicit SequenceEmptyKernel(const Node& node)
      : dtype_(sequence_empty_dtype(int_attr(node, "dtype", static_cast<int64_t>(DType::kFloat32)),
                                    [&](const std::string& message) {
                                      throw Error(ErrorKind::kShape, "SequenceEmpty '" + node.name() + "': " + message)
                                          .with_node(node.name());
                                    })) {}

  void compute(KernelContext& ctx) override { ctx.set_output(0, Tensor::sequence(dtype_, {})); }

 private:
  DType dtype_;
};

class SequenceInsertKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& sequence = sequence_input(ctx, 0, "input_sequence");
    const Tensor& tensor = tensor_input(ctx, 1, "tensor");
    if (tensor.dtype() != sequence.dtype()) {
      ctx.fail("input 'tensor' is " + tensor.type_string() + ", the sequence holds " +
               std::string(dtype_name(sequence.dtype())));
    }
    const std::vector<Tensor>& old = sequence.elements();
    const int64_t length = static_cast<int64_t>(old.size());
    const int64_t at = ctx.has_input(2) ? read_position(ctx, ctx.input(2), length, /*insert=*/true) : length;
    std::vector<Tensor> elements;
    elements.reserve(old.size() + 1);
    elements.insert(elements.end(), old.begin(), old.begin() + at);
    elements.push_back(tensor.clone());
    elements.insert(elements.end(), old.begin() + at, old.end());
    ctx.set_output(0, Tensor::sequence(sequence.dtype(), std::move(elements)));
  }
};

class SequenceEraseKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& sequence = sequence_input(ctx, 0, "input_sequence");
    const std::vector<Tensor>& old = sequence.elements();
    const int64_t length = static_cast<int64_t>(old.size());
    if (length == 0) ctx.fail("cannot erase from an empty sequence");
    const int64_t at = ctx.has_input(1) ? read_position(ctx, ctx.input(1), length, /*insert=*/false) : length - 1;
    std::vector<Tensor> elements;
    elements.reserve(old.size() - 1);
    elements.insert(elements.end(), old.begin(), old.begin() + at);
    elements.insert(elements.end(), old.begin() + at + 1, old.end());
    ctx.set_output(0, Tensor::sequence(sequence.dtype(), std::move(elements)));
  }
};

class SequenceAtKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& sequence = sequence_input(ctx, 0, "input_sequence");
    const std::vector<Tensor>& elements = sequence.elements();
    const int64_t at = read_position(ctx, ctx.input(1), static_cast<int64_t>(elements.size()), /*insert=*/false);
    copy_to_output(ctx, 0, elements[static_cast<size_t>(at)]);
  }
};

class SequenceLengthKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& sequence = sequence_input(ctx, 0, "input_sequence");
    Tensor& out = ctx.allocate_output(0, DType::kInt64, {}, KernelContext::Fill::kUninitialized);
    out.data<int64_t>()[0] = static_cast<int64_t>(sequence.elements().size());
  }
};

class SplitToSequenceKernel final : public OpKernel {
 public:
  explicit SplitToSequenceKernel(const Node& node)
      : axis_(int_attr(node, "axis", 0)), keepdims_(int_attr(node, "keepdims", 1) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = tensor_input(ctx, 0, "input");
    const int64_t rank = x.rank();
    if (rank == 0) ctx.fail("input " + x.type_string() + " has no axis to split");
    if (axis_ < -rank || axis_ >= rank) {
      ctx.fail("axis " + std::to_string(axis_) + " is out of range for input " + x.type_string());
    }
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    const int64_t dim = x.sizes()[axis];
    std::vector<int64_t> lengths;
    bool drop_axis = false;
    if (!ctx.has_input(1)) {
      lengths.assign(static_cast<size_t>(dim), 1);
      drop_axis = !keepdims_;
    } else {
      const Tensor& split = tensor_input(ctx, 1, "split");
      const std::vector<int64_t> values = index_values(ctx, split, "split");
      if (split.rank() == 0) {
        const int64_t chunk = values[0];
        if (chunk <= 0) ctx.fail("split " + std::to_string(chunk) + " must be positive");
        for (int64_t start = 0; start < dim; start += chunk) lengths.push_back(std::min(chunk, dim - start));
      } else if (split.rank() == 1) {
        int64_t total = 0;
        for (int64_t length : values) {
          if (length < 0) ctx.fail("split has negative length " + std::to_string(length));
          total += length;
        }
        if (total != dim) {
          ctx.fail("split lengths sum to " + std::to_string(total) + ", input " + x.type_string() + " has " +
                   std::to_string(dim) + " along axis " + std::to_string(axis));
        }
        lengths = values;
      } else {
        ctx.fail("split must be a scalar or 1-D, got " + split.type_string());
      }
    }
    const int64_t outer = product(x.sizes(), 0, axis);
    const size_t inner = static_cast<size_t>(product(x.sizes(), axis + 1, x.sizes().size())) * dtype_size(x.dtype());
    const auto* src = static_cast<const char*>(x.raw_data());
    std::vector<Tensor> elements;
    int64_t start = 0;
    for (int64_t length : lengths) {
      std::vector<int64_t> sizes = x.sizes();
      sizes[axis] = length;
      Tensor chunk = Tensor::uninitialized(x.dtype(), sizes);
      auto* dst = static_cast<char*>(chunk.raw_data());
      const size_t bytes = static_cast<size_t>(length) * inner;
      for (int64_t o = 0; o < outer && bytes > 0; ++o) {
        std::memcpy(dst + static_cast<size_t>(o) * bytes, src + (static_cast<size_t>(o * dim + start)) * inner, bytes);
      }
      if (drop_axis) {
        sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(axis));
        chunk = chunk.reshape(sizes);
      }
      elements.push_back(std::move(chunk));
      start += length;
    }
    ctx.set_output(0, Tensor::sequence(x.dtype(), std::move(elements)));
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

class ConcatFromSequenceKernel final : public OpKernel {
 public:
  explicit ConcatFromSequenceKernel(const Node& node)
      : axis_(node.attr("axis").i()), new_axis_(int_attr(node, "new_axis", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& sequence = sequence_input(ctx, 0, "input_sequence");
    const std::vector<Tensor>& elements = sequence.elements();
    if (elements.empty()) ctx.fail("the sequence is empty; ConcatFromSequence needs at least one element");
    const Tensor& first = elements[0];
    // Along a new axis each element counts as having size 1 there.
    const int64_t rank = first.rank() + (new_axis_ ? 1 : 0);
    if (rank == 0) ctx.fail("the elements " + first.type_string() + " have no axis to concatenate along");
    if (axis_ < -rank || axis_ >= rank) {
      ctx.fail("axis " + std::to_string(axis_) + " is out of range for " + (new_axis_ ? "stacking " : "") +
               "elements " + first.type_string() + " (valid: [" + std::to_string(-rank) + ", " +
               std::to_string(rank - 1) + "])");
    }
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    auto view_sizes = [&](const Tensor& element) {
      std::vector<int64_t> sizes = element.sizes();
      if (new_axis_) sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(axis), 1);
      return sizes;
    };
    std::vector<int64_t> out_sizes = view_sizes(first);
    out_sizes[axis] = 0;
    for (size_t e = 0; e < elements.size(); ++e) {
      const Tensor& element = elements[e];
      std::vector<int64_t> sizes = view_sizes(element);
      bool fits = element.rank() == first.rank();
      for (size_t a = 0; fits && a < sizes.size(); ++a) {
        if (a != axis && sizes[a] != out_sizes[a]) fits = false;
      }
      if (new_axis_ && element.sizes() != first.sizes()) fits = false;
      if (!fits) {
        ctx.fail("element " + std::to_string(e) + " is " + element.type_string() + ", element 0 " +
                 first.type_string() +
                 (new_axis_ ? "; stacked elements must have one shape"
                            : "; elements may differ only along axis " + std::to_string(axis)));
      }
      out_sizes[axis] += sizes[axis];
    }
    Tensor& out = ctx.allocate_output(0, first.dtype(), out_sizes, KernelContext::Fill::kUninitialized);
    const int64_t outer = product(out_sizes, 0, axis);
    const size_t inner = static_cast<size_t>(product(out_sizes, axis + 1, out_sizes.size())) * dtype_size(first.dtype());
    const size_t out_row = static_cast<size_t>(out_sizes[axis]) * inner;
    auto* dst = static_cast<char*>(out.raw_data());
    size_t offset = 0;
    for (const Tensor& element : elements) {
      const size_t bytes = static_cast<size_t>(view_sizes(element)[axis]) * inner;
      const auto* src = static_cast<const char*>(element.raw_data());
      for (int64_t o = 0; o < outer && bytes > 0; ++o) {
        std::memcpy(dst + static_cast<size_t>(o) * out_row + offset, src + static_cast<size_t>(o) * bytes, bytes);
      }
      offset += bytes;
    }
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

class SequenceMapKernel final : public OpKernel {
 public:
  SequenceMapKernel(const Node& node, const KernelRegistry& kernels)
      : captured_(static_cast<size_t>(int_attr(node, "num_captured", 0))), body_(make_runner(node, kernels)) {}

  void compute(KernelContext& ctx) override {
    const Node& node = ctx.node();
    const Graph& body = body_.graph();
    const size_t own = ctx.num_inputs() - captured_;
    const int64_t length = static_cast<int64_t>(sequence_input(ctx, 0, "input_sequence").elements().size());
    for (size_t j = 0; j < ctx.num_inputs(); ++j) {
      if (!ctx.has_input(j)) ctx.fail("input " + std::to_string(j) + " is absent; SequenceMap's inputs are all required");
      const Tensor& input = ctx.input(j);
      if (input.is_none()) ctx.fail("input " + std::to_string(j) + " is " + input.type_string() + "; expected a sequence or a tensor");
      if (j < own && input.is_sequence() && static_cast<int64_t>(input.elements().size()) != length) {
        ctx.fail("input " + std::to_string(j) + " has " + std::to_string(input.elements().size()) +
                 " elements, input 0 has " + std::to_string(length) + "; sequence inputs must have one length");
      }
    }
    std::vector<std::vector<Tensor>> collected(ctx.num_outputs());
    for (int64_t i = 0; i < length; ++i) {
      std::vector<Tensor> inputs;
      for (size_t j = 0; j < ctx.num_inputs(); ++j) {
        const Tensor& input = ctx.input(j);
        inputs.push_back(j < own && input.is_sequence() ? input.elements()[static_cast<size_t>(i)] : input);
      }
      const std::string where = "body, element " + std::to_string(i);
      std::vector<Tensor> outputs;
      try {
        outputs = body_.run(std::move(inputs), ctx.allocator(), &ctx);
      } catch (const Error& error) {
        throw Error(error.kind(), node.op_type() + " '" + node.name() + "' " + where + ": " + error.what())
            .with_node(node.name());
      }
      for (size_t k = 0; k < ctx.num_outputs(); ++k) {
        const Tensor& output = outputs[k];
        if (output.is_sequence() || output.is_none()) {
          ctx.fail(where + ": body output " + std::to_string(k) + " '" + body.outputs()[k]->name() + "' is " +
                   output.type_string() + "; Weir's sequences hold tensors");
        }
        if (!collected[k].empty() && collected[k][0].dtype() != output.dtype()) {
          ctx.fail(where + ": body output " + std::to_string(k) + " is " + output.type_string() +
                   ", element 0 gave " + collected[k][0].type_string());
        }
        // The body's outputs may view its inputs or captured values: a
        // sequence's elements own their memory.
        collected[k].push_back(output.clone());
      }
    }
    for (size_t k = 0; k < ctx.num_outputs(); ++k) {
      DType dtype = !collected[k].empty() ? collected[k][0].dtype() : body.outputs()[k]->dtype();
      if (dtype == DType::kUndefined) dtype = node.output(k)->dtype();
      if (dtype == DType::kUndefined) ctx.fail("output " + std::to_string(k) + " has no known dtype for an empty sequence");
      ctx.set_output(k, Tensor::sequence(dtype, std::move(collected[k])));
    }
  }

 private:
  static SubgraphRunner make_runner(const Node& node, const KernelRegistry& kernels) {
    control_flow_subgraph(node, "body");  // fails naming the node when missing
    try {
      return SubgraphRunner(node.attr("body").g(), kernels);
    } catch (const Error& error) {
      throw Error(error.kind(), node.op_type() + " '" + node.name() + "' body: " + error.what()).with_node(node.name());
    }
  }

  size_t captured_;
  SubgraphRunner body_;
};

}  // namespace

void register_sequence_schemas(OpRegistry& registry) {
  OpSchema construct("SequenceConstruct");
  construct.input("inputs", "T", Arity::kVariadic)
      .output("output_sequence", "T")
      .type_constraint("T", kAnyDTypes)
      .infer(infer_sequence_construct)
      .doc("a sequence of copies of the inputs, which share one dtype");
  registry.add(std::move(construct));

  OpSchema empty("SequenceEmpty");
  empty.output("output", "T")
      .type_constraint("T", kAnyDTypes)
      .attr("dtype", AttrType::kInt, Attribute(static_cast<int64_t>(DType::kFloat32)))
      .infer([](InferenceContext& ctx) {
        DType dtype = sequence_empty_dtype(ctx.attr_int("dtype"), [&](const std::string& m) { ctx.fail(m); });
        ctx.set_output_type(0, TensorType{dtype, Shape::unknown_rank(), true});
      })
      .doc("an empty sequence of tensors of `dtype` (an ONNX TensorProto code; default float)");
  registry.add(std::move(empty));

  OpSchema insert("SequenceInsert");
  insert.input("input_sequence", "T")
      .input("tensor", "T")
      .input("position", "I", Arity::kOptional)
      .output("output_sequence", "T")
      .type_constraint("T", kAnyDTypes)
      .type_constraint("I", kIndexDTypes)
      .infer(infer_sequence_insert)
      .doc("the sequence with a copy of tensor inserted before position (in [-n, n]; default: at the end)");
  registry.add(std::move(insert));

  OpSchema erase("SequenceErase");
  erase.input("input_sequence", "T")
      .input("position", "I", Arity::kOptional)
      .output("output_sequence", "T")
      .type_constraint("T", kAnyDTypes)
      .type_constraint("I", kIndexDTypes)
      .infer(infer_sequence_erase)
      .doc("the sequence without the element at position (in [-n, n-1]; default: the last)");
  registry.add(std::move(erase));

  OpSchema at("SequenceAt");
  at.input("input_sequence", "T")
      .input("position", "I")
      .output("tensor", "T")
      .type_constraint("T", kAnyDTypes)
      .type_constraint("I", kIndexDTypes)
      .infer(infer_sequence_at)
      .doc("a copy of the element at position (in [-n, n-1])");
  registry.add(std::move(at));

  OpSchema length("SequenceLength");
  length.input("input_sequence", "T")
      .output("length", "I")
      .type_constraint("T", kAnyDTypes)
      .type_constraint("I", {DType::kInt64})
      .infer(infer_sequence_length)
      .doc("the number of elements, an i64 scalar");
  registry.add(std::move(length));

  OpSchema split("SplitToSequence");
  split.input("input", "T")
      .input("split", "I", Arity::kOptional)
      .output("output_sequence", "T")
      .type_constraint("T", kAnyDTypes)
      .type_constraint("I", kIndexDTypes)
      .attr("axis", AttrType::kInt, Attribute(int64_t{0}))
      .attr("keepdims", AttrType::kInt, Attribute(int64_t{1}))
      .infer(infer_split_to_sequence)
      .doc("input cut along axis into a sequence: chunks of split (a scalar; the last may be shorter), of the "
           "lengths split lists (1-D), or of 1 (absent; keepdims=0 then drops the axis)");
  registry.add(std::move(split));

  OpSchema concat("ConcatFromSequence");
  concat.input("input_sequence", "T")
      .output("concat_result", "T")
      .type_constraint("T", kAnyDTypes)
      .required_attr("axis", AttrType::kInt)
      .attr("new_axis", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_concat_from_sequence)
      .doc("the elements joined along axis (they may differ only there), or stacked along a new axis "
           "(new_axis=1; axis in [-r-1, r])");
  registry.add(std::move(concat));

  OpSchema map("SequenceMap");
  map.input("input_sequence_and_additional_inputs", "", Arity::kVariadic)
      .output("out_sequence", "", Arity::kVariadic)
      .required_attr("body", AttrType::kGraph)
      .attr("num_captured", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_sequence_map)
      .doc("runs body once per element of the input sequence, on element i of each sequence input and the "
           "tensor inputs whole (then the num_captured captured values); body output k makes sequence k");
  registry.add(std::move(map));
}

void register_sequence_cpu_kernels(KernelRegistry& registry) {
  registry.add("SequenceConstruct", DeviceType::kCpu, kAnyDTypes,
               [](const Node&) { return std::make_unique<SequenceConstructKernel>(); });
  registry.add("SequenceEmpty", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<SequenceEmptyKernel>(node); });
  registry.add("SequenceInsert", DeviceType::kCpu, kAnyDTypes,
               [](const Node&) { return std::make_unique<SequenceInsertKernel>(); });
  registry.add("SequenceErase", DeviceType::kCpu, kAnyDTypes,
               [](const Node&) { return std::make_unique<SequenceEraseKernel>(); });
  registry.add("SequenceAt", DeviceType::kCpu, kAnyDTypes, [](const Node&) { return std::make_unique<SequenceAtKernel>(); });
  registry.add("SequenceLength", DeviceType::kCpu, kAnyDTypes,
               [](const Node&) { return std::make_unique<SequenceLengthKernel>(); });
  registry.add("SplitToSequence", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<SplitToSequenceKernel>(node); });
  registry.add("ConcatFromSequence", DeviceType::kCpu, kAnyDTypes,
               [](const Node& node) { return std::make_unique<ConcatFromSequenceKernel>(node); });
  registry.add("SequenceMap", DeviceType::kCpu, kAnyDTypes, [](const Node& node) -> std::unique_ptr<OpKernel> {
    const KernelRegistry* creating = KernelRegistry::creating();
    return std::make_unique<SequenceMapKernel>(node, creating != nullptr ? *creating : default_kernel_registry());
  });
}

}  // namespace weir
