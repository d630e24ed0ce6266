// graph-runner train in a world of real processes on 127.0.0.1 (started by
// graph-runner launch, mpirun, or by hand with torchrun's and Slurm's
// variables): per-step losses against one process on the whole batch and
// against the in-process world of the same size, checkpoints across world
// sizes, a peer killed mid-training, and the rendezvous's bad settings.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "frontend/data/npy.h"
#include "tests/distributed/process_group.h"
#include "tests/tools/process_util.h"
#include "tests/tools/training_runs.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using testing::expect_close;
using testing::launch;
using testing::losses_of;
using testing::ProcessResult;

const std::string kGraphRunner = WEIR_GRAPH_RUNNER;

ProcessResult run(const std::string& command) { return testing::run_command(command); }

// 2 and 4 processes train LeNet and an MLP to the losses of one process on
// the whole batch (the same examples, summed in another order) and, bit
// for bit, to the in-process world's (the same program and reductions).
TEST(MultiProcessTraining, TwoAndFourProcessesMatchOneProcessAndTheInProcessWorld) {
  for (const std::string model : {"lenet", "mlp"}) {
    const std::string train = " train --model " + model +
                              " --data synthetic --steps 3 --batch 16 --optimizer momentum --lr 0.05 --print-losses";
    ProcessResult one = run(kGraphRunner + train);
    ASSERT_EQ(one.status, 0) << one.output;
    const std::vector<std::string> reference = losses_of(one);
    ASSERT_EQ(reference.size(), 3u) << one.output;
    for (int processes : {2, 4}) {
      const std::string what = model + " on " + std::to_string(processes) + " processes";
      ProcessResult threads = run(kGraphRunner + train + " --data-parallel " + std::to_string(processes));
      ASSERT_EQ(threads.status, 0) << threads.output;
      ProcessResult world = run(launch(processes, testing::unused_port()) + train);
      ASSERT_EQ(world.status, 0) << what << "\n" << world.output;
      expect_close(losses_of(world), reference, 1e-5, what);
      EXPECT_EQ(losses_of(world), losses_of(threads)) << what << ": not bitwise the in-process world's\n"
                                                      << world.output << "\n" << threads.output;
      EXPECT_NE(world.output.find("[rank 0] data parallel: " + std::to_string(processes) + " ranks (Gloo world of " +
                                  std::to_string(processes) + " processes"),
                std::string::npos)
          << world.output;
      EXPECT_NE(world.output.find("[rank 0] bytes_communicated_per_step: "), std::string::npos) << world.output;
      EXPECT_EQ(world.output.find("[rank 1] step"), std::string::npos) << "only rank 0 prints results\n" << world.output;
    }
  }
}

// Rank 0 alone writes the checkpoint and the model; any world size resumes
// from it, to the losses one process gets resuming its own checkpoint.
TEST(MultiProcessTraining, CheckpointsResumeOnAnyWorldSize) {
  const std::filesystem::path dir = testing::fresh_store_directory("mp_checkpoints");
  const std::string train = " train --model mlp --data synthetic --steps 2 --batch 16 --optimizer adam --lr 0.01 --print-losses";
  ProcessResult first = run(kGraphRunner + train + " --checkpoint " + (dir / "one.npz").string());
  ASSERT_EQ(first.status, 0) << first.output;
  ProcessResult resumed = run(kGraphRunner + train + " --resume " + (dir / "one.npz").string());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  const std::vector<std::string> reference = losses_of(resumed);
  ASSERT_EQ(reference.size(), 2u) << resumed.output;

  ProcessResult two = run(launch(2, testing::unused_port()) + train + " --checkpoint " + (dir / "two.npz").string() +
                          " --save " + (dir / "two.weir").string());
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "two.weir"));
  EXPECT_EQ(read_npz(dir / "two.npz").size(), read_npz(dir / "one.npz").size());
  for (int processes : {1, 2, 4}) {
    const std::string command = processes == 1 ? kGraphRunner : launch(processes, testing::unused_port());
    ProcessResult r = run(command + train + " --resume " + (dir / "two.npz").string());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("steps: 4"), std::string::npos) << r.output;
    expect_close(losses_of(r), reference, 1e-5, "resumed on " + std::to_string(processes));
  }
  std::filesystem::remove_all(dir);
}

// The same training under Open MPI's launcher (rank and size from
// OMPI_COMM_WORLD_*, rank 0's store on this host).
TEST(MultiProcessTraining, UnderMpirun) {
  if (run("command -v mpirun").status != 0) GTEST_SKIP() << "no mpirun (scripts/setup.sh installs openmpi-bin)";
  const std::string train = " train --model lenet --data synthetic --steps 3 --batch 16 --optimizer sgd --lr 0.05 --print-losses";
  ProcessResult threads = run(kGraphRunner + train + " --data-parallel 2");
  ASSERT_EQ(threads.status, 0) << threads.output;
  ProcessResult mpi = run("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun -np 2 "
                          "--oversubscribe --bind-to none -x WEIR_MASTER_PORT=" + std::to_string(testing::unused_port()) +
                          " " + kGraphRunner + train);
  ASSERT_EQ(mpi.status, 0) << mpi.output;
  EXPECT_EQ(losses_of(mpi), losses_of(threads)) << mpi.output;
  EXPECT_NE(mpi.output.find("(Open MPI)"), std::string::npos) << mpi.output;
}

