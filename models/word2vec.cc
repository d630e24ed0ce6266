#include "frontend/nn/functional.h"
#include "frontend/nn/sparse_embedding.h"
#include "models/named_output.h"
#include "models/sparse_models.h"

namespace weir::models {

SparseModelGraph build_word2vec(int64_t batch, const Word2vecConfig& config) {
  GraphBuilder b("word2vec", config.seed);
  const int64_t targets_per_word = 1 + config.negatives;
  Var centres = b.input("centres", {DType::kInt64, Shape{batch}});
  Var targets = b.input("targets", {DType::kInt64, Shape{batch, targets_per_word}});
  Var labels = b.input("labels", {DType::kFloat32, Shape{batch, targets_per_word}});
  Var loss;
  {
    auto scope = b.scope("word2vec");
    // word2vec's own start: input rows small and random, output rows zero.
    nn::SparseEmbedding input(b, "input",
                              {.vocabulary = config.vocabulary, .width = config.dim,
                               .init = {TableInitializer::Kind::kUniform, 0.5 / static_cast<double>(config.dim), config.seed + 1},
                               .admit_after = config.admit_after,
                               .on_parameter_servers = config.on_parameter_servers});
    nn::SparseEmbedding output(b, "output",
                               {.vocabulary = config.vocabulary, .width = config.dim,
                                .init = {TableInitializer::Kind::kZeros, 0.0, config.seed + 2},
                                .admit_after = config.admit_after,
                                .on_parameter_servers = config.on_parameter_servers});
    Var centre_rows = nn::reshape(input(centres), {batch, 1, config.dim});
    Var scores = nn::reduce_sum(centre_rows * output(targets), {2}, false);  // [batch, 1 + k]
    loss = nn::sigmoid_cross_entropy(scores, labels) * static_cast<double>(targets_per_word);
  }
  add_named_output(b, loss, "loss");
  SparseModelGraph result;
  result.graph = b.finish();
  result.inputs = {"centres", "targets", "labels"};
  result.score = "loss";
  return result;
}

}  // namespace weir::models
