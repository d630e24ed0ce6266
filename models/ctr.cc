#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "frontend/nn/sparse_embedding.h"
#include "models/sparse_models.h"
#include "models/named_output.h"

namespace weir::models {

SparseModelGraph build_ctr(int64_t batch, const CtrConfig& config) {
  GraphBuilder b("ctr", config.seed);
  Var ids = b.input("ids", {DType::kInt64, Shape{batch, config.slots}});
  Var dense = b.input("dense", {DType::kFloat32, Shape{batch, config.dense_features}});
  Var label = b.input("label", {DType::kFloat32, Shape{batch, 1}});
  const int64_t slots = config.slots;
  Var logit;
  {
    auto scope = b.scope("ctr");
    nn::SparseEmbedding embedding(
        b, "embedding",
        {.vocabulary = config.vocabulary, .width = config.embedding,
         .init = {TableInitializer::Kind::kNormal, 0.05, config.seed + 1},
         .admit_after = config.admit_after,
         .on_parameter_servers = config.on_parameter_servers});
    nn::SparseEmbedding wide(b, "wide",
                             {.vocabulary = config.vocabulary, .width = 1,
                              .init = {TableInitializer::Kind::kZeros, 0.0, config.seed + 2},
                              .admit_after = config.admit_after,
                              .on_parameter_servers = config.on_parameter_servers});
    Var h = nn::concat({nn::reshape(embedding(ids), {batch, slots * config.embedding}), dense}, 1);
    int64_t features = slots * config.embedding + config.dense_features;
    for (size_t i = 0; i < config.hidden.size(); ++i) {
      nn::Linear fc(b, "deep" + std::to_string(i + 1), features, config.hidden[i]);
      h = nn::relu(fc(h));
      features = config.hidden[i];
    }
    nn::Linear deep_out(b, "deep_out", features, 1);
    nn::Linear wide_dense(b, "wide_dense", config.dense_features, 1);
    Var wide_ids = nn::reduce_sum(wide(ids), {1}, false);  // [batch, slots, 1] -> [batch, 1]
    logit = deep_out(h) + wide_ids + wide_dense(dense);
  }
  add_named_output(b, nn::sigmoid_cross_entropy(logit, label), "loss");
  add_named_output(b, nn::sigmoid(logit), "probability");
  SparseModelGraph result;
  result.graph = b.finish();
  result.inputs = {"ids", "dense", "label"};
  result.score = "probability";
  return result;
}

}  // namespace weir::models
