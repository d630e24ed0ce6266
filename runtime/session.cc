#include "runtime/session.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>

#include "core/error.h"
#include "core/type_inference.h"
#include "runtime/collective_check.h"
#include "runtime/cpu_backend.h"
#include "runtime/device_support.h"
#include "runtime/in_process_communicator.h"

#if WEIR_HAVE_CUDA
#include "runtime/cuda_backend.h"
#endif

namespace weir {

struct Session::RunState {
  const RunOptions* options = nullptr;
  uint64_t rng_counter = 0;                            // what this run's random kernels draw from
  std::vector<Tensor> values;                          // by plan value index
  std::unique_ptr<std::atomic<int>[]> pending;         // by step: predecessors not yet finished
  std::unique_ptr<std::atomic<int>[]> uses_left;       // by value index
  std::vector<char> ready;                             // by step, for in-order streams (mutex_)
  std::vector<size_t> cursor;                          // by stream (mutex_)
  std::shared_ptr<const MemoryPlan> memory;            // the memory plan for this run's feeds
  std::vector<std::shared_ptr<Storage>> arenas;        // by arena of `memory`
  // By step, for steps on streams that run ahead: the event of their device
  // work, which steps on other streams wait on. Empty in plans without such streams.
  std::vector<std::shared_ptr<Event>> events;
  std::atomic<bool> ran_ahead{false};                  // a step left device work running
  // The device checks of steps that ran ahead (KernelContext::check_when_done), by step.
  std::mutex checks_mutex;
  std::vector<std::pair<int, KernelContext::DeviceCheck>> device_checks;
  int completed = 0;                                   // mutex_
  int in_flight = 0;                                   // queued or running steps (mutex_)
  int attached_streams = 0;                            // mutex_
  std::atomic<bool> failed{false};                     // set under mutex_, read anywhere
  std::exception_ptr error;                            // mutex_
};

namespace {

bool in_arena(const Session::RunState& run, const void* data) {
  for (const auto& arena : run.arenas) {
    if (!arena) continue;
    auto* base = static_cast<const char*>(arena->data());
    auto* p = static_cast<const char*>(data);
    if (p >= base && p < base + arena->bytes()) return true;
  }
  return false;
}

// The kernel's error with where it happened added: node, device and rank.
// `rank` < 0: the process runs one rank only, so there is none to name.
Error located(std::exception_ptr error, const Node& node, const Device& device, int rank) {
  std::string where = " (" + node.op_type() + " on " + device.to_string() + ")";
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    Error out(e.kind(), e.message() + where);
    if (!e.file().empty()) out.with_file(e.file());
    if (e.rank() >= 0) out.with_rank(e.rank());
    else if (rank >= 0) out.with_rank(rank);
    out.with_node(e.node().empty() ? node.name() : e.node());
    return out;
  } catch (const std::bad_alloc&) {
    return std::move(Error(ErrorKind::kOutOfMemory, "out of memory" + where).with_node(node.name()));
  } catch (const std::exception& e) {
    return std::move(Error(ErrorKind::kInternal, std::string(e.what()) + where).with_node(node.name()));
  } catch (...) {
    return std::move(Error(ErrorKind::kInternal, "unknown exception" + where).with_node(node.name()));
  }
}

void check_feed(const Value& input, const Tensor& tensor) {
  if (!tensor.defined()) throw Error(ErrorKind::kInvalidArgument, "feed '" + input.name() + "' is an undefined tensor");
  if (!types_compatible(input.type(), tensor.type())) {
    throw Error(ErrorKind::kShape, "feed '" + input.name() + "' is " + tensor.type_string() + ", but the graph input is " +
                                       input.type().to_string());
  }
}

}  // namespace

