#include "distributed/ps/grpc_parameter_client.h"

#include <grpcpp/grpcpp.h>

#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "distributed/ps/dense_table.h"
#include "distributed/ps/ps.grpc.pb.h"
#include "distributed/ps/ps_wire.h"
#include "distributed/ps/sparse_table.h"

namespace weir::ps {

namespace {

using Async = wire::ParameterService::Stub::async_interface;
using Done = std::function<void(grpc::Status)>;

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

class GrpcParameterClient final : public ParameterClient {
 public:
  explicit GrpcParameterClient(const ParameterClientOptions& options) : options_(options) {
    if (options.endpoints.empty()) throw Error(ErrorKind::kInvalidArgument, "a parameter client needs at least one server");
    route_grpc_logs();
    const auto deadline = std::chrono::system_clock::now() + options.connect_timeout;
    for (size_t s = 0; s < options.endpoints.size(); ++s) {
      auto channel = grpc::CreateCustomChannel(options.endpoints[s], grpc::InsecureChannelCredentials(), channel_arguments());
      if (!channel->WaitForConnected(deadline)) {
        throw Error(ErrorKind::kCommunication, server_name(static_cast<int>(s)) + ": could not connect within " +
                                                   fmt::format("{:g}", seconds(options.connect_timeout)) +
                                                   " s (is a ps-server running there?)");
      }
      stubs_.push_back(wire::ParameterService::NewStub(channel));
    }
  }

  void create_table(const ParameterTableConfig& config) override {
    std::vector<wire::CreateTableRequest> requests(stubs_.size());
    std::vector<wire::Empty> replies(stubs_.size());
    for (size_t s = 0; s < stubs_.size(); ++s) {
      to_message(config, *requests[s].mutable_config());
      if (!config.sparse) {
        auto [begin, end] = dense_slice(config.width, static_cast<int>(s), num_servers());
        requests[s].set_dense_slice(end - begin);
      }
    }
    fan_out<wire::CreateTableRequest, wire::Empty>("create table '" + config.name + "'", all_servers(), requests, replies,
                                       [](Async* a, grpc::ClientContext* c, const wire::CreateTableRequest* q, wire::Empty* r, Done d) {
                                         a->CreateTable(c, q, r, std::move(d));
                                       });
    std::lock_guard lock(tables_mutex_);
    tables_[config.name] = config;
  }

  void pull_sparse(const std::string& table, std::span<const int64_t> ids, float* rows, int64_t width,
                   int64_t round) override {
    const ParameterTableConfig config = table_config(table, true, width);
    const int servers = num_servers();
    // Each server's distinct ids, and where each of ours is in its reply.
    std::vector<wire::PullSparseRequest> requests(stubs_.size());
    std::vector<std::unordered_map<int64_t, int>> positions(stubs_.size());
    std::vector<std::pair<int, int>> where(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      const int s = sparse_shard_of(ids[i], config.shard_num) % servers;
      auto [it, added] = positions[static_cast<size_t>(s)].emplace(ids[i], requests[static_cast<size_t>(s)].ids_size());
      if (added) requests[static_cast<size_t>(s)].add_ids(ids[i]);
      where[i] = {s, it->second};
    }
    std::vector<int> targets;
    for (int s = 0; s < servers; ++s) {
      if (requests[static_cast<size_t>(s)].ids_size() == 0) continue;
      requests[static_cast<size_t>(s)].set_table(table);
      requests[static_cast<size_t>(s)].set_width(width);
      requests[static_cast<size_t>(s)].set_round(round);
      targets.push_back(s);
    }
    std::vector<wire::Floats> replies(stubs_.size());
    fan_out<wire::PullSparseRequest, wire::Floats>("pull from sparse table '" + table + "'", targets, requests, replies,
                                       [](Async* a, grpc::ClientContext* c, const wire::PullSparseRequest* q, wire::Floats* r, Done d) {
                                         a->PullSparse(c, q, r, std::move(d));
                                       });
    for (int s : targets) {
      expect_floats(replies[static_cast<size_t>(s)], requests[static_cast<size_t>(s)].ids_size() * width, s, table);
    }
    const size_t row_bytes = static_cast<size_t>(width) * sizeof(float);
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string& values = replies[static_cast<size_t>(where[i].first)].values();
      std::memcpy(rows + i * static_cast<size_t>(width), values.data() + static_cast<size_t>(where[i].second) * row_bytes,
                  row_bytes);
    }
  }

