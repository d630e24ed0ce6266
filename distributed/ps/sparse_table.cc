#include "distributed/ps/sparse_table.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "core/error.h"
#include "core/splitmix.h"

namespace weir::ps {

namespace {

constexpr char kShardMagic[8] = {'W', 'E', 'I', 'R', 'P', 'S', 'S', '1'};

template <typename T>
void append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Reads what append wrote, refusing to run past the end.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& source) : bytes_(bytes), source_(source) {}
  template <typename T>
  T next() {
    T value;
    take(&value, sizeof(T));
    return value;
  }
  void take(void* out, size_t n) {
    if (bytes_.size() - offset_ < n) {
      throw Error(ErrorKind::kFormat, "truncated sparse-table shard: wanted " + std::to_string(n) + " bytes at offset " +
                                          std::to_string(offset_) + " of " + std::to_string(bytes_.size()))
          .with_file(source_);
    }
    std::memcpy(out, bytes_.data() + offset_, n);
    offset_ += n;
  }
  bool done() const { return offset_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  const std::string& source_;
  size_t offset_ = 0;
};

}  // namespace

int sparse_shard_of(int64_t id, int shard_num) {
  return static_cast<int>(splitmix64_mix(static_cast<uint64_t>(id)) % static_cast<uint64_t>(shard_num));
}

SparseTable::SparseTable(const ParameterTableConfig& config)
    : config_(config), rule_(config), row_floats_(config.width + rule_.state_floats(config.width)) {
  if (!config.sparse || config.width <= 0 || config.shard_num <= 0) {
    throw Error(ErrorKind::kInvalidArgument, "sparse table '" + config.name + "' needs a row width and shard_num > 0, got " +
                                                 std::to_string(config.width) + " and " + std::to_string(config.shard_num));
  }
  shards_.reserve(static_cast<size_t>(config.shard_num));
  for (int s = 0; s < config.shard_num; ++s) shards_.push_back(std::make_unique<Shard>());
}

std::vector<std::pair<int, size_t>> SparseTable::by_shard(std::span<const int64_t> ids) const {
  std::vector<std::pair<int, size_t>> order(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) order[i] = {sparse_shard_of(ids[i], config_.shard_num), i};
  std::sort(order.begin(), order.end());
  return order;
}

int64_t SparseTable::lookup_slot(Shard& shard, int64_t id, bool count_lookup) {
  auto found = shard.slots.find(id);
  if (found != shard.slots.end()) {
    if (count_lookup) shard.unseen_passes[found->second] = 0;
    return found->second;
  }
  if (!count_lookup) return -1;
  if (config_.admit_after > 1) {
    Shard::Lookups& seen = shard.lookups[id];
    seen.unseen_passes = 0;
    if (++seen.count < config_.admit_after) return -1;
    shard.lookups.erase(id);
  }
  uint32_t slot;
  if (!shard.free_slots.empty()) {
    slot = shard.free_slots.back();
    shard.free_slots.pop_back();
    shard.slot_ids[slot] = id;
    shard.unseen_passes[slot] = 0;
  } else {
    slot = static_cast<uint32_t>(shard.slot_ids.size());
    shard.slot_ids.push_back(id);
    shard.unseen_passes.push_back(0);
    shard.data.resize(shard.data.size() + static_cast<size_t>(row_floats_));
  }
  float* row = shard.data.data() + static_cast<size_t>(slot) * static_cast<size_t>(row_floats_);
  initial_table_row(config_.init, id, row, config_.width);
  std::fill(row + config_.width, row + row_floats_, 0.0f);
  shard.slots.emplace(id, slot);
  return slot;
}

void SparseTable::pull(std::span<const int64_t> ids, float* rows) {
  const auto order = by_shard(ids);
  const size_t width = static_cast<size_t>(config_.width);
  for (size_t begin = 0; begin < order.size();) {
    const int s = order[begin].first;
    Shard& shard = *shards_[static_cast<size_t>(s)];
    std::lock_guard lock(shard.mutex);
    size_t end = begin;
    for (; end < order.size() && order[end].first == s; ++end) {
      const size_t i = order[end].second;
      const int64_t slot = lookup_slot(shard, ids[i], true);
      float* out = rows + i * width;
      if (slot < 0) {
        std::fill(out, out + width, 0.0f);
      } else {
        const float* row = shard.data.data() + static_cast<size_t>(slot) * static_cast<size_t>(row_floats_);
        std::copy(row, row + width, out);
      }
    }
    begin = end;
  }
}

