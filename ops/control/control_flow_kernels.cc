// If, Loop and Scan CPU kernels: each sub-graph's kernels are created once,
// with the node's kernel, and run per branch or iteration.
#include <cstring>
#include <functional>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/control/control_flow.h"
#include "ops/control/control_flow_layout.h"
#include "ops/dtype_sets.h"
#include "ops/register_ops.h"
#include "ops/subgraph_runner.h"

namespace weir {

namespace {

// Runs a sub-graph as part of `ctx`'s step; its errors name the node and where.
std::vector<Tensor> run_subgraph(const KernelContext& ctx, const SubgraphRunner& graph, std::vector<Tensor> inputs,
                                 const std::string& where) {
  try {
    return graph.run(std::move(inputs), ctx.allocator(), &ctx);
  } catch (const Error& error) {
    throw Error(error.kind(), ctx.node().op_type() + " '" + ctx.node().name() + "' " + where + ": " + error.what())
        .with_node(ctx.node().name());
  }
}

SubgraphRunner make_runner(const Node& node, const char* name, const KernelRegistry& kernels) {
  control_flow_subgraph(node, name);  // fails naming the node when missing
  try {
    return SubgraphRunner(node.attr(name).g(), kernels);
  } catch (const Error& error) {
    throw Error(error.kind(), node.op_type() + " '" + node.name() + "' " + name + ": " + error.what()).with_node(node.name());
  }
}

bool read_condition(const KernelContext& ctx, const Tensor& tensor, const std::string& what) {
  if (tensor.dtype() != DType::kBool || tensor.num_elements() != 1) {
    ctx.fail(what + " must be a bool tensor of one element, got " + tensor.type_string());
  }
  return tensor.data<bool>()[0];
}

int64_t read_trip_count(const KernelContext& ctx, const Tensor& tensor) {
  if (tensor.dtype() != DType::kInt64 || tensor.num_elements() != 1) {
    ctx.fail("M must be an int64 tensor of one element, got " + tensor.type_string());
  }
  return tensor.data<int64_t>()[0];
}

int64_t product(const std::vector<int64_t>& sizes, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) result *= sizes[i];
  return result;
}

// Element `index` of `x` along `axis`, rank one less: a view along axis 0,
// else a copy.
Tensor take_along(const Tensor& x, int64_t axis, int64_t index, Allocator& allocator) {
  std::vector<int64_t> sizes = x.sizes();
  const size_t a = static_cast<size_t>(axis);
  sizes.erase(sizes.begin() + axis);
  if (axis == 0) return x.slice(index, index + 1).reshape(sizes);
  Tensor element = Tensor::uninitialized(x.dtype(), sizes, allocator);
  const int64_t outer = product(x.sizes(), 0, a);
  const size_t inner = static_cast<size_t>(product(x.sizes(), a + 1, x.sizes().size())) * dtype_size(x.dtype());
  const int64_t steps = x.sizes()[a];
  const auto* src = static_cast<const char*>(x.raw_data());
  auto* dst = static_cast<char*>(element.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * inner, src + static_cast<size_t>(o * steps + index) * inner, inner);
  }
  return element;
}

// Writes `element` as entry `index` along `axis` of `out`.
void put_along(const Tensor& out, int64_t axis, int64_t index, const Tensor& element) {
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = product(out.sizes(), 0, a);
  const size_t inner = static_cast<size_t>(product(out.sizes(), a + 1, out.sizes().size())) * dtype_size(out.dtype());
  const int64_t steps = out.sizes()[a];
  const auto* src = static_cast<const char*>(element.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + static_cast<size_t>(o * steps + index) * inner, src + static_cast<size_t>(o) * inner, inner);
  }
}

// The sizes of a sub-graph output that never ran (zero iterations): its
// declared static dims, symbolic ones 0.
std::vector<int64_t> declared_sizes(const Value* value) {
  std::vector<int64_t> sizes;
  if (!value->shape().has_rank()) return sizes;
  for (const Dim& dim : value->shape().dims()) sizes.push_back(dim.is_static() ? dim.size() : 0);
  return sizes;
}

DType declared_dtype(const Value* body_output, const Node& node, size_t output) {
  if (body_output->dtype() != DType::kUndefined) return body_output->dtype();
  return output < node.num_outputs() ? node.output(output)->dtype() : DType::kUndefined;
}

std::string describe(const Value* value, size_t index) {
  return "body output " + std::to_string(index) + " '" + value->name() + "'";
}

