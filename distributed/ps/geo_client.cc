#include "distributed/ps/geo_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "distributed/ps/row_rule.h"

namespace weir::ps {

namespace {

struct GeoRow {
  std::vector<float> latest, old, state;
  int64_t touched_period = -1;   // the last exchange period that pulled or pushed it
  bool pushed = false;           // pushed since the last exchange
};

struct GeoTable {
  explicit GeoTable(const ParameterTableConfig& local) : config(local), rule(local) {}

  const ParameterTableConfig config;   // the local rule's configuration
  const RowRule rule;
  std::timed_mutex mutex;
  int64_t pushes = 0;    // since the last exchange
  int64_t period = 0;    // exchanges so far
  // Dense tables.
  bool fetched = false;
  std::vector<float> latest, old, state;
  // Sparse tables.
  std::unordered_map<int64_t, GeoRow> rows;
  // The local optimizer state of rows dropped from the cache: kept, so a
  // row that comes back continues its Adagrad accumulator (or Adam
  // moments) instead of restarting it, which would take a full-size step
  // (lr times the gradient's sign) every time a rare id reappears.
  std::unordered_map<int64_t, std::vector<float>> dropped_state;
  std::vector<int64_t> pushed_ids;    // distinct, pushed since the last exchange
  std::vector<int64_t> touched_ids;   // distinct, pulled or pushed since the last exchange
};

}  // namespace

class GeoClient::Impl {
 public:
  Impl(std::shared_ptr<ParameterClient> remote, GeoClientOptions options) : remote_(std::move(remote)), options_(options) {
    if (remote_ == nullptr) throw Error(ErrorKind::kInvalidArgument, "a geo client needs a remote parameter client");
    if (options.k_steps < 1) {
      throw Error(ErrorKind::kInvalidArgument, "geo client options: k_steps must be at least 1, got " + std::to_string(options.k_steps));
    }
    if (options.workers < 1) {
      throw Error(ErrorKind::kInvalidArgument, "geo client options: workers must be at least 1, got " + std::to_string(options.workers));
    }
    if (options.timeout.count() <= 0) throw Error(ErrorKind::kInvalidArgument, "geo client options: timeout must be positive");
  }

  ParameterClient& remote() const { return *remote_; }
  int64_t exchanges() const { return exchanges_.load(); }

  void create_table(const ParameterTableConfig& config) {
    ParameterTableConfig local = config;
    local.sync_workers = 0;
    ParameterTableConfig remote_config = local;
    remote_config.rule = TableRule::kDelta;
    remote_->create_table(remote_config);
    std::lock_guard lock(tables_mutex_);
    if (tables_.find(config.name) == tables_.end()) tables_.emplace(config.name, std::make_unique<GeoTable>(local));
  }

  void pull_sparse(const std::string& name, std::span<const int64_t> ids, float* rows, int64_t width) {
    GeoTable& t = table(name, true, width);
    auto lock = hold(t);
    fetch_missing(t, ids);
    const auto w = static_cast<size_t>(width);
    for (size_t i = 0; i < ids.size(); ++i) {
      GeoRow& row = t.rows.at(ids[i]);
      touch(t, ids[i], row);
      std::copy(row.latest.begin(), row.latest.end(), rows + i * w);
    }
  }