  void push_sparse(const std::string& table, std::span<const int64_t> ids, const float* gradients, int64_t width,
                   float lr, int64_t round) override {
    const ParameterTableConfig config = table_config(table, true, width);
    const int servers = num_servers();
    // The gradients of equal ids are added here, in the order they come, so
    // each distinct id travels once (a batch of Zipf-drawn ids repeats the
    // frequent ones many times).
    std::vector<wire::PushSparseRequest> requests(stubs_.size());
    std::vector<std::unordered_map<int64_t, int>> positions(stubs_.size());
    std::vector<std::vector<float>> sums(stubs_.size());
    const auto w = static_cast<size_t>(width);
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto s = static_cast<size_t>(sparse_shard_of(ids[i], config.shard_num) % servers);
      auto [it, added] = positions[s].emplace(ids[i], requests[s].ids_size());
      const float* gradient = gradients + i * w;
      if (added) {
        requests[s].add_ids(ids[i]);
        sums[s].insert(sums[s].end(), gradient, gradient + w);
      } else {
        float* sum = sums[s].data() + static_cast<size_t>(it->second) * w;
        for (size_t j = 0; j < w; ++j) sum[j] += gradient[j];
      }
    }
    for (size_t s = 0; s < requests.size(); ++s) {
      requests[s].set_gradients(reinterpret_cast<const char*>(sums[s].data()), sums[s].size() * sizeof(float));
    }
    std::vector<int> targets;
    for (int s = 0; s < servers; ++s) {
      // A synchronous round needs every worker's push on every server, rows or not.
      if (requests[static_cast<size_t>(s)].ids_size() == 0 && config.sync_workers == 0) continue;
      wire::PushSparseRequest& request = requests[static_cast<size_t>(s)];
      request.set_table(table);
      request.set_width(width);
      request.set_lr(lr);
      request.set_round(round);
      request.set_worker(options_.worker);
      targets.push_back(s);
    }
    for (int s : targets) {
      const wire::PushSparseRequest& request = requests[static_cast<size_t>(s)];
      bytes_pushed_ += static_cast<int64_t>(request.ids_size() * sizeof(int64_t) + request.gradients().size());
    }
    std::vector<wire::Empty> replies(stubs_.size());
    fan_out<wire::PushSparseRequest, wire::Empty>("push to sparse table '" + table + "'", targets, requests, replies,
                                      [](Async* a, grpc::ClientContext* c, const wire::PushSparseRequest* q, wire::Empty* r, Done d) {
                                        a->PushSparse(c, q, r, std::move(d));
                                      });
  }

  void pull_dense(const std::string& table, float* values, int64_t size, int64_t round) override {
    table_config(table, false, size);
    std::vector<wire::PullDenseRequest> requests(stubs_.size());
    for (int s = 0; s < num_servers(); ++s) {
      auto [begin, end] = dense_slice(size, s, num_servers());
      requests[static_cast<size_t>(s)].set_table(table);
      requests[static_cast<size_t>(s)].set_size(end - begin);
      requests[static_cast<size_t>(s)].set_round(round);
    }
    std::vector<wire::Floats> replies(stubs_.size());
    fan_out<wire::PullDenseRequest, wire::Floats>("pull from dense table '" + table + "'", all_servers(), requests, replies,
                                      [](Async* a, grpc::ClientContext* c, const wire::PullDenseRequest* q, wire::Floats* r, Done d) {
                                        a->PullDense(c, q, r, std::move(d));
                                      });
    for (int s = 0; s < num_servers(); ++s) {
      auto [begin, end] = dense_slice(size, s, num_servers());
      expect_floats(replies[static_cast<size_t>(s)], end - begin, s, table);
      std::memcpy(values + begin, replies[static_cast<size_t>(s)].values().data(), static_cast<size_t>(end - begin) * sizeof(float));
    }
  }

