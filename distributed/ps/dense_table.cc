#include "distributed/ps/dense_table.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace weir::ps {

namespace {
constexpr char kDenseMagic[8] = {'W', 'E', 'I', 'R', 'P', 'S', 'D', '1'};
}

std::pair<int64_t, int64_t> dense_slice(int64_t size, int server, int num_servers) {
  const int64_t base = size / num_servers, extra = size % num_servers;
  const int64_t begin = server * base + std::min<int64_t>(server, extra);
  return {begin, begin + base + (server < extra ? 1 : 0)};
}

DenseTable::DenseTable(const ParameterTableConfig& config, int64_t slice_size)
    : config_(config),
      rule_(config),
      values_(static_cast<size_t>(slice_size)),
      state_(static_cast<size_t>(rule_.state_floats(slice_size))) {
  if (config.sparse || slice_size < 0) {
    throw Error(ErrorKind::kInvalidArgument, "dense table '" + config.name + "' needs a slice of 0 or more floats, got " +
                                                 std::to_string(slice_size));
  }
  // A dense table starts as row 0 of its initializer, over the whole slice.
  if (slice_size > 0) initial_table_row(config.init, 0, values_.data(), slice_size);
}

void DenseTable::pull(float* out) const {
  std::lock_guard lock(mutex_);
  std::copy(values_.begin(), values_.end(), out);
}

void DenseTable::push(const float* gradient, float lr) {
  std::lock_guard lock(mutex_);
  rule_.apply(values_.data(), state_.data(), gradient, size(), lr);
  written_ = true;
}

bool DenseTable::set(const float* values, bool only_if_unset) {
  std::lock_guard lock(mutex_);
  if (only_if_unset && written_) return false;
  std::copy(values, values + values_.size(), values_.begin());
  written_ = true;
  return true;
}

std::string DenseTable::save() const {
  std::lock_guard lock(mutex_);
  std::string out(kDenseMagic, sizeof(kDenseMagic));
  const int64_t sizes[2] = {static_cast<int64_t>(values_.size()), static_cast<int64_t>(state_.size())};
  out.append(reinterpret_cast<const char*>(sizes), sizeof(sizes));
  out.append(reinterpret_cast<const char*>(values_.data()), values_.size() * sizeof(float));
  out.append(reinterpret_cast<const char*>(state_.data()), state_.size() * sizeof(float));
  return out;
}

void DenseTable::load(std::string_view bytes, const std::string& source) {
  int64_t sizes[2];
  if (bytes.size() < sizeof(kDenseMagic) + sizeof(sizes) || std::memcmp(bytes.data(), kDenseMagic, sizeof(kDenseMagic)) != 0) {
    throw Error(ErrorKind::kFormat, "not a Weir dense-table slice (bad magic or too short)").with_file(source);
  }
  std::memcpy(sizes, bytes.data() + sizeof(kDenseMagic), sizeof(sizes));
  std::lock_guard lock(mutex_);
  if (sizes[0] != static_cast<int64_t>(values_.size()) || sizes[1] != static_cast<int64_t>(state_.size())) {
    throw Error(ErrorKind::kFormat, "slice of table '" + config_.name + "' holds " + std::to_string(sizes[0]) + " values and " +
                                        std::to_string(sizes[1]) + " state floats; this server's slice has " +
                                        std::to_string(values_.size()) + " and " + std::to_string(state_.size()))
        .with_file(source);
  }
  const size_t expected = sizeof(kDenseMagic) + sizeof(sizes) + (values_.size() + state_.size()) * sizeof(float);
  if (bytes.size() != expected) {
    throw Error(ErrorKind::kFormat, "dense slice is " + std::to_string(bytes.size()) + " bytes; expected " +
                                        std::to_string(expected))
        .with_file(source);
  }
  // Copied as bytes (the file's floats need not be aligned); std::copy
  // rather than memcpy, which may not be given an empty vector's null data.
  const char* p = bytes.data() + sizeof(kDenseMagic) + sizeof(sizes);
  std::copy(p, p + values_.size() * sizeof(float), reinterpret_cast<char*>(values_.data()));
  p += values_.size() * sizeof(float);
  std::copy(p, p + state_.size() * sizeof(float), reinterpret_cast<char*>(state_.data()));
  written_ = true;
}

}  // namespace weir::ps
