#include "ops/control/control_flow_layout.h"

#include "core/error.h"

namespace weir {

namespace {

std::string count(size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

int64_t int_attribute(const Node& node, const char* name, int64_t fallback) {
  return node.has_attr(name) ? node.attr(name).i() : fallback;
}

size_t captured_count(const Node& node) {
  int64_t captured = int_attribute(node, "num_captured", 0);
  if (captured < 0 || static_cast<size_t>(captured) > node.num_inputs()) {
    fail_control_flow(node, "num_captured " + std::to_string(captured) + " is not in [0, " +
                                std::to_string(node.num_inputs()) + "], the node's input count");
  }
  return static_cast<size_t>(captured);
}

// One value per scan input/output from a list attribute, zeros when absent.
std::vector<int64_t> per_item(const Node& node, const char* name, size_t items, bool directions) {
  if (!node.has_attr(name)) return std::vector<int64_t>(items, 0);
  std::vector<int64_t> values = node.attr(name).ints();
  if (values.size() != items) {
    fail_control_flow(node, std::string(name) + " has " + std::to_string(values.size()) + " values, expected " +
                                std::to_string(items));
  }
  for (int64_t value : values) {
    if (directions && value != 0 && value != 1) {
      fail_control_flow(node, std::string(name) + " holds " + std::to_string(value) + "; directions are 0 or 1");
    }
  }
  return values;
}

}  // namespace

void fail_control_flow(const Node& node, const std::string& message) {
  throw Error(ErrorKind::kShape, node.op_type() + " '" + node.name() + "': " + message).with_node(node.name());
}

const Graph& control_flow_subgraph(const Node& node, const char* name) {
  if (!node.has_attr(name)) fail_control_flow(node, std::string("graph attribute '") + name + "' is missing");
  const GraphPtr& graph = node.attr(name).g();
  if (graph == nullptr) fail_control_flow(node, std::string("graph attribute '") + name + "' is empty");
  return *graph;
}

size_t if_captured_inputs(const Node& node) {
  if (node.num_inputs() < 1) fail_control_flow(node, "needs the cond input");
  const size_t captured = node.num_inputs() - 1;
  for (const char* name : {"then_branch", "else_branch"}) {
    const Graph& branch = control_flow_subgraph(node, name);
    if (branch.inputs().size() != captured) {
      fail_control_flow(node, std::string(name) + " takes " + count(branch.inputs().size(), "input") +
                                  ", the node gives " + count(captured, "captured value"));
    }
    if (branch.outputs().size() < node.num_outputs()) {
      fail_control_flow(node, std::string(name) + " has " + count(branch.outputs().size(), "output") +
                                  ", the node " + std::to_string(node.num_outputs()));
    }
  }
  return captured;
}

LoopLayout loop_layout(const Node& node) {
  const Graph& body = control_flow_subgraph(node, "body");
  LoopLayout layout;
  layout.captured = captured_count(node);
  if (node.num_inputs() < 2 + layout.captured) {
    fail_control_flow(node, "has " + count(node.num_inputs(), "input") + "; M, cond and " +
                                count(layout.captured, "captured value") + " need at least " +
                                std::to_string(2 + layout.captured));
  }
  layout.carried = node.num_inputs() - 2 - layout.captured;
  const size_t expected_inputs = 2 + layout.carried + layout.captured;
  if (body.inputs().size() != expected_inputs) {
    fail_control_flow(node, "body takes " + count(body.inputs().size(), "input") + ", expected " +
                                std::to_string(expected_inputs) + " (iteration_num, cond, " +
                                count(layout.carried, "loop-carried value") + ", " +
                                count(layout.captured, "captured value") + ")");
  }
  if (body.outputs().size() < 1 + layout.carried) {
    fail_control_flow(node, "body has " + count(body.outputs().size(), "output") + ", expected at least " +
                                std::to_string(1 + layout.carried) + " (cond and " +
                                count(layout.carried, "loop-carried value") + ")");
  }
  layout.scan_outputs = body.outputs().size() - 1 - layout.carried;
  if (node.num_outputs() > layout.carried + layout.scan_outputs) {
    fail_control_flow(node, "has " + count(node.num_outputs(), "output") + ", its body gives " +
                                count(layout.carried, "loop-carried value") + " and " +
                                count(layout.scan_outputs, "scan output"));
  }
  return layout;
}

ScanLayout scan_layout(const Node& node) {
  const Graph& body = control_flow_subgraph(node, "body");
  ScanLayout layout;
  layout.batched = int_attribute(node, "batched", 0) != 0;
  layout.captured = captured_count(node);
  int64_t scan_inputs = node.has_attr("num_scan_inputs") ? node.attr("num_scan_inputs").i() : -1;
  if (scan_inputs < 1) fail_control_flow(node, "num_scan_inputs must be at least 1, got " + std::to_string(scan_inputs));
  layout.scan_inputs = static_cast<size_t>(scan_inputs);
  if (layout.batched) {
    if (node.num_inputs() == body.inputs().size() + 1) layout.has_sequence_lens = true;
    if (node.has_attr("scan_input_axes") || node.has_attr("scan_output_axes")) {
      fail_control_flow(node, "the batched (opset-8) form scans axis 1: scan_input_axes and scan_output_axes must be absent");
    }
  }
  layout.first_state = layout.has_sequence_lens ? 1 : 0;
  if (node.num_inputs() < layout.first_state + layout.scan_inputs + layout.captured) {
    fail_control_flow(node, "has " + count(node.num_inputs(), "input") + ", fewer than its " +
                                count(layout.scan_inputs, "scan input") + " and " +
                                count(layout.captured, "captured value"));
  }
  layout.states = node.num_inputs() - layout.first_state - layout.scan_inputs - layout.captured;
  const size_t expected_inputs = layout.states + layout.scan_inputs + layout.captured;
  if (body.inputs().size() != expected_inputs) {
    fail_control_flow(node, "body takes " + count(body.inputs().size(), "input") + ", expected " +
                                std::to_string(expected_inputs) + " (" + count(layout.states, "state") + ", " +
                                count(layout.scan_inputs, "scan input") + ", " +
                                count(layout.captured, "captured value") + ")");
  }
  if (body.outputs().size() < layout.states) {
    fail_control_flow(node, "body has " + count(body.outputs().size(), "output") + ", fewer than its " +
                                count(layout.states, "state"));
  }
  layout.scan_outputs = body.outputs().size() - layout.states;
  if (node.num_outputs() > layout.states + layout.scan_outputs) {
    fail_control_flow(node, "has " + count(node.num_outputs(), "output") + ", its body gives " +
                                count(layout.states, "state") + " and " + count(layout.scan_outputs, "scan output"));
  }
  layout.input_axes = per_item(node, "scan_input_axes", layout.scan_inputs, false);
  layout.input_directions = per_item(node, "scan_input_directions", layout.scan_inputs, true);
  layout.output_axes = per_item(node, "scan_output_axes", layout.scan_outputs, false);
  layout.output_directions = per_item(node, "scan_output_directions", layout.scan_outputs, true);
  return layout;
}

int64_t control_flow_axis(const Node& node, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    fail_control_flow(node, what + " axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace weir
