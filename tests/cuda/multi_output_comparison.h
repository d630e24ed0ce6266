// expect_same_as_cpu (tests/backend_comparison.h) for nodes with several
// outputs (LayerNormalization's Mean and InvStdDev, the gradients of the
// normalizations, Dropout's mask, an optimizer's new state) and for nodes
// that update their inputs in place. Every run gets its own deep copy of
// the inputs, because the CPU session runs on the fed tensors themselves and
// an in-place update would otherwise change the inputs of the next run.
//
//   expect_outputs_same_as_cpu(device, "LayerNormalization", {x, scale, bias}, {}, {y_tolerance, {}, {}});
//   BothRuns runs = expect_outputs_same_as_cpu(device, "Adam", inputs, attributes, 3, {1e-6, 1e-8}, "step 1");
//   ... feed runs.device / runs.cpu back for step 2 through run_on_both and expect_all_close
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/backend_comparison.h"

namespace weir::testing {

inline std::vector<Tensor> deep_copies(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> copies;
  for (const Tensor& t : tensors) copies.push_back(t.defined() ? t.clone() : Tensor());
  return copies;
}

struct BothRuns {
  std::vector<Tensor> device, cpu;
};

// Runs the node on `device` with `device_inputs` and on the CPU with
// `cpu_inputs` (the same tensors for a single comparison; each side's
// previous outputs when chaining steps), each with all `num_outputs`.
inline BothRuns run_on_both(const Device& device, const std::string& op_type, const std::vector<Tensor>& device_inputs,
                            const std::vector<Tensor>& cpu_inputs, const std::map<std::string, Attribute>& attributes,
                            size_t num_outputs) {
  BothRuns runs;
  runs.cpu = run_node_on(Device::cpu(), op_type, deep_copies(cpu_inputs), attributes, num_outputs);
  runs.device = run_node_on(device, op_type, deep_copies(device_inputs), attributes, num_outputs);
  return runs;
}

// Output o of both runs compared within tolerances[o], under `what`.
inline void expect_all_close(const BothRuns& runs, const std::vector<Tolerance>& tolerances, const std::string& what) {
  ASSERT_EQ(runs.device.size(), tolerances.size()) << what;
  ASSERT_EQ(runs.cpu.size(), tolerances.size()) << what;
  for (size_t o = 0; o < runs.device.size(); ++o) {
    EXPECT_EQ(runs.device[o].device().type, DeviceType::kCpu) << what << ": outputs come back to host memory";
    expect_close(runs.device[o], runs.cpu[o], tolerances[o], what + " output " + std::to_string(o));
  }
}

// Every output of both runs within one tolerance.
inline void expect_all_close(const BothRuns& runs, Tolerance tolerance, const std::string& what) {
  expect_all_close(runs, std::vector<Tolerance>(runs.device.size(), tolerance), what);
}

// One run of the node on `device` and on the CPU, with one output per
// tolerance, output o held to tolerances[o]; the runs are returned for a
// test that chains steps.
inline BothRuns expect_outputs_same_as_cpu(const Device& device, const std::string& op_type,
                                           const std::vector<Tensor>& inputs,
                                           const std::map<std::string, Attribute>& attributes,
                                           const std::vector<Tolerance>& tolerances, const std::string& label = "") {
  std::ostringstream what;
  what << op_type << "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    what << (i > 0 ? ", " : "") << (inputs[i].defined() ? inputs[i].type_string() : "absent");
  }
  what << ") on " << device.to_string() << (label.empty() ? "" : " [" + label + "]");
  BothRuns runs = run_on_both(device, op_type, inputs, inputs, attributes, tolerances.size());
  expect_all_close(runs, tolerances, what.str());
  return runs;
}

// The same with `num_outputs` outputs, all held to one tolerance.
inline BothRuns expect_outputs_same_as_cpu(const Device& device, const std::string& op_type,
                                           const std::vector<Tensor>& inputs,
                                           const std::map<std::string, Attribute>& attributes, size_t num_outputs,
                                           Tolerance tolerance, const std::string& label = "") {
  return expect_outputs_same_as_cpu(device, op_type, inputs, attributes, std::vector<Tolerance>(num_outputs, tolerance),
                                    label);
}

// The message of the weir::Error running the node on `device` throws, or "no error".
inline std::string error_on(const Device& device, const std::string& op_type, const std::vector<Tensor>& inputs,
                            const std::map<std::string, Attribute>& attributes, size_t num_outputs = 1) {
  try {
    run_node_on(device, op_type, deep_copies(inputs), attributes, num_outputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// `message` without the " (<op> on <device>)" a Session appends to a
// kernel's error, so errors on two devices compare equal.
inline std::string without_location(const std::string& message) {
  const size_t at = message.rfind(" (");
  return at == std::string::npos || message.back() != ')' ? message : message.substr(0, at);
}

}  // namespace weir::testing