  void push_dense(const std::string& table, const float* gradient, int64_t size, float lr, int64_t round) override {
    table_config(table, false, size);
    std::vector<wire::PushDenseRequest> requests(stubs_.size());
    for (int s = 0; s < num_servers(); ++s) {
      auto [begin, end] = dense_slice(size, s, num_servers());
      wire::PushDenseRequest& request = requests[static_cast<size_t>(s)];
      request.set_table(table);
      request.set_gradient(float_bytes(gradient + begin, end - begin));
      request.set_lr(lr);
      request.set_round(round);
      request.set_worker(options_.worker);
    }
    bytes_pushed_ += size * static_cast<int64_t>(sizeof(float));
    std::vector<wire::Empty> replies(stubs_.size());
    fan_out<wire::PushDenseRequest, wire::Empty>("push to dense table '" + table + "'", all_servers(), requests, replies,
                                     [](Async* a, grpc::ClientContext* c, const wire::PushDenseRequest* q, wire::Empty* r, Done d) {
                                       a->PushDense(c, q, r, std::move(d));
                                     });
  }

  void set_dense(const std::string& table, const float* values, int64_t size, bool only_if_unset) override {
    table_config(table, false, size);
    std::vector<wire::SetDenseRequest> requests(stubs_.size());
    for (int s = 0; s < num_servers(); ++s) {
      auto [begin, end] = dense_slice(size, s, num_servers());
      requests[static_cast<size_t>(s)].set_table(table);
      requests[static_cast<size_t>(s)].set_values(float_bytes(values + begin, end - begin));
      requests[static_cast<size_t>(s)].set_only_if_unset(only_if_unset);
    }
    std::vector<wire::Empty> replies(stubs_.size());
    fan_out<wire::SetDenseRequest, wire::Empty>("set dense table '" + table + "'", all_servers(), requests, replies,
                                    [](Async* a, grpc::ClientContext* c, const wire::SetDenseRequest* q, wire::Empty* r, Done d) {
                                      a->SetDense(c, q, r, std::move(d));
                                    });
  }

  void save(const std::filesystem::path& directory) override { checkpoint(directory, true); }
  void load(const std::filesystem::path& directory) override { checkpoint(directory, false); }

  int64_t end_pass(int max_unseen_passes) override {
    std::vector<wire::EndPassRequest> requests(stubs_.size());
    for (auto& request : requests) request.set_max_unseen_passes(max_unseen_passes);
    std::vector<wire::EndPassReply> replies(stubs_.size());
    fan_out<wire::EndPassRequest, wire::EndPassReply>("end pass", all_servers(), requests, replies,
                                          [](Async* a, grpc::ClientContext* c, const wire::EndPassRequest* q, wire::EndPassReply* r,
                                             Done d) { a->EndPass(c, q, r, std::move(d)); });
    int64_t dropped = 0;
    for (const auto& reply : replies) dropped += reply.dropped();
    return dropped;
  }

  int64_t bytes_pushed() const override { return bytes_pushed_.load(); }

  int num_servers() const override { return static_cast<int>(stubs_.size()); }

  std::string description() const override {
    std::string list;
    for (const auto& endpoint : options_.endpoints) list += (list.empty() ? "" : ",") + endpoint;
    return "parameter servers " + list;
  }

  void stop_servers() override {
    std::vector<wire::Empty> requests(stubs_.size()), replies(stubs_.size());
    fan_out<wire::Empty, wire::Empty>("stop", all_servers(), requests, replies,
                          [](Async* a, grpc::ClientContext* c, const wire::Empty* q, wire::Empty* r, Done d) { a->Stop(c, q, r, std::move(d)); });
  }

 private:
  std::string server_name(int s) const {
    return "parameter server " + std::to_string(s) + " of " + std::to_string(options_.endpoints.size()) + " (" +
           options_.endpoints[static_cast<size_t>(s)] + ")";
  }

  std::vector<int> all_servers() const {
    std::vector<int> all(stubs_.size());
    for (size_t s = 0; s < all.size(); ++s) all[s] = static_cast<int>(s);
    return all;
  }

