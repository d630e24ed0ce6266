#include "distributed/ps/parameter_server.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/logging.h"
#include "distributed/ps/dense_table.h"
#include "distributed/ps/ps.grpc.pb.h"
#include "distributed/ps/ps_wire.h"
#include "distributed/ps/sparse_table.h"
#include "distributed/ps/sync_rounds.h"

namespace weir::ps {

namespace {

// A table as this server holds it: its rows or slice, and the barrier of
// its synchronous rounds when it has them.
struct Table {
  ParameterTableConfig config;
  std::unique_ptr<SparseTable> sparse;
  std::unique_ptr<DenseTable> dense;
  std::unique_ptr<SyncRounds> rounds;
};

// Runs a handler body, turning what it throws into the status the client
// turns back into the same error.
template <typename Body>
grpc::Status answer(Body&& body) {
  try {
    body();
    return grpc::Status::OK;
  } catch (const Error& e) {
    return to_status(e);
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  }
}

const float* floats_of(const std::string& bytes, int64_t expected, const std::string& what) {
  if (bytes.size() != static_cast<size_t>(expected) * sizeof(float)) {
    throw Error(ErrorKind::kInvalidArgument, what + " carries " + std::to_string(bytes.size() / sizeof(float)) +
                                                 " floats; expected " + std::to_string(expected));
  }
  return reinterpret_cast<const float*>(bytes.data());
}

}  // namespace

class ParameterServer::Impl final : public wire::ParameterService::Service {
 public:
  explicit Impl(ParameterServerOptions options) : options_(std::move(options)) {}

  ParameterServerOptions options_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  std::mutex stop_mutex_;
  std::condition_variable stop_requested_;
  bool stop_ = false;

  mutable std::shared_mutex tables_mutex_;   // the map, not the tables
  std::map<std::string, std::unique_ptr<Table>> tables_;

