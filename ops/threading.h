// Intra-op parallelism: how a kernel spreads one op over threads.
//
// Policy (docs/threads.md): every CPU kernel parallelizes with OpenMP — the
// runtime that Debian's oneDNN uses — so oneDNN primitives and Weir's own
// loops share one thread pool. The intra-op thread count defaults to the
// cores this process may run on (its affinity mask); the runtime's
// inter-op threads times the intra-op threads never exceed that count.
//
//   weir::set_intra_op_threads(2);           // 0 restores the default
//   weir::parallel_for(n, /*grain=*/32768, [&](int64_t begin, int64_t end) {
//     for (int64_t i = begin; i < end; ++i) y[i] = x[i] + 1;
//   });
//
// parallel_for runs fn on disjoint, contiguous ranges covering [0, count);
// an exception thrown by fn is rethrown on the calling thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

namespace weir {

// Elements per thread below which an elementwise loop stays on one thread:
// splitting ~32K elements costs more in wake-ups than it saves.
inline constexpr int64_t kElementwiseGrain = 32768;

// Cores in this process's affinity mask (at least 1), read once: asking the
// kernel is a system call, and kernels ask on every parallel loop.
int available_cores();
// Threads a kernel may use; defaults to available_cores().
int intra_op_threads();
// Sets the intra-op thread count for kernels and oneDNN; 0 means the default.
// Throws weir::Error(kInvalidArgument) for a negative count.
void set_intra_op_threads(int threads);

// The file name of the shared library that defines `symbol` for this
// process, as the dynamic linker resolves it (e.g. "libomp.so.5"); "" when
// no loaded library does.
std::string library_defining(const char* symbol);
// The file name of the OpenMP runtime that runs this process's parallel
// regions, Weir's and oneDNN's (the library that defines GOMP_parallel, which
// oneDNN calls), e.g. "libomp.so.5" or "libgomp.so.1" (build option
// WEIR_OPENMP_RUNTIME, docs/threads.md). "unknown" when it cannot be found.
std::string openmp_runtime();

namespace detail {
// Runs body(thread_index, thread_count) on `threads` OpenMP threads.
void run_on_threads(int threads, void (*body)(void*, int, int), void* state);
}  // namespace detail

template <typename Fn>
void parallel_for(int64_t count, int64_t grain, Fn&& fn) {
  if (count <= 0) return;
  int64_t chunks = grain > 0 ? (count + grain - 1) / grain : count;
  int threads = static_cast<int>(std::min<int64_t>(intra_op_threads(), chunks));
  if (threads <= 1) {
    fn(int64_t{0}, count);
    return;
  }
  struct State {
    Fn* fn;
    int64_t count;
    std::exception_ptr error;
    std::mutex mutex;
  } state{&fn, count, nullptr, {}};
  detail::run_on_threads(
      threads,
      [](void* opaque, int index, int total) {
        auto* s = static_cast<State*>(opaque);
        int64_t begin = s->count * index / total;
        int64_t end = s->count * (index + 1) / total;
        try {
          if (begin < end) (*s->fn)(begin, end);
        } catch (...) {
          std::lock_guard<std::mutex> lock(s->mutex);
          if (!s->error) s->error = std::current_exception();
        }
      },
      &state);
  if (state.error) std::rethrow_exception(state.error);
}

}  // namespace weir
