// Process start to first output from a compiled plan file: the model is
// optimized (level 3) and written twice, as a .weirplan with its weights
// packed for this machine's kernels and as one without (--no-pack-weights),
// then each file is run by fresh processes of this program (`--child`),
// which map the plan, make a session and run it once on seeded inputs.
//
//   build/ci/bench/weir_plan_start_bench /tmp/weir-models/resnet50.onnx [processes]
//
// The parent takes the time before posix_spawn; the child reports, on the
// same monotonic clock, when its main() began, when the plan was loaded,
// when the session was made, when the first output was there, and then the
// median of 10 more runs ("steady run"), so "start to first output" minus
// the steady run is what starting costs; and the page faults the first run
// took ("first faults": packs and buffers touched for the first time). One
// untimed process runs each file first. The page cache is warm (the files
// were just written). Figures go in docs/perf.md.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/plan_file.h"
#include "runtime/session.h"
#include "tools/graph-runner/model_optimization.h"

extern char** environ;

namespace {

long page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The child: load, session, first run; prints "main loaded session first steady" (absolute ms, steady in ms).
int child(const char* path, double main_entered) {
  std::shared_ptr<const weir::Plan> plan = weir::load_plan(path);
  double loaded = now_ms();
  weir::Session session(plan);
  double made = now_ms();
  std::map<std::string, weir::Tensor> feeds;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (const weir::Value* input : plan->graph().inputs()) {
    weir::Tensor t(input->dtype(), input->shape().sizes());
    if (t.dtype() == weir::DType::kFloat32) {
      for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = uniform(rng);
    }
    feeds[input->name()] = t;
  }
  long faults_before = page_faults();
  session.run(feeds);
  double first = now_ms();
  long first_run_faults = page_faults() - faults_before;
  std::vector<double> runs;
  for (int i = 0; i < 10; ++i) {
    double start = now_ms();
    session.run(feeds);
    runs.push_back(now_ms() - start);
  }
  std::sort(runs.begin(), runs.end());
  std::printf("%.3f %.3f %.3f %.3f %.3f %ld\n", main_entered, loaded, made, first, runs[runs.size() / 2],
              first_run_faults);
  return 0;
}

struct Sample {
  double to_first = 0, pre_main = 0, load = 0, session = 0, first_run = 0, steady = 0, faults = 0;
};

Sample spawn_child(const std::string& self, const std::filesystem::path& plan) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string plan_path = plan.string();
  std::vector<char*> argv = {const_cast<char*>(self.c_str()), const_cast<char*>("--child"), plan_path.data(), nullptr};
  double spawned = now_ms();
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("posix_spawn failed");
  }
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string line;
  char buffer[256];
  ssize_t n = 0;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) line.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  double main_entered = 0, loaded = 0, made = 0, first = 0, steady = 0, faults = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(line.c_str(), "%lf %lf %lf %lf %lf %lf", &main_entered, &loaded, &made, &first, &steady, &faults) != 6) {
    throw std::runtime_error("the child failed: " + line);
  }
  return {first - spawned, main_entered - spawned, loaded - main_entered, made - loaded, first - made, steady, faults};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  double main_entered = now_ms();
  try {
    if (argc == 3 && std::string(argv[1]) == "--child") return child(argv[2], main_entered);
    if (argc < 2) {
      std::fprintf(stderr, "usage: %s MODEL(.onnx|.weir) [processes]\n", argv[0]);
      return 2;
    }
    int processes = argc > 2 ? std::atoi(argv[2]) : 7;
    std::string self = std::filesystem::canonical("/proc/self/exe").string();
    std::filesystem::path dir = std::filesystem::temp_directory_path() / ("weir_plan_start_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    auto ops = weir::tools::make_op_set({});
    std::printf("model %s, %d processes per plan (medians; min in brackets)\n", argv[1], processes);
    std::printf("%-9s %9s %13s %9s %7s %8s %10s %8s %13s\n", "weights", "file MB", "to first out", "pre-main", "load",
                "session", "first run", "steady", "first faults");
    for (bool pack : {false, true}) {
      std::filesystem::path plan = dir / (pack ? "packed.weirplan" : "plain.weirplan");
      weir::tools::optimize_model(argv[1], plan.string(), *ops, {.opt_level = 3}, {}, pack);
      spawn_child(self, plan);  // untimed: the first process after the file was written
      std::vector<Sample> samples;
      for (int i = 0; i < processes; ++i) samples.push_back(spawn_child(self, plan));
      auto column = [&](double Sample::*field) {
        std::vector<double> values;
        for (const Sample& s : samples) values.push_back(s.*field);
        return median(values);
      };
      double best = samples[0].to_first;
      for (const Sample& s : samples) best = std::min(best, s.to_first);
      std::printf("%-9s %9.1f %7.1f (%4.1f) %9.1f %7.1f %8.1f %10.1f %8.1f %13.0f\n", pack ? "packed" : "plain",
                  static_cast<double>(std::filesystem::file_size(plan)) / 1e6, column(&Sample::to_first), best,
                  column(&Sample::pre_main), column(&Sample::load), column(&Sample::session),
                  column(&Sample::first_run), column(&Sample::steady), column(&Sample::faults));
    }
    std::filesystem::remove_all(dir);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}
