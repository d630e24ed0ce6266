// What the tests that train with graph-runner share: the per-step losses
// rank 0 printed, their comparison within a relative tolerance, and the
// command line that launches N processes of graph-runner.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/process_util.h"

namespace weir::testing {

// The "step N loss: X" values rank 0 printed (with or without launch's prefix), as printed.
inline std::vector<std::string> losses_of(const ProcessResult& r) {
  std::vector<std::string> losses;
  std::istringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("[rank 0] ", 0) == 0) line = line.substr(9);
    if (line.rfind("step ", 0) != 0) continue;
    const size_t colon = line.find(" loss: ");
    if (colon != std::string::npos) losses.push_back(line.substr(colon + 7));
  }
  return losses;
}

inline void expect_close(const std::vector<std::string>& got, const std::vector<std::string>& want, double relative,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = std::stod(got[i]), b = std::stod(want[i]);
    EXPECT_LE(std::fabs(a - b), relative * std::fabs(b)) << what << ", step " << i + 1 << ": " << got[i] << " vs " << want[i];
  }
}

// graph-runner launch of `program` on N processes, its store on a free port.
inline std::string launch(int processes, int port, const std::string& program = WEIR_GRAPH_RUNNER) {
  return std::string(WEIR_GRAPH_RUNNER) + " launch -n " + std::to_string(processes) + " --master-port " +
         std::to_string(port) + " -- " + program;
}

}  // namespace weir::testing