  void push_sparse(const std::string& name, std::span<const int64_t> ids, const float* gradients, int64_t width, float lr) {
    GeoTable& t = table(name, true, width);
    auto lock = hold(t);
    // Equal ids added first, as the servers' tables do.
    const auto w = static_cast<size_t>(width);
    std::vector<int64_t> distinct;
    std::vector<float> summed;
    std::unordered_map<int64_t, size_t> slot;
    for (size_t i = 0; i < ids.size(); ++i) {
      const float* row = gradients + i * w;
      auto [it, added] = slot.emplace(ids[i], distinct.size());
      if (added) {
        distinct.push_back(ids[i]);
        summed.insert(summed.end(), row, row + w);
      } else {
        for (size_t j = 0; j < w; ++j) summed[it->second * w + j] += row[j];
      }
    }
    fetch_missing(t, distinct);
    for (size_t k = 0; k < distinct.size(); ++k) {
      GeoRow& row = t.rows.at(distinct[k]);
      t.rule.apply(row.latest.data(), row.state.data(), summed.data() + k * w, width, lr);
      touch(t, distinct[k], row);
      if (!row.pushed) {
        row.pushed = true;
        t.pushed_ids.push_back(distinct[k]);
      }
    }
    if (++t.pushes >= options_.k_steps) exchange_sparse(t);
  }

  void pull_dense(const std::string& name, float* values, int64_t size) {
    GeoTable& t = table(name, false, size);
    auto lock = hold(t);
    fetch_dense(t);
    std::copy(t.latest.begin(), t.latest.end(), values);
  }

  void push_dense(const std::string& name, const float* gradient, int64_t size, float lr) {
    GeoTable& t = table(name, false, size);
    auto lock = hold(t);
    fetch_dense(t);
    t.rule.apply(t.latest.data(), t.state.data(), gradient, size, lr);
    if (++t.pushes >= options_.k_steps) exchange_dense(t);
  }

  void set_dense(const std::string& name, const float* values, int64_t size, bool only_if_unset) {
    GeoTable& t = table(name, false, size);
    auto lock = hold(t);
    remote_->set_dense(name, values, size, only_if_unset);
    t.fetched = false;
    fetch_dense(t);
  }

  void flush() {
    for (GeoTable* t : all_tables()) {
      auto lock = hold(*t);
      if (t->config.sparse && !t->pushed_ids.empty()) exchange_sparse(*t);
      if (!t->config.sparse && t->fetched && t->pushes > 0) exchange_dense(*t);
    }
  }

  void forget_local_copies() {
    for (GeoTable* t : all_tables()) {
      auto lock = hold(*t);
      t->fetched = false;
      t->pushes = 0;
      t->rows.clear();
      t->pushed_ids.clear();
      t->touched_ids.clear();
    }
  }

  int64_t cached_rows(const std::string& name) {
    GeoTable* t = nullptr;
    {
      std::lock_guard lock(tables_mutex_);
      auto found = tables_.find(name);
      if (found == tables_.end() || !found->second->config.sparse) return -1;
      t = found->second.get();
    }
    auto lock = hold(*t);
    return static_cast<int64_t>(t->rows.size());
  }

