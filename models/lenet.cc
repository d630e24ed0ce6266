#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "models/models.h"

namespace weir::models {

Var lenet(GraphBuilder& b, Var x, const LenetConfig& config) {
  nn::Conv2d conv1(b, "conv1", {.in_channels = config.in_channels, .out_channels = 32, .kernel = 5, .padding = 2});
  nn::Conv2d conv2(b, "conv2", {.in_channels = 32, .out_channels = 64, .kernel = 5, .padding = 2});
  const int64_t side = config.image_size / 4;
  nn::Linear fc1(b, "fc1", 64 * side * side, 512);
  nn::Linear fc2(b, "fc2", 512, config.classes);
  Var h = nn::max_pool2d(nn::relu(conv1(x)), 2, 2);
  h = nn::max_pool2d(nn::relu(conv2(h)), 2, 2);
  h = nn::relu(fc1(nn::flatten(h, 1)));
  return fc2(h);
}

}  // namespace weir::models