Session::Session(std::shared_ptr<const Plan> plan, SessionOptions options) : plan_(std::move(plan)), options_(options) {
  if (!plan_) throw Error(ErrorKind::kInvalidArgument, "a Session needs a plan");
  if (options_.inter_op_threads < 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "inter_op_threads must be at least 1, got " + std::to_string(options_.inter_op_threads));
  }
  devices_ = plan_->devices();
  if (options_.world) {
    const Device mine = options_.world->device();
    // (Plus the host, when the GPU falls back on it: runtime/host_fallback.h.)
    if (plan_->rank_devices() != 1 || devices_[0].type != mine.type) {
      std::string held;
      for (const Device& device : devices_) held += (held.empty() ? "" : ", ") + device.to_string();
      throw Error(ErrorKind::kInvalidArgument, "a plan run as one rank of a world is that rank's program, on one device "
                                               "of the world's type (" + mine.to_string() + " for " +
                                               options_.world->description() + "); this plan holds " + held)
          .with_rank(options_.world->rank());
    }
    devices_[0] = mine;
  }
  for (const Device& device : devices_) {
    // A GPU without a backend of the caller's runs on Weir's own CUDA
    // backend: refused here, with the reason, when this build or this
    // machine has none.
    const bool own_cuda_backend = device.type == DeviceType::kCuda && !options_.make_backend;
    if (own_cuda_backend) check_device_usable(device);
    Allocator* memory = device.type != DeviceType::kCpu && options_.device_memory ? &options_.device_memory(device) : nullptr;
#if WEIR_HAVE_CUDA
    if (own_cuda_backend && memory == nullptr) memory = &cuda_device_memory(device.index);
#endif
    allocators_.push_back(&device_caching_allocator(device, memory));
    if (options_.make_backend) {
      backends_.push_back(options_.make_backend(device, *allocators_.back()));
      if (!backends_.back() || backends_.back()->device() != device) {
        throw Error(ErrorKind::kInvalidArgument, "SessionOptions::make_backend gave no backend for " + device.to_string());
      }
#if WEIR_HAVE_CUDA
    } else if (own_cuda_backend) {
      backends_.push_back(make_cuda_backend(device, *allocators_.back(), options_.step_timeout));
#endif
    } else {
      backends_.push_back(make_cpu_backend(device, *allocators_.back(), options_.step_timeout));
    }
  }
  if (options_.world) {
    communicators_ = {options_.world->communicator()};
  } else if (plan_->has_collectives()) {
    make_communicators();
  }

  const Graph& graph = plan_->graph();
  for (const Value* input : graph.inputs()) {
    if (input->shape().has_rank() && !input->shape().is_static()) symbolic_inputs_ = true;
  }
  const auto& values = plan_->values();
  state_.resize(values.size());
  release_after_uses_.assign(values.size(), -1);
  std::vector<bool> is_output(values.size(), false);
  for (const Value* out : graph.outputs()) is_output[plan_->value_index(out)] = true;
  constants_.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const Value* value = values[i];
    if (value->is_constant()) constants_[i] = resident(backend_reading(*value), value->data(), "constant '" + value->name() + "'");
    if (value->is_persistent()) {
      Backend& backend = backend_reading(*value);
      if (value->data().defined()) {
        state_[i] = copy_into(backend, value->data(), "the initial value of '" + value->name() + "'");
      } else if (value->type().dtype != DType::kUndefined && value->shape().has_rank() && value->shape().is_static()) {
        Tensor zeros = Tensor::uninitialized(value->dtype(), value->shape().sizes(), backend.allocator());
        if (zeros.nbytes() > 0) {
          backend.fill_zero(zeros, backend.stream({StreamKind::kCopy, 0}))
              ->synchronize(options_.step_timeout, "zeroing '" + value->name() + "' on " + backend.device().to_string());
        }
        state_[i] = std::move(zeros);
      } else {
        throw Error(ErrorKind::kInvalidGraph, "persistent value '" + value->name() +
                                                  "' has no initial tensor and no static type to zero-fill");
      }
    }
    if (value->producer() != nullptr && !is_output[i]) {
      int uses = 0;
      for (const Use& use : value->uses()) uses += use.node != nullptr ? 1 : 0;
      release_after_uses_[i] = uses;
    }
  }

  const Schedule& schedule = plan_->schedule();
  const char* sync_steps = std::getenv("WEIR_SYNC_STEPS");
  wait_for_each_step_ = options_.wait_for_each_step || (sync_steps != nullptr && std::string(sync_steps) == "1");
  backend_runs_ahead_.assign(backends_.size(), false);
  for (const StreamInfo& stream : schedule.streams) {
    const int device = plan_->device_index(stream.device);
    streams_.push_back(&backends_[device]->stream(stream.id));
    const bool ahead = streams_.back()->runs_ahead();
    stream_allocators_.push_back(ahead ? &allocators_[device]->for_stream(*streams_.back()) : nullptr);
    if (ahead) backend_runs_ahead_[device] = true;
    runs_ahead_anywhere_ = runs_ahead_anywhere_ || ahead;
  }
  // Before any thread starts: a mismatch throws out of the constructor.
  if (options_.world) {
    try {
      try {
        check_collective_ranks(*plan_, options_.world->size(), options_.world->rank());
      } catch (const Error& e) {
        // Its peers are about to wait for it in the exchange below: wake them.
        options_.world->abort("rank " + std::to_string(options_.world->rank()) + " refused its program: " + e.message());
        throw;
      }
      check_collectives_match(collective_signature(*plan_), *options_.world->communicator());
    } catch (const Error& e) {
      // A rank that never gets here (its plan failed to load) makes the
      // others time out in this exchange, naming the collective's tag.
      Error refused(e.kind(), "at session start: " + e.message());
      if (!e.node().empty()) refused.with_node(e.node());
      throw refused.with_rank(options_.world->rank());
    }
  }
  stream_runs_.resize(schedule.streams.size());
  for (size_t s = 0; s < schedule.streams.size(); ++s) stream_cv_.push_back(std::make_unique<std::condition_variable>());
  for (int w = 1; w < options_.inter_op_threads; ++w) threads_.emplace_back([this] { worker_loop(); });
  for (size_t s = 0; s < schedule.streams.size(); ++s) {
    if (schedule.streams[s].in_order) threads_.emplace_back([this, s] { stream_loop(static_cast<int>(s)); });
  }
}

