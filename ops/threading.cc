#include "ops/threading.h"

#include <dlfcn.h>
#include <omp.h>
#include <sched.h>

#include <atomic>
#include <string>
#include <thread>

#include "core/error.h"

namespace weir {

namespace {
std::atomic<int> configured_threads{0};  // 0: use available_cores()
}  // namespace

int available_cores() {
  static const int cores = [] {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
      int count = CPU_COUNT(&mask);
      if (count > 0) return count;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return cores;
}

int intra_op_threads() {
  int configured = configured_threads.load();
  return configured > 0 ? configured : available_cores();
}

void set_intra_op_threads(int threads) {
  if (threads < 0) {
    throw Error(ErrorKind::kInvalidArgument, "intra-op thread count must be >= 0 (0 = one per core), got " +
                                                 std::to_string(threads));
  }
  configured_threads.store(threads);
  // oneDNN takes its thread count from OpenMP's.
  omp_set_num_threads(intra_op_threads());
}

std::string library_defining(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  return path.substr(path.find_last_of('/') + 1);
}

std::string openmp_runtime() {
  // Resolved as the dynamic linker resolves oneDNN's own reference to it.
  std::string runtime = library_defining("GOMP_parallel");
  return runtime.empty() ? "unknown" : runtime;
}

namespace detail {

void run_on_threads(int threads, void (*body)(void*, int, int), void* state) {
#pragma omp parallel num_threads(threads)
  body(state, omp_get_thread_num(), omp_get_num_threads());
}

}  // namespace detail

}  // namespace weir
