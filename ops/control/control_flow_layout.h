// How a control-flow node's inputs and outputs line up with its
// sub-graphs' (ops/control/control_flow.h), shared by the schemas' type
// inference and the kernels. Each function throws weir::Error(kShape)
// naming the node when the counts disagree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"

namespace weir {

[[noreturn]] void fail_control_flow(const Node& node, const std::string& message);

// The graph attribute `name`; fails when it is missing or empty.
const Graph& control_flow_subgraph(const Node& node, const char* name);

// If: the number of captured inputs (node inputs after cond), checked
// against both branches; each branch has at least as many outputs as the node.
size_t if_captured_inputs(const Node& node);

struct LoopLayout {
  size_t carried = 0;       // N: v_initial inputs, v_final outputs
  size_t scan_outputs = 0;  // K: the body's outputs after cond and the carried values
  size_t captured = 0;      // C: trailing inputs
};
LoopLayout loop_layout(const Node& node);

struct ScanLayout {
  bool batched = false;            // ONNX's opset-8 form
  bool has_sequence_lens = false;  // batched only: input 0
  size_t first_state = 0;          // 1 with sequence_lens
  size_t states = 0;               // N
  size_t scan_inputs = 0;          // M
  size_t scan_outputs = 0;         // K
  size_t captured = 0;             // C
  // As the attributes give them (absent: zeros), one per scan input/output.
  std::vector<int64_t> input_axes, input_directions, output_axes, output_directions;
};
ScanLayout scan_layout(const Node& node);

// `axis` of a tensor of `rank` in [0, rank), failing naming the node and `what`.
int64_t control_flow_axis(const Node& node, int64_t axis, int64_t rank, const std::string& what);

}  // namespace weir