Session::~Session() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  compute_cv_.notify_all();
  for (auto& cv : stream_cv_) cv->notify_all();
  for (std::thread& thread : threads_) thread.join();
  // The devices' streams go with the backends: their work must be done and
  // the caches must forget them first (a later stream may get the address).
  try {
    synchronize_devices();
  } catch (...) {
    // Nothing is thrown from a destructor; what failed was reported by the run.
  }
  for (size_t s = 0; s < streams_.size(); ++s) {
    if (stream_allocators_[s] != nullptr) {
      allocators_[plan_->device_index(plan_->schedule().streams[s].device)]->forget_stream(*streams_[s]);
    }
  }
}

void Session::synchronize_devices() const {
  for (size_t d = 0; d < backends_.size(); ++d) {
    if (backend_runs_ahead_[d]) backends_[d]->synchronize(options_.step_timeout);
  }
}

void Session::make_communicators() {
  InProcessGroupOptions group;
  group.timeout = options_.collective_timeout;
  communicators_ = make_in_process_group(static_cast<int>(plan_->rank_devices()), group);
}

std::shared_ptr<const MemoryPlan> Session::memory_for(const std::map<std::string, Tensor>& feeds) {
  // The plan's own memory plan, shared without a copy (it lives as long as the plan).
  std::shared_ptr<const MemoryPlan> fixed(plan_, &plan_->memory());
  if (!symbolic_inputs_ || plan_->replan_registry() == nullptr) return fixed;
  SymbolBindings bindings;
  for (const Value* input : plan_->graph().inputs()) {
    auto fed = feeds.find(input->name());
    if (fed == feeds.end() || !input->shape().has_rank()) continue;
    const std::vector<Dim>& dims = input->shape().dims();
    if (fed->second.sizes().size() != dims.size()) return fixed;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (!dims[i].is_symbolic()) continue;
      auto [it, inserted] = bindings.emplace(dims[i].symbol_name(), fed->second.sizes()[i]);
      if (!inserted && it->second != fed->second.sizes()[i]) return fixed;  // the run fails its shape checks anyway
    }
  }
  std::lock_guard<std::mutex> lock(memory_mutex_);
  auto found = memory_plans_.find(bindings);
  if (found != memory_plans_.end()) return found->second;
  // A few shapes are planned and kept; beyond that, runs fall back to the
  // plan's own (values with unbound dims are then allocated as produced).
  constexpr size_t kMaxPlannedShapes = 8;
  if (memory_plans_.size() >= kMaxPlannedShapes) return fixed;
  auto planned = std::make_shared<const MemoryPlan>(
      plan_memory(plan_->graph(), plan_->schedule(), *plan_->replan_registry(), &bindings, fixed->join_pieces));
  memory_plans_.emplace(bindings, planned);
  return planned;
}

void Session::abort_collectives(const std::string& reason) {
  if (options_.world) {
    options_.world->abort(reason);
  } else if (!communicators_.empty()) {
    communicators_.front()->abort(reason);
  }
}

int Session::rank_of_step(const ScheduleStep& step) const {
  if (options_.world) return options_.world->size() > 1 ? options_.world->rank() : -1;
  return plan_->rank_devices() > 1 && static_cast<size_t>(step.device_index) < plan_->rank_devices() ? step.device_index
                                                                                                       : -1;
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& feeds, const RunOptions& options) {
  if (!options_.world || options_.world->size() == 1) return run_once(feeds, options);
  // The peers would wait for this rank's collectives until they time out:
  // fail them now, with the reason (the first abort's reason is kept, so a
  // rank that fails because a peer aborted does not rename the cause).
  const int rank = options_.world->rank();
  auto abort_peers = [&](const std::exception& e) {
    abort_collectives("rank " + std::to_string(rank) + " failed: " + e.what());
  };
  try {
    return run_once(feeds, options);
  } catch (Error& e) {
    abort_peers(e);
    e.with_rank(rank);
    throw;
  } catch (const std::exception& e) {
    abort_peers(e);
    throw;
  }
}

