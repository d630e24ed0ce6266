// Strategy files (frontend/strategy/strategy_file.h): Fleet's field names
// set the Strategy, fields left out keep the base's values, and every bad
// file is refused naming the file and the field.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "frontend/strategy/strategy_file.h"
#include "tests/test_util.h"

namespace weir {
namespace {

std::string refusal(const std::string& json) {
  try {
    parse_strategy_json(json, "s.json");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("s.json"), std::string::npos) << e.what();
    return e.what();
  }
  return "accepted";
}

TEST(StrategyFile, FleetFieldNamesSetTheStrategy) {
  const Strategy strategy = parse_strategy_json(R"({
      "amp": true, "amp_configs": {"dtype": "fp16", "custom_black_list": ["Softmax"], "init_loss_scaling": 1024},
      "recompute": true, "recompute_configs": {"checkpoints": ["h1", "h2"]},
      "fuse_all_reduce_ops": true, "fuse_grad_size_in_MB": 16, "first_bucket_MB": 0.5,
      "nccl_comm_num": 2, "fp16_allreduce": true,
      "use_hierarchical_allreduce": true, "hierarchical_allreduce_inter_nranks": 4})",
                                                "s.json");
  EXPECT_TRUE(strategy.amp.enabled);
  EXPECT_EQ(strategy.amp.dtype, DType::kFloat16);
  EXPECT_EQ(strategy.amp.deny, (std::set<std::string>{"Softmax"}));
  EXPECT_EQ(strategy.amp.initial_scale, 1024);
  EXPECT_EQ(strategy.recompute.mode, RecomputeMode::kCheckpoints);
  EXPECT_EQ(strategy.recompute.checkpoints, (std::vector<std::string>{"h1", "h2"}));
  const GradientCommunicationStrategy& comm = strategy.communication;
  EXPECT_TRUE(comm.fuse_all_reduce_ops);
  EXPECT_EQ(comm.fuse_grad_size_in_MB, 16);
  EXPECT_EQ(comm.first_bucket_MB, 0.5);
  EXPECT_EQ(comm.comm_streams, 2);
  EXPECT_EQ(comm.allreduce_dtype, DType::kFloat16);
  EXPECT_TRUE(comm.use_hierarchical_allreduce);
  EXPECT_EQ(comm.hierarchical_allreduce_inter_nranks, 4);

  // Weir's own names; recompute without checkpoints chooses them.
  const Strategy weir = parse_strategy_json(
      R"({"recompute": true, "recompute_configs": {"memory_budget": "64M"}, "comm_streams": 3,
          "allreduce_dtype": "bf16", "two_d_allreduce_rows": 2, "fuse_all_reduce_ops": false,
          "overlap_communication": false})",
      "s.json");
  EXPECT_EQ(weir.recompute.mode, RecomputeMode::kAuto);
  EXPECT_EQ(weir.recompute.memory_budget, int64_t{64} << 20);
  EXPECT_EQ(weir.communication.comm_streams, 3);
  EXPECT_EQ(weir.communication.allreduce_dtype, DType::kBFloat16);
  EXPECT_EQ(weir.communication.two_d_allreduce_rows, 2);
  EXPECT_FALSE(weir.communication.fuse_all_reduce_ops);
  EXPECT_FALSE(weir.communication.overlap_communication);

  const Strategy merge =
      parse_strategy_json(R"({"gradient_merge": true, "gradient_merge_configs": {"k_steps": 4, "avg": false}})", "s.json");
  EXPECT_TRUE(merge.gradient_merge.enabled);
  EXPECT_EQ(merge.gradient_merge.k_steps, 4);
  EXPECT_FALSE(merge.gradient_merge.avg);

  const Strategy dgc = parse_strategy_json(
      R"({"dgc": true, "dgc_configs": {"rampup_begin_step": 5, "rampup_step": 100,
          "sparsity": [0.75, 0.9375, 0.984375, 0.996, 0.999], "clip_norm": 2.5}})",
      "s.json");
  EXPECT_TRUE(dgc.dgc.enabled);
  EXPECT_EQ(dgc.dgc.rampup_begin_step, 5);
  EXPECT_EQ(dgc.dgc.rampup_step, 100);
  EXPECT_EQ(dgc.dgc.sparsity, (std::vector<double>{0.75, 0.9375, 0.984375, 0.996, 0.999}));
  EXPECT_EQ(dgc.dgc.clip_norm, 2.5);
  const Strategy local = parse_strategy_json(R"({"localsgd": true, "localsgd_configs": {"k_steps": 4, "begin_step": 10}})", "s.json");
  EXPECT_TRUE(local.localsgd.enabled);
  EXPECT_FALSE(local.localsgd.adaptive);
  EXPECT_EQ(local.localsgd.k_steps, 4);
  EXPECT_EQ(local.localsgd.begin_step, 10);
  const Strategy adaptive = parse_strategy_json(
      R"({"adaptive_localsgd": true, "adaptive_localsgd_configs": {"init_k_steps": 3, "begin_step": 2}})", "s.json");
  EXPECT_TRUE(adaptive.localsgd.enabled);
  EXPECT_TRUE(adaptive.localsgd.adaptive);
  EXPECT_EQ(adaptive.localsgd.init_k_steps, 3);
  EXPECT_EQ(adaptive.localsgd.begin_step, 2);
}

