// Parameter-server training as users run it: graph-runner launch --servers
// S --workers W -- graph-runner train --model ctr|word2vec --ps MODE, real
// processes on 127.0.0.1.
//   - sync, 2 workers x 2 servers: every step's loss, averaged over the
//     workers, equals one local process on the whole batch (1e-5
//     relative), with SGD and with Adagrad;
//   - async, half-async and Geo-SGD reach the sync run's test AUC within
//     0.01 on the synthetic click log; word2vec with Geo-SGD reaches the
//     test loss of local training;
//   - a job checkpointed to the servers' files (at the end, or every N
//     steps into step directories) and resumed gives the losses of one
//     uninterrupted job; shrinking at the ends of passes
//     drops the rows no pass touched and no others;
//   - a server killed mid-training fails the job naming it; in async mode a
//     worker that dies leaves the other training to the end; no servers,
//     or unreachable ones, are CLI errors naming what is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/distributed/process_group.h"
#include "tests/test_util.h"
#include "tests/tools/process_util.h"

namespace weir {
namespace {

using testing::ProcessResult;
using testing::ScratchDir;

const std::string kGraphRunner = WEIR_GRAPH_RUNNER;

ProcessResult run_limited(const std::string& command, int limit_s = 120) {
  return testing::run_command("timeout -k 5 " + std::to_string(limit_s) + " " + command);
}

ProcessResult ps_job(const std::string& train_args, int workers = 2, int servers = 2) {
  return run_limited(kGraphRunner + " launch --servers " + std::to_string(servers) + " --workers " +
                     std::to_string(workers) + " -- " + kGraphRunner + " train " + train_args);
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// "step N loss: X" lines, by N, of the lines starting with `prefix`.
std::map<int, double> losses(const std::string& output, const std::string& prefix) {
  std::map<int, double> result;
  const std::regex line("^" + std::regex_replace(prefix, std::regex(R"([\[\]])"), R"(\$&)") +
                        R"(step (\d+) loss: ([-+0-9.eE]+)$)");
  std::istringstream lines(output);
  std::string text;
  std::smatch match;
  while (std::getline(lines, text)) {
    if (std::regex_match(text, match, line)) result[std::stoi(match[1])] = std::stod(match[2]);
  }
  return result;
}

// The value of "KEY: X" on a line starting with `prefix`; NaN when absent.
double figure(const std::string& output, const std::string& prefix, const std::string& key) {
  const size_t at = output.find(prefix + key + ": ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(output.substr(at + prefix.size() + key.size() + 2));
}

// Rank 0 of `job` said it saved the tables under `checkpoint` after each of `batches`.
void expect_saved_at(const ProcessResult& job, const std::string& checkpoint, const std::vector<int>& batches) {
  for (int at : batches) {
    EXPECT_NE(job.output.find("[rank 0] saved: tables in " + checkpoint + "/step-" + std::to_string(at) + "\n"),
              std::string::npos)
        << job.output;
  }
}

void expect_sync_equals_local(const std::string& optimizer, const std::string& lr) {
  const std::string args = "--model ctr --optimizer " + optimizer + " --lr " + lr +
                           " --batch 32 --steps 6 --ids-per-slot 40 --synthetic-examples 256 --print-losses";
  const ProcessResult local = run_limited(kGraphRunner + " train " + args);
  ASSERT_EQ(local.status, 0) << local.output;
  const ProcessResult job = ps_job(args + " --ps sync");
  ASSERT_EQ(job.status, 0) << job.output;
  const std::map<int, double> whole = losses(local.output, "");
  const std::map<int, double> rank0 = losses(job.output, "[rank 0] ");
  const std::map<int, double> rank1 = losses(job.output, "[rank 1] ");
  ASSERT_EQ(whole.size(), 6u) << local.output;
  ASSERT_EQ(rank0.size(), 6u) << job.output;
  ASSERT_EQ(rank1.size(), 6u) << job.output;
  for (const auto& [step, loss] : whole) {
    const double mean = (rank0.at(step) + rank1.at(step)) / 2;
    EXPECT_NEAR(mean, loss, 1e-5 * std::abs(loss)) << optimizer << ", step " << step << "\n" << job.output;
  }
  EXPECT_NE(whole.begin()->second, whole.rbegin()->second) << "the loss does not move: " << local.output;
}

TEST(PsTraining, SyncWithSgdEqualsOneProcessOnTheWholeBatch) { expect_sync_equals_local("sgd", "0.5"); }

TEST(PsTraining, SyncWithAdagradEqualsOneProcessOnTheWholeBatch) { expect_sync_equals_local("adagrad", "0.1"); }

TEST(PsTraining, AsyncHalfAsyncAndGeoReachTheAucOfSync) {
  const std::string args = "--model ctr --optimizer adagrad --lr 0.05 --batch 128 --epochs 1 --ids-per-slot 100 "
                           "--synthetic-examples 30000 --geo-k 10";
  // Worker 0 evaluates the model all workers trained. Sync, half-async and
  // Geo-SGD workers meet before it evaluates; async ones do not (a dead
  // worker must not stop the others), and worker 0 would evaluate whatever
  // the servers hold when it is done, the other worker's last steps still
  // to come, as many as the scheduler put it behind (up to 0.008 below
  // sync with a core busy elsewhere). Saving the tables makes them meet.
  const ScratchDir scratch;
  const std::string async_meets = " --checkpoint " + (scratch / "tables").string();
  std::map<std::string, double> auc;
  for (const std::string mode : {"sync", "async", "half-async", "geo"}) {
    const ProcessResult job = ps_job(args + " --ps " + mode + (mode == "async" ? async_meets : ""));
    ASSERT_EQ(job.status, 0) << mode << "\n" << job.output;
    auc[mode] = figure(job.output, "[rank 0] ", "test_auc");
    ASSERT_FALSE(std::isnan(auc[mode])) << job.output;
    // What the servers were given: the best AUC any model can reach here.
    EXPECT_LT(auc[mode], figure(job.output, "[rank 0] ", "best_auc")) << job.output;
  }
  std::string all;
  for (const auto& [mode, value] : auc) all += " " + mode + " " + std::to_string(value);
  EXPECT_GT(auc["sync"], 0.7) << all;  // well above chance: the model learned
  for (const std::string mode : {"async", "half-async", "geo"}) {
    EXPECT_NEAR(auc[mode], auc["sync"], 0.01) << mode << ";" << all;
  }
}

TEST(PsTraining, Word2vecWithGeoReachesTheLossOfLocalTraining) {
  const std::string args = "--model word2vec --optimizer adagrad --lr 0.2 --batch 256 --epochs 1 --vocabulary 500 "
                           "--synthetic-examples 30000";
  const ProcessResult local = run_limited(kGraphRunner + " train " + args);
  ASSERT_EQ(local.status, 0) << local.output;
  const ProcessResult geo = ps_job(args + " --ps geo --geo-k 10");
  ASSERT_EQ(geo.status, 0) << geo.output;
  const double local_loss = figure(local.output, "", "test_loss");
  const double geo_loss = figure(geo.output, "[rank 0] ", "test_loss");
  EXPECT_LT(local_loss, 0.9 * std::log(2.0) * 6) << "local training learned nothing: " << local.output;
  EXPECT_LT(geo_loss, local_loss * 1.02) << geo.output;
}

TEST(PsTraining, AServerKilledMidTrainingFailsTheJobNamingIt) {
  // Worker 1 kills server 0 a second into training (launch gives the
  // workers the servers' pids).
  const std::string train = kGraphRunner + " train --model ctr --ps sync --optimizer adagrad --lr 0.05 --batch 64 "
                            "--steps 100000 --ids-per-slot 100 --synthetic-examples 20000 --collective-timeout 5";
  const ProcessResult job = run_limited(
      kGraphRunner + " launch --servers 2 --workers 2 -- sh -c '"
      "if [ \"$WEIR_RANK\" = 1 ]; then (sleep 1; kill -9 ${WEIR_SERVER_PIDS%%,*}) & fi; exec " + train + "'",
      60);
  EXPECT_NE(job.status, 0) << job.output;
  EXPECT_NE(job.output.find("launch: parameter server 0"), std::string::npos) << job.output;
  // The workers' own errors name the server they lost.
  EXPECT_NE(job.output.find("parameter server 0 of 2"), std::string::npos) << job.output;
  EXPECT_EQ(job.output.find("terminate called"), std::string::npos) << job.output;
}

TEST(PsTraining, InAsyncModeAWorkerThatDiesLeavesTheOtherTraining) {
  // Servers and workers started by hand (launch would stop the job when a
  // worker fails): worker 1 is killed after a second, worker 0 trains on.
  const int ports[2] = {testing::unused_port(), testing::unused_port()};
  std::string endpoints, servers;
  for (int port : ports) {
    endpoints += (endpoints.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(port);
    servers += "timeout -k 5 90 " + kGraphRunner + " ps-server --port " + std::to_string(port) + " & ";
  }
  const std::string train = kGraphRunner + " train --model ctr --ps async --optimizer adagrad --lr 0.05 --batch 128 "
                            "--ids-per-slot 100 --synthetic-examples 30000 --collective-timeout 10";
  // The launcher's variables, as graph-runner launch would set them (the
  // master address is not used: parameter-server workers meet on the servers).
  const std::string env = "WEIR_WORLD_SIZE=2 WEIR_MASTER_ADDR=127.0.0.1 WEIR_MASTER_PORT=29500 WEIR_SERVER_ENDPOINTS=" +
                          endpoints;
  const ProcessResult job = testing::run_command(
      "sh -c '" + servers + " sleep 0.5; " +
      env + " WEIR_RANK=1 timeout -s KILL 1.5 " + train + " --epochs 100 > /dev/null 2>&1 & " +
      env + " WEIR_RANK=0 timeout -k 5 90 " + train + " --epochs 3; status=$?; kill %1 %2 2>/dev/null; wait; exit $status'");
  EXPECT_EQ(job.status, 0) << job.output;
  EXPECT_NE(job.output.find("test_auc: "), std::string::npos) << job.output;
}

// The jobs the checkpoint tests save and resume: 8 batches an epoch, sync.
constexpr const char* kCheckpointedJob = "--model ctr --optimizer adagrad --lr 0.1 --batch 32 --ids-per-slot 40 "
                                         "--synthetic-examples 256 --print-losses --ps sync";

TEST(PsTraining, ACheckpointedJobResumedGivesTheLossesOfOneUninterruptedJob) {
  // 8 batches an epoch: the 10 steps of the whole job cross into epoch 1,
  // and the resumed job starts at batch 6 of epoch 0.
  const ScratchDir scratch;
  const std::string checkpoint = (scratch / "tables").string();
  const std::string args = kCheckpointedJob;
  const ProcessResult whole = ps_job(args + " --steps 10");
  ASSERT_EQ(whole.status, 0) << whole.output;
  const ProcessResult first = ps_job(args + " --steps 6 --checkpoint " + checkpoint);
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("[rank 0] saved: tables in " + checkpoint), std::string::npos) << first.output;
  EXPECT_TRUE(std::filesystem::exists(scratch / "tables" / "step-6" / "worker-1.state")) << first.output;
  const ProcessResult second = ps_job(args + " --steps 4 --resume " + checkpoint);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("[rank 1] resumed: tables from " + checkpoint + "/step-6, data from batch 6"),
            std::string::npos)
      << second.output;
  for (const std::string rank : {"[rank 0] ", "[rank 1] "}) {
    const std::map<int, double> straight = losses(whole.output, rank);
    const std::map<int, double> before = losses(first.output, rank);
    const std::map<int, double> after = losses(second.output, rank);
    ASSERT_EQ(straight.size(), 10u) << whole.output;
    ASSERT_EQ(before.size(), 6u) << first.output;
    ASSERT_EQ(after.size(), 4u) << second.output;
    for (int step = 1; step <= 6; ++step) EXPECT_DOUBLE_EQ(before.at(step), straight.at(step)) << rank << step;
    // The servers' rows, dense slices and Adagrad accumulators, and where
    // each worker's data was, all came back.
    for (int step = 1; step <= 4; ++step) {
      EXPECT_NEAR(after.at(step), straight.at(6 + step), 1e-5 * std::abs(straight.at(6 + step)))
          << rank << "step " << 6 + step << "\n" << second.output;
    }
  }
}

// --checkpoint-every: every save is a step directory of its own, and
// DIR/latest names the newest whole one; the newest two are kept. Saving in
// the middle of training changes no loss, and a job resumed from the
// earlier step directory gives the uninterrupted job's losses from there.
TEST(PsTraining, CheckpointsEveryNStepsKeepTheNewestTwoAndEitherResumes) {
  const ScratchDir scratch;
  const std::string checkpoint = (scratch / "tables").string();
  const std::string args = kCheckpointedJob;
  const ProcessResult whole = ps_job(args + " --steps 10");
  ASSERT_EQ(whole.status, 0) << whole.output;
  const ProcessResult first = ps_job(args + " --steps 6 --checkpoint-every 2 --checkpoint " + checkpoint);
  ASSERT_EQ(first.status, 0) << first.output;
  expect_saved_at(first, checkpoint, {2, 4, 6});
  EXPECT_FALSE(std::filesystem::exists(scratch / "tables" / "step-2")) << "only the newest two are kept";
  EXPECT_TRUE(std::filesystem::exists(scratch / "tables" / "step-4" / "worker-1.state"));
  EXPECT_EQ(file_text(scratch / "tables" / "latest"), "step-6\n");

  const ProcessResult from_four = ps_job(args + " --steps 6 --resume " + checkpoint + "/step-4");
  ASSERT_EQ(from_four.status, 0) << from_four.output;
  EXPECT_NE(from_four.output.find("[rank 1] resumed: tables from " + checkpoint + "/step-4, data from batch 4"),
            std::string::npos)
      << from_four.output;
  const ProcessResult from_latest = ps_job(args + " --steps 4 --resume " + checkpoint);
  ASSERT_EQ(from_latest.status, 0) << from_latest.output;
  for (const std::string rank : {"[rank 0] ", "[rank 1] "}) {
    const std::map<int, double> straight = losses(whole.output, rank);
    const std::map<int, double> saving = losses(first.output, rank);
    const std::map<int, double> after_four = losses(from_four.output, rank);
    const std::map<int, double> after_six = losses(from_latest.output, rank);
    ASSERT_EQ(straight.size(), 10u) << whole.output;
    ASSERT_EQ(saving.size(), 6u) << first.output;
    ASSERT_EQ(after_four.size(), 6u) << from_four.output;
    ASSERT_EQ(after_six.size(), 4u) << from_latest.output;
    for (int step = 1; step <= 6; ++step) EXPECT_DOUBLE_EQ(saving.at(step), straight.at(step)) << rank << step;
    for (int step = 1; step <= 6; ++step) {
      EXPECT_NEAR(after_four.at(step), straight.at(4 + step), 1e-5 * std::abs(straight.at(4 + step))) << rank << step;
    }
    for (int step = 1; step <= 4; ++step) {
      EXPECT_NEAR(after_six.at(step), straight.at(6 + step), 1e-5 * std::abs(straight.at(6 + step))) << rank << step;
    }
  }
  // A job that would write over a later checkpoint (started anew, or from
  // step-4, into the same directory) is refused before it trains.
  const ProcessResult over = ps_job(args + " --steps 2 --resume " + checkpoint + "/step-4 --checkpoint " + checkpoint);
  EXPECT_NE(over.status, 0) << over.output;
  EXPECT_NE(over.output.find("checkpoint directory " + checkpoint + " holds a checkpoint at batch 6 (step-6), past "
                             "batch 4 where this job starts"),
            std::string::npos)
      << over.output;
  EXPECT_EQ(file_text(scratch / "tables" / "latest"), "step-6\n") << "nothing was written";

  // In async mode the workers also meet after each save, so no push lands
  // while the servers write.
  const ProcessResult async = ps_job("--model ctr --optimizer adagrad --lr 0.1 --batch 32 --ids-per-slot 40 "
                                     "--synthetic-examples 256 --ps async --steps 4 --checkpoint-every 2 "
                                     "--checkpoint " + (scratch / "async").string());
  ASSERT_EQ(async.status, 0) << async.output;
  EXPECT_EQ(file_text(scratch / "async" / "latest"), "step-4\n");

  // A latest that names no step directory is an error naming it.
  std::filesystem::create_directories(scratch / "broken");
  std::ofstream(scratch / "broken" / "latest") << "step-99\n";
  const ProcessResult broken = run_limited(kGraphRunner + " launch --servers 1 --workers 1 -- " + kGraphRunner +
                                           " train --model ctr --ps sync --steps 1 --ids-per-slot 10 "
                                           "--synthetic-examples 64 --resume " + (scratch / "broken").string());
  EXPECT_NE(broken.status, 0) << broken.output;
  EXPECT_NE(broken.output.find("expected the name of a step-B directory beside it, got 'step-99'"), std::string::npos)
      << broken.output;
  EXPECT_NE(broken.output.find((scratch / "broken" / "latest").string()), std::string::npos) << broken.output;
}

// Outside sync mode a worker trains without waiting for the others: worker
// 1 here saves step-2 before worker 0, 3 s late, has started. Every worker
// looks at the checkpoint directory before any saves in it, so worker 0
// does not take its own job's step-2 for another job's newer checkpoint.
TEST(PsTraining, AWorkerThatStartsLateSavesWithTheOthers) {
  const ScratchDir scratch;
  const std::string checkpoint = (scratch / "late").string();
  const ProcessResult job = run_limited(
      kGraphRunner + " launch --servers 2 --workers 2 -- sh -c '[ \"$WEIR_RANK\" = 0 ] && sleep 3; exec " + kGraphRunner +
      " train --model ctr --optimizer adagrad --lr 0.1 --batch 32 --ids-per-slot 40 --synthetic-examples 256 "
      "--ps async --steps 4 --checkpoint-every 2 --checkpoint " + checkpoint + "'");
  ASSERT_EQ(job.status, 0) << job.output;
  EXPECT_NE(job.output.find("[rank 0] saved: tables in " + checkpoint + "/step-2\n"), std::string::npos) << job.output;
  EXPECT_EQ(file_text(scratch / "late" / "latest"), "step-4\n");
}

// Hogwild threads stop together at every save point: each step directory
// holds exactly the batches before it, also where a save point and an
// epoch's end meet (8 batches an epoch here: saves at 4 and 8, then 12),
// and a job resumed from one goes on from there.
TEST(PsTraining, HogwildThreadsCheckpointEveryNStepsAtCommonSteps) {
  const ScratchDir scratch;
  const std::string checkpoint = (scratch / "tables").string();
  const std::string args = "--model ctr --optimizer adagrad --lr 0.1 --batch 32 --ids-per-slot 40 "
                           "--synthetic-examples 256 --ps async --trainer-threads 2 ";
  const ProcessResult first = ps_job(args + "--steps 12 --checkpoint-every 4 --checkpoint " + checkpoint);
  ASSERT_EQ(first.status, 0) << first.output;
  expect_saved_at(first, checkpoint, {4, 8, 12});
  for (const std::string rank : {"[rank 0] ", "[rank 1] "}) EXPECT_EQ(figure(first.output, rank, "steps"), 12) << first.output;
  EXPECT_EQ(file_text(scratch / "tables" / "step-8" / "worker-0.state"), "batches_trained 8\n");
  EXPECT_EQ(file_text(scratch / "tables" / "step-8" / "worker-1.state"), "batches_trained 8\n");
  EXPECT_EQ(file_text(scratch / "tables" / "latest"), "step-12\n");

  const ProcessResult resumed = ps_job(args + "--steps 3 --resume " + checkpoint + "/step-8");
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("[rank 1] resumed: tables from " + checkpoint + "/step-8, data from batch 8"),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(figure(resumed.output, "[rank 0] ", "steps"), 3) << resumed.output;
}

TEST(PsTraining, ShrinkingDropsOnlyTheRowsNoPassTouched) {
  // Two passes over the same log touch the same ids: nothing to drop.
  const std::string args = "--model ctr --optimizer adagrad --lr 0.1 --batch 32 --synthetic-examples 256 "
                           "--ps async --shrink-after-passes 1";
  const ProcessResult same = ps_job(args + " --ids-per-slot 1000 --epochs 2");
  ASSERT_EQ(same.status, 0) << same.output;
  EXPECT_EQ(figure(same.output, "[rank 0] ", "rows_dropped"), 0) << same.output;
  // Resumed on a log of other ids, the first job's rows go at the end of
  // the first pass that does not touch them.
  const ScratchDir scratch;
  const std::string checkpoint = (scratch / "tables").string();
  const ProcessResult first = ps_job(args + " --ids-per-slot 1000 --epochs 1 --checkpoint " + checkpoint);
  ASSERT_EQ(first.status, 0) << first.output;
  const ProcessResult second = ps_job(args + " --ids-per-slot 3 --epochs 1 --resume " + checkpoint);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_GT(figure(second.output, "[rank 0] ", "rows_dropped"), 100) << second.output;
  EXPECT_FALSE(std::isnan(figure(second.output, "[rank 0] ", "test_auc"))) << second.output;
}

TEST(PsTraining, NoServersOrUnreachableOnesAreCliErrors) {
  testing::expect_cli_error(testing::run_command("env -u WEIR_SERVER_ENDPOINTS " + kGraphRunner +
                                                 " train --model ctr --ps sync --steps 1 --ids-per-slot 10 "
                                                 "--synthetic-examples 64"),
                            "WEIR_SERVER_ENDPOINTS");
  const std::string nobody = "127.0.0.1:" + std::to_string(testing::unused_port());
  testing::expect_cli_error(testing::run_command("WEIR_SERVER_ENDPOINTS=" + nobody + " timeout 30 " + kGraphRunner +
                                                 " train --model ctr --ps async --steps 1 --ids-per-slot 10 "
                                                 "--synthetic-examples 64 --collective-timeout 1"),
                            nobody);
  testing::expect_cli_error(testing::run_graph_runner("train --model ctr --ps sometimes --steps 1"), "sometimes");
  testing::expect_cli_error(testing::run_graph_runner("train --model lenet --ps sync --steps 1"), "--ps");
  testing::expect_cli_error(testing::run_graph_runner("train --model ctr --trainer-threads 2 --steps 1 "
                                                      "--ids-per-slot 10 --synthetic-examples 64"),
                            "--trainer-threads");
  testing::expect_cli_error(testing::run_graph_runner("train --model ctr --batch 64 --steps 1 --ids-per-slot 10 "
                                                      "--synthetic-examples 40"),
                            "examples make no whole batch of 64");
  testing::expect_cli_error(testing::run_graph_runner("train --model ctr --checkpoint /tmp/x --steps 1 "
                                                      "--ids-per-slot 10 --synthetic-examples 64"),
                            "without --ps");
  const ScratchDir empty;
  const ProcessResult nothing_saved = run_limited(kGraphRunner + " launch --servers 1 --workers 1 -- " + kGraphRunner +
                                                  " train --model ctr --ps sync --steps 1 --ids-per-slot 10 "
                                                  "--synthetic-examples 64 --resume " + empty.path().string());
  EXPECT_NE(nothing_saved.status, 0) << nothing_saved.output;
  EXPECT_NE(nothing_saved.output.find("[rank 0] error: file '" + (empty / "worker-0.state").string() + "'"),
            std::string::npos)
      << nothing_saved.output;
}

}  // namespace
}  // namespace weir
