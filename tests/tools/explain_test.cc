// graph-runner explain: the step of N ranks built from a zoo model and a
// strategy, its buckets and collectives with their groups and bytes, the
// estimate and the efficiency; a saved step explained as saved; the bytes
// each rank sends halve in half precision; bad invocations name what is
// missing.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/test_util.h"
#include "tests/tools/process_util.h"

namespace weir {
namespace {

using testing::ProcessResult;
using testing::run_graph_runner;

double number_after(const std::string& output, const std::string& key) {
  const size_t at = output.find(key);
  EXPECT_NE(at, std::string::npos) << key << " missing from\n" << output;
  return at == std::string::npos ? -1 : std::stod(output.substr(at + key.size()));
}

TEST(Explain, ListsTheBucketsCollectivesAndEstimate) {
  testing::ScratchDir dir;
  std::ofstream(dir / "two_d.json") << R"({"fuse_grad_size_in_MB": 0.0625, "first_bucket_MB": 0.00390625, "two_d_allreduce_rows": 2})";
  ProcessResult r = run_graph_runner("explain --model mlp --world 4 --batch 8 --gflops 5 --bandwidth 2 --latency 10 "
                                     "--strategy " + (dir / "two_d.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("link: 2 GB/s, 10 us per message"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bucket 0: 2 gradients, "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("collective ReduceScatter 'dp/bucket0/row_reduce_scatter': groups of 2, "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("collective AllReduce 'dp/loss': world of 4, 4 B in"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bytes sent per step in groups of 2: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory: parameters "), std::string::npos) << r.output;
  EXPECT_GT(number_after(r.output, "flops_per_step: "), 0);
  const double step = number_after(r.output, "estimated_step_ms: ");
  const double efficiency = number_after(r.output, "scaling_efficiency: ");
  EXPECT_GT(step, 0);
  EXPECT_GT(efficiency, 0);
  EXPECT_LE(efficiency, 1.0);

  // The same step on one rank: no collectives, the compute alone.
  ProcessResult one = run_graph_runner("explain --model mlp --world 1 --batch 8 --gflops 5");
  ASSERT_EQ(one.status, 0) << one.output;
  EXPECT_EQ(one.output.find("collective "), std::string::npos) << one.output;
  EXPECT_LT(number_after(one.output, "estimated_step_ms: "), step);
}

TEST(Explain, HalfPrecisionCommunicationHalvesTheBytesSent) {
  testing::ScratchDir dir;
  std::ofstream(dir / "f16.json") << R"({"fp16_allreduce": true})";
  ProcessResult f32 = run_graph_runner("explain --model mlp --world 2 --gflops 5");
  ProcessResult f16 = run_graph_runner("explain --model mlp --world 2 --gflops 5 --strategy " + (dir / "f16.json").string());
  ASSERT_EQ(f32.status, 0) << f32.output;
  ASSERT_EQ(f16.status, 0) << f16.output;
  const double loss = 4;  // the loss's allreduce stays f32: 4 bytes sent on 2 ranks
  // The MLP's one bucket starts each value at 64 bytes: fc3's 10 bias
  // elements are followed by 6 f32 zeros (24 bytes) or 22 f16 ones (44).
  EXPECT_EQ((number_after(f16.output, "bytes sent per step in world of 2: ") - loss - 44) * 2,
            number_after(f32.output, "bytes sent per step in world of 2: ") - loss - 24);
}

TEST(Explain, ExplainsASavedStepAndMeasuresAZooStep) {
  testing::ScratchDir dir;
  const std::string step = (dir / "step.weir").string();
  ASSERT_EQ(run_graph_runner("train --model mlp --data synthetic --steps 1 --batch 8 --data-parallel 2 "
                             "--save-training-graph " + step).status,
            0);
  ProcessResult saved = run_graph_runner("explain " + step + " --world 2 --gflops 5");
  ASSERT_EQ(saved.status, 0) << saved.output;
  EXPECT_NE(saved.output.find("as saved, on each of 2 ranks"), std::string::npos) << saved.output;
  EXPECT_NE(saved.output.find("collective AllReduce 'dp/bucket0': world of 2"), std::string::npos) << saved.output;
  testing::expect_cli_error(run_graph_runner("explain " + step + " --world 2"), "--gflops");

  ProcessResult measured = run_graph_runner("explain --model mlp --world 2 --batch 8 --measure-steps 2 --cores-per-rank 1");
  ASSERT_EQ(measured.status, 0) << measured.output;
  EXPECT_NE(measured.output.find("one rank's step measured here, median of 2, 1 intra-op thread"), std::string::npos)
      << measured.output;
  EXPECT_GT(number_after(measured.output, "compute: "), 0);

  testing::expect_cli_error(run_graph_runner("explain --world 2"), "--model NAME");
  testing::expect_cli_error(run_graph_runner("explain --model nosuchnet --world 2 --gflops 5"), "nosuchnet");
}

}  // namespace
}  // namespace weir
