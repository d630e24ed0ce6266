// A graph whose nodes update persistent values in place (GradientMerge's
// accumulator, the LocalSGD schedule and snapshot, DGC's u and v), run as a
// training step runs it: one Session on the device under test and one on
// the CPU, each keeping its own state across runs, fed the same inputs.
// After every run the outputs and the persistent values of both can be
// compared, so a wrong state update shows up in the runs after it.
//
//   testing::StatefulComparison both(GetParam(), *graph);
//   for (int step = 1; step <= 5; ++step) {
//     testing::BothRuns runs = both.run({{"grad", grad}, {"step", step_tensor}});
//     testing::expect_all_close(runs, Tolerance{}, label);
//     both.expect_states_close({"accumulator"}, Tolerance{}, label);
//   }
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"

namespace weir::testing {

class StatefulComparison {
 public:
  StatefulComparison(const Device& device, const Graph& graph) : device_(device) {
    CompileOptions options;
    options.default_device = device;
    cpu_ = std::make_unique<Session>(compile(graph));
    device_session_ = std::make_unique<Session>(compile(graph, options));
  }

  // One run of each side with its own copy of `feeds`.
  BothRuns run(const std::map<std::string, Tensor>& feeds) {
    BothRuns runs;
    runs.cpu = cpu_->run(copies_of(feeds));
    runs.device = device_session_->run(copies_of(feeds));
    return runs;
  }

  // The device session alone (for a run expected to fail there).
  std::vector<Tensor> run_on_device(const std::map<std::string, Tensor>& feeds) {
    return device_session_->run(copies_of(feeds));
  }

  void expect_states_close(const std::vector<std::string>& names, Tolerance tolerance, const std::string& what) const {
    for (const std::string& name : names) {
      expect_close(device_session_->host_state(name), cpu_->host_state(name), tolerance,
                   what + ", state '" + name + "' on " + device_.to_string());
    }
  }

  Session& device_session() { return *device_session_; }

 private:
  static std::map<std::string, Tensor> copies_of(const std::map<std::string, Tensor>& feeds) {
    std::map<std::string, Tensor> copies;
    for (const auto& [name, tensor] : feeds) copies.emplace(name, tensor.clone());
    return copies;
  }

  Device device_;
  std::unique_ptr<Session> cpu_, device_session_;
};

}  // namespace weir::testing
