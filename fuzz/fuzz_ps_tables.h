// The parameter-server tables the ps_table fuzz target loads into and its
// seeds are saved from: a sparse Adagrad table (rows of 3, 8 shards) and a
// dense Adagrad slice of 5 floats.
#pragma once

#include "core/parameter_client.h"

namespace weir::fuzz {

inline ParameterTableConfig fuzz_sparse_table() {
  ParameterTableConfig config;
  config.name = "emb";
  config.sparse = true;
  config.width = 3;
  config.rule = TableRule::kAdagrad;
  config.init = {TableInitializer::Kind::kUniform, 0.1, 1};
  config.shard_num = 8;
  return config;
}

inline ParameterTableConfig fuzz_dense_table() {
  ParameterTableConfig config;
  config.name = "w";
  config.width = 5;
  config.rule = TableRule::kAdagrad;
  return config;
}

}  // namespace weir::fuzz
