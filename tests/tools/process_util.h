// Running graph-runner (or any command) as a real process from a test, with
// its exit status and its stdout and stderr together.
//
//   weir::testing::ProcessResult r = weir::testing::run_graph_runner("inspect model.weir");
//   weir::testing::expect_cli_error(r, "model.weir");   // non-zero, one "error: ..." line naming it
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace weir::testing {

struct ProcessResult {
  int status;
  std::string output;  // stdout and stderr
};

inline ProcessResult run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

inline ProcessResult run_graph_runner(const std::string& args) {
  return run_command(std::string(WEIR_GRAPH_RUNNER) + " " + args);
}

// A failed command that printed one "error: ..." line mentioning `mentions`, and did not abort.
inline void expect_cli_error(const ProcessResult& r, const std::string& mentions) {
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find(mentions), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
}

}  // namespace weir::testing