class IfKernel final : public OpKernel {
 public:
  IfKernel(const Node& node, const KernelRegistry& kernels)
      : captured_(if_captured_inputs(node)),
        then_branch_(make_runner(node, "then_branch", kernels)),
        else_branch_(make_runner(node, "else_branch", kernels)) {}

  void compute(KernelContext& ctx) override {
    const bool cond = read_condition(ctx, ctx.input(0), "cond");
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < captured_; ++i) inputs.push_back(ctx.input(1 + i));
    const SubgraphRunner& branch = cond ? then_branch_ : else_branch_;
    const char* name = cond ? "then_branch" : "else_branch";
    std::vector<Tensor> outputs = run_subgraph(ctx, branch, std::move(inputs), name);
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      const Value* declared = ctx.node().output(i);
      if (!types_compatible(declared->type(), outputs[i].type())) {
        ctx.fail(std::string(name) + " output " + std::to_string(i) + " is " + outputs[i].type_string() +
                 ", the node's output '" + declared->name() + "' is " + declared->type().to_string());
      }
      ctx.set_output(i, std::move(outputs[i]));
    }
  }

 private:
  size_t captured_;
  SubgraphRunner then_branch_;
  SubgraphRunner else_branch_;
};

class LoopKernel final : public OpKernel {
 public:
  LoopKernel(const Node& node, const KernelRegistry& kernels)
      : layout_(loop_layout(node)),
        body_(make_runner(node, "body", kernels)),
        iteration_sizes_(one_element_sizes(body_.graph().inputs()[0])),
        cond_sizes_(one_element_sizes(body_.graph().inputs()[1])) {}

  void compute(KernelContext& ctx) override {
    const Node& node = ctx.node();
    const Graph& body = body_.graph();
    const size_t carried_count = layout_.carried;
    const bool has_trip_count = ctx.has_input(0);
    const bool has_cond = ctx.has_input(1);
    const int64_t trip_count = has_trip_count ? read_trip_count(ctx, ctx.input(0)) : 0;
    bool cond = has_cond ? read_condition(ctx, ctx.input(1), "cond") : true;
    std::vector<Tensor> carried;
    for (size_t i = 0; i < carried_count; ++i) carried.push_back(ctx.input(2 + i));
    std::vector<std::vector<Tensor>> scans(layout_.scan_outputs);

    int64_t iteration = 0;
    // ONNX's table: M bounds the count when given; cond stops the loop only
    // when given (the body's condition is carried into the next iteration
    // either way).
    for (; (!has_trip_count || iteration < trip_count) && (!has_cond || cond); ++iteration) {
      std::vector<Tensor> inputs = {Tensor::from_vector<int64_t>({iteration}, iteration_sizes_),
                                    Tensor::from_vector<bool>({cond}, cond_sizes_)};
      inputs.insert(inputs.end(), carried.begin(), carried.end());
      for (size_t c = 0; c < layout_.captured; ++c) inputs.push_back(ctx.input(2 + carried_count + c));
      const std::string where = "body, iteration " + std::to_string(iteration);
      std::vector<Tensor> outputs = run_subgraph(ctx, body_, std::move(inputs), where);
      cond = read_condition(ctx, outputs[0], where + ": " + describe(body.outputs()[0], 0) + " (cond)");
      for (size_t i = 0; i < carried_count; ++i) {
        Tensor& value = outputs[1 + i];
        if (value.dtype() != ctx.input(2 + i).dtype()) {
          ctx.fail(where + ": " + describe(body.outputs()[1 + i], 1 + i) + " is " + value.type_string() +
                   ", the loop-carried value it replaces " + ctx.input(2 + i).type_string());
        }
        carried[i] = std::move(value);
      }
      for (size_t k = 0; k < layout_.scan_outputs; ++k) {
        Tensor& element = outputs[1 + carried_count + k];
        if (!scans[k].empty() &&
            (element.dtype() != scans[k][0].dtype() || element.sizes() != scans[k][0].sizes())) {
          ctx.fail(where + ": scan output " + describe(body.outputs()[1 + carried_count + k], 1 + carried_count + k) +
                   " is " + element.type_string() + ", earlier iterations gave " + scans[k][0].type_string());
        }
        scans[k].push_back(std::move(element));
      }
    }

    for (size_t i = 0; i < carried_count && i < ctx.num_outputs(); ++i) ctx.set_output(i, carried[i]);
    for (size_t k = 0; k < layout_.scan_outputs && carried_count + k < ctx.num_outputs(); ++k) {
      const size_t output = carried_count + k;
      const Value* body_output = body.outputs()[1 + output];
      DType dtype = scans[k].empty() ? declared_dtype(body_output, node, output) : scans[k][0].dtype();
      std::vector<int64_t> sizes = scans[k].empty() ? declared_sizes(body_output) : scans[k][0].sizes();
      sizes.insert(sizes.begin(), iteration);
      Tensor& out = ctx.allocate_output(output, dtype, sizes, KernelContext::Fill::kUninitialized);
      for (size_t t = 0; t < scans[k].size(); ++t) put_along(out, 0, static_cast<int64_t>(t), scans[k][t]);
    }
  }