TEST(StrategyFile, FieldsLeftOutKeepTheBase) {
  Strategy base;
  base.amp.enabled = true;
  base.data_parallel.ranks = 4;
  base.communication.comm_streams = 2;
  const Strategy strategy = parse_strategy_json(R"({"fp16_allreduce": true})", "s.json", base);
  EXPECT_TRUE(strategy.amp.enabled);
  EXPECT_EQ(strategy.data_parallel.ranks, 4);
  EXPECT_EQ(strategy.communication.comm_streams, 2);
  EXPECT_EQ(strategy.communication.allreduce_dtype, DType::kFloat16);
  const Strategy empty = parse_strategy_json("{}", "s.json");
  EXPECT_TRUE(empty.communication.fuse_all_reduce_ops);  // Fleet's defaults
  EXPECT_EQ(empty.communication.fuse_grad_size_in_MB, 32);
  EXPECT_EQ(empty.communication.first_bucket_MB, 1);
  EXPECT_FALSE(empty.gradient_merge.enabled);
  EXPECT_TRUE(empty.gradient_merge.avg);
  EXPECT_FALSE(empty.dgc.enabled);  // Fleet's defaults
  EXPECT_EQ(empty.dgc.rampup_begin_step, 0);
  EXPECT_EQ(empty.dgc.rampup_step, 1);
  EXPECT_EQ(empty.dgc.sparsity, std::vector<double>{0.999});
  EXPECT_FALSE(empty.localsgd.enabled);
  EXPECT_EQ(empty.localsgd.k_steps, 1);
  EXPECT_EQ(empty.localsgd.begin_step, 1);
  EXPECT_EQ(empty.localsgd.init_k_steps, 1);
}

TEST(StrategyFile, BadFilesNameTheFileAndTheField) {
  EXPECT_NE(refusal(R"({"a_sync": true})").find("a_sync"), std::string::npos);  // the parameter server has not landed
  EXPECT_NE(refusal(R"({"localsgd": true, "adaptive_localsgd": true})").find("set one"), std::string::npos);
  EXPECT_NE(refusal(R"({"localsgd_configs": {"k_steps": 0}})").find("localsgd_configs.k_steps must be at least 1"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"adaptive_localsgd_configs": {"init_k_steps": 17}})").find("at most 16"), std::string::npos);
  EXPECT_NE(refusal(R"({"dgc_configs": {"sparsity": [0.9, 1.0]}})").find("dgc_configs.sparsity"), std::string::npos);
  EXPECT_NE(refusal(R"({"dgc_configs": {"rampup_step": 0}})").find("dgc_configs.rampup_step must be at least 1"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"comm_streams": "two"})").find("comm_streams"), std::string::npos);
  EXPECT_NE(refusal(R"({"comm_streams": 2)").find("s.json"), std::string::npos);  // malformed JSON
  EXPECT_NE(refusal(R"({"comm_streams": 0})").find("comm_streams must be 1 to 64, got 0"), std::string::npos);
  EXPECT_NE(refusal(R"({"comm_streams": 2, "nccl_comm_num": 3})").find("name the same setting"), std::string::npos);
  EXPECT_NE(refusal(R"({"fuse_grad_size_in_MB": -1})").find("fuse_grad_size_in_MB must be positive"), std::string::npos);
  EXPECT_NE(refusal(R"({"allreduce_dtype": "int8"})").find("expected f32, f16 or bf16"), std::string::npos);
  EXPECT_NE(refusal(R"({"fp16_allreduce": true, "allreduce_dtype": "bf16"})").find("set one of them"), std::string::npos);
  EXPECT_NE(refusal(R"({"use_hierarchical_allreduce": true, "two_d_allreduce_rows": 2})").find("set one"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"amp_configs": {"dtype": "int4"}})").find("amp_configs.dtype"), std::string::npos);
  EXPECT_NE(refusal(R"({"recompute_configs": {"memory_budget": "lots"}})").find("recompute_configs.memory_budget"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"gradient_merge": true, "gradient_merge_configs": {"k_steps": 0}})")
                .find("gradient_merge_configs.k_steps (micro-steps per update) must be at least 1, got 0"),
            std::string::npos);

  testing::ScratchDir dir;
  try {
    read_strategy_file((dir / "missing.json").string());
    FAIL() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "ok.json") << R"({"comm_streams": 4})";
  EXPECT_EQ(read_strategy_file((dir / "ok.json").string()).communication.comm_streams, 4);
}

}  // namespace
}  // namespace weir