  Table& table(const std::string& name, bool sparse, int64_t width) {
    std::shared_lock lock(tables_mutex_);
    auto found = tables_.find(name);
    if (found == tables_.end()) {
      std::string names;
      for (const auto& [n, t] : tables_) names += (names.empty() ? "" : ", ") + n;
      throw Error(ErrorKind::kInvalidArgument, "no table '" + name + "' on this server (tables: " +
                                                   (names.empty() ? "none" : names) + ")");
    }
    Table& t = *found->second;
    if (t.config.sparse != sparse) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + name + "' is " + (t.config.sparse ? "sparse" : "dense") +
                                                   "; the request is for a " + (sparse ? "sparse" : "dense") + " table");
    }
    if (sparse && width != t.config.width) {
      throw Error(ErrorKind::kInvalidArgument, "table '" + name + "' has rows of " + std::to_string(t.config.width) +
                                                   " floats; the request has rows of " + std::to_string(width));
    }
    return t;
  }

  // The sooner of the client's deadline and the server's wait limit.
  std::chrono::steady_clock::time_point wait_deadline(const grpc::ServerContext* context) const {
    const auto client_left = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        context->deadline() - std::chrono::system_clock::now());
    return std::chrono::steady_clock::now() +
           std::min<std::chrono::steady_clock::duration>(client_left, options_.wait_limit);
  }

  grpc::Status CreateTable(grpc::ServerContext*, const wire::CreateTableRequest* request, wire::Empty*) override {
    return answer([&] {
      ParameterTableConfig config = from_message(request->config());
      std::unique_lock lock(tables_mutex_);
      auto found = tables_.find(config.name);
      if (found != tables_.end()) {
        std::string difference = config_difference(found->second->config, config);
        if (!difference.empty()) {
          throw Error(ErrorKind::kInvalidArgument, "table '" + config.name + "' exists with another configuration (" +
                                                       difference + ")");
        }
        if (!config.sparse && found->second->dense->size() != request->dense_slice()) {
          throw Error(ErrorKind::kInvalidArgument, "table '" + config.name + "': this server holds " +
                                                       std::to_string(found->second->dense->size()) +
                                                       " floats; the request says " + std::to_string(request->dense_slice()));
        }
        return;
      }
      auto table = std::make_unique<Table>();
      table->config = config;
      if (config.sparse) {
        table->sparse = std::make_unique<SparseTable>(config);
      } else {
        table->dense = std::make_unique<DenseTable>(config, request->dense_slice());
      }
      if (config.sync_workers > 0) table->rounds = std::make_unique<SyncRounds>(config.name, config.sync_workers);
      tables_.emplace(config.name, std::move(table));
    });
  }

  grpc::Status PullSparse(grpc::ServerContext* context, const wire::PullSparseRequest* request, wire::Floats* reply) override {
    return answer([&] {
      Table& t = table(request->table(), true, request->width());
      if (t.rounds) t.rounds->wait_applied(request->round(), wait_deadline(context));
      std::string& out = *reply->mutable_values();
      out.resize(static_cast<size_t>(request->ids_size()) * static_cast<size_t>(t.config.width) * sizeof(float));
      t.sparse->pull({request->ids().data(), static_cast<size_t>(request->ids_size())}, reinterpret_cast<float*>(out.data()));
    });
  }

  grpc::Status PushSparse(grpc::ServerContext*, const wire::PushSparseRequest* request, wire::Empty*) override {
    return answer([&] {
      Table& t = table(request->table(), true, request->width());
      const int64_t n = request->ids_size();
      const float* gradients = floats_of(request->gradients(), n * t.config.width, "the push to '" + request->table() + "'");
      std::span<const int64_t> ids(request->ids().data(), static_cast<size_t>(n));
      if (!t.rounds) {
        t.sparse->push(ids, gradients, request->lr());
        return;
      }
      Push push{{ids.begin(), ids.end()}, {gradients, gradients + n * t.config.width}, request->lr()};
      t.rounds->add(request->worker(), request->round(), std::move(push), [&t](std::vector<Push>& by_worker) {
        // The mean over workers: every worker's rows scaled by 1/W, in
        // worker order, then the table adds equal ids and applies its rule.
        const float scale = 1.0f / static_cast<float>(by_worker.size());
        std::vector<int64_t> ids_all;
        std::vector<float> values_all;
        for (Push& p : by_worker) {
          ids_all.insert(ids_all.end(), p.ids.begin(), p.ids.end());
          for (float v : p.values) values_all.push_back(v * scale);
        }
        t.sparse->push(ids_all, values_all.data(), by_worker.front().lr);
      });
    });
  }

  grpc::Status PullDense(grpc::ServerContext* context, const wire::PullDenseRequest* request, wire::Floats* reply) override {
    return answer([&] {
      Table& t = table(request->table(), false, 0);
      if (request->size() != t.dense->size()) {
        throw Error(ErrorKind::kInvalidArgument, "table '" + request->table() + "': this server holds " +
                                                     std::to_string(t.dense->size()) + " floats; the pull expects " +
                                                     std::to_string(request->size()));
      }
      if (t.rounds) t.rounds->wait_applied(request->round(), wait_deadline(context));
      std::string& out = *reply->mutable_values();
      out.resize(static_cast<size_t>(t.dense->size()) * sizeof(float));
      t.dense->pull(reinterpret_cast<float*>(out.data()));
    });
  }

  grpc::Status PushDense(grpc::ServerContext*, const wire::PushDenseRequest* request, wire::Empty*) override {
    return answer([&] {
      Table& t = table(request->table(), false, 0);
      const int64_t n = t.dense->size();
      const float* gradient = floats_of(request->gradient(), n, "the push to '" + request->table() + "'");
      if (!t.rounds) {
        t.dense->push(gradient, request->lr());
        return;
      }
      Push push{{}, {gradient, gradient + n}, request->lr()};
      t.rounds->add(request->worker(), request->round(), std::move(push), [&t, n](std::vector<Push>& by_worker) {
        std::vector<float> sum(static_cast<size_t>(n), 0.0f);
        for (const Push& p : by_worker) {
          for (size_t i = 0; i < sum.size(); ++i) sum[i] += p.values[i];
        }
        const float scale = 1.0f / static_cast<float>(by_worker.size());
        for (float& v : sum) v *= scale;
        t.dense->push(sum.data(), by_worker.front().lr);
      });
    });
  }

  grpc::Status SetDense(grpc::ServerContext*, const wire::SetDenseRequest* request, wire::Empty*) override {
    return answer([&] {
      Table& t = table(request->table(), false, 0);
      t.dense->set(floats_of(request->values(), t.dense->size(), "the values set on '" + request->table() + "'"),
                   request->only_if_unset());
    });
  }

  static std::filesystem::path shard_file(const std::filesystem::path& directory, const std::string& table, int shard) {
    return directory / table / ("shard-" + std::to_string(shard));
  }
  static std::filesystem::path slice_file(const std::filesystem::path& directory, const std::string& table,
                                          const wire::CheckpointRequest& request) {
    return directory / table /
           ("dense-" + std::to_string(request.server_index()) + "-of-" + std::to_string(request.num_servers()));
  }
  // Barriers and other coordination of a job: no part of the model.
  static bool is_job_table(const std::string& name) { return name.rfind(kJobTablePrefix, 0) == 0; }
  static void check_placement(const wire::CheckpointRequest& request) {
    if (request.num_servers() <= 0 || request.server_index() < 0 || request.server_index() >= request.num_servers()) {
      throw Error(ErrorKind::kInvalidArgument, "server " + std::to_string(request.server_index()) + " of " +
                                                   std::to_string(request.num_servers()) + " is no place in a job");
    }
  }

  grpc::Status Save(grpc::ServerContext*, const wire::CheckpointRequest* request, wire::Empty*) override {
    return answer([&] {
      check_placement(*request);
      const std::filesystem::path directory = request->directory();
      std::shared_lock lock(tables_mutex_);
      for (const auto& [name, t] : tables_) {
        if (is_job_table(name)) continue;
        std::error_code ec;
        std::filesystem::create_directories(directory / name, ec);
        if (ec) throw Error(ErrorKind::kIo, "cannot create the directory: " + ec.message()).with_file((directory / name).string());
        if (t->dense) {
          write_file_atomically(slice_file(directory, name, *request), t->dense->save());
          continue;
        }
        for (int s = request->server_index(); s < t->config.shard_num; s += request->num_servers()) {
          std::string bytes = t->sparse->save_shard(s);
          const auto file = shard_file(directory, name, s);
          if (bytes.empty()) {
            std::filesystem::remove(file, ec);  // an earlier save's rows are gone now
          } else {
            write_file_atomically(file, bytes);
          }
        }
      }
    });
  }

  grpc::Status Load(grpc::ServerContext*, const wire::CheckpointRequest* request, wire::Empty*) override {
    return answer([&] {
      check_placement(*request);
      const std::filesystem::path directory = request->directory();
      std::shared_lock lock(tables_mutex_);
      for (const auto& [name, t] : tables_) {
        if (is_job_table(name)) continue;
        if (t->dense) {
          const auto file = slice_file(directory, name, *request);
          t->dense->load(read_file(file, size_t{1} << 40), file.string());
          continue;
        }
        if (!std::filesystem::is_directory(directory / name)) {
          throw Error(ErrorKind::kIo, "no saved table '" + name + "' here").with_file((directory / name).string());
        }
        for (int s = request->server_index(); s < t->config.shard_num; s += request->num_servers()) {
          const auto file = shard_file(directory, name, s);
          std::string bytes = std::filesystem::exists(file) ? read_file(file, size_t{1} << 40) : std::string();
          t->sparse->load_shard(s, bytes, file.string());
        }
      }
    });
  }

  grpc::Status EndPass(grpc::ServerContext*, const wire::EndPassRequest* request, wire::EndPassReply* reply) override {
    return answer([&] {
      std::shared_lock lock(tables_mutex_);
      int64_t dropped = 0;
      for (const auto& [name, t] : tables_) {
        if (t->sparse) dropped += t->sparse->end_pass(request->max_unseen_passes());
      }
      reply->set_dropped(dropped);
    });
  }

  grpc::Status Stop(grpc::ServerContext*, const wire::Empty*, wire::Empty*) override {
    {
      std::lock_guard lock(stop_mutex_);
      stop_ = true;
    }
    stop_requested_.notify_all();
    return grpc::Status::OK;
  }
};

