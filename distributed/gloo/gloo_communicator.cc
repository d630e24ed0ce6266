#include "distributed/gloo/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/half.h"
#include "distributed/tcp_store.h"
#include "ops/dtype_dispatch.h"

namespace weir {

namespace {

// Gloo's store interface over Weir's TCP store client.
class GlooTcpStore final : public gloo::rendezvous::Store {
 public:
  explicit GlooTcpStore(std::unique_ptr<TcpStore> store) : store_(std::move(store)) {}
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

// What the ranks of one process share: the TCP device (one I/O thread), the
// store, and on rank 0 the TCP store's server.
struct GlooShared {
  std::unique_ptr<TcpStoreServer> server;
  std::shared_ptr<gloo::transport::Device> device;
  std::unique_ptr<gloo::rendezvous::Store> store;
  GlooGroupOptions options;
  std::string store_name;  // what messages call the store
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
  GlooCommunicator(std::shared_ptr<GlooShared> shared, std::string prefix, int rank, int size)
      : shared_(std::move(shared)), prefix_(std::move(prefix)), rank_(rank), size_(size) {
    context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context_->setTimeout(shared_->options.timeout);
    gloo::rendezvous::PrefixStore store(prefix_, *shared_->store);
    try {
      context_->connectFullMesh(store, shared_->device);
    } catch (const std::exception& e) {
      throw Error(ErrorKind::kCommunication, "rank " + std::to_string(rank) + " of " + std::to_string(size) +
                                                 " could not connect its Gloo group through " +
                                                 shared_->store_name + " (namespace '" + prefix_ +
                                                 "') within " + std::to_string(shared_->options.timeout.count()) +
                                                 " ms: " + e.what())
          .with_rank(rank);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override { return "Gloo group of " + std::to_string(size_) + " (" + prefix_ + ")"; }

  void all_reduce(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    check_host_output(input, output, input.sizes(), "all_reduce", call);
    ReduceFn reduce = reduction_for(input.dtype(), op);
    guarded("all_reduce", call, [&] {
      if (input.num_elements() == 0) return;
      gloo::AllreduceOptions options(context_);
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
      options.setTag(next_tag());
      options.setTimeout(timeout_of(call));
      gloo::allreduce(options);
    });
    if (op == ReduceOp::kAvg) divide(output, size_);
  }

  void broadcast(const Tensor& input, Tensor& output, int root, const CommCall& call) override {
    check_host_output(input, output, input.sizes(), "broadcast", call);
    check_rank(root, "broadcast root");
    guarded("broadcast", call, [&] {
      if (input.nbytes() == 0) return;
      gloo::BroadcastOptions options(context_);
      if (rank_ == root && input.raw_data() != output.raw_data()) {
        options.setInput(static_cast<uint8_t*>(const_cast<void*>(input.raw_data())), input.nbytes());
      }
      options.setOutput(static_cast<uint8_t*>(output.raw_data()), output.nbytes());
      options.setRoot(root);
      options.setTag(next_tag());
      options.setTimeout(timeout_of(call));
      gloo::broadcast(options);
    });
  }

  void all_gather(const Tensor& input, Tensor& output, const CommCall& call) override {
    check_host_output(input, output, all_gather_sizes(input.sizes(), size_), "all_gather", call);
    guarded("all_gather", call, [&] {
      if (input.nbytes() == 0) return;
      gloo::AllgatherOptions options(context_);
      options.setInput(static_cast<uint8_t*>(const_cast<void*>(input.raw_data())), input.nbytes());
      options.setOutput(static_cast<uint8_t*>(output.raw_data()), output.nbytes());
      options.setTag(next_tag());
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
    Tensor whole = Tensor::uninitialized(input.dtype(), input.sizes());
    all_reduce(input, whole, op, call);
    std::memcpy(output.raw_data(), static_cast<const char*>(whole.raw_data()) + output.nbytes() * rank_, output.nbytes());
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
      gloo::BarrierOptions options(context_);
      options.setTag(next_tag());
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
      handle = std::make_shared<GlooCommunicator>(shared_, name, position, static_cast<int>(ranks.size()));
    }
    return handle;
  }

  void abort(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (broken_.empty()) broken_ = "aborted: " + reason;
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
  uint32_t next_tag() { return tag_++; }

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
                            description() + " failed: " + e.what();
      {
        std::lock_guard<std::mutex> lock(state_mutex_);
        if (broken_.empty()) broken_ = "broken by an earlier failure: " + message;
      }
      throw Error(ErrorKind::kCommunication, message).with_rank(rank_);
    }
  }

  void point_to_point(const char* what, const Tensor& tensor, int peer, int src, int dst, const CommCall& call) {
    std::string channel = std::to_string(src) + "->" + std::to_string(dst) + " " + call.tag;
    const uint64_t count = p2p_counts_[channel]++;
    // Gloo's collectives use slots whose top byte is 1-8: keep ours 0.
    const uint64_t slot = fingerprint(channel + "#" + std::to_string(count)) & 0x00ffffffffffffffULL;
    guarded(what, call, [&] {
      if (tensor.nbytes() == 0) return;
      auto buffer = context_->createUnboundBuffer(const_cast<void*>(tensor.raw_data()), tensor.nbytes());
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
  std::shared_ptr<gloo::rendezvous::Context> context_;
  uint32_t tag_ = 1;
  std::map<std::string, uint64_t> p2p_counts_;
  std::mutex state_mutex_;
  std::string broken_;
  std::mutex subgroups_mutex_;
  std::map<std::vector<int>, std::shared_ptr<Communicator>> subgroups_;
};

}  // namespace

std::shared_ptr<Communicator> make_gloo_communicator(int rank, int size, const GlooGroupOptions& options) {
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
      shared->store = std::make_unique<GlooTcpStore>(
          std::make_unique<TcpStore>(options.master_addr, options.master_port, options.timeout));
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
  return std::make_shared<GlooCommunicator>(shared, options.job, rank, size);
}

}  // namespace weir
