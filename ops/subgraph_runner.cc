#include "ops/subgraph_runner.h"

#include "core/error.h"
#include "core/type_inference.h"

namespace weir {

struct SubgraphRunner::Step {
  const Node* node;
  std::unique_ptr<OpKernel> kernel;
  std::vector<int> inputs;   // -1: an absent optional input
  std::vector<int> outputs;
  std::vector<int> release;  // slots whose last reader this step is
};

SubgraphRunner::SubgraphRunner(SubgraphRunner&&) noexcept = default;
SubgraphRunner::~SubgraphRunner() = default;

SubgraphRunner::SubgraphRunner(std::shared_ptr<const Graph> graph, const KernelRegistry& kernels)
    : graph_(std::move(graph)) {
  if (graph_ == nullptr) throw Error(ErrorKind::kInvalidArgument, "SubgraphRunner: no graph given");
  auto slot = [&](const Value* value) {
    auto [it, inserted] = slot_of_.emplace(value, static_cast<int>(slot_values_.size()));
    if (inserted) slot_values_.push_back(value);
    return it->second;
  };
  for (const Value* value : graph_->inputs()) slot(value);
  for (const Value* value : graph_->constants()) slot(value);
  for (const Value* value : graph_->persistents()) slot(value);
  const std::vector<Node*> order = graph_->topological_order();
  std::vector<int> last_reader(slot_values_.size(), -1);
  for (const Node* node : order) {
    Step step{node, kernels.create(*node, DeviceType::kCpu), {}, {}, {}};
    for (const Value* input : node->inputs()) {
      if (input == nullptr) {
        step.inputs.push_back(-1);
        continue;
      }
      auto found = slot_of_.find(input);
      if (found == slot_of_.end()) {
        throw Error(ErrorKind::kInvalidGraph, "input '" + input->name() + "' is not defined in graph '" +
                                                  graph_->name() + "'")
            .with_node(node->name());
      }
      step.inputs.push_back(found->second);
      last_reader[static_cast<size_t>(found->second)] = static_cast<int>(steps_.size());
    }
    for (const Value* output : node->outputs()) step.outputs.push_back(slot(output));
    last_reader.resize(slot_values_.size(), -1);
    steps_.push_back(std::move(step));
  }
  for (const Value* output : graph_->outputs()) {
    auto found = slot_of_.find(output);
    if (found == slot_of_.end()) {
      throw Error(ErrorKind::kInvalidGraph, "graph '" + graph_->name() + "': output '" + output->name() +
                                                "' is not defined");
    }
    output_slots_.push_back(found->second);
    last_reader[static_cast<size_t>(found->second)] = -1;  // kept to the end
  }
  for (size_t s = 0; s < slot_values_.size(); ++s) {
    // Constants and persistent values are shared handles: nothing to free.
    ValueKind kind = slot_values_[s]->kind();
    if (last_reader[s] >= 0 && kind != ValueKind::kConstant && kind != ValueKind::kPersistent) {
      steps_[static_cast<size_t>(last_reader[s])].release.push_back(static_cast<int>(s));
    }
  }
}

std::vector<Tensor> SubgraphRunner::execute(std::vector<Tensor> inputs, Allocator& allocator,
                                            const KernelContext* parent, bool keep_all) const {
  const std::vector<Value*>& declared = graph_->inputs();
  if (inputs.size() != declared.size()) {
    throw Error(ErrorKind::kShape, "graph '" + graph_->name() + "' takes " + std::to_string(declared.size()) +
                                       " inputs, got " + std::to_string(inputs.size()));
  }
  std::vector<Tensor> slots(slot_values_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& tensor = inputs[i];
    if (!types_compatible(declared[i]->type(), tensor.type())) {
      throw Error(ErrorKind::kShape, "graph '" + graph_->name() + "' input " + std::to_string(i) + " '" +
                                         declared[i]->name() + "' expects " + declared[i]->type().to_string() +
                                         ", got " + tensor.type_string());
    }
    slots[static_cast<size_t>(slot_of_.at(declared[i]))] = std::move(inputs[i]);
  }
  for (const Value* constant : graph_->constants()) slots[static_cast<size_t>(slot_of_.at(constant))] = constant->data();
  for (const Value* persistent : graph_->persistents()) {
    if (!persistent->data().defined()) {
      throw Error(ErrorKind::kInvalidArgument, "persistent value '" + persistent->name() + "' has no value to read");
    }
    slots[static_cast<size_t>(slot_of_.at(persistent))] = persistent->data();
  }

  for (const Step& step : steps_) {
    const Node& node = *step.node;
    std::vector<Tensor> step_inputs;
    step_inputs.reserve(step.inputs.size());
    for (int slot : step.inputs) step_inputs.push_back(slot >= 0 ? slots[static_cast<size_t>(slot)] : Tensor());
    KernelContext ctx(node, std::move(step_inputs), allocator);
    if (parent != nullptr) {
      ctx.set_backend(parent->backend());
      ctx.set_stream(parent->stream());
      ctx.set_communicator(parent->communicator(), parent->collective_timeout());
      ctx.set_parameter_client(parent->parameter_client());
      if (parent->rng_counter()) ctx.set_rng_counter(*parent->rng_counter());
    }
    step.kernel->compute(ctx);
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      const Tensor& result = ctx.output(i);
      const Value* output = node.output(i);
      if (!result.defined()) {
        throw Error(ErrorKind::kInternal, "kernel left output " + std::to_string(i) + " unset").with_node(node.name());
      }
      if (!types_compatible(output->type(), result.type())) {
        throw Error(ErrorKind::kInternal, "kernel produced " + result.type_string() + " for output '" +
                                              output->name() + "', declared " + output->type().to_string())
            .with_node(node.name());
      }
      slots[static_cast<size_t>(step.outputs[i])] = result;
    }
    if (!keep_all) {
      for (int slot : step.release) slots[static_cast<size_t>(slot)] = Tensor();
    }
  }
  return slots;
}

std::vector<Tensor> SubgraphRunner::run(std::vector<Tensor> inputs, Allocator& allocator,
                                        const KernelContext* parent) const {
  std::vector<Tensor> slots = execute(std::move(inputs), allocator, parent, /*keep_all=*/false);
  std::vector<Tensor> outputs;
  outputs.reserve(output_slots_.size());
  for (int slot : output_slots_) outputs.push_back(slots[static_cast<size_t>(slot)]);
  return outputs;
}

std::unordered_map<const Value*, Tensor> SubgraphRunner::run_all(std::vector<Tensor> inputs, Allocator& allocator,
                                                                 const KernelContext* parent) const {
  std::vector<Tensor> slots = execute(std::move(inputs), allocator, parent, /*keep_all=*/true);
  std::unordered_map<const Value*, Tensor> values;
  for (size_t s = 0; s < slots.size(); ++s) values[slot_values_[s]] = std::move(slots[s]);
  return values;
}

}  // namespace weir