 private:
  // The body's iteration_num and cond are scalars, or [1] where it says so.
  static std::vector<int64_t> one_element_sizes(const Value* input) {
    const Shape& shape = input->shape();
    if (shape.has_rank() && shape.is_static() && shape.num_elements() == 1) return shape.sizes();
    return {};
  }

  LoopLayout layout_;
  SubgraphRunner body_;
  std::vector<int64_t> iteration_sizes_, cond_sizes_;
};

class ScanKernel final : public OpKernel {
 public:
  ScanKernel(const Node& node, const KernelRegistry& kernels)
      : layout_(scan_layout(node)), body_(make_runner(node, "body", kernels)) {}

  void compute(KernelContext& ctx) override {
    const size_t first = layout_.first_state;
    std::vector<Tensor> states, scan_inputs, captured;
    for (size_t i = 0; i < layout_.states; ++i) states.push_back(ctx.input(first + i));
    for (size_t j = 0; j < layout_.scan_inputs; ++j) scan_inputs.push_back(ctx.input(first + layout_.states + j));
    for (size_t c = 0; c < layout_.captured; ++c) {
      captured.push_back(ctx.input(first + layout_.states + layout_.scan_inputs + c));
    }
    if (!layout_.batched) {
      std::vector<int64_t> axes;
      for (size_t j = 0; j < scan_inputs.size(); ++j) {
        axes.push_back(control_flow_axis(ctx.node(), layout_.input_axes[j], scan_inputs[j].rank(),
                                         "scan input " + std::to_string(j)));
      }
      const int64_t steps = common_length(ctx, scan_inputs, axes);
      Result result = scan(ctx, states, scan_inputs, axes, captured, steps, steps, "", [&](size_t output, DType dtype, std::vector<int64_t> sizes) {
        return output < ctx.num_outputs() ? ctx.allocate_output(output, dtype, std::move(sizes), KernelContext::Fill::kUninitialized)
                                          : Tensor::uninitialized(dtype, std::move(sizes), ctx.allocator());
      });
      for (size_t i = 0; i < layout_.states && i < ctx.num_outputs(); ++i) ctx.set_output(i, result.states[i]);
      return;
    }
    run_batched(ctx, states, scan_inputs, captured);
  }

 private:
  struct Result {
    std::vector<Tensor> states;
    std::vector<Tensor> scan_outputs;
  };
  using Allocate = std::function<Tensor(size_t output, DType dtype, std::vector<int64_t> sizes)>;

  int64_t common_length(const KernelContext& ctx, const std::vector<Tensor>& scan_inputs,
                        const std::vector<int64_t>& axes) const {
    const int64_t steps = scan_inputs[0].sizes()[static_cast<size_t>(axes[0])];
    for (size_t j = 1; j < scan_inputs.size(); ++j) {
      int64_t length = scan_inputs[j].sizes()[static_cast<size_t>(axes[j])];
      if (length != steps) {
        ctx.fail("scan input " + std::to_string(j) + " " + scan_inputs[j].type_string() + " has " +
                 std::to_string(length) + " steps along axis " + std::to_string(axes[j]) + ", scan input 0 " +
                 scan_inputs[0].type_string() + " has " + std::to_string(steps));
      }
    }
    return steps;
  }