// Processes started by hand with torchrun's or Slurm's variables meet too.
TEST(MultiProcessTraining, TorchrunAndSlurmVariables) {
  const std::string train = " train --model mlp --data synthetic --steps 2 --batch 16 --optimizer sgd --lr 0.05 --print-losses";
  ProcessResult threads = run(kGraphRunner + train + " --data-parallel 2");
  ASSERT_EQ(threads.status, 0) << threads.output;
  const std::string port = std::to_string(testing::unused_port());
  ProcessResult torchrun = run("(timeout 60 env RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                               port + " " + kGraphRunner + train + " > /dev/null 2>&1 &) ; RANK=0 WORLD_SIZE=2 "
                               "LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " timeout 120 " +
                               kGraphRunner + train);
  ASSERT_EQ(torchrun.status, 0) << torchrun.output;
  EXPECT_EQ(losses_of(torchrun), losses_of(threads)) << torchrun.output;
  EXPECT_NE(torchrun.output.find("(torchrun)"), std::string::npos) << torchrun.output;

  const std::string slurm = "SLURM_NTASKS=2 SLURM_NTASKS_PER_NODE=2 SLURM_NNODES=1 SLURM_NODEID=0 SLURM_NODELIST='localhost' SLURM_JOB_ID=77 "
                            "MASTER_PORT=" + std::to_string(testing::unused_port());
  ProcessResult srun = run("(timeout 60 env SLURM_PROCID=1 SLURM_LOCALID=1 " + slurm + " " + kGraphRunner + train +
                           " > /dev/null 2>&1 &) ; SLURM_PROCID=0 SLURM_LOCALID=0 " + slurm + " timeout 120 " +
                           kGraphRunner + train);
  ASSERT_EQ(srun.status, 0) << srun.output;
  EXPECT_EQ(losses_of(srun), losses_of(threads)) << srun.output;
  EXPECT_NE(srun.output.find("(Slurm)"), std::string::npos) << srun.output;
}

// The launcher running in the background, its output in a file.
struct Background {
  pid_t pid = -1;
  std::filesystem::path output;

  // `command` is one simple command (a launch), which the shell execs: the
  // process waited for is then the launcher itself, which ends only after
  // its ranks have (a shell of its own could end first, and the ranks go
  // on writing into a directory the test is removing).
  Background(const std::string& command, std::filesystem::path file) : output(std::move(file)) {
    const std::string exec_command = "exec " + command;
    pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execl("/bin/sh", "sh", "-c", exec_command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  // The exit status, or -1 if it was still running at the deadline (then killed).
  int wait(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) != pid) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return -1;
      }
      std::this_thread::sleep_for(10ms);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string text() const {
    std::ifstream in(output);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

bool wait_for_file(const std::filesystem::path& path, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// SIGKILL rank 1 of 2 mid-training, 20 times: rank 0's next collective
// fails naming rank 1, rank 0 and the launcher exit non-zero well within
// 60 s, and the checkpoint rank 0 wrote before is intact.
TEST(MultiProcessTraining, AKilledRankStopsTheOthersNamingIt) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const std::filesystem::path dir = testing::fresh_store_directory("mp_kill");
    const std::string checkpoint = (dir / "ck.npz").string();
    // Each rank writes its pid, then becomes graph-runner.
    Background job(launch(2, testing::unused_port(), "sh -c 'echo $$ > " + dir.string() +
                                                         "/pid.$WEIR_RANK; exec \"$0\" \"$@\"' " + kGraphRunner) +
                       " train --model lenet --data synthetic --steps 1000000 --batch 16 --optimizer sgd --lr 0.01 "
                       "--checkpoint " + checkpoint + " --checkpoint-every 1 --collective-timeout 50",
                   dir / "output.txt");
    // Training is under way once rank 0 has written a checkpoint.
    const bool started = wait_for_file(dir / "pid.1", 60s) && wait_for_file(checkpoint, 60s);
    if (!started) {
      job.wait(0s);
      FAIL() << "attempt " << attempt << ": training did not start\n" << job.text();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(17 * attempt % 100));  // land in different places of a step
    std::ifstream pid_file(dir / "pid.1");
    pid_t rank1 = 0;
    pid_file >> rank1;
    ASSERT_GT(rank1, 0);
    const auto killed = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(rank1, SIGKILL), 0);
    const int status = job.wait(60s);
    const auto took = std::chrono::steady_clock::now() - killed;
    const std::string output = job.text();
    EXPECT_NE(status, -1) << "attempt " << attempt << ": still running after 60 s\n" << output;
    EXPECT_NE(status, 0) << output;
    EXPECT_LT(took, 60s);
    EXPECT_NE(output.find("error: launch: rank 1 was killed by signal 9"), std::string::npos) << output;
    EXPECT_NE(output.find("launch: then rank 0 exited with status 1"), std::string::npos) << output;
    EXPECT_NE(output.find("[rank 0] error: "), std::string::npos) << output;
    EXPECT_NE(output.find("gone from the world: rank 1 (127.0.0.1:"), std::string::npos) << output;
    EXPECT_NO_THROW(read_npz(checkpoint)) << "the checkpoint written before the kill must stay readable";
    std::filesystem::remove_all(dir);
    if (::testing::Test::HasFailure()) break;
  }
}