void SparseTable::push(std::span<const int64_t> ids, const float* gradients, float lr) {
  const auto order = by_shard(ids);
  const size_t width = static_cast<size_t>(config_.width);
  std::vector<float> merged(width);
  for (size_t begin = 0; begin < order.size();) {
    const int s = order[begin].first;
    Shard& shard = *shards_[static_cast<size_t>(s)];
    std::lock_guard lock(shard.mutex);
    size_t end = begin;
    for (; end < order.size() && order[end].first == s; ++end) {}
    // Within the shard's run, equal ids are added before the rule sees
    // them (sorted by index, so the sum is in push order).
    std::vector<std::pair<int64_t, size_t>> run;
    run.reserve(end - begin);
    for (size_t k = begin; k < end; ++k) run.emplace_back(ids[order[k].second], order[k].second);
    std::sort(run.begin(), run.end());
    for (size_t a = 0; a < run.size();) {
      size_t b = a;
      const float* first = gradients + run[a].second * width;
      std::copy(first, first + width, merged.begin());
      for (++b; b < run.size() && run[b].first == run[a].first; ++b) {
        const float* more = gradients + run[b].second * width;
        for (size_t j = 0; j < width; ++j) merged[j] += more[j];
      }
      const int64_t slot = lookup_slot(shard, run[a].first, false);
      if (slot >= 0) {
        float* row = shard.data.data() + static_cast<size_t>(slot) * static_cast<size_t>(row_floats_);
        rule_.apply(row, row + width, merged.data(), config_.width, lr);
      }
      a = b;
    }
    begin = end;
  }
}

int64_t SparseTable::num_rows() const {
  int64_t n = 0;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    n += static_cast<int64_t>(shard->slots.size());
  }
  return n;
}

bool SparseTable::find(int64_t id, float* values) const {
  const Shard& shard = *shards_[static_cast<size_t>(sparse_shard_of(id, config_.shard_num))];
  std::lock_guard lock(shard.mutex);
  auto found = shard.slots.find(id);
  if (found == shard.slots.end()) return false;
  const float* row = shard.data.data() + static_cast<size_t>(found->second) * static_cast<size_t>(row_floats_);
  std::copy(row, row + config_.width, values);
  return true;
}

std::string SparseTable::save_shard(int shard_index) const {
  const Shard& shard = *shards_.at(static_cast<size_t>(shard_index));
  std::lock_guard lock(shard.mutex);
  if (shard.slots.empty()) return {};
  std::string out(kShardMagic, sizeof(kShardMagic));
  append(out, config_.width);
  append(out, row_floats_);
  append(out, static_cast<int64_t>(shard.slots.size()));
  // In id order, so the same rows always make the same bytes.
  std::vector<std::pair<int64_t, uint32_t>> rows(shard.slots.begin(), shard.slots.end());
  std::sort(rows.begin(), rows.end());
  for (const auto& [id, slot] : rows) {
    append(out, id);
    append(out, shard.unseen_passes[slot]);
    out.append(reinterpret_cast<const char*>(shard.data.data() + static_cast<size_t>(slot) * static_cast<size_t>(row_floats_)),
               static_cast<size_t>(row_floats_) * sizeof(float));
  }
  return out;
}

