#include "distributed/gloo/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/half.h"
#include "core/stream.h"
#include "distributed/liveness_beacon.h"
#include "distributed/tcp_store.h"
#include "ops/comm/rank_order_reduction.h"
#include "ops/dtype_dispatch.h"

namespace weir {

namespace {

// Gloo's store interface over Weir's TCP store client.
class GlooTcpStore final : public gloo::rendezvous::Store {
 public:
  explicit GlooTcpStore(std::unique_ptr<TcpStore> store) : store_(std::move(store)) {}
  TcpStore& client() { return *store_; }
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::string value = store_->get(key);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys, store_->timeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  std::unique_ptr<TcpStore> store_;
};

// What the groups of one process share: the TCP device (one I/O thread),
// the store, on rank 0 the TCP store's server, and the liveness beacons of
// every rank of the world (this process's own, and the others' addresses).
struct GlooShared {
  std::unique_ptr<TcpStoreServer> server;
  TcpStore* tcp_store = nullptr;  // the client inside `store`, when it is Weir's TCP store
  std::shared_ptr<gloo::transport::Device> device;
  std::unique_ptr<gloo::rendezvous::Store> store;
  GlooGroupOptions options;
  std::string store_name;  // what messages call the store
  std::unique_ptr<LivenessBeacon> beacon;
  std::vector<std::string> beacons;  // by world rank
};

using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

// f16/bf16 through f32, one element at a time.
template <typename Half, typename Combine>
ReduceFn half_reduction(Combine combine) {
  return [combine](void* out, const void* a, const void* b, size_t n) {
    auto* o = static_cast<Half*>(out);
    const auto* x = static_cast<const Half*>(a);
    const auto* y = static_cast<const Half*>(b);
    for (size_t i = 0; i < n; ++i) o[i] = Half(combine(x[i].to_float(), y[i].to_float()));
  };
}

template <typename T>
ReduceFn native_reduction(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return [](void* o, const void* a, const void* b, size_t n) { gloo::max<T>(o, a, b, n); };
    case ReduceOp::kMin: return [](void* o, const void* a, const void* b, size_t n) { gloo::min<T>(o, a, b, n); };
    default: return [](void* o, const void* a, const void* b, size_t n) { gloo::sum<T>(o, a, b, n); };
  }
}

template <typename Half>
ReduceFn half_reduction(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return half_reduction<Half>([](float x, float y) { return std::max(x, y); });
    case ReduceOp::kMin: return half_reduction<Half>([](float x, float y) { return std::min(x, y); });
    default: return half_reduction<Half>([](float x, float y) { return x + y; });
  }
}

// out[i] /= divisor in the tensor's arithmetic (avg = sum / size), as the
// in-process group's average computes it.
void divide(Tensor& out, int divisor) {
  dispatch_dtype(out.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      T* data = out.data<T>();
      for (int64_t i = 0; i < out.num_elements(); ++i) {
        data[i] = store<T>(static_cast<ComputeType<T>>(load(data[i]) / static_cast<ComputeType<T>>(divisor)));
      }
    }
  });
}

ReduceFn reduction_for(DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kFloat32: return native_reduction<float>(op);
    case DType::kFloat64: return native_reduction<double>(op);
    case DType::kInt32: return native_reduction<int32_t>(op);
    case DType::kInt64: return native_reduction<int64_t>(op);
    case DType::kInt16: return native_reduction<int16_t>(op);
    case DType::kInt8: return native_reduction<int8_t>(op);
    case DType::kUInt8: return native_reduction<uint8_t>(op);
    case DType::kUInt16: return native_reduction<uint16_t>(op);
    case DType::kUInt32: return native_reduction<uint32_t>(op);
    case DType::kUInt64: return native_reduction<uint64_t>(op);
    case DType::kFloat16: return half_reduction<Float16>(op);
    case DType::kBFloat16: return half_reduction<BFloat16>(op);
    default:
      throw Error(ErrorKind::kUnsupported, "Gloo reductions over " + std::string(dtype_name(dtype)) + " tensors are not supported");
  }
}