  ParameterTableConfig table_config(const std::string& table, bool sparse, int64_t width) const {
    std::lock_guard lock(tables_mutex_);
    auto found = tables_.find(table);
    if (found == tables_.end()) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + table + "' was not created through this client (" +
                                                   description() + "); create_table it first");
    }
    const ParameterTableConfig& config = found->second;
    if (config.sparse != sparse) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + table + "' is " + (config.sparse ? "sparse" : "dense") +
                                                   "; the call is for a " + (sparse ? "sparse" : "dense") + " table");
    }
    if (config.width != width) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + table + "' has " + (sparse ? "rows of " : "") +
                                                   std::to_string(config.width) + " floats; the call has " +
                                                   std::to_string(width));
    }
    return config;
  }

  void expect_floats(const wire::Floats& reply, int64_t expected, int s, const std::string& table) const {
    if (reply.values().size() != static_cast<size_t>(expected) * sizeof(float)) {
      throw Error(ErrorKind::kCommunication, server_name(s) + ": table '" + table + "' answered " +
                                                 std::to_string(reply.values().size() / sizeof(float)) +
                                                 " floats; expected " + std::to_string(expected));
    }
  }

  void checkpoint(const std::filesystem::path& directory, bool save) {
    std::vector<wire::CheckpointRequest> requests(stubs_.size());
    for (int s = 0; s < num_servers(); ++s) {
      requests[static_cast<size_t>(s)].set_directory(directory.string());
      requests[static_cast<size_t>(s)].set_server_index(s);
      requests[static_cast<size_t>(s)].set_num_servers(num_servers());
    }
    std::vector<wire::Empty> replies(stubs_.size());
    fan_out<wire::CheckpointRequest, wire::Empty>(std::string(save ? "save" : "load") + " tables in " + directory.string(),
                                      all_servers(), requests, replies,
                                      [save](Async* a, grpc::ClientContext* c, const wire::CheckpointRequest* q, wire::Empty* r, Done d) {
                                        if (save) {
                                          a->Save(c, q, r, std::move(d));
                                        } else {
                                          a->Load(c, q, r, std::move(d));
                                        }
                                      });
  }

  // Sends requests[s] to each server s of `targets` at once and waits for
  // every answer (each call has the call deadline, so every one comes);
  // throws the first failure, naming its server.
  template <typename Request, typename Reply>
  void fan_out(const std::string& call, const std::vector<int>& targets, std::vector<Request>& requests,
               std::vector<Reply>& replies,
               const std::function<void(Async*, grpc::ClientContext*, const Request*, Reply*, Done)>& start) {
    if (targets.empty()) return;
    std::mutex mutex;
    std::condition_variable all_done;
    size_t left = targets.size();
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<grpc::Status> statuses(targets.size());
    const auto deadline = std::chrono::system_clock::now() + options_.call_timeout;
    for (size_t k = 0; k < targets.size(); ++k) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      contexts.back()->set_deadline(deadline);
      const auto s = static_cast<size_t>(targets[k]);
      start(stubs_[s]->async(), contexts.back().get(), &requests[s], &replies[s], [&, k](grpc::Status status) {
        std::lock_guard lock(mutex);
        statuses[k] = std::move(status);
        if (--left == 0) all_done.notify_all();
      });
    }
    {
      std::unique_lock lock(mutex);
      // Every call ends by its deadline; the margin only guards against a
      // gRPC that never calls back.
      if (!all_done.wait_for(lock, options_.call_timeout + std::chrono::seconds(30), [&] { return left == 0; })) {
        for (auto& context : contexts) context->TryCancel();
        all_done.wait(lock, [&] { return left == 0; });
      }
    }
    for (size_t k = 0; k < targets.size(); ++k) {
      if (!statuses[k].ok()) throw from_status(statuses[k], server_name(targets[k]), call);
    }
  }

  ParameterClientOptions options_;
  std::vector<std::unique_ptr<wire::ParameterService::Stub>> stubs_;
  mutable std::mutex tables_mutex_;
  std::map<std::string, ParameterTableConfig> tables_;
  std::atomic<int64_t> bytes_pushed_{0};
};

}  // namespace

std::shared_ptr<ParameterClient> connect_parameter_servers(const ParameterClientOptions& options) {
  return std::make_shared<GrpcParameterClient>(options);
}

std::vector<std::string> parse_server_endpoints(const std::string& list) {
  std::vector<std::string> endpoints;
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    std::string entry = list.substr(begin, end - begin);
    const size_t colon = entry.rfind(':');
    bool ok = colon != std::string::npos && colon > 0 && colon + 1 < entry.size();
    int port = 0;
    if (ok) {
      for (size_t i = colon + 1; i < entry.size(); ++i) ok = ok && std::isdigit(static_cast<unsigned char>(entry[i])) != 0;
      if (ok && entry.size() - colon - 1 <= 5) port = std::stoi(entry.substr(colon + 1));
      ok = ok && port > 0 && port < 65536;
    }
    if (!ok) {
      throw Error(ErrorKind::kInvalidArgument, "server endpoint '" + entry + "' in '" + list + "' is not host:port");
    }
    endpoints.push_back(entry);
    begin = end + 1;
  }
  return endpoints;
}

}  // namespace weir::ps
