#include "runtime/in_process_communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"
#include "ops/comm/rank_order_reduction.h"

namespace weir {

namespace {

// One collective call, shared by the ranks that take part in it.
struct Round {
  std::string kind;  // "all_reduce", ...
  std::string tag;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> sizes;
  int64_t argument = 0;  // root, reduction or peer: must agree across ranks
  std::vector<Tensor> deposits;  // by participant index
  std::vector<bool> present;
  int arrived = 0;
  int done = 0;
  Tensor result;  // shared scratch for reductions
  std::once_flag result_once;
};

std::string describe(const std::string& kind, DType dtype, const std::vector<int64_t>& sizes, int64_t argument) {
  std::string text = kind + " " + std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? "," : "") + std::to_string(sizes[i]);
  return text + "] (argument " + std::to_string(argument) + ")";
}

// State shared by all ranks of one group. Subgroups hang off the root group
// so that abort() reaches every rank of every group.
class GroupState : public std::enable_shared_from_this<GroupState> {
 public:
  GroupState(int size, InProcessGroupOptions options, const std::shared_ptr<GroupState>& root)
      : size_(size), options_(options), root_(root) {}

  int size() const { return size_; }

  // Deposits `tensor` as participant `index` of `participants` in the round
  // `key`, and returns once all participants have arrived.
  std::shared_ptr<Round> arrive(const std::string& key, int index, int participants, const std::string& kind,
                                const std::string& tag, const Tensor& tensor, int64_t argument, int rank,
                                std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    check_aborted(kind, tag);
    std::shared_ptr<Round>& slot = open_[key];
    if (!slot) {
      slot = std::make_shared<Round>();
      slot->kind = kind;
      slot->tag = tag;
      slot->dtype = tensor.dtype();
      slot->sizes = tensor.sizes();
      slot->argument = argument;
      slot->deposits.resize(participants);
      slot->present.assign(participants, false);
    } else if (slot->kind != kind || slot->dtype != tensor.dtype() || slot->sizes != tensor.sizes() ||
               slot->argument != argument) {
      std::string reason = "rank " + std::to_string(rank) + " called " +
                           describe(kind, tensor.dtype(), tensor.sizes(), argument) + " with tag '" + tag +
                           "' where another rank called " +
                           describe(slot->kind, slot->dtype, slot->sizes, slot->argument);
      lock.unlock();
      abort(reason);
      throw Error(ErrorKind::kCommunication, reason).with_rank(rank);
    }
    std::shared_ptr<Round> round = slot;
    round->deposits[index] = tensor;
    round->present[index] = true;
    if (++round->arrived == participants) {
      open_.erase(key);
      cv_.notify_all();
    } else {
      wait(lock, [&] { return round->arrived == participants; }, *round, kind, tag, timeout);
    }
    return round;
  }

  // Returns once all participants of `round` have called leave().
  void leave(Round& round, int participants, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (++round.done == participants) {
      cv_.notify_all();
      return;
    }
    wait(lock, [&] { return round.done == participants; }, round, round.kind, round.tag, timeout);
  }

  // A call's timeout, or the group's when the call leaves it at zero.
  std::chrono::milliseconds timeout_of(const CommCall& call) const {
    return call.timeout.count() > 0 ? call.timeout : options_.timeout;
  }

  std::shared_ptr<GroupState> subgroup(const std::vector<int>& ranks) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<GroupState>& group = subgroups_[ranks];
    if (!group) group = std::make_shared<GroupState>(static_cast<int>(ranks.size()), options_, root());
    return group;
  }

  void abort(const std::string& reason) {
    std::shared_ptr<GroupState> top = root();
    top->abort_tree(reason);
  }

  std::string abort_reason() {
    std::lock_guard<std::mutex> lock(mutex_);
    return aborted_ ? abort_reason_ : std::string();
  }

 private:
  // The root group, or this group when it is the root or the root is gone.
  std::shared_ptr<GroupState> root() {
    std::shared_ptr<GroupState> top = root_.lock();
    return top ? top : shared_from_this();
  }

