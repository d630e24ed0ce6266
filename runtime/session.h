// Session — runs a compiled Plan, many times, and holds what lives across
// runs: persistent values (parameters, optimizer state), per-device caching
// allocators, the communicators of the plan's devices, and the threads.
//
//   auto plan = weir::compile(graph, options);
//   weir::Session session(plan);
//   std::vector<weir::Tensor> outputs = session.run({{"x", x}});   // graph outputs, in order
//   session.memory_stats(weir::Device::cpu(1)).stats.peak_bytes;
//
// The executor counts dependencies: a step whose predecessors have finished
// is ready. Ready compute steps go to one queue served by the inter-op
// threads (the calling thread is one of them, so the default of one thread
// runs everything on the caller with no hand-off); each in-order stream
// ("comm", ...) has its own thread that runs its steps in schedule order, so
// a blocking collective overlaps the computation of every device.
//
// Ranks. With SessionOptions::world the plan is one rank's program (one
// device): the session runs it on the world's device for this rank, its
// collectives go through the world's communicator, and the construction
// exchanges the ordered collective list with every rank and refuses a
// mismatch (runtime/collective_check.h). Every rank of the world creates
// its session and calls run() for each step; an in-process world of N ranks
// runs N sessions of one plan on N threads (runtime/in_process_ranks.h).
// Without a world, a plan that holds several devices runs them all here,
// device i as rank i of an in-process group (the schedule lines up their
// collective rounds).
//
// Each device of the plan has a Backend (core/backend.h): the CPU backend
// for cpu:N and Weir's CUDA backend (runtime/cuda_backend.h) for cuda:N,
// unless SessionOptions::make_backend says otherwise. A cuda:N session in a
// build without CUDA, or on a machine without that GPU, is refused at
// construction naming the device and the reason. Feeds are copied to the
// device of their first reader, constants and persistent values are placed
// there once, at construction, and run() returns outputs in host memory. A step is launched on
// its backend stream (StreamInfo::id), with that stream in its
// KernelContext, and is complete when the stream's event says so, not when
// the kernel's compute() returns: a backend whose streams run work later (a
// GPU's) needs no change here. Steps on a stream that runs ahead (a GPU's)
// are not waited for: a step waits on its predecessors of other streams
// through the device (Stream::wait on their events), its memory comes from
// its stream's face of the caching allocator (for_stream), tensors it shares
// with other streams are marked (record_use), and the run synchronizes its
// devices once before returning its outputs (see wait_for_each_step).
//
// Memory comes from the process's caching allocator of each device
// (device_caching_allocator), so returned tensors outlive the session; the
// statistics memory_stats() reports are that allocator's, process-wide.
//
// A failing kernel stops the run: no new steps start, blocked collectives
// are aborted, the steps in flight finish, and run() throws the first error
// naming the node and device. The session stays usable. With a world, any
// failure of run() (a bad feed too) aborts the world, so every rank's run()
// throws, naming the failing rank, instead of waiting for it; an aborted
// world stays aborted (a job restarts its ranks).
//
// Concurrency: run() may be called from several threads at once; each run
// has its own values and arenas. Runs of a plan with collectives are
// serialized, because collectives of two runs must not interleave.
// Persistent values are shared by all runs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/communicator.h"
#include "core/parameter_client.h"
#include "core/tensor.h"
#include "core/world.h"
#include "runtime/caching_allocator.h"
#include "runtime/plan.h"
#include "runtime/profiler.h"

