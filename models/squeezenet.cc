#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "models/models.h"

namespace weir::models {

namespace {

Var conv_relu(GraphBuilder& b, const std::string& name, Var x, int64_t in, int64_t out, int64_t kernel, int64_t stride = 1) {
  nn::Conv2d conv(b, name, {.in_channels = in, .out_channels = out, .kernel = kernel, .stride = stride, .padding = kernel / 2});
  return nn::relu(conv(x));
}

// Fire module: a 1x1 squeeze, then 1x1 and 3x3 expands side by side.
Var fire(GraphBuilder& b, const std::string& name, Var x, int64_t in, int64_t squeeze, int64_t expand) {
  auto scope = b.scope(name);
  Var s = conv_relu(b, "squeeze", x, in, squeeze, 1);
  return nn::concat({conv_relu(b, "expand1x1", s, squeeze, expand, 1), conv_relu(b, "expand3x3", s, squeeze, expand, 3)}, 1);
}

}  // namespace

Var squeezenet(GraphBuilder& b, Var x, const SqueezenetConfig& config) {
  Var h;
  {
    auto scope = b.scope("stem");
    // SqueezeNet 1.1's stem: 3x3/2 without padding.
    nn::Conv2d conv(b, "conv", {.in_channels = config.in_channels, .out_channels = 64, .kernel = 3, .stride = 2});
    h = nn::max_pool2d(nn::relu(conv(x)), 3, 2, 0, /*ceil_mode=*/true);
  }
  h = fire(b, "fire2", h, 64, 16, 64);
  h = fire(b, "fire3", h, 128, 16, 64);
  h = nn::max_pool2d(h, 3, 2, 0, true);
  h = fire(b, "fire4", h, 128, 32, 128);
  h = fire(b, "fire5", h, 256, 32, 128);
  h = nn::max_pool2d(h, 3, 2, 0, true);
  h = fire(b, "fire6", h, 256, 48, 192);
  h = fire(b, "fire7", h, 384, 48, 192);
  h = fire(b, "fire8", h, 384, 64, 256);
  h = fire(b, "fire9", h, 512, 64, 256);
  h = nn::dropout(h, 0.5, config.training);
  // The classifier is a 1x1 conv to the classes, ReLU, then a global average.
  h = conv_relu(b, "classifier", h, 512, config.classes, 1);
  return nn::flatten(nn::global_avg_pool(h), 1);
}

}  // namespace weir::models
