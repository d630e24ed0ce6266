#include "distributed/nccl/nccl_communicator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_device.h"
#include "core/error.h"
#include "core/stream.h"
#include "distributed/nccl/nccl_library.h"
#include "distributed/nccl/nccl_watchdog.h"
#include "distributed/tcp_store.h"

namespace weir {

namespace {

using Clock = std::chrono::steady_clock;

class NcclCommunicator;

// What every communicator of one world shares: the store, this rank's GPU,
// the abort state (an abort of any group aborts the world's), and the NCCL
// communicators of every group, so abort() reaches them all.
struct NcclShared {
  NcclGroupOptions options;
  int world_rank = 0;
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<CudaAllocator> staging;  // device memory for host tensors of host calls
  std::string store_name;                  // "the TCP store at 127.0.0.1:29500"

  std::mutex mutex;  // guards what follows, never held across an NCCL call that waits
  std::string abort_reason;
  std::vector<std::weak_ptr<NcclCommunicator>> groups;  // the world and its subgroups, for abort()
  std::atomic<bool> aborted{false};

  // Last, so that it stops first: its thread may be aborting the world.
  std::unique_ptr<NcclWatchdog> watchdog;
};

// Makes every call of every group of the world fail with `reason`, and
// aborts their NCCL communicators.
void abort_world(NcclShared& shared, const std::string& reason);

// One NCCL communicator: a (group, stream) pair. Its mutex is held for the
// whole of an NCCL call on it (init, enqueue, abort), so they never overlap.
struct NcclSlot {
  std::mutex mutex;
  ncclComm_t comm = nullptr;
  bool dead = false;  // aborted, or failed: never used again
};

ncclDataType_t nccl_type(DType dtype, bool reducing, const std::string& what) {
  switch (dtype) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kFloat64: return ncclFloat64;
    case DType::kFloat16: return ncclFloat16;
    case DType::kBFloat16: return ncclBfloat16;
    case DType::kInt8: return ncclInt8;
    case DType::kUInt8: return ncclUint8;
    case DType::kInt32: return ncclInt32;
    case DType::kInt64: return ncclInt64;
    case DType::kUInt32: return ncclUint32;
    case DType::kUInt64: return ncclUint64;
    default: break;
  }
  if (reducing) {
    throw Error(ErrorKind::kUnsupported, what + ": NCCL cannot reduce " + std::string(dtype_name(dtype)) +
                                             " (f32, f64, f16, bf16, int8, uint8, int32, int64, uint32, uint64)");
  }
  return ncclUint8;  // moved as bytes: count is then nbytes
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kAvg: return ncclAvg;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kMin: return ncclMin;
  }
  return ncclSum;
}

