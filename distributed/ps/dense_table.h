// DenseTable — a parameter server's slice of one dense table: a run of
// floats of the table (servers hold consecutive slices), its optimizer
// state, and a lock (a dense push touches every float).
//
//   weir::ps::DenseTable slice(config, 1000);     // this server's 1000 floats
//   slice.set(values);                            // the initial value
//   slice.push(gradient, lr);  slice.pull(out);
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/parameter_client.h"
#include "distributed/ps/row_rule.h"

namespace weir::ps {

// The slice [begin, end) of a `size`-float dense table that server
// `server` of `num_servers` holds (the first size % num_servers hold one more).
std::pair<int64_t, int64_t> dense_slice(int64_t size, int server, int num_servers);

class DenseTable {
 public:
  DenseTable(const ParameterTableConfig& config, int64_t slice_size);

  const ParameterTableConfig& config() const { return config_; }
  int64_t size() const { return static_cast<int64_t>(values_.size()); }

  void pull(float* out) const;
  void push(const float* gradient, float lr);
  // Sets the values; with `only_if_unset`, only when nothing set, pushed or
  // loaded them before (every worker offers its initial value, the first wins).
  // Returns whether it set them.
  bool set(const float* values, bool only_if_unset = false);

  // Values and optimizer state as bytes, and back (kFormat naming `source`).
  std::string save() const;
  void load(std::string_view bytes, const std::string& source);

 private:
  ParameterTableConfig config_;
  RowRule rule_;
  mutable std::mutex mutex_;
  std::vector<float> values_;
  std::vector<float> state_;
  bool written_ = false;  // set, pushed or loaded since creation
};

}  // namespace weir::ps
