// The watch an NCCL world keeps on the collectives it enqueued on CUDA
// streams: a call on a stream returns once NCCL has taken it, and an NCCL
// kernel waiting on a rank that is gone never ends by itself. The watchdog
// records an event after each such call and, from a thread of its own,
// calls `overdue` (once) with the reason when one has not completed by its
// deadline or failed on the device; the world then aborts its communicators
// (ncclCommAbort), which ends the waiting kernels.
//
//   weir::NcclWatchdog watchdog(0, [&](const std::string& reason) { world.abort(reason); });
//   watchdog.watch(stream, deadline, "all_reduce with tag 'grad/b0' (rank 1 of ...)");
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace weir {

class NcclWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  // `device`: the CUDA device whose streams are watched.
  NcclWatchdog(int device, std::function<void(const std::string& reason)> overdue);
  // Stops the thread; events still watched are released (CUDA frees an
  // event whose work is pending once that work is done).
  ~NcclWatchdog();
  NcclWatchdog(const NcclWatchdog&) = delete;
  NcclWatchdog& operator=(const NcclWatchdog&) = delete;

  // Watches what `stream` holds up to now. Throws weir::Error(kDevice) when
  // the event cannot be recorded.
  void watch(cudaStream_t stream, Clock::time_point deadline, std::string what);

 private:
  struct Watched {
    cudaEvent_t event = nullptr;
    Clock::time_point start;
    Clock::time_point deadline;
    std::string what;
  };
  void loop();

  int device_;
  std::function<void(const std::string&)> overdue_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::list<Watched> watched_;
  bool stopping_ = false;
  bool fired_ = false;  // overdue was called: the world is aborted, nothing more is watched
  std::thread thread_;
};

}  // namespace weir
