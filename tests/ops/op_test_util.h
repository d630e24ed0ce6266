// Helpers for op tests: tensors of any dtype from doubles, values back as
// doubles, and a one-node graph to run a kernel through.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/type_inference.h"
#include "ops/dtype_dispatch.h"
#include "ops/graph_evaluator.h"
#include "ops/register_ops.h"

namespace weir::testing {

inline int64_t count_of(const std::vector<int64_t>& sizes) {
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  return count;
}

// Reference broadcasting by index arithmetic, independent of BroadcastPlan:
// the offset in an operand of `sizes` of output element `flat` of `out`
// (decompose the output index; axes of size 1 in the operand read index 0).
inline int64_t broadcast_offset(int64_t flat, const std::vector<int64_t>& out, const std::vector<int64_t>& sizes) {
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

// A tensor of `dtype` holding `values` (converted as a store would).
inline Tensor make_tensor(DType dtype, const std::vector<double>& values, const std::vector<int64_t>& sizes) {
  Tensor tensor(dtype, sizes);
  dispatch_dtype(dtype, [&]<typename T>() {
    T* data = tensor.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = values[i] != 0;
      } else {
        data[i] = store<T>(static_cast<ComputeType<T>>(values[i]));
      }
    }
  });
  return tensor;
}

inline std::vector<double> to_doubles(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.num_elements()));
  dispatch_dtype(tensor.dtype(), [&]<typename T>() {
    const T* data = tensor.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        values[i] = data[i] ? 1.0 : 0.0;
      } else {
        values[i] = static_cast<double>(load(data[i]));
      }
    }
  });
  return values;
}

// Random values suited to `dtype`: integers within a small range, floats in [low, high).
inline std::vector<double> random_values(DType dtype, int64_t count, uint32_t seed, double low = -3.0, double high = 3.0) {
  std::mt19937 engine(seed);
  std::vector<double> values(static_cast<size_t>(count));
  if (is_integer(dtype)) {
    int lo = is_signed(dtype) ? -120 : 0;
    std::uniform_int_distribution<int> distribution(lo, lo + 240);
    for (double& value : values) value = distribution(engine);
  } else {
    std::uniform_real_distribution<double> distribution(low, high);
    for (double& value : values) value = distribution(engine);
  }
  return values;
}

// `count` f32 values drawn from N(0, scale^2) (gradients, DGC's accumulations).
inline std::vector<float> gaussian_floats(int64_t count, uint32_t seed, double scale = 1.0) {
  std::mt19937 engine(seed);
  std::normal_distribution<double> distribution(0.0, scale);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = static_cast<float>(distribution(engine));
  return values;
}

// A tensor of `dtype` and `sizes` holding random_values(dtype, ..., seed).
inline Tensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, uint32_t seed) {
  return make_tensor(dtype, random_values(dtype, count_of(sizes), seed), sizes);
}

// Row-major multi-index of element `flat` of a tensor of `sizes`, and back.
inline std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> index(sizes.size());
  for (size_t a = sizes.size(); a-- > 0;) {
    index[a] = flat % sizes[a];
    flat /= sizes[a];
  }
  return index;
}

inline int64_t flatten(const std::vector<int64_t>& index, const std::vector<int64_t>& sizes) {
  int64_t flat = 0;
  for (size_t a = 0; a < sizes.size(); ++a) flat = flat * sizes[a] + index[a];
  return flat;
}

// A graph of one `op_type` node whose inputs are graph inputs "in0", "in1",
// ... fed `inputs` (an undefined Tensor: an absent optional input), and
// whose outputs are the graph's.
struct SingleOpGraph {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> feeds;
};

inline SingleOpGraph single_op_graph(const std::string& op_type, const std::vector<Tensor>& inputs,
                                     std::map<std::string, Attribute> attributes, size_t num_outputs) {
  SingleOpGraph single{std::make_unique<Graph>("one_" + op_type), {}};
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      values.push_back(nullptr);
      continue;
    }
    std::string name = "in" + std::to_string(i);
    values.push_back(single.graph->add_input(name, {inputs[i].dtype(), inputs[i].shape()}));
    single.feeds[name] = inputs[i];
  }
  Node* node = single.graph->add_node(op_type, values, num_outputs, std::move(attributes), "op");
  for (Value* output : node->outputs()) single.graph->add_output(output);
  return single;
}

// Runs one `op_type` node on `inputs` through the kernel registry.
inline std::vector<Tensor> run_op(const std::string& op_type, const std::vector<Tensor>& inputs,
                                  std::map<std::string, Attribute> attributes = {}, size_t num_outputs = 1) {
  SingleOpGraph single = single_op_graph(op_type, inputs, std::move(attributes), num_outputs);
  infer_graph_types(*single.graph, default_op_registry());
  return evaluate_graph(*single.graph, single.feeds);
}

// The message of the weir::Error that running `op_type` throws, or "no error".
inline std::string error_of(const std::string& op_type, const std::vector<Tensor>& inputs,
                            std::map<std::string, Attribute> attributes = {}) {
  try {
    run_op(op_type, inputs, std::move(attributes));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace weir::testing