// Elements of `tensor` in units of `type` (bytes when moved as ncclUint8).
size_t nccl_count(const Tensor& tensor, ncclDataType_t type) {
  return type == ncclUint8 && tensor.dtype() != DType::kUInt8 ? tensor.nbytes() : static_cast<size_t>(tensor.num_elements());
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<NcclShared> shared, std::vector<int> world_ranks, int rank)
      : shared_(std::move(shared)), world_ranks_(std::move(world_ranks)), rank_(rank) {}

  ~NcclCommunicator() override {
    // Destroyed with the world, at the end of a run: nothing may still be
    // enqueued that matters. Aborted communicators are already released.
    for (auto& [key, slot] : slots_) {
      std::lock_guard<std::mutex> lock(slot->mutex);
      if (slot->comm != nullptr && !slot->dead) nccl().comm_destroy(slot->comm);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(world_ranks_.size()); }
  std::string description() const override {
    return "NCCL group of " + std::to_string(size()) + " (world ranks " + join_ranks(world_ranks_) + ") on " +
           shared_->options.device.to_string();
  }

  void all_reduce(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    check_output(input, output, input.sizes(), "all_reduce", call);
    const ncclDataType_t type = nccl_type(input.dtype(), true, "all_reduce with tag '" + call.tag + "'");
    run("all_reduce", call, input, output, [&](const void* in, void* out, ncclComm_t comm, cudaStream_t stream) {
      return nccl().all_reduce(in, out, nccl_count(input, type), type, nccl_op(op), comm, stream);
    });
  }

  void broadcast(const Tensor& input, Tensor& output, int root, const CommCall& call) override {
    check_rank(root, "broadcast root");
    check_output(input, output, input.sizes(), "broadcast", call);
    const ncclDataType_t type = nccl_type(input.dtype(), false, "broadcast");
    run("broadcast", call, input, output, [&](const void* in, void* out, ncclComm_t comm, cudaStream_t stream) {
      return nccl().broadcast(in, out, nccl_count(input, type), type, root, comm, stream);
    });
  }

  void all_gather(const Tensor& input, Tensor& output, const CommCall& call) override {
    check_output(input, output, all_gather_sizes(input.sizes(), size()), "all_gather", call);
    const ncclDataType_t type = nccl_type(input.dtype(), false, "all_gather");
    run("all_gather", call, input, output, [&](const void* in, void* out, ncclComm_t comm, cudaStream_t stream) {
      return nccl().all_gather(in, out, nccl_count(input, type), type, comm, stream);
    });
  }

  void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    check_output(input, output, reduce_scatter_sizes(input.sizes(), size()), "reduce_scatter", call);
    const ncclDataType_t type = nccl_type(input.dtype(), true, "reduce_scatter with tag '" + call.tag + "'");
    run("reduce_scatter", call, input, output, [&](const void* in, void* out, ncclComm_t comm, cudaStream_t stream) {
      return nccl().reduce_scatter(in, out, nccl_count(output, type), type, nccl_op(op), comm, stream);
    });
  }

  void send(const Tensor& tensor, int peer, const CommCall& call) override {
    check_rank(peer, "send peer");
    const ncclDataType_t type = nccl_type(tensor.dtype(), false, "send");
    Tensor unused;
    run("send", call, tensor, unused, [&](const void* in, void*, ncclComm_t comm, cudaStream_t stream) {
      return nccl().send(in, nccl_count(tensor, type), type, peer, comm, stream);
    });
  }

  void recv(Tensor& tensor, int peer, const CommCall& call) override {
    check_rank(peer, "recv peer");
    const ncclDataType_t type = nccl_type(tensor.dtype(), false, "recv");
    Tensor none;
    run("recv", call, none, tensor, [&](const void*, void* out, ncclComm_t comm, cudaStream_t stream) {
      return nccl().recv(out, nccl_count(tensor, type), type, peer, comm, stream);
    });
  }

  void barrier(const CommCall& call) override {
    // An all-reduce of one element: it completes on a rank once every rank has called it.
    Tensor flag(DType::kFloat32, {1});
    Tensor reduced(DType::kFloat32, {1});
    CommCall host = call;
    if (host.stream != nullptr) {
      // A barrier is host synchronization: run it as a host call, after what the stream holds.
      host.stream->record()->synchronize(timeout_of(call), "the work before barrier '" + call.tag + "'");
      host.stream = nullptr;
    }
    all_reduce(flag, reduced, ReduceOp::kSum, host);
  }

  std::shared_ptr<Communicator> subgroup(const std::vector<int>& ranks) override {
    const int position = subgroup_position(ranks);
    std::lock_guard<std::mutex> lock(subgroups_mutex_);
    std::shared_ptr<NcclCommunicator>& group = subgroups_[ranks];
    if (!group) {
      std::vector<int> members;
      for (int r : ranks) members.push_back(world_ranks_[r]);
      group = std::make_shared<NcclCommunicator>(shared_, members, position);
      register_group(group);
    }
    return group;
  }

  void abort(const std::string& reason) override { abort_world(*shared_, reason); }
  std::string abort_reason() const override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->abort_reason;
  }

  // Every communicator of the world, so that an abort through any reaches all.
  void register_group(const std::shared_ptr<NcclCommunicator>& group) {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->groups.push_back(group);
  }

  // Aborts this group's NCCL communicators (abort_world calls it).
  void abort_slots() {
    std::vector<NcclSlot*> slots;
    {
      std::lock_guard<std::mutex> lock(slots_mutex_);
      for (auto& [key, slot] : slots_) slots.push_back(slot.get());
    }
    for (NcclSlot* slot : slots) {
      // A slot busy in a call sees the abort in its polling loop and
      // aborts itself; an idle one is aborted here. Try for a while
      // rather than block: abort() must return promptly.
      const auto give_up = Clock::now() + std::chrono::milliseconds(200);
      while (true) {
        std::unique_lock<std::mutex> lock(slot->mutex, std::try_to_lock);
        if (lock.owns_lock()) {
          if (slot->comm != nullptr && !slot->dead) nccl().comm_abort(slot->comm);
          slot->dead = true;
          break;
        }
        if (Clock::now() >= give_up) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }

 private:
  using Enqueue = std::function<ncclResult_t(const void* in, void* out, ncclComm_t comm, cudaStream_t stream)>;

  std::chrono::milliseconds timeout_of(const CommCall& call) const {
    return call.timeout.count() > 0 ? call.timeout : shared_->options.timeout;
  }

  // "all_reduce with tag 'grad/w' (rank 1 of NCCL group of 2 ...)".
  std::string what(const char* collective, const CommCall& call) const {
    return std::string(collective) + " with tag '" + call.tag + "' (rank " + std::to_string(rank_) + " of " +
           description() + ")";
  }

  void throw_if_aborted(const std::string& doing) const {
    if (!shared_->aborted) return;
    std::lock_guard<std::mutex> lock(shared_->mutex);
    throw Error(ErrorKind::kCommunication, doing + " refused: the group was aborted: " + shared_->abort_reason)
        .with_rank(shared_->world_rank);
  }

  void make_current(const std::string& doing) const {
    cudaError_t status = cudaSetDevice(shared_->options.device.index);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error(ErrorKind::kDevice, doing + ": cudaSetDevice(" + std::to_string(shared_->options.device.index) +
                                          ") failed: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status))
          .with_rank(shared_->world_rank);
    }
  }

  // Waits until `comm` has taken the last call (a non-blocking communicator
  // may still be working on it: ncclInProgress), or fails at `deadline`.
  // Called with the slot's mutex held.
  void wait_accepted(NcclSlot& slot, Clock::time_point deadline, const std::string& doing) {
    auto pause = std::chrono::microseconds(5);
    while (true) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t status = nccl().comm_get_async_error(slot.comm, &state);
      if (status != ncclSuccess) state = status;
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail_slot(slot, doing + " failed: " + nccl_message(state));
      if (shared_->aborted) fail_slot(slot, doing + " ended: the group was aborted: " + abort_reason());
      if (Clock::now() >= deadline) {
        fail_slot(slot, doing + " did not complete in time (" + std::to_string(shared_->options.timeout.count()) +
                            " ms or the call's timeout): a rank did not arrive or is gone");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
    }
  }

  // Aborts the slot's communicator (it cannot be used after an error) and throws.
  [[noreturn]] void fail_slot(NcclSlot& slot, const std::string& message) {
    if (slot.comm != nullptr && !slot.dead) nccl().comm_abort(slot.comm);
    slot.dead = true;
    throw Error(ErrorKind::kCommunication, message).with_rank(shared_->world_rank);
  }

  // The slot of stream `key`, its communicator made on first use (with the
  // slot's mutex held by the caller).
  void ensure_comm(NcclSlot& slot, const std::string& key, Clock::time_point deadline) {
    if (slot.dead) {
      throw Error(ErrorKind::kCommunication, "NCCL communicator for stream " + key + " of " + description() +
                                                 " failed earlier and cannot be used again")
          .with_rank(shared_->world_rank);
    }
    if (slot.comm != nullptr) return;
    const std::string doing = "making the NCCL communicator for stream " + key + " of " + description() +
                              " through " + shared_->store_name;
    std::string id_bytes;
    try {
      id_bytes = exchange_nccl_unique_id(*shared_->store,
                                         shared_->options.job + "/nccl/" + join_ranks(world_ranks_) + "/" + key,
                                         rank_ == 0);
    } catch (Error& e) {
      throw Error(ErrorKind::kCommunication, doing + ": " + e.message()).with_rank(shared_->world_rank);
    }
    ncclUniqueId id;
    std::memcpy(&id, id_bytes.data(), sizeof(id));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // polled below, so a missing rank fails at the deadline
    make_current(doing);
    ncclResult_t status = nccl().comm_init_rank_config(&slot.comm, size(), id, rank_, &config);
    if (status != ncclSuccess && status != ncclInProgress) {
      slot.dead = true;
      throw Error(ErrorKind::kCommunication, doing + " failed: " + nccl_message(status)).with_rank(shared_->world_rank);
    }
    wait_accepted(slot, deadline, doing);
  }

  NcclSlot& slot_of(const std::string& key) {
    std::lock_guard<std::mutex> lock(slots_mutex_);
    std::unique_ptr<NcclSlot>& slot = slots_[key];
    if (!slot) slot = std::make_unique<NcclSlot>();
    return *slot;
  }

  cudaStream_t host_stream(const std::string& doing) {
    std::lock_guard<std::mutex> lock(slots_mutex_);
    if (host_stream_ == nullptr) {
      make_current(doing);
      cudaError_t status = cudaStreamCreateWithFlags(&host_stream_, cudaStreamNonBlocking);
      if (status != cudaSuccess) {
        cudaGetLastError();
        throw Error(ErrorKind::kDevice, doing + ": cudaStreamCreateWithFlags failed: " + cudaGetErrorName(status))
            .with_rank(shared_->world_rank);
      }
    }
    return host_stream_;
  }

  // Runs one collective: on the call's stream (device tensors, enqueued), or
  // as host code (staged, waited for).
  void run(const char* collective, const CommCall& call, const Tensor& input, Tensor& output, const Enqueue& enqueue) {
    const std::string doing = what(collective, call);
    throw_if_aborted(doing);
    const auto deadline = Clock::now() + timeout_of(call);
    if (call.stream != nullptr) {
      const Device& mine = shared_->options.device;
      if (call.stream->device() != mine || call.stream->native_handle() == nullptr) {
        throw Error(ErrorKind::kInvalidArgument, doing + ": the call's stream is " + call.stream->device().to_string() +
                                                     " stream " + call.stream->id().to_string() +
                                                     "; an NCCL call runs on a CUDA stream of " + mine.to_string())
            .with_rank(shared_->world_rank);
      }
      for (const Tensor* tensor : {&input, static_cast<const Tensor*>(&output)}) {
        if (tensor->defined() && tensor->nbytes() > 0 && tensor->device() != mine) {
          throw Error(ErrorKind::kInvalidArgument, doing + ": a tensor " + tensor->type_string() + " on " +
                                                       tensor->device().to_string() + "; NCCL reads and writes " +
                                                       mine.to_string() + " memory only")
              .with_rank(shared_->world_rank);
        }
      }
      const std::string key = call.stream->id().to_string();
      NcclSlot& slot = slot_of(key);
      std::lock_guard<std::mutex> lock(slot.mutex);
      ensure_comm(slot, key, deadline);
      make_current(doing);
      ncclResult_t status = enqueue(input.defined() ? input.raw_data() : nullptr,
                                    output.defined() ? output.raw_data() : nullptr, slot.comm,
                                    static_cast<cudaStream_t>(call.stream->native_handle()));
      if (status != ncclSuccess && status != ncclInProgress) fail_slot(slot, doing + " failed: " + nccl_message(status));
      wait_accepted(slot, deadline, doing);
      // Done when the stream gets there; if it never does (a rank gone),
      // the watchdog aborts the world at the deadline.
      shared_->watchdog->watch(static_cast<cudaStream_t>(call.stream->native_handle()), deadline, doing);
      return;
    }

    // Host code: stage what is not on the GPU, run on our own stream, wait.
    cudaStream_t stream = host_stream(doing);
    auto staged = [&](const Tensor& tensor) {
      if (!tensor.defined() || tensor.device() == shared_->options.device) return tensor;
      return copy_to_device(tensor, *shared_->staging);
    };
    Tensor device_input = staged(input);
    Tensor device_output = staged(output);
    const std::string key = "host";
    NcclSlot& slot = slot_of(key);
    {
      std::lock_guard<std::mutex> lock(slot.mutex);
      ensure_comm(slot, key, deadline);
      make_current(doing);
      ncclResult_t status = enqueue(device_input.defined() ? device_input.raw_data() : nullptr,
                                    device_output.defined() ? device_output.raw_data() : nullptr, slot.comm, stream);
      if (status != ncclSuccess && status != ncclInProgress) fail_slot(slot, doing + " failed: " + nccl_message(status));
      wait_accepted(slot, deadline, doing);
      // Then until the stream has done it: an NCCL kernel waiting on a dead
      // peer never ends by itself, so the deadline aborts the communicator.
      auto pause = std::chrono::microseconds(5);
      while (true) {
        cudaError_t done = cudaStreamQuery(stream);
        if (done == cudaSuccess) break;
        if (done != cudaErrorNotReady) {
          cudaGetLastError();
          fail_slot(slot, doing + " failed on the device: " + cudaGetErrorName(done) + ": " + cudaGetErrorString(done));
        }
        cuda_clear_not_ready();
        ncclResult_t state = ncclSuccess;
        nccl().comm_get_async_error(slot.comm, &state);
        if (state != ncclSuccess && state != ncclInProgress) fail_slot(slot, doing + " failed: " + nccl_message(state));
        if (shared_->aborted) fail_slot(slot, doing + " ended: the group was aborted: " + abort_reason());
        if (Clock::now() >= deadline) {
          fail_slot(slot, doing + " did not finish within " + std::to_string(timeout_of(call).count()) +
                              " ms: a rank did not arrive or is gone");
        }
        std::this_thread::sleep_for(pause);
        pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
      }
    }
    if (output.defined() && device_output.raw_data() != output.raw_data()) copy_tensor(device_output, output);
  }

  std::shared_ptr<NcclShared> shared_;
  std::vector<int> world_ranks_;  // this group's members, by group rank
  int rank_;

  std::mutex slots_mutex_;
  std::map<std::string, std::unique_ptr<NcclSlot>> slots_;  // by stream id ("host" for host calls)
  cudaStream_t host_stream_ = nullptr;                       // never destroyed: CUDA releases it at exit

  std::mutex subgroups_mutex_;
  std::map<std::vector<int>, std::shared_ptr<NcclCommunicator>> subgroups_;
};

void abort_world(NcclShared& shared, const std::string& reason) {
  std::vector<std::shared_ptr<NcclCommunicator>> members;
  {
    std::lock_guard<std::mutex> lock(shared.mutex);
    if (shared.abort_reason.empty()) shared.abort_reason = reason;
    shared.aborted = true;
    for (const auto& weak : shared.groups) {
      if (auto member = weak.lock()) members.push_back(member);
    }
  }
  for (const auto& member : members) member->abort_slots();
}

}  // namespace

