// Raw Gloo, for comparison with `graph-runner comm-bench`: N forked
// processes meet through a FileStore and time Gloo's own ring allreduce
// (f32 sum, in place) on the same sizes, printing the same line format,
//   raw-gloo allreduce bytes=B ms=T algbw_GBps=A busbw_GBps=U
// Run: build/ci/bench/weir_gloo_allreduce_bench [processes] [iterations] [sizes...]
// (bench/comm_bench.sh runs both in one go).
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

int64_t parse_size(const std::string& text) {
  const char unit = text.empty() ? '\0' : text.back();
  const int64_t scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? 1024LL * 1024 * 1024 : 1;
  return std::stoll(scale == 1 ? text : text.substr(0, text.size() - 1)) * scale;
}

void rank_main(int rank, int size, const std::string& store_dir, int iterations, const std::vector<int64_t>& sizes) {
  gloo::rendezvous::FileStore store(store_dir);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(std::chrono::seconds(120));
  context->connectFullMesh(store, device);
  uint32_t tag = 0;
  for (int64_t bytes : sizes) {
    std::vector<float> buffer(static_cast<size_t>(bytes) / sizeof(float), 0.0f);
    auto once = [&] {
      gloo::AllreduceOptions options(context);
      options.setOutput(buffer.data(), buffer.size());
      options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      options.setTag(tag++);
      gloo::allreduce(options);
    };
    for (int i = 0; i < 3; ++i) once();
    gloo::BarrierOptions barrier(context);
    barrier.setTag(tag++);
    gloo::barrier(barrier);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) once();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
    if (rank == 0) {
      const double algbw = static_cast<double>(bytes) / seconds / 1e9;
      std::printf("raw-gloo allreduce bytes=%lld ms=%.3f algbw_GBps=%.3f busbw_GBps=%.3f\n", static_cast<long long>(bytes),
                  seconds * 1e3, algbw, algbw * 2.0 * (size - 1) / size);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int size = argc > 1 ? std::atoi(argv[1]) : 2;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 20;
  std::vector<int64_t> sizes;
  for (int i = 3; i < argc; ++i) sizes.push_back(parse_size(argv[i]));
  if (sizes.empty()) sizes = {4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20};
  const std::string store = "/tmp/weir_gloo_bench_" + std::to_string(::getpid());
  std::filesystem::remove_all(store);
  std::filesystem::create_directories(store);
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int status = 0;
      try {
        rank_main(rank, size, store, iterations, sizes);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        status = 1;
      }
      std::fflush(stdout);
      ::_exit(status);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::filesystem::remove_all(store);
  return failed == 0 ? 0 : 1;
}