// FNV-1a: the same slot for the same (peer, tag, call) on both sides.
uint64_t fingerprint(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

class GlooCommunicator final : public Communicator {
 public:
  // `members`: the world rank of each of the group's ranks (what failures name).
  GlooCommunicator(std::shared_ptr<GlooShared> shared, std::string prefix, int rank, std::vector<int> members)
      : shared_(std::move(shared)), prefix_(std::move(prefix)), rank_(rank), size_(static_cast<int>(members.size())),
        members_(std::move(members)) {
    channels_[""] = std::make_unique<Channel>();
    // The whole group's rendezvous happens here; the channels of other
    // communication streams connect on their first call.
    Channel& base = *channels_[""];
    base.context = connect(prefix_);
    base.connected = true;
  }

  ~GlooCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(watch_mutex_);
      stopping_ = true;
    }
    watch_cv_.notify_all();
    if (watcher_.joinable()) watcher_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override { return "Gloo group of " + std::to_string(size_) + " (" + prefix_ + ")"; }

  void all_reduce(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    check_host_output(input, output, input.sizes(), "all_reduce", call);
    ReduceFn reduce = reduction_for(input.dtype(), op);  // refuses what cannot be reduced, before any traffic
    if (shared_->options.allreduce == GlooAllreduce::kRankOrder) {
      // Reduce-scatter in rank order, then Gloo's ring allgather of the
      // shards: the same 2(N-1)/N bytes per rank as a ring allreduce.
      const int64_t n = input.num_elements();
      std::vector<int64_t> counts(static_cast<size_t>(size_));
      for (int r = 0; r < size_; ++r) counts[static_cast<size_t>(r)] = (r + 1) * n / size_ - r * n / size_;
      guarded("all_reduce", call, [&] {
        Channel& ch = channel(call);
        if (n == 0) return;
        const int64_t begin = rank_ * n / size_;
        reduce_shard(ch, input, output, begin, counts, op, call);
        if (size_ == 1) return;
        const size_t element = dtype_size(input.dtype());
        std::vector<size_t> bytes;
        for (int64_t c : counts) bytes.push_back(static_cast<size_t>(c) * element);
        gloo::AllgathervOptions gather(ch.context);
        auto shards = ch.context->createUnboundBuffer(output.raw_data(), output.nbytes());
        Watch watch(*this, {shards.get()});
        gather.setOutput<uint8_t>(std::move(shards), bytes);  // this rank's shard is in place
        gather.setTag(ch.tag++);
        gather.setTimeout(timeout_of(call));
        gloo::allgatherv(gather);
        watch.check();
      });
      return;
    }
    guarded("all_reduce", call, [&] {
      Channel& ch = channel(call);
      if (input.num_elements() == 0) return;
      gloo::AllreduceOptions options(ch.context);
      if (shared_->options.allreduce == GlooAllreduce::kBcube) options.setAlgorithm(gloo::AllreduceOptions::Algorithm::BCUBE);
      // Gloo splits the buffer into segments of whole elements of the type
      // it is given, and hands the reduce function element counts: give it
      // an unsigned type of the dtype's width.
      switch (dtype_size(input.dtype())) {
        case 1: set_buffers<uint8_t>(options, input, output); break;
        case 2: set_buffers<uint16_t>(options, input, output); break;
        case 4: set_buffers<uint32_t>(options, input, output); break;
        default: set_buffers<uint64_t>(options, input, output); break;
      }
      options.setReduceFunction(reduce);
      options.setTag(ch.tag++);
      options.setTimeout(timeout_of(call));
      gloo::allreduce(options);
    });
    if (op == ReduceOp::kAvg) divide(output, size_);
  }

  void broadcast(const Tensor& input, Tensor& output, int root, const CommCall& call) override {
    check_host_output(input, output, input.sizes(), "broadcast", call);
    check_rank(root, "broadcast root");
    guarded("broadcast", call, [&] {
      Channel& ch = channel(call);
      if (input.nbytes() == 0) return;
      gloo::BroadcastOptions options(ch.context);
      if (rank_ == root && input.raw_data() != output.raw_data()) {
        options.setInput(static_cast<uint8_t*>(const_cast<void*>(input.raw_data())), input.nbytes());
      }
      options.setOutput(static_cast<uint8_t*>(output.raw_data()), output.nbytes());
      options.setRoot(root);
      options.setTag(ch.tag++);
      options.setTimeout(timeout_of(call));
      gloo::broadcast(options);
    });
  }

  void all_gather(const Tensor& input, Tensor& output, const CommCall& call) override {
    check_host_output(input, output, all_gather_sizes(input.sizes(), size_), "all_gather", call);
    guarded("all_gather", call, [&] {
      Channel& ch = channel(call);
      if (input.nbytes() == 0) return;
      gloo::AllgatherOptions options(ch.context);
      options.setInput(static_cast<uint8_t*>(const_cast<void*>(input.raw_data())), input.nbytes());
      options.setOutput(static_cast<uint8_t*>(output.raw_data()), output.nbytes());
      options.setTag(ch.tag++);
      options.setTimeout(timeout_of(call));
      gloo::allgather(options);
    });
  }

  void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    std::vector<int64_t> sizes;
    try {
      sizes = reduce_scatter_sizes(input.sizes(), size_);
    } catch (const Error&) {
      throw Error(ErrorKind::kShape, "reduce_scatter with tag '" + call.tag + "': axis 0 of " + input.type_string() +
                                         " does not divide by the group size " + std::to_string(size_))
          .with_rank(rank_);
    }
    check_host_output(input, output, sizes, "reduce_scatter", call);
    reduction_for(input.dtype(), op);  // refuses what cannot be reduced, before any traffic
    const int64_t part = output.num_elements();
    guarded("reduce_scatter", call, [&] {
      if (part == 0) return;
      reduce_shard(channel(call), input, output, 0, std::vector<int64_t>(static_cast<size_t>(size_), part), op, call);
    });
  }

  void send(const Tensor& tensor, int peer, const CommCall& call) override {
    check_rank(peer, "send peer");
    point_to_point("send", tensor, peer, rank_, peer, call);
  }

  void recv(Tensor& tensor, int peer, const CommCall& call) override {
    check_rank(peer, "recv peer");
    point_to_point("recv", tensor, peer, peer, rank_, call);
  }

  void barrier(const CommCall& call) override {
    guarded("barrier", call, [&] {
      Channel& ch = channel(call);
      gloo::BarrierOptions options(ch.context);
      options.setTag(ch.tag++);
      options.setTimeout(timeout_of(call));
      gloo::barrier(options);
    });
  }

  std::shared_ptr<Communicator> subgroup(const std::vector<int>& ranks) override {
    const int position = subgroup_position(ranks);
    std::lock_guard<std::mutex> lock(subgroups_mutex_);
    std::shared_ptr<Communicator>& handle = subgroups_[ranks];
    if (!handle) {
      std::string name = prefix_ + "/group";
      for (int r : ranks) name += "_" + std::to_string(r);
      std::vector<int> members;
      for (int r : ranks) members.push_back(members_[static_cast<size_t>(r)]);
      handle = std::make_shared<GlooCommunicator>(shared_, name, position, std::move(members));
    }
    return handle;
  }

  void abort(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (broken_.empty()) broken_ = "aborted: " + reason;
  }
  std::string abort_reason() const override {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return broken_;
  }

 private:
  // In place (Gloo's output only) when `output` is `input`.
  template <typename Word>
  static void set_buffers(gloo::AllreduceOptions& options, const Tensor& input, Tensor& output) {
    const size_t count = static_cast<size_t>(input.num_elements());
    if (input.raw_data() != output.raw_data()) options.setInput(static_cast<Word*>(const_cast<void*>(input.raw_data())), count);
    options.setOutput(static_cast<Word*>(output.raw_data()), count);
  }

  std::chrono::milliseconds timeout_of(const CommCall& call) const {
    return call.timeout.count() > 0 ? call.timeout : shared_->options.timeout;
  }
  // A Gloo context and what goes with it, one per communication stream:
  // calls on one stream come one at a time, in the same order on every rank,
  // so they share a tag counter; calls on different streams run at once,
  // on their own contexts (Gloo needs distinct tags for concurrent calls on
  // one context, and the order between streams differs between ranks).
  struct Channel {
    std::mutex connecting;
    bool connected = false;
    std::shared_ptr<gloo::rendezvous::Context> context;
    uint32_t tag = 1;
    std::map<std::string, uint64_t> p2p_counts;
    std::vector<char> gathered;  // reduce_shard's parts, reused
  };

  std::shared_ptr<gloo::rendezvous::Context> connect(const std::string& prefix) {
    auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
    context->setTimeout(shared_->options.timeout);
    gloo::rendezvous::PrefixStore store(prefix, *shared_->store);
    try {
      context->connectFullMesh(store, shared_->device);
    } catch (const std::exception& e) {
      throw Error(ErrorKind::kCommunication, "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                                 " could not connect its Gloo group through " +
                                                 shared_->store_name + " (namespace '" + prefix +
                                                 "') within " + std::to_string(shared_->options.timeout.count()) +
                                                 " ms: " + e.what())
          .with_rank(rank_);
    }
    return context;
  }

  // The channel of the call's stream: host code and the first
  // communication stream ("comm") share the group's first context.
  Channel& channel(const CommCall& call) {
    std::string key;
    if (call.stream != nullptr && !(call.stream->id() == StreamId{StreamKind::kCommunication, 0})) {
      key = call.stream->id().to_string();
    }
    Channel* found = nullptr;
    {
      std::lock_guard<std::mutex> lock(channels_mutex_);
      std::unique_ptr<Channel>& slot = channels_[key];
      if (!slot) slot = std::make_unique<Channel>();
      found = slot.get();
    }
    // Only this channel waits for its peers' rendezvous; others go on.
    std::lock_guard<std::mutex> lock(found->connecting);
    if (!found->connected) {
      found->context = connect(prefix_ + "/stream/" + key);
      found->connected = true;
    }
    return *found;
  }

  // The reduce-scatter Debian's Gloo lacks: rank r receives part r of every
  // rank's input (parts of `counts` elements, in rank order) with Gloo's
  // alltoallv, and reduces them in rank order into `out` from element
  // `out_begin` on.
  void reduce_shard(Channel& ch, const Tensor& input, Tensor& out, int64_t out_begin, const std::vector<int64_t>& counts,
                    ReduceOp op, const CommCall& call) {
    const size_t element = dtype_size(input.dtype());
    const int64_t mine = counts[static_cast<size_t>(rank_)];
    char* destination = static_cast<char*>(out.raw_data()) + static_cast<size_t>(out_begin) * element;
    if (size_ == 1) {
      std::memmove(destination, input.raw_data(), static_cast<size_t>(mine) * element);
      return;
    }
    // Parts from every rank; reused between calls (a group's calls come one at a time).
    ch.gathered.resize(static_cast<size_t>(mine * size_) * element);
    std::vector<int64_t> send_bytes, receive_bytes(static_cast<size_t>(size_), mine * static_cast<int64_t>(element));
    for (int64_t c : counts) send_bytes.push_back(c * static_cast<int64_t>(element));
    gloo::AlltoallvOptions exchange(ch.context);
    auto sent = ch.context->createUnboundBuffer(const_cast<void*>(input.raw_data()), input.nbytes());
    auto received = ch.context->createUnboundBuffer(ch.gathered.data(), ch.gathered.size());
    Watch watch(*this, {sent.get(), received.get()});
    exchange.setInput<uint8_t>(std::move(sent), send_bytes);
    exchange.setOutput<uint8_t>(std::move(received), receive_bytes);
    exchange.setTag(ch.tag++);
    exchange.setTimeout(timeout_of(call));
    gloo::alltoallv(exchange);
    watch.check();
    std::vector<const void*> parts;
    for (int r = 0; r < size_; ++r) parts.push_back(ch.gathered.data() + static_cast<size_t>(r * mine) * element);
    reduce_in_rank_order(op, input.dtype(), parts, destination, static_cast<size_t>(mine));
  }

  // Gloo wakes a wait on a dead peer when it sees the connection close, but
  // not a send of an unbound buffer still waiting for the peer's receive
  // (Gloo 0.5; alltoallv and allgatherv use them): that waits out the
  // timeout. So the buffers of such a call are watched: once it has lasted
  // kWatchPeriod, a watcher thread probes the group's beacons every period,
  // and when a rank is gone it aborts the call's waits; check() then fails
  // the call, and guarded() names the rank.
  static constexpr std::chrono::milliseconds kWatchPeriod{250};

  struct Watched {
    std::vector<gloo::transport::UnboundBuffer*> buffers;
    std::chrono::steady_clock::time_point since;
    bool aborted = false;
  };

  class Watch {
   public:
    Watch(GlooCommunicator& group, std::vector<gloo::transport::UnboundBuffer*> buffers) : group_(group) {
      call_.buffers = std::move(buffers);
      call_.since = std::chrono::steady_clock::now();
      std::lock_guard<std::mutex> lock(group_.watch_mutex_);
      group_.start_watcher();
      group_.watched_.push_back(&call_);
    }
    ~Watch() {
      std::lock_guard<std::mutex> lock(group_.watch_mutex_);
      group_.watched_.remove(&call_);
    }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    void check() {
      std::lock_guard<std::mutex> lock(group_.watch_mutex_);
      if (call_.aborted) throw std::runtime_error("its waits were aborted: a peer is gone");
    }

   private:
    GlooCommunicator& group_;
    Watched call_;
  };

  // Called with watch_mutex_ held.
  void start_watcher() {
    if (watcher_.joinable()) return;
    watcher_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(watch_mutex_);
      while (!stopping_) {
        watch_cv_.wait_for(lock, kWatchPeriod);
        const auto overdue = std::chrono::steady_clock::now() - kWatchPeriod;
        bool any = false;
        for (const Watched* w : watched_) any = any || w->since < overdue;
        if (stopping_ || !any) continue;
        lock.unlock();
        const bool gone = !gone_peers().empty();
        lock.lock();
        if (!gone) continue;
        for (Watched* w : watched_) {
          if (w->since >= overdue) continue;
          w->aborted = true;
          for (gloo::transport::UnboundBuffer* buffer : w->buffers) {
            buffer->abortWaitSend();
            buffer->abortWaitRecv();
          }
        }
      }
    });
  }

  // The group's other ranks whose beacons refuse connections, one probe each.
  std::string gone_peers() const {
    std::string gone;
    for (int member : members_) {
      if (member == members_[static_cast<size_t>(rank_)]) continue;
      const std::string& address = shared_->beacons.at(static_cast<size_t>(member));
      std::string why = probe_liveness(address, std::chrono::seconds(2));
      if (why.empty()) continue;
      gone += (gone.empty() ? "" : ", ") + std::string("rank ") + std::to_string(member) + " (" + address + ": " + why + ")";
    }
    return gone;
  }

  // Which of the group's other ranks are gone, by their liveness beacons:
  // Gloo names a dead peer only by a socket address (often an ephemeral
  // port), and a timeout names no one.
  std::string missing_peers() const {
    std::string gone;
    // A killed process's sockets close one by one: its Gloo connection may
    // be seen closed before its beacon is, so look again for a moment.
    for (int attempt = 0; attempt < 10 && gone.empty(); ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      gone = gone_peers();
    }
    if (gone.empty()) return "every other rank still runs (one is stuck, slow, or called other collectives)";
    return "gone from the world: " + gone;
  }

  // Runs one Gloo call, turning its failures into kCommunication errors and
  // marking the group broken (Gloo's context is unusable after one).
  template <typename Fn>
  void guarded(const char* what, const CommCall& call, Fn&& fn) {
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (!broken_.empty()) {
        throw Error(ErrorKind::kCommunication, std::string(what) + " with tag '" + call.tag + "' on rank " +
                                                   std::to_string(rank_) + ": the group is " + broken_)
            .with_rank(rank_);
      }
    }
    try {
      fn();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string message = std::string(what) + " with tag '" + call.tag + "' on rank " + std::to_string(rank_) + " of " +
                            description() + " failed: " + e.what() + "; " + missing_peers();
      {
        std::lock_guard<std::mutex> lock(state_mutex_);
        if (broken_.empty()) broken_ = "broken by an earlier failure: " + message;
      }
      throw Error(ErrorKind::kCommunication, message).with_rank(rank_);
    }
  }

  void point_to_point(const char* what, const Tensor& tensor, int peer, int src, int dst, const CommCall& call) {
    guarded(what, call, [&] {
      Channel& ch = channel(call);
      std::string pair = std::to_string(src) + "->" + std::to_string(dst) + " " + call.tag;
      const uint64_t count = ch.p2p_counts[pair]++;
      // Gloo's collectives use slots whose top byte is 1-8: keep ours 0.
      const uint64_t slot = fingerprint(pair + "#" + std::to_string(count)) & 0x00ffffffffffffffULL;
      if (tensor.nbytes() == 0) return;
      auto buffer = ch.context->createUnboundBuffer(const_cast<void*>(tensor.raw_data()), tensor.nbytes());
      if (src == rank_) {
        buffer->send(peer, slot);
        if (!buffer->waitSend(timeout_of(call))) throw std::runtime_error("the send did not complete");
      } else {
        buffer->recv(peer, slot);
        if (!buffer->waitRecv(timeout_of(call))) throw std::runtime_error("nothing was received");
      }
    });
  }

  // The caller's output: a host tensor of the input's dtype and `sizes`.
  void check_host_output(const Tensor& input, const Tensor& output, const std::vector<int64_t>& sizes, const char* what,
                         const CommCall& call) const {
    check_output(input, output, sizes, what, call);
    if (input.device().type != DeviceType::kCpu || output.device().type != DeviceType::kCpu) {
      throw Error(ErrorKind::kUnsupported, std::string(what) + ": Gloo exchanges host tensors").with_rank(rank_);
    }
  }

  std::shared_ptr<GlooShared> shared_;
  std::string prefix_;
  int rank_, size_;
  std::vector<int> members_;  // by group rank: the world rank
  std::mutex channels_mutex_;
  std::map<std::string, std::unique_ptr<Channel>> channels_;  // by stream ("" the first)
  mutable std::mutex state_mutex_;
  std::string broken_;
  std::mutex watch_mutex_;
  std::condition_variable watch_cv_;
  std::list<Watched*> watched_;  // the calls in flight
  bool stopping_ = false;
  std::thread watcher_;          // started by the first watched call
  std::mutex subgroups_mutex_;
  std::map<std::vector<int>, std::shared_ptr<Communicator>> subgroups_;
};

