// SparseTable — a parameter server's rows of one sparse table: 64-bit ids
// hashed to shards, each shard its own map and lock, so lookups and updates
// of different shards never wait for each other (no global lock).
//
//   weir::ps::SparseTable table(config);              // config.sparse, width, rule, init, admit_after
//   table.pull(ids, rows.data());                     // creates admitted rows on first touch
//   table.push(ids, gradients.data(), lr);            // equal ids added first, then the rule
//   std::string bytes = table.save_shard(7);          // one shard, to write atomically
//   table.end_pass(3);                                // drops rows unseen for 3 passes
//
// Admission (Paddle's count_filter_entry): an id gets a row at its
// admit_after-th lookup; before that it reads zeros and its gradients are
// dropped. A row starts as initial_table_row(config.init, id). end_pass
// forgets the lookups of an id not yet admitted as it drops rows: after
// `max_unseen_passes` passes without a lookup, so one-off ids do not pile
// up counters for the life of the job.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/parameter_client.h"
#include "distributed/ps/row_rule.h"

namespace weir::ps {

// The shard of `id` among `shard_num` (a mix of the id, so consecutive ids
// spread); shard s lives on server s % num_servers.
int sparse_shard_of(int64_t id, int shard_num);

class SparseTable {
 public:
  explicit SparseTable(const ParameterTableConfig& config);

  const ParameterTableConfig& config() const { return config_; }
  int64_t width() const { return config_.width; }

  // rows: ids.size() × width floats.
  void pull(std::span<const int64_t> ids, float* rows);
  // gradients: ids.size() × width floats.
  void push(std::span<const int64_t> ids, const float* gradients, float lr);

  // Rows held (admitted), over all shards.
  int64_t num_rows() const;
  // A row's values, or false when the id has none.
  bool find(int64_t id, float* values) const;

  // Shard `shard`'s rows, values and optimizer state, as bytes; an empty
  // string when the shard holds no rows.
  std::string save_shard(int shard) const;
  // Replaces shard `shard` by what save_shard wrote (empty bytes: no rows);
  // throws kFormat naming `source` when the bytes are not such a shard of
  // this table.
  void load_shard(int shard, std::string_view bytes, const std::string& source);

  // Ends a pass: rows not looked up in the last `max_unseen_passes` passes
  // (this one included) are dropped, and so are the lookup counts of ids
  // below admission that went as long unseen. Returns how many rows.
  int64_t end_pass(int max_unseen_passes);
  // Ids below admission whose lookups are being counted, over all shards.
  int64_t num_counted_ids() const;

 private:
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<int64_t, uint32_t> slots;    // id -> slot
    std::vector<float> data;                        // per slot: width values, then the rule's state
    std::vector<int64_t> slot_ids;                  // per slot; -1 when free
    std::vector<uint32_t> unseen_passes;            // per slot
    std::vector<uint32_t> free_slots;
    struct Lookups {
      int64_t count = 0;          // so far
      uint32_t unseen_passes = 0;  // ended since the last
    };
    std::unordered_map<int64_t, Lookups> lookups;   // ids not admitted yet
  };

  // The slot of `id` in `shard`, creating the row when the lookup admits
  // it; -1 while the id is below admission. Called with the shard locked.
  int64_t lookup_slot(Shard& shard, int64_t id, bool count_lookup);
  // (shard, index) of every id, sorted by shard: each run takes one lock.
  std::vector<std::pair<int, size_t>> by_shard(std::span<const int64_t> ids) const;

  ParameterTableConfig config_;
  RowRule rule_;
  int64_t row_floats_;   // width + state
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace weir::ps