std::vector<Tensor> Session::run_once(const std::map<std::string, Tensor>& feeds, const RunOptions& options) {
  std::unique_lock<std::mutex> serial(collective_run_mutex_, std::defer_lock);
  if (!communicators_.empty()) serial.lock();

  const Graph& graph = plan_->graph();
  const Schedule& schedule = plan_->schedule();
  const size_t num_steps = schedule.steps.size();
  RunState run;
  run.options = &options;
  // Ranks of a world run one program: their random ops draw from streams
  // apart by the rank (rank 0's is a one-rank session's).
  const uint64_t rank = options_.world ? static_cast<uint64_t>(options_.world->rank()) : 0;
  run.rng_counter = rng_counter_.fetch_add(1) ^ (rank << 40);
  run.values.resize(plan_->values().size());
  for (const auto& [name, tensor] : feeds) {
    const Value* value = graph.find_value(name);
    if (value == nullptr || value->kind() != ValueKind::kInput) {
      std::string inputs;
      for (const Value* input : graph.inputs()) inputs += (inputs.empty() ? "" : ", ") + input->name();
      throw Error(ErrorKind::kInvalidArgument, "feed '" + name + "' is not an input of graph '" + graph.name() +
                                                   "' (inputs: " + inputs + ")");
    }
  }
  for (const Value* input : graph.inputs()) {
    auto it = feeds.find(input->name());
    if (it == feeds.end()) throw Error(ErrorKind::kInvalidArgument, "graph input '" + input->name() + "' is not fed");
    check_feed(*input, it->second);
    run.values[plan_->value_index(input)] = resident(backend_reading(*input), it->second, "feed '" + input->name() + "'");
  }
  for (const Value* constant : graph.constants()) {
    const int index = plan_->value_index(constant);
    run.values[index] = constants_[index];
  }
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    for (const Value* persistent : graph.persistents()) {
      int index = plan_->value_index(persistent);
      run.values[index] = state_[index];
    }
  }
  run.pending.reset(new std::atomic<int>[num_steps]);
  for (size_t i = 0; i < num_steps; ++i) run.pending[i] = static_cast<int>(schedule.steps[i].predecessors.size());
  run.uses_left.reset(new std::atomic<int>[release_after_uses_.size()]);
  for (size_t i = 0; i < release_after_uses_.size(); ++i) run.uses_left[i] = release_after_uses_[i];
  run.ready.assign(num_steps, 0);
  if (runs_ahead_anywhere_) run.events.resize(num_steps);
  run.cursor.assign(schedule.streams.size(), 0);
  run.memory = memory_for(feeds);
  for (const DeviceArena& arena : run.memory->arenas) {
    const int index = plan_->device_index(arena.device);
    run.arenas.push_back(arena.bytes > 0 ? std::make_shared<Storage>(*allocators_[index], static_cast<size_t>(arena.bytes))
                                         : nullptr);
  }

  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (size_t s = 0; s < schedule.streams.size(); ++s) {
      if (!schedule.streams[s].in_order) continue;
      stream_runs_[s].push_back(&run);
      ++run.attached_streams;
    }
    for (size_t i = 0; i < num_steps; ++i) {
      if (run.pending[i] == 0) make_ready(run, static_cast<int>(i));
    }
    // The caller is one of the inter-op threads until its run is over.
    while (!done(run)) {
      if (!compute_queue_.empty()) {
        Task task = compute_queue_.front();
        compute_queue_.pop_front();
        lock.unlock();
        execute(*task.run, task.step);
        lock.lock();
        continue;
      }
      compute_cv_.wait(lock);
    }
  }
  if (run.ran_ahead) {
    // Every value but the outputs goes first: a block held back for another
    // stream's work then has its event recorded before the synchronize
    // below, which completes it too, so the next run takes the block back
    // instead of asking the device for more.
    std::vector<Tensor> kept;
    for (const Value* output : graph.outputs()) kept.push_back(run.values[plan_->value_index(output)]);
    std::fill(run.values.begin(), run.values.end(), Tensor());
    for (size_t i = 0; i < kept.size(); ++i) run.values[plan_->value_index(graph.outputs()[i])] = std::move(kept[i]);
    // The device work the steps left running: done before the outputs are
    // read and before this run's memory goes back (failed or not).
    try {
      synchronize_devices();
    } catch (const Error& e) {
      if (!run.failed) {
        run.failed = true;
        run.error = std::make_exception_ptr(
            Error(e.kind(), "the run's device work failed: " + e.message() +
                                " (steps ran ahead of the device, so the node is not known: set WEIR_SYNC_STEPS=1 "
                                "to wait for each step and name it)"));
      }
    } catch (...) {
      if (!run.failed) {
        run.failed = true;
        run.error = std::current_exception();
      }
    }
    // What the steps' device work found, in step order: the first failing
    // check fails the run, naming its node.
    std::stable_sort(run.device_checks.begin(), run.device_checks.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [step, check] : run.device_checks) {
      if (run.failed) break;
      try {
        check();
      } catch (...) {
        const ScheduleStep& s = schedule.steps[static_cast<size_t>(step)];
        run.failed = true;
        run.error = std::make_exception_ptr(
            located(std::current_exception(), *s.node, devices_[static_cast<size_t>(s.device_index)], rank_of_step(s)));
      }
    }
  }
  // A device communicator's abort (NCCL's watchdog at a deadline, or a
  // peer's failure) ends the collectives it had enqueued without a device
  // error: their steps "completed" with results cut short. Asked once the
  // device work is done (above, or step by step when waiting for each).
  if (!run.failed && runs_ahead_anywhere_ && !communicators_.empty()) {
    for (const std::shared_ptr<Communicator>& communicator : communicators_) {
      const std::string reason = communicator->abort_reason();
      if (reason.empty()) continue;
      run.failed = true;
      run.error = std::make_exception_ptr(Error(
          ErrorKind::kCommunication, "the run's collectives on " + communicator->description() +
                                         " were cut short: the group was aborted: " + reason));
      break;
    }
  }
  if (run.failed) {
    if (!communicators_.empty() && !options_.world) make_communicators();  // the old group was aborted
    std::rethrow_exception(run.error);
  }
  std::vector<Tensor> outputs;
  for (const Value* output : graph.outputs()) {
    Tensor tensor = run.values[plan_->value_index(output)];
    if (!tensor.defined()) {
      throw Error(ErrorKind::kInternal, "graph output '" + output->name() + "' was not produced").with_node(output->name());
    }
    // Outputs are handed out in host memory: a device's (a GPU's) are
    // copied back; a host arena's are copied out, since the arena is reused.
    if (tensor.device().type != DeviceType::kCpu) {
      tensor = copy_to_host(backend_holding(tensor), tensor, "output '" + output->name() + "'");
    } else if (in_arena(run, tensor.raw_data())) {
      tensor = copy_into(backend_holding(tensor), tensor, "output '" + output->name() + "'");
    }
    outputs.push_back(std::move(tensor));
  }
  return outputs;
}

