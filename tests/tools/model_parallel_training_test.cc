// The zoo's arcface, its margin head's 101 classes sharded over real
// processes on 127.0.0.1 (graph-runner launch, Gloo) and over an
// in-process world, against one rank holding the whole head: the first 20
// steps' losses within 1e-5 relative, the trained model's accuracy on the
// held-out synthetic set the same (within 0.2%: see below), the saved model's weights (the centres
// gathered from every rank) the same within rounding, rank 0's head
// memory falling with the ranks, and checkpoints that hold the whole head
// and resume on any world size.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/model_io.h"
#include "frontend/data/npy.h"
#include "tests/distributed/process_group.h"
#include "tests/test_util.h"
#include "tests/tools/process_util.h"
#include "tests/tools/training_runs.h"

namespace weir {
namespace {

using testing::launch;
using testing::losses_of;
using testing::ProcessResult;

const std::string kGraphRunner = WEIR_GRAPH_RUNNER;
// 101 classes: divisible by none of 2, 3 and 4. Adam trains ArcFace's s = 64
// head steadily; 200 steps reach full accuracy on the synthetic set.
constexpr const char* kArcface =
    " train --model arcface --data synthetic --classes 101 --batch 36 --optimizer adam --lr 0.001 --image-size 16 "
    "--synthetic-examples 7200 --print-losses";

// The value of rank 0's "NAME: X" result line.
std::string result_line(const ProcessResult& r, const std::string& name) {
  for (const std::string& prefix : {std::string("[rank 0] "), std::string()}) {
    const size_t at = r.output.find("\n" + prefix + name + ": ");
    if (at != std::string::npos) {
      const size_t start = at + 1 + prefix.size() + name.size() + 2;
      return r.output.substr(start, r.output.find('\n', start) - start);
    }
  }
  ADD_FAILURE() << "no '" << name << "' line in:\n" << r.output;
  return "";
}

std::vector<std::string> first(const std::vector<std::string>& losses, size_t n) {
  return {losses.begin(), losses.begin() + static_cast<std::ptrdiff_t>(std::min(n, losses.size()))};
}

TEST(ModelParallelTraining, ArcfaceOnProcessesTrainsLikeOneRank) {
  const std::string args = std::string(kArcface) + " --steps 200";
  const ProcessResult one = testing::run_command(kGraphRunner + args);
  ASSERT_EQ(one.status, 0) << one.output;
  ASSERT_EQ(losses_of(one).size(), 200u) << one.output;
  EXPECT_NE(one.output.find("margin head: arcface, 101 classes x 512, one rank"), std::string::npos) << one.output;
  const std::string accuracy = result_line(one, "test_accuracy");
  EXPECT_GE(std::stod(accuracy), 0.9);  // the synthetic set is learnable
  const long long one_rank_head = std::stoll(result_line(one, "head_state_bytes"));
  EXPECT_EQ(one_rank_head, 3LL * 101 * 512 * 4);  // the centres and Adam's two moments

  struct World {
    std::string program;  // graph-runner, launched or not
    std::string extra;
    int ranks;
    int64_t rows;  // ceil(101 / ranks)
  };
  const std::vector<World> worlds = {{launch(2, testing::unused_port()), "", 2, 51},
                                     {launch(4, testing::unused_port()), "", 4, 26},
                                     {kGraphRunner, " --data-parallel 3", 3, 34}};
  for (const World& world : worlds) {
    const ProcessResult run = testing::run_command(world.program + args + world.extra);
    ASSERT_EQ(run.status, 0) << run.output;
    const std::string what = std::to_string(world.ranks) + " ranks";
    EXPECT_NE(run.output.find("model parallel over " + std::to_string(world.ranks) + " ranks, " +
                              std::to_string(world.rows) + " rows each"),
              std::string::npos)
        << run.output;
    testing::expect_close(first(losses_of(run), 20), first(losses_of(one), 20), 1e-5, what);
    // After 200 steps the trajectories have parted by rounding (an s = 64
    // loss amplifies it: 2e-7 apart at step 20); the accuracies differ by
    // at most a few of the 1800 held-out examples (one, when written).
    EXPECT_NEAR(std::stod(result_line(run, "test_accuracy")), std::stod(accuracy), 0.002) << what;
    // Rank 0 holds its rows of the centres and their moments: 1/N of them, padded.
    EXPECT_EQ(std::stoll(result_line(run, "head_state_bytes")), 3LL * world.rows * 512 * 4) << what;
  }
}

TEST(ModelParallelTraining, SavedCentresAreGatheredFromEveryProcess) {
  testing::ScratchDir dir;
  const std::string args = std::string(kArcface) + " --steps 20 --save ";
  const ProcessResult one = testing::run_command(kGraphRunner + args + (dir / "one.weir").string());
  ASSERT_EQ(one.status, 0) << one.output;
  const ProcessResult two = testing::run_command(launch(2, testing::unused_port()) + args + (dir / "two.weir").string());
  ASSERT_EQ(two.status, 0) << two.output;
  Model a = load_model(dir / "one.weir");
  Model b = load_model(dir / "two.weir");
  int compared = 0;
  for (const Value* value : a.graph->persistents()) {
    const Value* other = b.graph->find_value(value->name());
    ASSERT_NE(other, nullptr) << value->name();
    ASSERT_EQ(value->data().sizes(), other->data().sizes()) << value->name();
    EXPECT_LT(testing::relative_l2(value->data(), other->data()), 1e-5) << value->name();
    compared += value->name() == "head/weight" ? 1 : 0;
  }
  EXPECT_EQ(compared, 1);
  EXPECT_EQ(a.graph->find_value("head/weight")->data().sizes(), (std::vector<int64_t>{101, 512}));
}

// The checkpoint of a sharded head holds it whole, as one rank's does: the
// centres and their moments [101, 512], gathered from every rank. It
// resumes on any world size, and the resumed steps' losses are the
// straight one-rank run's.
TEST(ModelParallelTraining, CheckpointsHoldTheWholeHeadAndResumeOnAnyWorldSize) {
  testing::ScratchDir dir;
  const std::string one_npz = (dir / "one.npz").string(), two_npz = (dir / "two.npz").string();
  const ProcessResult straight = testing::run_command(kGraphRunner + kArcface + " --steps 20");
  ASSERT_EQ(straight.status, 0) << straight.output;
  const std::vector<std::string> all = losses_of(straight);
  ASSERT_EQ(all.size(), 20u) << straight.output;
  const std::vector<std::string> rest(all.begin() + 10, all.end());  // steps 11 to 20
  const ProcessResult one = testing::run_command(kGraphRunner + kArcface + " --steps 10 --checkpoint " + one_npz);
  ASSERT_EQ(one.status, 0) << one.output;
  // Every 4 steps and at the end: the ranks meet for each save.
  const ProcessResult two = testing::run_command(launch(2, testing::unused_port()) + kArcface +
                                                 " --steps 10 --checkpoint-every 4 --checkpoint " + two_npz);
  ASSERT_EQ(two.status, 0) << two.output;
  const std::map<std::string, Tensor> a = read_npz(one_npz);
  const std::map<std::string, Tensor> b = read_npz(two_npz);
  ASSERT_EQ(a.size(), b.size());
  int head = 0;
  for (const auto& [name, value] : a) {
    ASSERT_EQ(b.count(name), 1u) << name;
    const Tensor& other = b.at(name);
    ASSERT_EQ(value.sizes(), other.sizes()) << name;
    if (value.dtype() == DType::kInt64) {
      EXPECT_TRUE(value.bitwise_equal(other)) << name;  // the step and the RNG state
    } else {
      EXPECT_LT(testing::relative_l2(value, other), 1e-5) << name;
    }
    if (name.starts_with("head/weight")) {
      EXPECT_EQ(value.sizes(), (std::vector<int64_t>{101, 512})) << name;
      ++head;
    }
  }
  EXPECT_EQ(head, 3);  // the centres and Adam's two moments

  struct Resume {
    std::string program, extra, checkpoint, what;
  };
  const std::vector<Resume> resumes = {
      {kGraphRunner, " --data-parallel 3", two_npz, "two processes' checkpoint on 3 in-process ranks"},
      {kGraphRunner, "", two_npz, "two processes' checkpoint on one rank"},
      {launch(2, testing::unused_port()), "", one_npz, "one rank's checkpoint on two processes"}};
  for (const Resume& resume : resumes) {
    const ProcessResult run =
        testing::run_command(resume.program + kArcface + " --steps 10 --resume " + resume.checkpoint + resume.extra);
    ASSERT_EQ(run.status, 0) << resume.what << "\n" << run.output;
    testing::expect_close(losses_of(run), rest, 1e-5, resume.what);
  }
  // A checkpoint of another head is refused naming the value, the rows this
  // rank holds and the file.
  testing::expect_cli_error(
      testing::run_graph_runner("train --model arcface --data synthetic --classes 103 --batch 36 --optimizer adam "
                                "--image-size 16 --steps 1 --data-parallel 2 --resume " + one_npz),
      "checkpoint value 'head/weight' is f32[101,512]; this rank holds 52 of its rows, so it must be f32[103,512]");
}

// A saved training graph of the one-rank head carries its centres (a
// session fills them only after it starts), so train --graph starts from
// them: with zeros every cosine was 0/0 and every loss NaN.
TEST(ModelParallelTraining, ASavedTrainingGraphCarriesTheCentres) {
  testing::ScratchDir dir;
  const std::string step = (dir / "step.weir").string();
  const ProcessResult saved = testing::run_command(kGraphRunner + kArcface + " --steps 1 --save-training-graph " + step);
  ASSERT_EQ(saved.status, 0) << saved.output;
  Model model = load_model(step);
  const Value* centres = model.graph->find_value("head/weight");
  ASSERT_NE(centres, nullptr);
  ASSERT_TRUE(centres->data().defined());
  EXPECT_EQ(centres->data().sizes(), (std::vector<int64_t>{101, 512}));
  const ProcessResult trained =
      testing::run_command(kGraphRunner + " train --graph " + step + " --data synthetic --steps 3 --print-losses");
  ASSERT_EQ(trained.status, 0) << trained.output;
  const std::vector<std::string> losses = losses_of(trained);
  ASSERT_EQ(losses.size(), 3u) << trained.output;
  for (const std::string& loss : losses) EXPECT_TRUE(std::isfinite(std::stod(loss))) << trained.output;
}

TEST(ModelParallelTraining, BadRequestsAreClearErrors) {
  testing::expect_cli_error(testing::run_graph_runner("train --model lenet --margin cosface --data synthetic --steps 1"),
                            "--margin and --sample-ratio shape the margin head of --model arcface");
  testing::expect_cli_error(testing::run_graph_runner("train --model arcface --margin sphereface --data synthetic --steps 1"),
                            "unknown margin 'sphereface' (arcface, cosface or softmax)");
  testing::expect_cli_error(testing::run_graph_runner("train --model arcface --classes 3 --data synthetic --steps 1 "
                                                      "--batch 4 --data-parallel 4"),
                            "3 classes cannot be sharded over 4 ranks");
  // One saved graph cannot carry every rank's own rows of the centres.
  testing::ScratchDir dir;
  testing::expect_cli_error(testing::run_graph_runner("train --model arcface --data synthetic --steps 1 --batch 4 "
                                                      "--data-parallel 2 --save-training-graph " +
                                                      (dir / "step.weir").string()),
                            "--save-training-graph with --model arcface on 2 ranks");
}

}  // namespace
}  // namespace weir
