// Writes the seed corpora of the fuzz targets, one directory per target:
//
//   weir_fuzz_seeds OUT      # OUT/onnx_import, OUT/model_load, OUT/plan_load, OUT/npy, OUT/checkpoint, OUT/strategy,
//                            # OUT/ps_table
//
// Each seed is a valid input made by Weir's own writers from small models
// (the tests' MLP and LeNet shapes, a rich graph with every attribute kind),
// so the fuzzers start from deep inside the formats. Targets that pick a
// format by the first byte get that byte in front (model_load: 0 binary,
// 1 text; npy: 0 .npy, 1 .npz; strategy: 0 a strategy file, 1 a
// --simulate-link text; ps_table: 2·s shard s of a sparse table, 1 a dense
// slice). fuzz/run.sh adds the ONNX backend node
// tests' models to the ONNX corpus.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/model_io.h"
#include "distributed/ps/dense_table.h"
#include "distributed/ps/sparse_table.h"
#include "frontend/data/npy.h"
#include "frontend/onnx/onnx_exporter.h"
#include "frontend/train/checkpoint.h"
#include "fuzz/fuzz_models.h"
#include "fuzz/fuzz_ps_tables.h"
#include "models/zoo.h"
#include "runtime/plan.h"
#include "runtime/plan_file.h"
#include "runtime/weight_packing.h"

namespace fs = std::filesystem;