bool Session::done(const RunState& run) const {
  return run.in_flight == 0 && run.attached_streams == 0 &&
         (run.failed || run.completed == static_cast<int>(plan_->schedule().steps.size()));
}

void Session::make_ready(RunState& run, int step) {
  const Schedule& schedule = plan_->schedule();
  int stream = schedule.steps[step].stream;
  if (schedule.streams[stream].in_order) {
    run.ready[step] = 1;
    stream_cv_[stream]->notify_all();
  } else {
    compute_queue_.push_back({&run, step});
    ++run.in_flight;
    compute_cv_.notify_one();
  }
}

void Session::execute(RunState& run, int step) {
  if (run.failed) {
    finish(run, step, nullptr);
    return;
  }
  thread_local std::string track;
  if (track.empty()) {
    static std::atomic<int> next_thread{0};
    track = "compute #" + std::to_string(next_thread++);
  }
  const ScheduleStep& s = plan_->schedule().steps[step];
  const StreamInfo& stream = plan_->schedule().streams[s.stream];
  std::exception_ptr error;
  try {
    run_step(run, step, stream.in_order ? stream.name : track);
  } catch (...) {
    error = std::current_exception();
  }
  finish(run, step, error);
}

void Session::run_step(RunState& run, int step, const std::string& track) {
  const ScheduleStep& s = plan_->schedule().steps[step];
  const Node& node = *s.node;
  const int device = s.device_index;
  const std::vector<int>& input_indices = plan_->step_inputs(step);
  const std::vector<int>& output_indices = plan_->step_outputs(step);
  std::vector<Tensor> inputs;
  inputs.reserve(input_indices.size());
  for (int index : input_indices) inputs.push_back(index >= 0 ? run.values[index] : Tensor());
  Backend& backend = *backends_[device];
  Allocator* stream_allocator = stream_allocators_[s.stream];
  Allocator& allocator = stream_allocator != nullptr ? *stream_allocator : backend.allocator();
  Stream& stream = *streams_[s.stream];
  // Steps of streams that run ahead are not waited for (unless asked to, or
  // profiled: the profile is of device times).
  const bool run_ahead = stream_allocator != nullptr && !wait_for_each_step_ && run.options->profiler == nullptr;
  KernelContext ctx(node, std::move(inputs), allocator);
  std::vector<KernelContext::DeviceCheck> checks;
  ctx.set_device_checks(&checks);
  ctx.set_stream(&stream);
  ctx.set_backend(&backend);
  if (static_cast<size_t>(device) < communicators_.size()) {
    ctx.set_communicator(communicators_[device].get(), options_.collective_timeout);
  }
  ctx.set_rng_counter(run.rng_counter);
  ctx.set_parameter_client(options_.parameter_client.get());
  const MemoryPlan& memory = *run.memory;
  for (size_t o = 0; o < node.num_outputs(); ++o) {
    const BufferSlot* slot = node.output(o) != nullptr ? memory.find(node.output(o)) : nullptr;
    if (slot == nullptr || !run.arenas[slot->arena]) continue;
    const std::shared_ptr<Storage>& arena = run.arenas[slot->arena];
    ctx.set_planned_output(o, {static_cast<char*>(arena->data()) + slot->offset, static_cast<size_t>(slot->bytes),
                               slot->in_place, arena});
  }

  Profiler* profiler = run.options->profiler;
  int64_t start = profiler != nullptr ? profiler->now_ns() : 0;
  OpKernel& kernel = plan_->kernel(step);
  if (!run.events.empty()) {
    // What other streams' predecessors left running: waited for by this
    // stream (on the device, or by the host for a host stream). A
    // predecessor on this stream is ordered by the stream itself.
    for (int before : s.predecessors) {
      const std::shared_ptr<Event>& event = run.events[static_cast<size_t>(before)];
      if (event && plan_->schedule().steps[before].stream != s.stream) stream.wait(event);
    }
  }
  std::shared_ptr<Event> done = stream.launch([&kernel, &ctx] { kernel.compute(ctx); });
  if (run_ahead) {
    // A failed launch comes back as a completed event carrying the error;
    // device work that is still running is waited for at the run's end.
    // A device fault seen here may be an earlier step's (a GPU's faults
    // stay), so it says how to find the step it came from.
    try {
      if (done->query()) done->synchronize(options_.step_timeout, node.name());
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kDevice) throw;
      Error hinted(e.kind(), e.message() + " (steps run ahead of the device, so the fault may be an earlier step's: set "
                                           "WEIR_SYNC_STEPS=1 to wait for each step and find it)");
      if (!e.node().empty()) hinted.with_node(e.node());
      throw hinted;
    }
    run.events[static_cast<size_t>(step)] = std::move(done);
    run.ran_ahead = true;
    if (!checks.empty()) {
      std::lock_guard<std::mutex> lock(run.checks_mutex);
      for (KernelContext::DeviceCheck& check : checks) run.device_checks.emplace_back(step, std::move(check));
    }
  } else {
    done->synchronize(options_.step_timeout, node.name());
    for (const KernelContext::DeviceCheck& check : checks) check();
  }
  int64_t end = profiler != nullptr ? profiler->now_ns() : 0;

  int64_t bytes = 0;
  for (size_t o = 0; o < node.num_outputs(); ++o) {
    const Value* value = node.output(o);
    if (value == nullptr) continue;
    Tensor tensor = ctx.output(o);
    if (!tensor.defined()) {
      throw Error(ErrorKind::kInternal, "the kernel did not produce output " + std::to_string(o) + " ('" +
                                            value->name() + "')");
    }
    // A kernel may hand back a view of an input that lives in the arena,
    // where the planner did not expect one: copy it out, since the arena
    // memory is reused once this step's inputs are dead.
    const BufferSlot* slot = memory.find(value);
    bool planned_here = slot != nullptr && run.arenas[slot->arena] &&
                        tensor.raw_data() == static_cast<char*>(run.arenas[slot->arena]->data()) + slot->offset;
    if (!planned_here && !(s.output_views_input && o == 0) && tensor.nbytes() > 0 && in_arena(run, tensor.raw_data())) {
      Tensor copy = Tensor::uninitialized(tensor.dtype(), tensor.sizes(), allocator);
      backend.copy(tensor, copy, stream)->synchronize(options_.step_timeout, node.name());  // as the step itself
      tensor = std::move(copy);
    }
    bytes += static_cast<int64_t>(tensor.nbytes());
    run.values[output_indices[o]] = std::move(tensor);
  }
  if (profiler != nullptr) {
    const StreamInfo& info = plan_->schedule().streams[s.stream];
    profiler->record({node.name(), node.op_type(), devices_[device].to_string(), info.name, track, start, end - start, bytes});
  }
  if (run_ahead) {
    // Memory this step's device work uses that is not its stream's own
    // stays out of reuse, once freed, until the stream has got past it.
    CachingAllocator& cache = *allocators_[static_cast<size_t>(device)];
    auto mark = [&](const Tensor& tensor) {
      const std::shared_ptr<Storage>& storage = tensor.storage();
      if (storage && storage->allocator() != stream_allocator) cache.record_use(*storage, stream);
    };
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (ctx.has_input(i)) mark(ctx.input(i));
    }
    for (size_t o = 0; o < ctx.num_outputs(); ++o) mark(ctx.output(o));
  }
  // Drop this step's dead inputs, and outputs nobody reads.
  for (int index : input_indices) {
    if (index >= 0 && release_after_uses_[index] >= 0 && run.uses_left[index].fetch_sub(1) == 1) {
      run.values[index] = Tensor();
    }
  }
  for (int index : output_indices) {
    if (index >= 0 && release_after_uses_[index] == 0) run.values[index] = Tensor();
  }
}

