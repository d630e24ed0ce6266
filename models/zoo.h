// The zoo by name, as whole classifier graphs: "mlp", "lenet", "resnet18",
// "resnet50", "mobilenet_v2", "squeezenet", "bert", "arcface" (a small
// convolutional backbone, a 512-d embedding and a margin head, model
// parallel over `head_ranks`: frontend/nn/margin_head.h).
//
//   weir::models::ClassifierGraph train = weir::models::build_classifier("lenet", /*batch=*/64, /*training=*/true);
//   // inputs "x" and "labels", output "loss" (mean softmax cross-entropy)
//   weir::models::ClassifierGraph infer = weir::models::build_classifier("lenet", /*batch=*/0, false);
//   // input "x" with a symbolic batch dim "N", output "logits"
//
// The same seed gives the same initial parameters in both forms, and the
// parameter names agree, so trained weights move between them by name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"

namespace weir::models {

struct ZooOptions {
  uint64_t seed = 42;
  int64_t classes = 10;
  // Image models: channels and side of the input images (Fashion-MNIST: 1, 28).
  int64_t in_channels = 1;
  int64_t image_size = 28;
  int64_t resnet_width = 64;
  // Image models standardize their input inside the graph, (x - mean) / std,
  // so saved models take plain [0, 1] pixels. Defaults: Fashion-MNIST's
  // training-set statistics. std <= 0 turns it off.
  double input_mean = 0.2860;
  double input_std = 0.3530;
  // mlp: hidden Linear+ReLU layers, their width, and dropout after each
  // (training form only; 0: none)
  int64_t mlp_layers = 1;
  int64_t mlp_width = 256;
  double mlp_dropout = 0.0;
  // bert
  int64_t layers = 2;
  int64_t hidden = 128;
  int64_t heads = 4;
  int64_t seq = 32;
  int64_t vocab = 1000;
  // arcface: the embedding width, the margin ("arcface", "cosface",
  // "softmax"), PartialFC's sample ratio, and the ranks the head's classes
  // are sharded over (the training form is then one rank's program, its
  // batch that rank's rows). The inference form holds all C centres, drawn
  // from the seed when `class_centres_in_graph`, else left for the trained
  // ones (a million classes of 512 floats are 2 GB).
  int64_t embedding = 512;
  std::string margin = "arcface";
  double sample_ratio = 1.0;
  int head_ranks = 1;
  bool class_centres_in_graph = true;
};

// A classifier whose centres each rank fills itself once its session exists
// (nn::fill_class_centres): the model-parallel head's.
struct ClassCentres {
  std::string weight;  // the parameter, [ceil(C / ranks), D] on each rank (ranks 1: [C, D])
  int64_t classes = 0;
  int ranks = 1;
  uint64_t seed = 0;
};

struct ClassifierGraph {
  std::unique_ptr<Graph> graph{};
  std::string input = "x";
  std::string labels = "labels";  // training form only
  std::string loss = "loss";      // training form only
  std::string logits = "logits";  // inference form only
  std::vector<int64_t> example_shape;  // one example's shape (without the batch dim)
  DType input_dtype = DType::kFloat32;
  std::optional<ClassCentres> class_centres{};  // training form of "arcface"
};

std::vector<std::string> zoo_names();
// batch <= 0: a symbolic batch dim "N". Throws naming the choices for an unknown name.
ClassifierGraph build_classifier(const std::string& name, int64_t batch, bool training, const ZooOptions& options = {});

}  // namespace weir::models
