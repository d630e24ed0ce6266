// A progress display for loops of known length: on a terminal, one line
// redrawn in place ("[#####.....] 412/938 steps  57.3 steps/s  loss 0.4213
// ETA 0:09"); otherwise plain lines at most every 10% (or every `every`
// updates), so logs stay readable.
//
//   weir::Progress progress(std::cerr, total, "train");
//   for (...) progress.update(done, {{"loss", loss}});
//   progress.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace weir {

class Progress {
 public:
  // `terminal`: redraw in place; by default whether stderr is a terminal.
  Progress(std::ostream& out, int64_t total, std::string label, int terminal = -1);
  void update(int64_t done, const std::vector<std::pair<std::string, double>>& metrics = {});
  void finish();
  double elapsed_seconds() const;

 private:
  std::string line(int64_t done, const std::vector<std::pair<std::string, double>>& metrics) const;

  std::ostream& out_;
  int64_t total_;
  std::string label_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  int64_t start_done_ = -1;
  int64_t last_printed_ = -1;
  bool drawn_ = false;
};

}  // namespace weir