void Session::finish(RunState& run, int step, std::exception_ptr error) {
  const ScheduleStep& s = plan_->schedule().steps[step];
  std::vector<int> now_ready;
  if (!error) {
    for (int next : s.successors) {
      if (run.pending[next].fetch_sub(1) == 1) now_ready.push_back(next);
    }
  }
  bool abort = false;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --run.in_flight;
    if (error) {
      if (!run.failed) {
        run.failed = true;
        const Device& device = devices_[static_cast<size_t>(s.device_index)];
        const int rank = rank_of_step(s);
        Error e = located(error, *s.node, device, rank);
        reason = (rank >= 0 ? "rank " + std::to_string(rank) + ": node '" : std::string("node '")) + s.node->name() +
                 "' on " + device.to_string() + " failed: " + e.what();
        run.error = std::make_exception_ptr(e);
        abort = !communicators_.empty();
      }
    } else {
      ++run.completed;
      if (!run.failed) {
        for (int next : now_ready) make_ready(run, next);
      }
    }
    compute_cv_.notify_all();
    if (run.failed) {
      for (auto& cv : stream_cv_) cv->notify_all();
    }
  }
  // Outside the lock: wakes the ranks blocked in collectives, whose steps
  // then fail and finish too.
  if (abort) abort_collectives(reason);
}