namespace weir {

struct SessionOptions {
  // Threads that run compute steps, the calling thread included. The default
  // (1) leaves the cores to the kernels' intra-op threads (docs/threads.md).
  int inter_op_threads = 1;
  // How long a collective waits for the other devices before failing
  // (without a world; a world's communicators have their own timeout).
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(2)};
  // How long the executor waits for one step's event before failing the run
  // with kDevice naming the node (longer than a collective may wait).
  std::chrono::milliseconds step_timeout{std::chrono::minutes(10)};
  // The backend of each device, given the device's caching allocator; unset:
  // the CPU backend (runtime/cpu_backend.h) for CPU devices.
  std::function<std::unique_ptr<Backend>(const Device& device, Allocator& allocator)> make_backend;
  // The raw memory of each device that is not the host's (a CUDA backend's
  // cudaMalloc allocator), which the session caches
  // (runtime/caching_allocator.h); it must outlive every tensor made from it.
  // Unset: host devices only.
  std::function<Allocator&(const Device& device)> device_memory;
  // The world whose rank this session is; unset: the plan's devices are the
  // ranks (see above). The plan must then have one device, of the type of
  // the world's device.
  std::shared_ptr<World> world;
  // Wait for each step's device work before the next step starts. Without
  // it a GPU's steps run ahead: the host launches each as soon as its
  // predecessors are launched, the device runs them in stream order, and
  // the run waits once, at its end (so a device fault is reported for the
  // run, not a node). Set it (or WEIR_SYNC_STEPS=1) to find the node a
  // device fault comes from; a run with a profiler waits for each step too,
  // so the profile holds device times. Host (CPU) steps always finish in
  // their launch.
  bool wait_for_each_step = false;
  // The client of the parameter servers this worker trains with (graph-runner
  // ps-server; distributed/ps/grpc_parameter_client.h); unset: the graph's
  // parameter-server ops fail naming their table.
  std::shared_ptr<ParameterClient> parameter_client;
};

struct RunOptions {
  Profiler* profiler = nullptr;  // records one event per step when set
};

struct DeviceMemoryStats {
  Device device;
  AllocatorStats stats;           // held by tensors and arenas: in use, peak, allocations
  int64_t cached_bytes = 0;       // freed blocks kept for reuse
  int64_t cache_hits = 0;
  int64_t system_allocations = 0;
  int64_t planned_arena_bytes = 0;  // the memory plan's arena for this device, per run
};