// Claims this rank's place in the job's namespace, publishes its liveness
// beacon and the world size it was started with, and reads every rank's, in
// rank order. Refused here, before Gloo's keys are touched: a second process
// claiming the same rank (two jobs in one namespace), and a rank that
// believes in another world size (it would wait for ranks that never come).
void publish_beacons(GlooShared& shared, int rank, int size) {
  const std::string& job = shared.options.job;
  auto key = [&](int r) { return job + "/beacon/" + std::to_string(r); };
  const std::string clash = "rank " + std::to_string(rank) + " of job '" + job + "' has already joined " +
                            shared.store_name + ": two jobs share one store namespace (give each its own job "
                            "name, master port or store directory)";
  try {
    if (shared.tcp_store != nullptr && shared.tcp_store->add(job + "/claimed/" + std::to_string(rank), 1) != 1) {
      throw Error(ErrorKind::kInvalidArgument, clash).with_rank(rank);
    }
    const std::string value = shared.beacon->address() + " " + std::to_string(size);
    shared.store->set(key(rank), std::vector<char>(value.begin(), value.end()));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // a FileStore refuses a key written twice
    throw Error(ErrorKind::kInvalidArgument, clash + " (" + e.what() + ")").with_rank(rank);
  }
  const auto deadline = std::chrono::steady_clock::now() + shared.options.timeout;
  for (int r = 0; r < size; ++r) {
    std::string value;
    try {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      shared.store->wait({key(r)}, std::max(left, std::chrono::milliseconds(1)));
      std::vector<char> bytes = shared.store->get(key(r));
      value.assign(bytes.begin(), bytes.end());
    } catch (const std::exception& e) {
      throw Error(ErrorKind::kCommunication, "rank " + std::to_string(rank) + " of " + std::to_string(size) +
                                                 " could not connect its Gloo group through " + shared.store_name +
                                                 " (namespace '" + job + "') within " +
                                                 std::to_string(shared.options.timeout.count()) + " ms: rank " +
                                                 std::to_string(r) + " never arrived (" + e.what() + ")")
          .with_rank(rank);
    }
    const size_t space = value.rfind(' ');
    const std::string their_size = space == std::string::npos ? "?" : value.substr(space + 1);
    if (their_size != std::to_string(size)) {
      throw Error(ErrorKind::kInvalidArgument, "the ranks disagree on the world size: rank " + std::to_string(rank) +
                                                   " was started in a world of " + std::to_string(size) + ", rank " +
                                                   std::to_string(r) + " in a world of " + their_size + " (job '" +
                                                   job + "' at " + shared.store_name + ")")
          .with_rank(rank);
    }
    shared.beacons.push_back(value.substr(0, space));
  }
}

