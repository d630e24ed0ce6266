// A library handle (cuBLASLt's, cuDNN's) of one device, taken from a
// process-wide pool of that handle type for as long as this object lives:
// creating one costs milliseconds, and a handle must not be used by two
// threads at once, so each concurrent user holds its own. Pooled handles are
// never destroyed (destroying them at exit races the driver's own teardown).
//
//   cudnnHandle_t create_cudnn_handle(int device_index);   // throws naming the device
//   using CudnnHandle = PooledHandle<cudnnHandle_t, create_cudnn_handle>;
//   CudnnHandle handle(0);                                  // cuda:0 must be current
//   cudnnSetStream(handle.get(), stream);
#pragma once

#include <map>
#include <mutex>
#include <vector>

namespace weir::cuda {

template <typename Handle, Handle (*Create)(int device_index)>
class PooledHandle {
 public:
  explicit PooledHandle(int device_index) : device_index_(device_index) {
    {
      Pool& pool = shared_pool();
      std::lock_guard<std::mutex> lock(pool.mutex);
      std::vector<Handle>& free = pool.free[device_index];
      if (!free.empty()) {
        handle_ = free.back();
        free.pop_back();
        return;
      }
    }
    handle_ = Create(device_index);
  }
  ~PooledHandle() {
    Pool& pool = shared_pool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.free[device_index_].push_back(handle_);
  }
  PooledHandle(const PooledHandle&) = delete;
  PooledHandle& operator=(const PooledHandle&) = delete;

  Handle get() const { return handle_; }

 private:
  struct Pool {
    std::mutex mutex;
    std::map<int, std::vector<Handle>> free;  // by device index
  };
  static Pool& shared_pool() {
    static auto* pool = new Pool();  // never destroyed, like the handles in it
    return *pool;
  }

  int device_index_;
  Handle handle_{};
};

}  // namespace weir::cuda
