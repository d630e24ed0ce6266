// Checking a backend's kernels against the CPU's: one node, run through a
// Session on the device under test and on the CPU, outputs compared element
// by element. An op family's test is a value-parameterized suite over the
// devices, so a new backend is checked by instantiating the same tests:
//
//   class SoftmaxOnBackend : public weir::testing::OnBackend {};
//   TEST_P(SoftmaxOnBackend, MatchesTheCpu) {
//     expect_same_as_cpu(GetParam(), "Softmax", {random_tensor(DType::kFloat32, {5, 17}, 1)}, {}, {1e-5, 1e-7});
//   }
//   INSTANTIATE_TEST_SUITE_P(Cuda, SoftmaxOnBackend, ::testing::Values(weir::Device::cuda(0)), device_test_name);
//
// The device's tests skip (GTEST_SKIP) where the device cannot be used: a
// build without its backend, or a machine without the GPU.
#pragma once

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/graph.h"
#include "ops/dtype_dispatch.h"
#include "runtime/device_support.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/ops/op_test_util.h"

namespace weir::testing {

// Why `device` cannot run a session here; empty when it can.
inline std::string device_unusable_reason(const Device& device) {
  try {
    check_device_usable(device);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A test parameterized by the device under test, skipped where it cannot run.
class OnBackend : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    std::string reason = device_unusable_reason(GetParam());
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

// "cuda_0", for INSTANTIATE_TEST_SUITE_P's name generator.
inline std::string device_test_name(const ::testing::TestParamInfo<Device>& info) {
  std::string name = info.param.to_string();
  for (char& c : name) {
    if (c == ':') c = '_';
  }
  return name;
}

// Runs one `op_type` node on `device` through a compiled plan and a Session:
// `inputs` are fed (and so copied to the device), outputs come back to the host.
inline std::vector<Tensor> run_node_on(const Device& device, const std::string& op_type, const std::vector<Tensor>& inputs,
                                       const std::map<std::string, Attribute>& attributes = {}, size_t num_outputs = 1) {
  SingleOpGraph single = single_op_graph(op_type, inputs, attributes, num_outputs);
  CompileOptions options;
  options.default_device = device;
  Session session(compile(*single.graph, options));
  return session.run(single.feeds);
}

// How far a result may be from the CPU's: |got - want| <= absolute +
// relative * |want|. Zero for both: bit for bit (NaN matching any NaN).
struct Tolerance {
  double relative = 0.0;
  double absolute = 0.0;
};

// Expects `got` to match `want` within `tolerance`, reporting the first few
// elements that do not (with their index) under `label`.
inline void expect_close(const Tensor& got, const Tensor& want, Tolerance tolerance, const std::string& label) {
  ASSERT_EQ(got.dtype(), want.dtype()) << label;
  ASSERT_EQ(got.sizes(), want.sizes()) << label << ": " << got.type_string() << " vs " << want.type_string();
  if (tolerance.relative == 0.0 && tolerance.absolute == 0.0 && got.bitwise_equal(want)) return;
  std::vector<double> g = to_doubles(got), w = to_doubles(want);
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool close = std::isnan(w[i]) ? std::isnan(g[i]) : (g[i] == w[i] || std::abs(g[i] - w[i]) <= tolerance.absolute + tolerance.relative * std::abs(w[i]));
    if (!close && reported++ < 5) {
      ADD_FAILURE() << label << ": element " << i << " is " << g[i] << ", the CPU's " << w[i] << " (difference "
                    << std::abs(g[i] - w[i]) << ")";
    }
  }
  if (reported > 5) ADD_FAILURE() << label << ": " << reported << " elements differ in all";
}

// Runs the node on `device` and on the CPU and compares every output.
inline void expect_same_as_cpu(const Device& device, const std::string& op_type, const std::vector<Tensor>& inputs,
                               const std::map<std::string, Attribute>& attributes, Tolerance tolerance,
                               const std::string& label = "") {
  std::ostringstream what;
  what << op_type << "(";
  for (size_t i = 0; i < inputs.size(); ++i) what << (i > 0 ? ", " : "") << inputs[i].type_string();
  what << ") on " << device.to_string() << (label.empty() ? "" : " [" + label + "]");
  std::vector<Tensor> want = run_node_on(Device::cpu(), op_type, inputs, attributes);
  std::vector<Tensor> got = run_node_on(device, op_type, inputs, attributes);
  ASSERT_EQ(got.size(), want.size()) << what.str();
  for (size_t o = 0; o < got.size(); ++o) {
    EXPECT_EQ(got[o].device().type, DeviceType::kCpu) << what.str() << ": outputs come back to host memory";
    expect_close(got[o], want[o], tolerance, what.str() + " output " + std::to_string(o));
  }
}

}  // namespace weir::testing