 private:
  GeoTable& table(const std::string& name, bool sparse, int64_t width) const {
    std::lock_guard lock(tables_mutex_);
    auto found = tables_.find(name);
    if (found == tables_.end()) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + name + "' was not created through this geo client (" +
                                                   remote_->description() + "); create_table it first");
    }
    const ParameterTableConfig& config = found->second->config;
    if (config.sparse != sparse) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + name + "' is " + (config.sparse ? "sparse" : "dense") +
                                                   "; the call is for a " + (sparse ? "sparse" : "dense") + " table");
    }
    if (config.width != width) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + name + "' has " + (sparse ? "rows of " : "") +
                                                   std::to_string(config.width) + " floats; the call has " + std::to_string(width));
    }
    return *found->second;
  }

  std::vector<GeoTable*> all_tables() const {
    std::lock_guard lock(tables_mutex_);
    std::vector<GeoTable*> list;
    for (const auto& [name, t] : tables_) list.push_back(t.get());
    return list;
  }

  std::unique_lock<std::timed_mutex> hold(GeoTable& t) const {
    std::unique_lock lock(t.mutex, std::defer_lock);
    if (!lock.try_lock_for(options_.timeout)) {
      throw Error(ErrorKind::kCommunication,
                  "geo client: table '" + t.config.name + "' stayed busy for " +
                      fmt::format("{:g} s", static_cast<double>(options_.timeout.count()) / 1000.0) +
                      " (another thread's exchange with " + remote_->description() + ")");
    }
    return lock;
  }

  static void touch(GeoTable& t, int64_t id, GeoRow& row) {
    if (row.touched_period == t.period) return;
    row.touched_period = t.period;
    t.touched_ids.push_back(id);
  }

  // Fetches the rows of `ids` the cache lacks, in one call: latest = old = server.
  void fetch_missing(GeoTable& t, std::span<const int64_t> ids) {
    std::vector<int64_t> missing;
    std::unordered_set<int64_t> seen;
    for (int64_t id : ids) {
      if (t.rows.find(id) == t.rows.end() && seen.insert(id).second) missing.push_back(id);
    }
    if (missing.empty()) return;
    const auto w = static_cast<size_t>(t.config.width);
    std::vector<float> fetched(missing.size() * w);
    remote_->pull_sparse(t.config.name, missing, fetched.data(), t.config.width, 0);
    for (size_t k = 0; k < missing.size(); ++k) {
      GeoRow row;
      row.latest.assign(fetched.begin() + static_cast<ptrdiff_t>(k * w), fetched.begin() + static_cast<ptrdiff_t>((k + 1) * w));
      row.old = row.latest;
      if (auto kept = t.dropped_state.find(missing[k]); kept != t.dropped_state.end()) {
        row.state = std::move(kept->second);
        t.dropped_state.erase(kept);
      } else {
        row.state.assign(static_cast<size_t>(t.rule.state_floats(t.config.width)), 0.0f);
      }
      t.rows.emplace(missing[k], std::move(row));
    }
  }

  void fetch_dense(GeoTable& t) {
    if (t.fetched) return;
    std::vector<float> server(static_cast<size_t>(t.config.width));
    remote_->pull_dense(t.config.name, server.data(), t.config.width, 0);
    t.latest = server;
    t.old = std::move(server);
    if (t.state.empty()) t.state.assign(static_cast<size_t>(t.rule.state_floats(t.config.width)), 0.0f);
    t.pushes = 0;
    t.fetched = true;
  }

  float delta(float latest, float old) const { return (latest - old) / static_cast<float>(options_.workers); }

  // Sends the deltas of the rows pushed this period, re-pulls every row
  // touched this period, and drops the rows it did not touch.
  void exchange_sparse(GeoTable& t) {
    const auto w = static_cast<size_t>(t.config.width);
    if (!t.pushed_ids.empty()) {
      std::vector<float> deltas(t.pushed_ids.size() * w);
      for (size_t k = 0; k < t.pushed_ids.size(); ++k) {
        const GeoRow& row = t.rows.at(t.pushed_ids[k]);
        for (size_t j = 0; j < w; ++j) deltas[k * w + j] = delta(row.latest[j], row.old[j]);
      }
      remote_->push_sparse(t.config.name, t.pushed_ids, deltas.data(), t.config.width, 0.0f, 0);
      for (size_t k = 0; k < t.pushed_ids.size(); ++k) {
        GeoRow& row = t.rows.at(t.pushed_ids[k]);
        for (size_t j = 0; j < w; ++j) row.old[j] += deltas[k * w + j];
        row.pushed = false;
      }
      t.pushed_ids.clear();
    }
    if (!t.touched_ids.empty()) {
      std::vector<float> server(t.touched_ids.size() * w);
      remote_->pull_sparse(t.config.name, t.touched_ids, server.data(), t.config.width, 0);
      for (size_t k = 0; k < t.touched_ids.size(); ++k) {
        GeoRow& row = t.rows.at(t.touched_ids[k]);
        for (size_t j = 0; j < w; ++j) {
          row.latest[j] += server[k * w + j] - row.old[j];
          row.old[j] = server[k * w + j];
        }
      }
    }
    for (auto it = t.rows.begin(); it != t.rows.end();) {
      if (it->second.touched_period == t.period) {
        ++it;
        continue;
      }
      if (!it->second.state.empty()) t.dropped_state[it->first] = std::move(it->second.state);
      it = t.rows.erase(it);
    }
    t.touched_ids.clear();
    ++t.period;
    t.pushes = 0;
    ++exchanges_;
  }

  void exchange_dense(GeoTable& t) {
    const auto n = static_cast<size_t>(t.config.width);
    std::vector<float> deltas(n);
    for (size_t i = 0; i < n; ++i) deltas[i] = delta(t.latest[i], t.old[i]);
    remote_->push_dense(t.config.name, deltas.data(), t.config.width, 0.0f, 0);
    for (size_t i = 0; i < n; ++i) t.old[i] += deltas[i];
    t.pushes = 0;
    std::vector<float> server(n);
    remote_->pull_dense(t.config.name, server.data(), t.config.width, 0);
    for (size_t i = 0; i < n; ++i) {
      t.latest[i] += server[i] - t.old[i];
      t.old[i] = server[i];
    }
    ++t.period;
    ++exchanges_;
  }

  const std::shared_ptr<ParameterClient> remote_;
  const GeoClientOptions options_;
  mutable std::mutex tables_mutex_;   // the map; each table has its own lock
  std::map<std::string, std::unique_ptr<GeoTable>> tables_;
  std::atomic<int64_t> exchanges_{0};
};