namespace {

// Copies `file` into `dir` as `name`, with `selector` (when >= 0) as its first byte.
void add_seed(const fs::path& dir, const std::string& name, const fs::path& file, int selector = -1) {
  std::string bytes = weir::read_file(file, size_t{1} << 30);
  if (selector >= 0) bytes.insert(bytes.begin(), static_cast<char>(selector));
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

weir::models::ZooOptions small_zoo() {
  weir::models::ZooOptions zoo;
  zoo.mlp_width = 8;
  zoo.image_size = 8;
  zoo.classes = 4;
  return zoo;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const fs::path out = argv[1];
    const fs::path scratch = out / "scratch";
    for (const char* target : {"onnx_import", "model_load", "plan_load", "npy", "checkpoint", "strategy", "ps_table"}) {
      fs::create_directories(out / target);
    }
    fs::create_directories(scratch);

    int index = 0;
    for (const char* name : {"mlp", "lenet"}) {
      for (bool training : {false, true}) {
        weir::models::ClassifierGraph classifier =
            weir::models::build_classifier(name, training ? 2 : 0, training, small_zoo());
        weir::Model model;
        model.graph = std::move(classifier.graph);
        const std::string stem = std::string(name) + (training ? "_train" : "_infer");
        // Inline and with external data (a .weir keeps its data file beside it).
        weir::save_model(model, scratch / (stem + ".weir"), {.external_data_threshold = SIZE_MAX});
        add_seed(out / "model_load", stem + ".weir", scratch / (stem + ".weir"), 0);
        weir::save_model(model, scratch / (stem + ".weirtxt"), {.external_data_threshold = SIZE_MAX});
        add_seed(out / "model_load", stem + ".weirtxt", scratch / (stem + ".weirtxt"), 1);
        if (!training) {
          weir::export_onnx_model(model, (scratch / (stem + ".onnx")).string());
          add_seed(out / "onnx_import", stem + ".onnx", scratch / (stem + ".onnx"));
          // Its weights packed (runtime/weight_packing.h): the seed holds the packed-constant tables too.
          std::shared_ptr<const weir::Plan> plan = weir::compile(*model.graph);
          weir::pack_weights(plan);
          weir::save_plan(*plan, scratch / (stem + ".weirplan"));
          add_seed(out / "plan_load", stem + ".weirplan", scratch / (stem + ".weirplan"));
        }
        ++index;
      }
    }

    weir::Tensor f32(weir::DType::kFloat32, {3, 4});
    for (int64_t i = 0; i < 12; ++i) f32.data<float>()[i] = static_cast<float>(i) * 0.5f;
    weir::Tensor i64(weir::DType::kInt64, {5});
    for (int64_t i = 0; i < 5; ++i) i64.data<int64_t>()[i] = i - 2;
    weir::write_npy(scratch / "f32.npy", f32);
    add_seed(out / "npy", "f32.npy", scratch / "f32.npy", 0);
    weir::write_npy(scratch / "i64.npy", i64);
    add_seed(out / "npy", "i64.npy", scratch / "i64.npy", 0);
    weir::write_npz(scratch / "both.npz", {{"a", f32}, {"b", i64}});
    add_seed(out / "npy", "both.npz", scratch / "both.npz", 1);

    std::unique_ptr<weir::Session> session = weir::fuzz::small_training_session();
    weir::save_checkpoint(scratch / "ck.npz", *session, 7);
    add_seed(out / "checkpoint", "ck.npz", scratch / "ck.npz");

    // Every field of a strategy file once, and links.
    const std::pair<const char*, const char*> texts[] = {
        {"amp.json", R"({"amp": true, "amp_configs": {"dtype": "fp16", "custom_white_list": ["MatMul"],
          "use_dynamic_loss_scaling": true, "init_loss_scaling": 1024, "incr_every_n_steps": 100,
          "incr_ratio": 2, "decr_ratio": 0.5}, "recompute": true,
          "recompute_configs": {"checkpoints": ["h1"], "memory_budget": "64M"}})"},
        {"comm.json", R"({"fuse_all_reduce_ops": true, "fuse_grad_size_in_MB": 16, "first_bucket_MB": 1,
          "comm_streams": 2, "overlap_communication": true, "allreduce_dtype": "bf16",
          "use_hierarchical_allreduce": true, "hierarchical_allreduce_inter_nranks": 2,
          "gradient_merge": true, "gradient_merge_configs": {"k_steps": 4, "avg": false}})"},
        {"dgc.json", R"({"dgc": true, "dgc_configs": {"rampup_begin_step": 5, "rampup_step": 100,
          "sparsity": [0.75, 0.9375, 0.984375, 0.996, 0.999], "clip_norm": 2}})"},
        {"localsgd.json", R"({"localsgd": true, "localsgd_configs": {"k_steps": 4, "begin_step": 1},
          "adaptive_localsgd": false, "adaptive_localsgd_configs": {"init_k_steps": 2, "begin_step": 3}})"},
    };
    for (const auto& [name, text] : texts) {
      std::ofstream(scratch / name) << text;
      add_seed(out / "strategy", name, scratch / name, 0);
    }
    for (const char* link : {"1", "10,50", "0.5,1000"}) {
      std::ofstream(scratch / "link.txt") << link;
      add_seed(out / "strategy", std::string("link_") + link + ".txt", scratch / "link.txt", 1);
    }
    // Saved shards of a trained sparse table, and a dense slice.
    weir::ps::SparseTable table(weir::fuzz::fuzz_sparse_table());
    const std::vector<int64_t> ids = {1, 2, 3, 40, 500, 6000, -7, 1LL << 40};
    std::vector<float> rows(ids.size() * 3), grads(ids.size() * 3, 0.25f);
    table.pull(ids, rows.data());
    table.push(ids, grads.data(), 0.1f);
    for (int s = 0; s < weir::fuzz::fuzz_sparse_table().shard_num; ++s) {
      const std::string shard = table.save_shard(s);
      if (shard.empty()) continue;
      std::ofstream(scratch / "shard", std::ios::binary) << shard;
      add_seed(out / "ps_table", "shard-" + std::to_string(s), scratch / "shard", 2 * s);
    }
    weir::ps::DenseTable slice(weir::fuzz::fuzz_dense_table(), 5);
    const std::vector<float> gradient = {1, -1, 0.5f, 0, 2};
    slice.push(gradient.data(), 0.1f);
    std::ofstream(scratch / "dense", std::ios::binary) << slice.save();
    add_seed(out / "ps_table", "dense", scratch / "dense", 1);
    fs::remove_all(scratch);
    std::printf("weir_fuzz_seeds: wrote %d models' seeds under %s\n", index, out.c_str());
  } catch (const weir::Error& error) {
    std::fprintf(stderr, "weir_fuzz_seeds: %s\n", error.what());
    return 1;
  }
  return 0;
}