std::string exchange_nccl_unique_id(TcpStore& store, const std::string& store_key, bool first) {
  if (first) {
    ncclUniqueId id;
    nccl_check(nccl().get_unique_id(&id), "ncclGetUniqueId");
    std::string bytes(reinterpret_cast<const char*>(&id), sizeof(id));
    store.set(store_key, bytes);
    return bytes;
  }
  std::string bytes = store.get(store_key);
  if (bytes.size() != sizeof(ncclUniqueId)) {
    throw Error(ErrorKind::kCommunication, "the NCCL id at '" + store_key + "' in the store at " + store.address() +
                                               " has " + std::to_string(bytes.size()) + " bytes, expected " +
                                               std::to_string(sizeof(ncclUniqueId)));
  }
  return bytes;
}

std::shared_ptr<Communicator> make_nccl_communicator(int rank, int size, const NcclGroupOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorKind::kInvalidArgument, "rank " + std::to_string(rank) + " is not a rank of a group of " +
                                                 std::to_string(size));
  }
  const Device& device = options.device;
  if (device.type != DeviceType::kCuda) {
    throw Error(ErrorKind::kInvalidArgument, "an NCCL rank runs on a GPU, not on " + device.to_string()).with_rank(rank);
  }
  CudaDeviceCount found = query_cuda_device_count();
  if (found.count == 0) {
    throw Error(ErrorKind::kDevice, device.to_string() +
                                        " (this rank's GPU in an NCCL world): no CUDA device (cudaGetDeviceCount returned " +
                                        (found.error.empty() ? std::string("0 devices") : found.error) + ")")
        .with_rank(rank);
  }
  if (device.index < 0 || device.index >= found.count) {
    throw Error(ErrorKind::kDevice, device.to_string() +
                                        " (this rank's GPU in an NCCL world): no such CUDA device (" + std::to_string(found.count) + " found)")
        .with_rank(rank);
  }
  try {
    nccl();  // loads the library now, so a missing one fails here, naming it
  } catch (Error& e) {
    throw e.with_rank(rank);
  }
  auto shared = std::make_shared<NcclShared>();
  shared->options = options;
  shared->world_rank = rank;
  shared->store_name = "the TCP store at " + options.master_addr + ":" + std::to_string(options.master_port);
  shared->staging = std::make_unique<CudaAllocator>(device.index);
  shared->watchdog = std::make_unique<NcclWatchdog>(
      device.index, [raw = shared.get()](const std::string& reason) { abort_world(*raw, reason); });
  try {
    if (rank == 0) shared->server = std::make_unique<TcpStoreServer>(options.master_port);
    shared->store = std::make_unique<TcpStore>(options.master_addr, options.master_port, options.timeout);
  } catch (Error& e) {
    throw e.with_rank(rank);
  }
  std::vector<int> ranks(size);
  for (int r = 0; r < size; ++r) ranks[r] = r;
  auto world = std::make_shared<NcclCommunicator>(std::move(shared), std::move(ranks), rank);
  world->register_group(world);
  return world;
}

}  // namespace weir
