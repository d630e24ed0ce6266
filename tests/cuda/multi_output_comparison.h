// expect_same_as_cpu (tests/backend_comparison.h) for nodes with several
// outputs: LayerNormalization's Mean and InvStdDev, LayerNormGrad's three
// gradients, Dropout's mask. The node gets one output per tolerance, and
// output o is held to tolerances[o].
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"

namespace weir::testing {

inline void expect_outputs_same_as_cpu(const Device& device, const std::string& op_type, const std::vector<Tensor>& inputs,
                                       const std::map<std::string, Attribute>& attributes,
                                       const std::vector<Tolerance>& tolerances, const std::string& label = "") {
  std::ostringstream what;
  what << op_type << "(";
  for (size_t i = 0; i < inputs.size(); ++i) what << (i > 0 ? ", " : "") << (inputs[i].defined() ? inputs[i].type_string() : "absent");
  what << ") on " << device.to_string() << (label.empty() ? "" : " [" + label + "]");
  std::vector<Tensor> want = run_node_on(Device::cpu(), op_type, inputs, attributes, tolerances.size());
  std::vector<Tensor> got = run_node_on(device, op_type, inputs, attributes, tolerances.size());
  ASSERT_EQ(got.size(), tolerances.size()) << what.str();
  ASSERT_EQ(want.size(), tolerances.size()) << what.str();
  for (size_t o = 0; o < got.size(); ++o) {
    EXPECT_EQ(got[o].device().type, DeviceType::kCpu) << what.str() << ": outputs come back to host memory";
    expect_close(got[o], want[o], tolerances[o], what.str() + " output " + std::to_string(o));
  }
}

}  // namespace weir::testing