class Session {
 public:
  explicit Session(std::shared_ptr<const Plan> plan, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Feeds every graph input (by name) and returns the graph outputs in order,
  // in host memory (feeds may be host tensors or tensors on the reading device).
  // A missing, unknown, mistyped or misshapen feed is a weir::Error naming it.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& feeds, const RunOptions& options = {});
  // The memory a feed of graph input `input` is best made in: the host
  // memory its reading device copies from fastest (pinned memory for a GPU,
  // whose copies then run by DMA; the host's own for a CPU). A data loader
  // assembles batches there (DataLoaderOptions::batch_memory). Throws
  // kInvalidArgument unless `input` is a graph input.
  Allocator& feed_allocator(const std::string& input) const;

  const Plan& plan() const { return *plan_; }
  // The devices the plan runs on here: its own, or the world's for this rank.
  const std::vector<Device>& devices() const { return devices_; }
  // The world this session is a rank of; nullptr without one.
  const std::shared_ptr<World>& world() const { return options_.world; }
  DeviceMemoryStats memory_stats(const Device& device) const;
  std::vector<DeviceMemoryStats> memory_stats() const;
  // Starts the devices' peak statistics afresh (e.g. before a measured run).
  void reset_peak_memory();

  // Persistent values by name: read, or replace (same dtype and shape).
  // state() shares the session's memory, so on a GPU it is a device tensor.
  Tensor state(const std::string& name) const;
  // The same value in host memory, for host code to read (checkpoints,
  // baking weights into a graph): state() itself on a CPU device, a copy
  // (waited for, within the step timeout) from any other.
  Tensor host_state(const std::string& name) const;
  void set_state(const std::string& name, const Tensor& value);

  // The RNG counter the next run gives random kernels (Dropout); it
  // advances by one per run. Checkpoints save it so a resumed run draws the
  // same masks as an uninterrupted one.
  uint64_t rng_state() const { return rng_counter_.load(); }
  void set_rng_state(uint64_t counter) { rng_counter_.store(counter); }

  struct RunState;

 private:
  struct Task {
    RunState* run;
    int step;
  };

  void make_communicators();
  std::vector<Tensor> run_once(const std::map<std::string, Tensor>& feeds, const RunOptions& options);
  // Makes the blocked collectives of every rank fail with `reason`.
  void abort_collectives(const std::string& reason);
  int rank_of_step(const ScheduleStep& step) const;
  // Waits (within the step timeout) for the device work of every backend
  // whose streams run ahead.
  void synchronize_devices() const;
  void make_ready(RunState& run, int step);  // with mutex_ held
  void execute(RunState& run, int step);
  void run_step(RunState& run, int step, const std::string& track);
  void finish(RunState& run, int step, std::exception_ptr error);
  bool done(const RunState& run) const;  // with mutex_ held
  void worker_loop();
  void stream_loop(int stream);

  // The memory plan for a run's feeds: the plan's own, or (for a graph with
  // symbolic input dims) one planned for the fed sizes, cached by binding.
  std::shared_ptr<const MemoryPlan> memory_for(const std::map<std::string, Tensor>& feeds);
  // The backend of the device `value` is read on (its first reader's), or
  // of the plan's first device; and of the device a tensor lives on.
  Backend& backend_reading(const Value& value) const;
  Backend& backend_holding(const Tensor& tensor) const;
  // `source` (on the host or `backend`'s device) copied into `backend`'s
  // memory on its copy stream, waited for; `what` names it in a timeout.
  Tensor copy_into(Backend& backend, const Tensor& source, const std::string& what) const;
  // `source` (in `backend`'s device memory) copied into host memory, waited for.
  Tensor copy_to_host(Backend& backend, const Tensor& source, const std::string& what) const;
  // `tensor` as `backend` reads it: itself when it already lives in memory
  // of that device type (virtual CPU devices share the host's), else a copy.
  Tensor resident(Backend& backend, const Tensor& tensor, const std::string& what) const;
  // A sequence or absent optional, which lives on the host, for `backend`.
  Tensor host_container(Backend& backend, const Tensor& source, const std::string& what) const;

  std::shared_ptr<const Plan> plan_;
  SessionOptions options_;
  bool symbolic_inputs_ = false;
  std::mutex memory_mutex_;
  std::map<SymbolBindings, std::shared_ptr<const MemoryPlan>> memory_plans_;
  std::vector<Device> devices_;                                // by plan device index: where it runs
  std::vector<CachingAllocator*> allocators_;                  // by plan device index
  std::vector<std::unique_ptr<Backend>> backends_;             // by plan device index
  std::vector<Stream*> streams_;                               // by schedule stream: its backend stream
  std::vector<Allocator*> stream_allocators_;                  // by schedule stream: its face of the device's
                                                               // cache when the stream runs ahead, else nullptr
  std::vector<bool> backend_runs_ahead_;                       // by plan device index: a stream of it runs ahead
  bool runs_ahead_anywhere_ = false;                           // any of backend_runs_ahead_
  bool wait_for_each_step_ = false;
  std::vector<std::shared_ptr<Communicator>> communicators_;   // by plan device index; empty without collectives
  std::vector<Tensor> state_;                                  // by plan value index; persistent values only
  std::vector<Tensor> constants_;                              // by plan value index; constants, where they are read
  mutable std::mutex state_mutex_;
  std::atomic<uint64_t> rng_counter_{0};
  std::vector<int> release_after_uses_;                        // by value index; -1: never release

  std::mutex mutex_;
  std::condition_variable compute_cv_;
  std::vector<std::unique_ptr<std::condition_variable>> stream_cv_;
  std::deque<Task> compute_queue_;
  std::vector<std::vector<RunState*>> stream_runs_;  // runs attached to each in-order stream
  bool stopping_ = false;
  std::mutex collective_run_mutex_;
  std::vector<std::thread> threads_;
};

}  // namespace weir