  // One scan over `steps` entries of the scan inputs; scan outputs have
  // `total` entries along their axes (more than `steps`: zeros past them).
  Result scan(KernelContext& ctx, std::vector<Tensor> states, const std::vector<Tensor>& scan_inputs,
              const std::vector<int64_t>& axes, const std::vector<Tensor>& captured, int64_t steps, int64_t total,
              const std::string& prefix, const Allocate& allocate) const {
    const Graph& body = body_.graph();
    const size_t n = layout_.states;
    const std::vector<Tensor> initial = states;
    Result result;
    result.scan_outputs.resize(layout_.scan_outputs);
    std::vector<int64_t> output_axes(layout_.scan_outputs, 0);
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<Tensor> inputs = states;
      for (size_t j = 0; j < scan_inputs.size(); ++j) {
        const int64_t index = layout_.input_directions[j] != 0 ? steps - 1 - t : t;
        inputs.push_back(take_along(scan_inputs[j], axes[j], index, ctx.allocator()));
      }
      inputs.insert(inputs.end(), captured.begin(), captured.end());
      const std::string where = prefix + "body, step " + std::to_string(t);
      std::vector<Tensor> outputs = run_subgraph(ctx, body_, std::move(inputs), where);
      for (size_t i = 0; i < n; ++i) {
        if (outputs[i].dtype() != initial[i].dtype()) {
          ctx.fail(where + ": " + describe(body.outputs()[i], i) + " is " + outputs[i].type_string() +
                   ", the state it replaces " + initial[i].type_string());
        }
        states[i] = std::move(outputs[i]);
      }
      for (size_t k = 0; k < layout_.scan_outputs; ++k) {
        const Tensor& element = outputs[n + k];
        Tensor& out = result.scan_outputs[k];
        const std::string what = "scan output " + std::to_string(k);
        if (t == 0) {
          output_axes[k] = control_flow_axis(ctx.node(), layout_.output_axes[k], element.rank() + 1, what);
          std::vector<int64_t> sizes = element.sizes();
          sizes.insert(sizes.begin() + output_axes[k], total);
          out = allocate(n + k, element.dtype(), sizes);
        } else {
          std::vector<int64_t> sizes = out.sizes();
          sizes.erase(sizes.begin() + output_axes[k]);
          if (element.dtype() != out.dtype() || element.sizes() != sizes) {
            ctx.fail(where + ": " + describe(body.outputs()[n + k], n + k) + " is " + element.type_string() +
                     ", the first step gave " + std::string(dtype_name(out.dtype())) + format_sizes(sizes));
          }
        }
        const int64_t index = layout_.output_directions[k] != 0 ? steps - 1 - t : t;
        put_along(out, output_axes[k], index, element);
      }
    }
    if (steps == 0) {
      for (size_t k = 0; k < layout_.scan_outputs; ++k) {
        const Value* body_output = body.outputs()[n + k];
        std::vector<int64_t> sizes = declared_sizes(body_output);
        const std::string what = "scan output " + std::to_string(k);
        const int64_t axis = control_flow_axis(ctx.node(), layout_.output_axes[k], static_cast<int64_t>(sizes.size()) + 1, what);
        sizes.insert(sizes.begin() + axis, total);
        result.scan_outputs[k] = allocate(n + k, declared_dtype(body_output, ctx.node(), n + k), sizes);
      }
    }
    result.states = std::move(states);
    return result;
  }

  // ONNX's opset-8 Scan: one scan per batch entry of every state and scan
  // input, scanning axis 1; sequence_lens[b] steps for entry b.
  void run_batched(KernelContext& ctx, const std::vector<Tensor>& states, const std::vector<Tensor>& scan_inputs,
                   const std::vector<Tensor>& captured) const {
    std::vector<const Tensor*> batched;
    for (const Tensor& state : states) batched.push_back(&state);
    for (const Tensor& input : scan_inputs) {
      if (input.rank() < 2) ctx.fail("the batched form's scan inputs need a batch and a scan axis, got " + input.type_string());
      batched.push_back(&input);
    }
    const int64_t batch = scan_inputs[0].sizes()[0];
    for (const Tensor* tensor : batched) {
      if (tensor->rank() < 1 || tensor->sizes()[0] != batch) {
        ctx.fail("every state and scan input needs batch size " + std::to_string(batch) + " along axis 0, got " +
                 tensor->type_string());
      }
    }
    const std::vector<int64_t> axes(scan_inputs.size(), 0);
    const int64_t steps = scan_inputs[0].sizes()[1];
    for (size_t j = 1; j < scan_inputs.size(); ++j) {
      if (scan_inputs[j].sizes()[1] != steps) {
        ctx.fail("scan input " + std::to_string(j) + " " + scan_inputs[j].type_string() + " has " +
                 std::to_string(scan_inputs[j].sizes()[1]) + " steps, scan input 0 " + std::to_string(steps));
      }
    }
    std::vector<int64_t> lengths(static_cast<size_t>(batch), steps);
    bool padded = false;
    if (layout_.has_sequence_lens) {
      const Tensor& lens = ctx.input(0);
      if (lens.dtype() != DType::kInt64 || lens.sizes() != std::vector<int64_t>{batch}) {
        ctx.fail("sequence_lens must be int64 [" + std::to_string(batch) + "], got " + lens.type_string());
      }
      for (int64_t b = 0; b < batch; ++b) {
        int64_t length = lens.data<int64_t>()[b];
        if (length < 0 || length > steps) {
          ctx.fail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(length) + " is not in [0, " +
                   std::to_string(steps) + "]");
        }
        lengths[static_cast<size_t>(b)] = length;
        padded = padded || length < steps;
      }
    }
    auto entry = [](const Tensor& tensor, int64_t b) {
      std::vector<int64_t> sizes(tensor.sizes().begin() + 1, tensor.sizes().end());
      return tensor.slice(b, b + 1).reshape(sizes);
    };
    const size_t outputs = layout_.states + layout_.scan_outputs;
    std::vector<Tensor> gathered(outputs);
    // Scan outputs are zero past an entry's length.
    const auto fill = padded ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> entry_states, entry_inputs;
      for (const Tensor& state : states) entry_states.push_back(entry(state, b));
      for (const Tensor& input : scan_inputs) entry_inputs.push_back(entry(input, b));
      const int64_t length = lengths[static_cast<size_t>(b)];
      if (length == 0 && b > 0) {  // the states stay; the scan outputs are zeros already
        for (size_t o = 0; o < layout_.states; ++o) put_along(gathered[o], 0, b, entry_states[o]);
        continue;
      }
      Result result = scan(ctx, entry_states, entry_inputs, axes, captured, length, steps,
                           "batch entry " + std::to_string(b) + ", ",
                           [&](size_t, DType dtype, std::vector<int64_t> sizes) {
                             Tensor tensor = Tensor::uninitialized(dtype, std::move(sizes), ctx.allocator());
                             if (length < steps && tensor.nbytes() > 0) std::memset(tensor.raw_data(), 0, tensor.nbytes());
                             return tensor;
                           });
      std::vector<Tensor> values = std::move(result.states);
      values.insert(values.end(), result.scan_outputs.begin(), result.scan_outputs.end());
      for (size_t o = 0; o < outputs; ++o) {
        if (b == 0) {
          std::vector<int64_t> sizes = values[o].sizes();
          sizes.insert(sizes.begin(), batch);
          gathered[o] = o < ctx.num_outputs() ? ctx.allocate_output(o, values[o].dtype(), sizes, fill)
                                              : Tensor(values[o].dtype(), sizes, ctx.allocator());
        } else if (values[o].dtype() != gathered[o].dtype() ||
                   values[o].num_elements() * batch != gathered[o].num_elements()) {
          ctx.fail("batch entry " + std::to_string(b) + " gives output " + std::to_string(o) + " " +
                   values[o].type_string() + ", entry 0 gave " + gathered[o].type_string());
        }
        put_along(gathered[o], 0, b, values[o]);
      }
    }
    if (batch == 0) {
      for (size_t o = 0; o < outputs && o < ctx.num_outputs(); ++o) {
        const Value* value = ctx.node().output(o);
        std::vector<int64_t> sizes = declared_sizes(value);
        if (sizes.empty()) sizes.push_back(0);
        sizes[0] = 0;
        ctx.allocate_output(o, value->dtype(), sizes, KernelContext::Fill::kZeros);
      }
    }
  }

  ScanLayout layout_;
  SubgraphRunner body_;
};

template <typename Kernel>
KernelFactory control_flow_factory() {
  return [](const Node& node) -> std::unique_ptr<OpKernel> {
    const KernelRegistry* creating = KernelRegistry::creating();
    return std::make_unique<Kernel>(node, creating != nullptr ? *creating : default_kernel_registry());
  };
}

}  // namespace

void register_control_flow_cpu_kernels(KernelRegistry& registry) {
  registry.add("If", DeviceType::kCpu, kAnyDTypes, control_flow_factory<IfKernel>());
  registry.add("Loop", DeviceType::kCpu, kAnyDTypes, control_flow_factory<LoopKernel>());
  registry.add("Scan", DeviceType::kCpu, kAnyDTypes, control_flow_factory<ScanKernel>());
}

}  // namespace weir