  void abort_tree(const std::string& reason) {
    std::vector<std::shared_ptr<GroupState>> children;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!aborted_) {
        aborted_ = true;
        abort_reason_ = reason;
      }
      for (auto& [ranks, group] : subgroups_) children.push_back(group);
      cv_.notify_all();
    }
    // Subgroups created by subgroup() of this (root) group share its root.
    for (auto& child : children) child->abort_tree(reason);
  }

  void check_aborted(const std::string& kind, const std::string& tag) const {
    if (aborted_) {
      throw Error(ErrorKind::kCommunication,
                  kind + " with tag '" + tag + "' aborted: " + abort_reason_);
    }
  }

  template <typename Predicate>
  void wait(std::unique_lock<std::mutex>& lock, Predicate ready, const Round& round, const std::string& kind,
            const std::string& tag, std::chrono::milliseconds timeout) {
    bool in_time = cv_.wait_for(lock, timeout, [&] { return ready() || aborted_; });
    if (ready()) return;
    check_aborted(kind, tag);
    if (!in_time) {
      std::string missing;
      for (size_t i = 0; i < round.present.size(); ++i) {
        if (!round.present[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
      }
      std::string what = missing.empty() ? "for every participant to finish" : "for participants " + missing;
      throw Error(ErrorKind::kCommunication,
                  kind + " with tag '" + tag + "' timed out after " + std::to_string(timeout.count()) +
                      " ms waiting " + what);
    }
  }

  int size_;
  InProcessGroupOptions options_;
  // Weak: the root owns its subgroups, so a strong pointer back would be a cycle.
  std::weak_ptr<GroupState> root_;  // empty for the root group itself
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Round>> open_;
  std::map<std::vector<int>, std::shared_ptr<GroupState>> subgroups_;
  bool aborted_ = false;
  std::string abort_reason_;
};

// Reduces elements [offset, offset + count) of the deposits into the same
// elements of `out`, in rank order (as every host communicator does).
void reduce_slice(ReduceOp op, const std::vector<Tensor>& deposits, Tensor& out, size_t offset, size_t count) {
  const size_t element = dtype_size(out.dtype());
  std::vector<const void*> inputs;
  for (const Tensor& d : deposits) inputs.push_back(static_cast<const char*>(d.raw_data()) + offset * element);
  reduce_in_rank_order(op, out.dtype(), inputs, static_cast<char*>(out.raw_data()) + offset * element, count);
}

void check_host_dense(const Tensor& tensor, const char* what) {
  if (!tensor.defined()) throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": tensor is undefined");
  if (tensor.device().type != DeviceType::kCpu) {
    throw Error(ErrorKind::kUnsupported, std::string(what) + ": the in-process communicator needs host tensors");
  }
}

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<GroupState> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string description() const override { return "in-process group of " + std::to_string(size()); }

  void all_reduce(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    check_host_dense(input, "all_reduce");
    check_host_output(input, output, input.sizes(), "all_reduce", call);
    const auto timeout = group_->timeout_of(call);
    auto round = group_->arrive(key(call.tag), rank_, size(), "all_reduce", call.tag, input, static_cast<int64_t>(op),
                                rank_, timeout);
    // Rank r reduces elements [r*n/size, (r+1)*n/size) into the shared result.
    size_t n = static_cast<size_t>(input.num_elements());
    size_t begin = n * rank_ / size(), end = n * (rank_ + 1) / size();
    reduce_slice(op, round->deposits, shared_result(*round, input), begin, end - begin);
    group_->leave(*round, size(), timeout);
    // Every rank has finished reading the deposits: `output` may be `input`.
    std::memcpy(output.raw_data(), round->result.raw_data(), output.nbytes());
  }

  void broadcast(const Tensor& input, Tensor& output, int root, const CommCall& call) override {
    check_host_dense(input, "broadcast");
    check_host_output(input, output, input.sizes(), "broadcast", call);
    check_rank(root, "broadcast root");
    const auto timeout = group_->timeout_of(call);
    auto round = group_->arrive(key(call.tag), rank_, size(), "broadcast", call.tag, input, root, rank_, timeout);
    if (output.raw_data() != round->deposits[root].raw_data()) {
      std::memcpy(output.raw_data(), round->deposits[root].raw_data(), output.nbytes());
    }
    group_->leave(*round, size(), timeout);
  }

  void all_gather(const Tensor& input, Tensor& output, const CommCall& call) override {
    check_host_dense(input, "all_gather");
    check_host_output(input, output, all_gather_sizes(input.sizes(), size()), "all_gather", call);
    const auto timeout = group_->timeout_of(call);
    auto round = group_->arrive(key(call.tag), rank_, size(), "all_gather", call.tag, input, 0, rank_, timeout);
    auto* dst = static_cast<char*>(output.raw_data());
    for (int r = 0; r < size(); ++r) {
      const void* src = round->deposits[r].raw_data();
      if (dst + r * input.nbytes() != src) std::memcpy(dst + r * input.nbytes(), src, input.nbytes());
    }
    group_->leave(*round, size(), timeout);
  }

  void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    check_host_dense(input, "reduce_scatter");
    std::vector<int64_t> sizes;
    try {
      sizes = reduce_scatter_sizes(input.sizes(), size());
    } catch (const Error&) {
      throw Error(ErrorKind::kShape, "reduce_scatter with tag '" + call.tag + "': axis 0 of " + input.type_string() +
                                         " does not divide by the group size " + std::to_string(size()))
          .with_rank(rank_);
    }
    check_host_output(input, output, sizes, "reduce_scatter", call);
    const auto timeout = group_->timeout_of(call);
    auto round = group_->arrive(key(call.tag), rank_, size(), "reduce_scatter", call.tag, input,
                                static_cast<int64_t>(op), rank_, timeout);
    size_t part = static_cast<size_t>(input.num_elements() / size());
    reduce_slice(op, round->deposits, shared_result(*round, input), part * rank_, part);
    group_->leave(*round, size(), timeout);
    std::memcpy(output.raw_data(), static_cast<char*>(round->result.raw_data()) + part * rank_ * dtype_size(input.dtype()),
                output.nbytes());
  }

  void send(const Tensor& tensor, int peer, const CommCall& call) override {
    check_host_dense(tensor, "send");
    check_rank(peer, "send peer");
    const auto timeout = group_->timeout_of(call);
    auto round = group_->arrive(p2p_key(rank_, peer, call.tag), 0, 2, "send/recv", call.tag, tensor, 0, rank_, timeout);
    group_->leave(*round, 2, timeout);  // the receiver has copied the data when this returns
  }

  void recv(Tensor& tensor, int peer, const CommCall& call) override {
    check_host_dense(tensor, "recv");
    check_rank(peer, "recv peer");
    const auto timeout = group_->timeout_of(call);
    auto round = group_->arrive(p2p_key(peer, rank_, call.tag), 1, 2, "send/recv", call.tag, tensor, 0, rank_, timeout);
    std::memcpy(tensor.raw_data(), round->deposits[0].raw_data(), tensor.nbytes());
    group_->leave(*round, 2, timeout);
  }

  void barrier(const CommCall& call) override {
    Tensor empty(DType::kUInt8, {0});
    const auto timeout = group_->timeout_of(call);
    auto round = group_->arrive(key(call.tag), rank_, size(), "barrier", call.tag, empty, 0, rank_, timeout);
    group_->leave(*round, size(), timeout);
  }

  std::shared_ptr<Communicator> subgroup(const std::vector<int>& ranks) override {
    const int position = subgroup_position(ranks);
    std::lock_guard<std::mutex> lock(subgroups_mutex_);
    std::shared_ptr<Communicator>& handle = subgroups_[ranks];
    if (!handle) {
      handle = std::make_shared<InProcessCommunicator>(group_->subgroup(ranks), position);
    }
    return handle;
  }

  void abort(const std::string& reason) override { group_->abort(reason); }
  std::string abort_reason() const override { return group_->abort_reason(); }

 private:
  // The n-th call with `tag` on this rank meets the n-th call on the others.
  // Calls come from each communication stream's thread (comm_streams), each
  // with its own tags: the counts are shared, the order per tag is not.
  std::string key(const std::string& tag) {
    std::lock_guard<std::mutex> lock(counts_mutex_);
    return tag + "#" + std::to_string(counts_[tag]++);
  }
  // Point to point: the n-th send from src to dst with `tag` meets the n-th
  // receive at dst from src with `tag`.
  std::string p2p_key(int src, int dst, const std::string& tag) {
    std::string channel = "p2p " + std::to_string(src) + "->" + std::to_string(dst) + " " + tag;
    std::lock_guard<std::mutex> lock(counts_mutex_);
    return channel + "#" + std::to_string(counts_[channel]++);
  }

  static Tensor& shared_result(Round& round, const Tensor& like) {
    // Allocated once, by whichever rank gets here first.
    std::call_once(round.result_once,
                   [&] { round.result = Tensor::uninitialized(like.dtype(), {like.num_elements()}); });
    return round.result;
  }

  // The caller's output: a host tensor of the input's dtype and `sizes`.
  void check_host_output(const Tensor& input, const Tensor& output, const std::vector<int64_t>& sizes, const char* what,
                         const CommCall& call) const {
    check_host_dense(output, what);
    check_output(input, output, sizes, what, call);
  }

  std::shared_ptr<GroupState> group_;
  int rank_;
  std::mutex counts_mutex_;
  std::map<std::string, int64_t> counts_;
  std::mutex subgroups_mutex_;
  std::map<std::vector<int>, std::shared_ptr<Communicator>> subgroups_;
};

}  // namespace

std::vector<std::shared_ptr<Communicator>> make_in_process_group(int size, const InProcessGroupOptions& options) {
  if (size < 1) throw Error(ErrorKind::kInvalidArgument, "an in-process group needs at least one rank, got " + std::to_string(size));
  auto group = std::make_shared<GroupState>(size, options, nullptr);
  std::vector<std::shared_ptr<Communicator>> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(std::make_shared<InProcessCommunicator>(group, r));
  return ranks;
}

}  // namespace weir
