#include "tools/graph-runner/comm_bench_command.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "frontend/strategy/strategy.h"
#include "tools/graph-runner/launched_world.h"

namespace weir::tools {

namespace {

struct CommBenchArgs {
  std::string op = "allreduce";
  std::string sizes = "4K,64K,1M,16M,64M";
  std::string dtype = "f32";
  int iterations = 20;
  int warmup = 3;
  std::string algorithm = "rank-order";
  double timeout = 120;
};

std::vector<int64_t> parse_sizes(const std::string& list) {
  std::vector<int64_t> sizes;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) sizes.push_back(parse_byte_size(item));
  if (sizes.empty()) throw Error(ErrorKind::kInvalidArgument, "--sizes names no size");
  return sizes;
}

DType parse_bench_dtype(const std::string& name) {
  const DType dtype = find_dtype(name).value_or(DType::kUndefined);
  if (dtype == DType::kFloat32 || dtype == DType::kBFloat16 || dtype == DType::kFloat16) return dtype;
  throw Error(ErrorKind::kInvalidArgument, "--dtype '" + name + "': f32, bf16 or f16");
}

// One call of `op`, the bytes it counts (nccl-tests': the whole buffer) and
// its bus bandwidth factor.
struct Collective {
  size_t bytes;
  double bus_factor;
  std::function<void()> call;
};

Collective collective_of(const std::string& op, Communicator& comm, Tensor& input, Tensor& output) {
  const double n = comm.size();
  if (op == "allreduce") {
    return {input.nbytes(), 2 * (n - 1) / n, [&] { comm.all_reduce(input, output, ReduceOp::kSum, {.tag = "bench"}); }};
  }
  if (op == "allgather") {
    return {output.nbytes(), (n - 1) / n, [&] { comm.all_gather(input, output, {.tag = "bench"}); }};
  }
  if (op == "reduce_scatter") {
    return {input.nbytes(), (n - 1) / n,
            [&] { comm.reduce_scatter(input, output, ReduceOp::kSum, {.tag = "bench"}); }};
  }
  if (op == "broadcast") {
    return {input.nbytes(), 1, [&] { comm.broadcast(input, output, 0, {.tag = "bench"}); }};
  }
  throw Error(ErrorKind::kInvalidArgument, "--op '" + op + "': allreduce, allgather, reduce_scatter or broadcast");
}

void comm_bench(const CommBenchArgs& args) {
  const std::vector<int64_t> sizes = parse_sizes(args.sizes);
  const DType dtype = parse_bench_dtype(args.dtype);
  std::shared_ptr<World> world = launched_world({.job = "comm-bench",
                                                 .timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout * 1000)),
                                                 .allreduce = parse_gloo_allreduce(args.algorithm)});
  if (world == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "comm-bench times collectives between processes: run it under a launcher, "
                                             "e.g. graph-runner launch -n 2 -- graph-runner comm-bench");
  }
  std::shared_ptr<Communicator> comm = world->communicator();
  const int n = world->size();
  if (world->rank() == 0) {
    std::printf("# comm-bench: %s of %s over %s, %d iterations after %d warm-up\n", args.op.c_str(), args.dtype.c_str(),
                world->description().c_str(), args.iterations, args.warmup);
  }
  for (int64_t bytes : sizes) {
    // Whole elements, and a multiple of the world for reduce_scatter's parts.
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    const int64_t count = std::max<int64_t>(n, bytes / element / n * n);
    const bool gathers = args.op == "allgather", scatters = args.op == "reduce_scatter";
    Tensor input(dtype, {gathers ? count / n : count});
    Tensor output(dtype, {scatters ? count / n : count});
    std::memset(input.raw_data(), 0, static_cast<size_t>(input.nbytes()));
    Collective collective = collective_of(args.op, *comm, input, output);
    for (int i = 0; i < args.warmup; ++i) collective.call();
    comm->barrier("comm-bench");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < args.iterations; ++i) collective.call();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / args.iterations;
    if (world->rank() == 0) {
      const double algbw = static_cast<double>(collective.bytes) / seconds / 1e9;
      std::printf("%s bytes=%lld ms=%.3f algbw_GBps=%.3f busbw_GBps=%.3f\n", args.op.c_str(), static_cast<long long>(collective.bytes),
                  seconds * 1e3, algbw, algbw * collective.bus_factor);
      std::fflush(stdout);
    }
  }
  comm->barrier("comm-bench done");
}

}  // namespace

void add_comm_bench_command(CLI::App& app) {
  auto args = std::make_shared<CommBenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "comm-bench", "Time a collective between the processes of a launched world (run under graph-runner launch -n N)");
  cmd->add_option("--op", args->op, "allreduce, allgather, reduce_scatter or broadcast (default allreduce)");
  cmd->add_option("--sizes", args->sizes, "buffer sizes, comma-separated, suffix K, M, G (default 4K,64K,1M,16M,64M)");
  cmd->add_option("--dtype", args->dtype, "f32, bf16 or f16 (default f32)");
  cmd->add_option("--iterations", args->iterations, "timed calls per size (default 20)")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", args->warmup, "untimed calls first (default 3)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--algorithm", args->algorithm,
                  "allreduce: rank-order (reduce-scatter in rank order + ring allgather; Weir's default, bitwise the "
                  "in-process world's), ring or bcube (Gloo's allreduce) (default rank-order)");
  cmd->add_option("--collective-timeout", args->timeout, "seconds each collective may wait (default 120)")
      ->check(CLI::Range(0.1, 86400.0));
  cmd->callback([args] { comm_bench(*args); });
}

}  // namespace weir::tools