void SparseTable::load_shard(int shard_index, std::string_view bytes, const std::string& source) {
  if (bytes.empty()) {  // what save_shard writes for a shard without rows
    Shard& shard = *shards_.at(static_cast<size_t>(shard_index));
    std::lock_guard lock(shard.mutex);
    shard.slots.clear();
    shard.data.clear();
    shard.slot_ids.clear();
    shard.unseen_passes.clear();
    shard.free_slots.clear();
    shard.lookups.clear();
    return;
  }
  Reader reader(bytes, source);
  char magic[sizeof(kShardMagic)];
  reader.take(magic, sizeof(magic));
  if (std::memcmp(magic, kShardMagic, sizeof(magic)) != 0) {
    throw Error(ErrorKind::kFormat, "not a Weir sparse-table shard (bad magic)").with_file(source);
  }
  const auto width = reader.next<int64_t>();
  const auto row_floats = reader.next<int64_t>();
  if (width != config_.width || row_floats != row_floats_) {
    throw Error(ErrorKind::kFormat, "shard of table '" + config_.name + "' has rows of " + std::to_string(width) + " values (" +
                                        std::to_string(row_floats) + " with state); the table has " +
                                        std::to_string(config_.width) + " (" + std::to_string(row_floats_) + ")")
        .with_file(source);
  }
  const auto count = reader.next<int64_t>();
  const size_t row_bytes = static_cast<size_t>(row_floats_) * sizeof(float);
  if (count < 0 || static_cast<size_t>(count) > bytes.size() / (row_bytes + 12)) {
    throw Error(ErrorKind::kFormat, "shard claims " + std::to_string(count) + " rows in " + std::to_string(bytes.size()) + " bytes")
        .with_file(source);
  }
  Shard fresh;
  fresh.data.resize(static_cast<size_t>(count) * static_cast<size_t>(row_floats_));
  for (int64_t r = 0; r < count; ++r) {
    const auto id = reader.next<int64_t>();
    if (sparse_shard_of(id, config_.shard_num) != shard_index) {
      throw Error(ErrorKind::kFormat, "row " + std::to_string(id) + " belongs to shard " +
                                          std::to_string(sparse_shard_of(id, config_.shard_num)) + ", not " +
                                          std::to_string(shard_index) + " (another shard_num?)")
          .with_file(source);
    }
    if (!fresh.slots.emplace(id, static_cast<uint32_t>(r)).second) {
      throw Error(ErrorKind::kFormat, "row " + std::to_string(id) + " appears twice").with_file(source);
    }
    fresh.slot_ids.push_back(id);
    fresh.unseen_passes.push_back(reader.next<uint32_t>());
    reader.take(fresh.data.data() + static_cast<size_t>(r) * static_cast<size_t>(row_floats_), row_bytes);
  }
  if (!reader.done()) throw Error(ErrorKind::kFormat, "trailing bytes after the shard's rows").with_file(source);
  Shard& shard = *shards_.at(static_cast<size_t>(shard_index));
  std::lock_guard lock(shard.mutex);
  shard.slots = std::move(fresh.slots);
  shard.data = std::move(fresh.data);
  shard.slot_ids = std::move(fresh.slot_ids);
  shard.unseen_passes = std::move(fresh.unseen_passes);
  shard.free_slots.clear();
  shard.lookups.clear();
}

int64_t SparseTable::end_pass(int max_unseen_passes) {
  int64_t dropped = 0;
  const auto limit = static_cast<uint32_t>(std::max(max_unseen_passes, 0));
  for (auto& shard_ptr : shards_) {
    Shard& shard = *shard_ptr;
    std::lock_guard lock(shard.mutex);
    for (uint32_t slot = 0; slot < shard.slot_ids.size(); ++slot) {
      if (shard.slot_ids[slot] < 0) continue;
      if (++shard.unseen_passes[slot] > limit) {
        shard.slots.erase(shard.slot_ids[slot]);
        shard.slot_ids[slot] = -1;
        shard.free_slots.push_back(slot);
        ++dropped;
      }
    }
    for (auto it = shard.lookups.begin(); it != shard.lookups.end();) {
      it = ++it->second.unseen_passes > limit ? shard.lookups.erase(it) : std::next(it);
    }
  }
  return dropped;
}

int64_t SparseTable::num_counted_ids() const {
  int64_t counted = 0;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    counted += static_cast<int64_t>(shard->lookups.size());
  }
  return counted;
}

}  // namespace weir::ps
