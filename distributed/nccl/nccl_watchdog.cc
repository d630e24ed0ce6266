#include "distributed/nccl/nccl_watchdog.h"

#include <utility>
#include <vector>

#include "core/error.h"

namespace weir {

NcclWatchdog::NcclWatchdog(int device, std::function<void(const std::string& reason)> overdue)
    : device_(device), overdue_(std::move(overdue)) {}

NcclWatchdog::~NcclWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (Watched& watched : watched_) cudaEventDestroy(watched.event);
}

void NcclWatchdog::watch(cudaStream_t stream, Clock::time_point deadline, std::string what) {
  cudaEvent_t event = nullptr;
  cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (status == cudaSuccess) status = cudaEventRecord(event, stream);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (event != nullptr) cudaEventDestroy(event);
    throw Error(ErrorKind::kDevice, what + ": recording the event that watches it failed: " + cudaGetErrorName(status) +
                                        ": " + cudaGetErrorString(status));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fired_) {
      cudaEventDestroy(event);
      return;
    }
    watched_.push_back({event, Clock::now(), deadline, std::move(what)});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  wake_.notify_all();
}

void NcclWatchdog::loop() {
  cudaSetDevice(device_);  // events are queried in their device's context
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (watched_.empty()) {
      wake_.wait(lock, [&] { return stopping_ || !watched_.empty(); });
      continue;
    }
    std::string reason;
    for (auto it = watched_.begin(); it != watched_.end();) {
      cudaError_t status = cudaEventQuery(it->event);
      if (status == cudaSuccess) {
        cudaEventDestroy(it->event);
        it = watched_.erase(it);
        continue;
      }
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - it->start);
      if (status != cudaErrorNotReady) {
        cudaGetLastError();
        reason = it->what + " failed on the device: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
        break;
      }
      if (Clock::now() >= it->deadline) {
        reason = it->what + " did not finish within " + std::to_string(waited.count()) +
                 " ms (its timeout): a rank did not call it or is gone";
        break;
      }
      ++it;
    }
    if (!reason.empty()) {
      fired_ = true;
      for (Watched& watched : watched_) cudaEventDestroy(watched.event);
      watched_.clear();
      lock.unlock();
      overdue_(reason);  // aborts the world: outside the lock, it takes its own
      lock.lock();
      continue;
    }
    // Collectives usually finish within microseconds to milliseconds: poll
    // at 1 ms, which costs the host nothing measurable.
    wake_.wait_for(lock, std::chrono::milliseconds(1), [&] { return stopping_; });
  }
}

}  // namespace weir