GeoClient::GeoClient(std::shared_ptr<ParameterClient> remote, GeoClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(remote), options)) {}

GeoClient::~GeoClient() = default;

void GeoClient::create_table(const ParameterTableConfig& config) { impl_->create_table(config); }

void GeoClient::pull_sparse(const std::string& table, std::span<const int64_t> ids, float* rows, int64_t width,
                            int64_t /*round*/) {
  impl_->pull_sparse(table, ids, rows, width);
}

void GeoClient::push_sparse(const std::string& table, std::span<const int64_t> ids, const float* gradients,
                            int64_t width, float lr, int64_t /*round*/) {
  impl_->push_sparse(table, ids, gradients, width, lr);
}

void GeoClient::pull_dense(const std::string& table, float* values, int64_t size, int64_t /*round*/) {
  impl_->pull_dense(table, values, size);
}

void GeoClient::push_dense(const std::string& table, const float* gradient, int64_t size, float lr, int64_t /*round*/) {
  impl_->push_dense(table, gradient, size, lr);
}

void GeoClient::set_dense(const std::string& table, const float* values, int64_t size, bool only_if_unset) {
  impl_->set_dense(table, values, size, only_if_unset);
}

void GeoClient::save(const std::filesystem::path& directory) {
  impl_->flush();
  impl_->remote().save(directory);
}

void GeoClient::load(const std::filesystem::path& directory) {
  impl_->remote().load(directory);
  impl_->forget_local_copies();
}

int64_t GeoClient::end_pass(int max_unseen_passes) {
  impl_->flush();
  return impl_->remote().end_pass(max_unseen_passes);
}

void GeoClient::stop_servers() {
  impl_->flush();
  impl_->remote().stop_servers();
}

void GeoClient::flush() { impl_->flush(); }

int64_t GeoClient::bytes_pushed() const { return impl_->remote().bytes_pushed(); }

int GeoClient::num_servers() const { return impl_->remote().num_servers(); }

std::string GeoClient::description() const { return impl_->remote().description(); }

int64_t GeoClient::exchanges() const { return impl_->exchanges(); }

int64_t GeoClient::cached_rows(const std::string& table) const { return impl_->cached_rows(table); }

std::shared_ptr<ParameterClient> make_geo_client(std::shared_ptr<ParameterClient> remote, GeoClientOptions options) {
  return std::make_shared<GeoClient>(std::move(remote), options);
}

}  // namespace weir::ps
