#include "frontend/nn/sparse_embedding.h"

namespace weir::nn {

namespace {

const char* init_kind_name(TableInitializer::Kind kind) {
  switch (kind) {
    case TableInitializer::Kind::kZeros: return "zeros";
    case TableInitializer::Kind::kUniform: return "uniform";
    case TableInitializer::Kind::kNormal: return "normal";
  }
  return "zeros";
}

}  // namespace

SparseEmbedding::SparseEmbedding(GraphBuilder& b, const std::string& name, SparseEmbeddingOptions embedding_options)
    : table(b.scoped(name)), options(embedding_options) {
  if (options.width < 1) {
    b.fail(ErrorKind::kInvalidArgument, "sparse embedding '" + table + "': width must be positive, got " +
                                            std::to_string(options.width));
    return;
  }
  if (options.admit_after < 1) {
    b.fail(ErrorKind::kInvalidArgument, "sparse embedding '" + table + "': admit_after must be at least 1, got " +
                                            std::to_string(options.admit_after));
    return;
  }
  if (options.on_parameter_servers) return;
  if (options.vocabulary < 1) {
    b.fail(ErrorKind::kInvalidArgument, "sparse embedding '" + table +
                                            "': the local form needs the vocabulary (ids in [0, vocabulary)), got " +
                                            std::to_string(options.vocabulary));
    return;
  }
  if (options.admit_after > 1) {
    b.fail(ErrorKind::kUnsupported, "sparse embedding '" + table +
                                        "': admission (admit_after > 1) is the parameter servers'; the local form "
                                        "trains every row");
    return;
  }
  Tensor rows(DType::kFloat32, {options.vocabulary, options.width});
  float* data = rows.data<float>();
  for (int64_t id = 0; id < options.vocabulary; ++id) initial_table_row(options.init, id, data + id * options.width, options.width);
  auto scope = b.scope(name);
  weight = b.parameter("weight", std::move(rows));
}

Var SparseEmbedding::operator()(Var ids) const {
  GraphBuilder* b = ids.builder();
  if (b == nullptr) return {};
  if (!options.on_parameter_servers) {
    return weight.valid() ? b->op("Gather", {weight, ids}, {{"axis", Attribute(int64_t{0})}}) : Var();
  }
  return b->op("PsPullSparse", {ids},
               {{"table", Attribute(table)},
                {"width", Attribute(options.width)},
                {"init", Attribute(std::string(init_kind_name(options.init.kind)))},
                {"init_scale", Attribute(options.init.scale)},
                {"init_seed", Attribute(static_cast<int64_t>(options.init.seed))},
                {"admit_after", Attribute(options.admit_after)}});
}

}  // namespace weir::nn