void Session::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    compute_cv_.wait(lock, [&] { return stopping_ || !compute_queue_.empty(); });
    if (stopping_) return;
    Task task = compute_queue_.front();
    compute_queue_.pop_front();
    lock.unlock();
    execute(*task.run, task.step);
    lock.lock();
  }
}

void Session::stream_loop(int stream) {
  const std::vector<int>& steps = plan_->schedule().streams[stream].steps;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    bool progressed = false;
    std::vector<RunState*>& runs = stream_runs_[stream];
    for (size_t i = 0; i < runs.size(); ++i) {
      RunState& run = *runs[i];
      size_t& cursor = run.cursor[stream];
      if (run.failed || cursor == steps.size()) {
        runs.erase(runs.begin() + static_cast<long>(i));
        --run.attached_streams;
        compute_cv_.notify_all();
        progressed = true;
        break;
      }
      int step = steps[cursor];
      if (run.ready[step]) {
        ++cursor;
        ++run.in_flight;
        lock.unlock();
        execute(run, step);
        lock.lock();
        progressed = true;
        break;
      }
    }
    if (!progressed) stream_cv_[stream]->wait(lock);
  }
}

DeviceMemoryStats Session::memory_stats(const Device& device) const {
  auto found = std::find(devices_.begin(), devices_.end(), device);
  if (found == devices_.end()) {
    throw Error(ErrorKind::kInvalidArgument, device.to_string() + " is not a device this session runs on");
  }
  const size_t index = static_cast<size_t>(found - devices_.begin());
  const CachingAllocator& allocator = *allocators_[index];
  DeviceMemoryStats out;
  out.device = device;
  out.stats = allocator.stats();
  out.cached_bytes = allocator.cached_bytes();
  out.cache_hits = allocator.cache_hits();
  out.system_allocations = allocator.system_allocations();
  int arena = plan_->memory().arena_of(plan_->devices()[index]);
  out.planned_arena_bytes = arena >= 0 ? plan_->memory().arenas[arena].bytes : 0;
  return out;
}

