#include "frontend/train/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iomanip>
#include <sstream>

namespace weir {

Progress::Progress(std::ostream& out, int64_t total, std::string label, int terminal)
    : out_(out),
      total_(total),
      label_(std::move(label)),
      terminal_(terminal < 0 ? isatty(fileno(stderr)) != 0 : terminal != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::line(int64_t done, const std::vector<std::pair<std::string, double>>& metrics) const {
  std::ostringstream s;
  double seconds = elapsed_seconds();
  int64_t counted = done - std::max<int64_t>(start_done_, 0);
  double rate = seconds > 0 ? static_cast<double>(counted) / seconds : 0;
  s << label_ << " ";
  if (terminal_) {
    constexpr int kWidth = 24;
    int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : 0;
    s << "[" << std::string(static_cast<size_t>(filled), '#') << std::string(static_cast<size_t>(kWidth - filled), '.')
      << "] ";
  }
  s << done << "/" << total_ << "  " << std::fixed << std::setprecision(1) << rate << "/s";
  for (const auto& [name, value] : metrics) s << "  " << name << " " << std::setprecision(4) << value;
  if (rate > 0 && done < total_) {
    auto eta = static_cast<int64_t>(static_cast<double>(total_ - done) / rate);
    s << "  ETA " << eta / 60 << ":" << std::setw(2) << std::setfill('0') << eta % 60;
  }
  return s.str();
}

void Progress::update(int64_t done, const std::vector<std::pair<std::string, double>>& metrics) {
  if (start_done_ < 0) start_done_ = done > 0 ? done - 1 : 0;
  auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    out_ << "\r" << line(done, metrics) << "\033[K" << std::flush;
    drawn_ = true;
    return;
  }
  int64_t every = std::max<int64_t>(total_ / 10, 1);
  if (done / every == last_printed_ / every && done < total_) return;
  if (done == last_printed_) return;
  last_printed_ = done;
  out_ << line(done, metrics) << "\n" << std::flush;
}

void Progress::finish() {
  if (terminal_ && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace weir