ParameterServer::ParameterServer(ParameterServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  route_grpc_logs();
  grpc::ServerBuilder builder;
  const std::string address = impl_->options_.host + ":" + std::to_string(impl_->options_.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &impl_->port_);
  // gRPC sets SO_REUSEPORT by default: a second server on a port in use
  // would share it silently instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(impl_.get());
  impl_->server_ = builder.BuildAndStart();
  if (impl_->server_ == nullptr || impl_->port_ == 0) {
    throw Error(ErrorKind::kIo, "parameter server: cannot listen on " + address + " (in use, or not an address of this host)");
  }
  logger().info("parameter server listening on {}", endpoint());
}

ParameterServer::~ParameterServer() { shutdown(); }

int ParameterServer::port() const { return impl_->port_; }

std::string ParameterServer::endpoint() const { return impl_->options_.host + ":" + std::to_string(impl_->port_); }

void ParameterServer::wait() {
  std::unique_lock lock(impl_->stop_mutex_);
  impl_->stop_requested_.wait(lock, [&] { return impl_->stop_; });
}

void ParameterServer::shutdown() {
  {
    std::lock_guard lock(impl_->stop_mutex_);
    impl_->stop_ = true;
  }
  impl_->stop_requested_.notify_all();
  if (impl_->server_) {
    // Calls in flight get a second to finish; a pull waiting for a round is cancelled.
    impl_->server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    impl_->server_->Wait();
    impl_->server_.reset();
  }
}

int64_t ParameterServer::sparse_rows(const std::string& name) const {
  std::shared_lock lock(impl_->tables_mutex_);
  auto found = impl_->tables_.find(name);
  if (found == impl_->tables_.end() || !found->second->sparse) return -1;
  return found->second->sparse->num_rows();
}

}  // namespace weir::ps