// Each bad setting of a world is a clear error naming it, in bounded time.
TEST(MultiProcessTraining, BadWorldSettingsNameTheSetting) {
  const std::string train = " train --model mlp --data synthetic --steps 1 --batch 16 --collective-timeout 2";
  auto env = [](int rank, int size, int port) {
    return "WEIR_RANK=" + std::to_string(rank) + " WEIR_WORLD_SIZE=" + std::to_string(size) +
           " WEIR_MASTER_ADDR=127.0.0.1 WEIR_MASTER_PORT=" + std::to_string(port) + " ";
  };
  auto start = std::chrono::steady_clock::now();
  // Unreachable master: rank 1 with no rank 0 serving.
  int port = testing::unused_port();
  ProcessResult r = run(env(1, 2, port) + kGraphRunner + train);
  testing::expect_cli_error(r, "cannot reach the rendezvous store at 127.0.0.1:" + std::to_string(port));
  // A rank out of its world.
  r = run(env(2, 2, port) + kGraphRunner + train);
  testing::expect_cli_error(r, "WEIR_RANK");
  // Rank 0 cannot serve the store: its port is taken.
  testing::MuteListener taken;
  r = run(env(0, 2, taken.port()) + kGraphRunner + train);
  testing::expect_cli_error(r, "port " + std::to_string(taken.port()));
  // A store that accepts connections and never answers.
  r = run(env(1, 2, taken.port()) + kGraphRunner + train);
  testing::expect_cli_error(r, "127.0.0.1:" + std::to_string(taken.port()));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);

  // Ranks started with different world sizes.
  port = testing::unused_port();
  r = run("(timeout 60 env " + env(1, 3, port) + kGraphRunner + train + " > /dev/null 2>&1 &); " + env(0, 2, port) + kGraphRunner + train);
  testing::expect_cli_error(r, "the ranks disagree on the world size: rank 0 was started in a world of 2, rank 1 in a world of 3");

  // A second job in the namespace of a running one.
  const std::filesystem::path dir = testing::fresh_store_directory("mp_two_jobs");
  port = testing::unused_port();
  Background first(launch(2, port) + " train --model mlp --data synthetic --steps 1000000 --batch 16 --checkpoint " +
                       (dir / "ck.npz").string() + " --checkpoint-every 1",
                   dir / "output.txt");
  ASSERT_TRUE(wait_for_file(dir / "ck.npz", 60s)) << first.text();
  r = run(env(1, 2, port) + kGraphRunner + train);
  testing::expect_cli_error(r, "rank 1 of job 'weir' has already joined the TCP store at 127.0.0.1:" +
                                   std::to_string(port) + ": two jobs share one store namespace");
  ::kill(-first.pid, SIGTERM);
  EXPECT_NE(first.wait(30s), -1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// comm-bench under launch: rank 0 prints one line per size and op in the
// documented format (the figures themselves are not checked); alone, it
// says to run it under a launcher.
TEST(CommBench, PrintsOneLinePerSizeUnderLaunch) {
  for (const std::string op : {"allreduce", "allgather", "reduce_scatter", "broadcast"}) {
    ProcessResult r = run(launch(2, testing::unused_port()) + " comm-bench --op " + op +
                          " --sizes 4K,64K --dtype bf16 --iterations 2");
    ASSERT_EQ(r.status, 0) << r.output;
    for (const std::string bytes : {"4096", "65536"}) {
      const std::string line = "[rank 0] " + op + " bytes=" + bytes + " ms=";
      const size_t at = r.output.find(line);
      ASSERT_NE(at, std::string::npos) << r.output;
      const std::string rest = r.output.substr(at, r.output.find('\n', at) - at);
      EXPECT_NE(rest.find(" algbw_GBps="), std::string::npos) << rest;
      EXPECT_NE(rest.find(" busbw_GBps="), std::string::npos) << rest;
    }
    EXPECT_EQ(r.output.find("[rank 1] " + op + " bytes="), std::string::npos) << r.output;
  }
  testing::expect_cli_error(run(kGraphRunner + " comm-bench"), "run it under a launcher");
  ProcessResult bad = run(launch(2, testing::unused_port()) + " comm-bench --op alltoall");
  EXPECT_NE(bad.output.find("--op 'alltoall'"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace weir