// Gloo writes to its sockets without MSG_NOSIGNAL: a write to a peer that
// died raises SIGPIPE, whose default action kills this process before Gloo
// can report the peer. Ignore it (once, and only if nobody installed a
// handler) so the write fails with EPIPE and the collective with an error
// naming the dead rank.
void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      ::sigemptyset(&ignore.sa_mask);
      ::sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

}  // namespace

std::shared_ptr<Communicator> make_gloo_communicator(int rank, int size, const GlooGroupOptions& options) {
  ignore_sigpipe();
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorKind::kInvalidArgument, "rank " + std::to_string(rank) + " is not a rank of a Gloo group of " +
                                                 std::to_string(size));
  }
  if (options.master_port <= 0 && options.store_directory.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "a Gloo group needs a master port (a TCP store) or a store directory every rank sees");
  }
  auto shared = std::make_shared<GlooShared>();
  shared->options = options;
  if (options.master_port > 0) {
    shared->store_name = "the TCP store at " + options.master_addr + ":" + std::to_string(options.master_port);
    try {
      if (rank == 0) shared->server = std::make_unique<TcpStoreServer>(options.master_port);
      auto client = std::make_unique<GlooTcpStore>(
          std::make_unique<TcpStore>(options.master_addr, options.master_port, options.timeout));
      shared->tcp_store = &client->client();
      shared->store = std::move(client);
    } catch (Error& e) {
      throw e.with_rank(rank);
    }
  } else {
    shared->store_name = "the store in " + options.store_directory;
    shared->store = std::make_unique<gloo::rendezvous::FileStore>(options.store_directory);
  }
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    shared->device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kCommunication, "rank " + std::to_string(rank) + " could not listen on " + options.hostname +
                                               ": " + e.what())
        .with_rank(rank);
  }
  shared->beacon = std::make_unique<LivenessBeacon>(options.hostname);
  publish_beacons(*shared, rank, size);
  std::vector<int> members(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) members[static_cast<size_t>(r)] = r;
  return std::make_shared<GlooCommunicator>(shared, options.job, rank, std::move(members));
}

}  // namespace weir
