// SparseEmbedding — rows of a table keyed by int64 ids, of which each step
// reads and trains only the rows its batch names (recommendation models'
// categorical features, word2vec's words). Two forms that train alike:
//
//   on parameter servers: a PsPullSparse node; the table lives on the
//     servers, any int64 id is a key, a row is created on first touch
//     (or at its admit_after-th lookup); the training step pushes the rows'
//     gradients back (passes/training/parameter_server_updates.h);
//   local: a [vocabulary, width] parameter read by Gather, ids in
//     [0, vocabulary); row i starts as a server would start row i
//     (initial_table_row), so a local run is the reference a parameter-
//     server run is compared with.
//
//   weir::nn::SparseEmbedding emb(b, "emb", {.vocabulary = 1000, .width = 8,
//                                           .init = {weir::TableInitializer::Kind::kNormal, 0.01, 7},
//                                           .on_parameter_servers = true});
//   weir::Var rows = emb(ids);   // [..., 8]
//
// The table is named after the layer's scoped name ("ctr/emb").
#pragma once

#include <cstdint>
#include <string>

#include "core/parameter_client.h"
#include "frontend/builder/graph_builder.h"

namespace weir::nn {

struct SparseEmbeddingOptions {
  int64_t vocabulary = 0;   // local form: the table's rows; ignored on parameter servers
  int64_t width = 8;
  TableInitializer init{};
  int64_t admit_after = 1;  // parameter servers: a row is created at its N-th lookup
  bool on_parameter_servers = false;
};

class SparseEmbedding {
 public:
  SparseEmbedding(GraphBuilder& b, const std::string& name, SparseEmbeddingOptions options);
  Var operator()(Var ids) const;

  std::string table;  // the scoped name
  Var weight;         // local form only
  SparseEmbeddingOptions options;
};

}  // namespace weir::nn