void Session::reset_peak_memory() {
  for (CachingAllocator* allocator : allocators_) allocator->reset_peak();
}

std::vector<DeviceMemoryStats> Session::memory_stats() const {
  std::vector<DeviceMemoryStats> all;
  for (const Device& device : devices_) all.push_back(memory_stats(device));
  return all;
}

Tensor Session::state(const std::string& name) const {
  const Value* value = plan_->graph().find_value(name);
  if (value == nullptr || !value->is_persistent()) {
    throw Error(ErrorKind::kInvalidArgument, "'" + name + "' is not a persistent value of the plan");
  }
  std::lock_guard<std::mutex> lock(state_mutex_);
  return state_[plan_->value_index(value)];
}

Tensor Session::host_state(const std::string& name) const {
  Tensor tensor = state(name);
  if (!tensor.defined() || tensor.device().type == DeviceType::kCpu) return tensor;
  return copy_to_host(backend_holding(tensor), tensor, "state '" + name + "'");
}

void Session::set_state(const std::string& name, const Tensor& tensor) {
  const Value* value = plan_->graph().find_value(name);
  if (value == nullptr || !value->is_persistent()) {
    throw Error(ErrorKind::kInvalidArgument, "'" + name + "' is not a persistent value of the plan");
  }
  std::lock_guard<std::mutex> lock(state_mutex_);
  Tensor& current = state_[plan_->value_index(value)];
  if (current.dtype() != tensor.dtype() || current.sizes() != tensor.sizes()) {
    throw Error(ErrorKind::kShape, "state '" + name + "' is " + current.type_string() + ", not " + tensor.type_string());
  }
  current = copy_into(backend_reading(*value), tensor, "state '" + name + "'");
}

Allocator& Session::feed_allocator(const std::string& input) const {
  const Value* value = plan_->graph().find_value(input);
  if (value == nullptr || value->kind() != ValueKind::kInput) {
    throw Error(ErrorKind::kInvalidArgument, "'" + input + "' is not an input of graph '" + plan_->graph().name() + "'");
  }
  return backend_reading(*value).host_allocator();
}

Backend& Session::backend_reading(const Value& value) const {
  for (const Use& use : value.uses()) {
    if (use.node != nullptr && use.node->device()) {
      int index = plan_->device_index(*use.node->device());
      if (index >= 0) return *backends_[static_cast<size_t>(index)];
    }
  }
  return *backends_.front();
}

Backend& Session::backend_holding(const Tensor& tensor) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == tensor.device()) return *backends_[i];
  }
  return *backends_.front();
}

Tensor Session::copy_into(Backend& backend, const Tensor& source, const std::string& what) const {
  if (!source.defined()) return source;
  if (source.is_sequence() || source.is_none()) return host_container(backend, source, what);
  const Device& from = source.device();
  if (from.type != DeviceType::kCpu && from != backend.device()) {
    throw Error(ErrorKind::kInvalidArgument, what + " is on " + from.to_string() + ", but it is read on " +
                                                 backend.device().to_string() + ": give a host tensor or one on that device");
  }
  Tensor copy = Tensor::uninitialized(source.dtype(), source.sizes(), backend.allocator());
  if (copy.nbytes() > 0) {
    backend.copy(source, copy, backend.stream({StreamKind::kCopy, 0}))
        ->synchronize(options_.step_timeout, "copying " + what + " to " + backend.device().to_string());
  }
  return copy;
}

Tensor Session::copy_to_host(Backend& backend, const Tensor& source, const std::string& what) const {
  if (source.is_sequence() || source.is_none()) return host_container(backend, source, what);
  Tensor host = Tensor::uninitialized(source.dtype(), source.sizes(), backend.host_allocator());
  if (host.nbytes() > 0) {
    backend.copy(source, host, backend.stream({StreamKind::kCopy, 0}))
        ->synchronize(options_.step_timeout, "copying " + what + " from " + backend.device().to_string());
  }
  return host;
}

// Sequences and absent optionals live on the host (their elements own host
// memory); they pass between host-memory backends as they are.
Tensor Session::host_container(Backend& backend, const Tensor& source, const std::string& what) const {
  if (backend.device().type != DeviceType::kCpu) {
    throw Error(ErrorKind::kUnsupported, what + " is " + source.type_string() + "; sequence and optional values run on " +
                                             "the CPU only, not on " + backend.device().to_string());
  }
  return source;
}

Tensor Session::resident(Backend& backend, const Tensor& tensor, const std::string& what) const {
  if (!tensor.defined() || tensor.device().type == backend.device().type) return tensor;
  return copy_into(backend, tensor, what);
}

}  // namespace weir
