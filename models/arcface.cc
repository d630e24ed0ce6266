#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "models/models.h"

namespace weir::models {

Var arcface_embedding(GraphBuilder& b, Var x, const ArcfaceConfig& config) {
  nn::Conv2d conv1(b, "conv1", {.in_channels = config.in_channels, .out_channels = 32, .kernel = 3, .padding = 1});
  nn::Conv2d conv2(b, "conv2", {.in_channels = 32, .out_channels = 64, .kernel = 3, .padding = 1});
  const int64_t side = config.image_size / 4;
  nn::Linear embedding(b, "embedding", 64 * side * side, config.embedding);
  Var h = nn::max_pool2d(nn::relu(conv1(x)), 2, 2);
  h = nn::max_pool2d(nn::relu(conv2(h)), 2, 2);
  return embedding(nn::flatten(h, 1));
}

}  // namespace weir::models
