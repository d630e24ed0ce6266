// Model — a graph plus the versions and metadata saved with it.
//
//   weir::Model model;
//   model.graph = std::make_unique<weir::Graph>("mlp");
//   ... build model.graph ...
//   weir::save_model(model, "mlp.weir");           // core/model_io.h
//   weir::Model loaded = weir::load_model("mlp.weir");
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"

namespace weir {

// Version of the IR the model format encodes; bumped when a message's meaning changes.
inline constexpr int64_t kIrVersion = 1;
// Version of Weir's op set; bumped when an op's semantics change.
inline constexpr int64_t kOpsetVersion = 1;
inline constexpr const char* kWeirVersion = "0.1.0";

struct Model {
  int64_t ir_version = kIrVersion;
  int64_t opset_version = kOpsetVersion;
  std::string producer_name = "weir";
  std::string producer_version = kWeirVersion;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::unique_ptr<Graph> graph;
};

}  // namespace weir
