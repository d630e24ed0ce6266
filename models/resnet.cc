#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "models/models.h"

namespace weir::models {

namespace {

Var conv_bn(GraphBuilder& b, const std::string& name, Var x, int64_t in, int64_t out, int64_t kernel, int64_t stride,
            bool training, bool relu) {
  nn::Conv2d conv(b, name + "_conv",
                  {.in_channels = in, .out_channels = out, .kernel = kernel, .stride = stride, .padding = kernel / 2,
                   .bias = false});
  nn::BatchNorm2d bn(b, name + "_bn", out, training);
  Var y = bn(conv(x));
  return relu ? nn::relu(y) : y;
}

// 3x3, 3x3 (ResNet-18/34).
Var basic_block(GraphBuilder& b, Var x, int64_t in, int64_t out, int64_t stride, bool training) {
  Var y = conv_bn(b, "a", x, in, out, 3, stride, training, true);
  y = conv_bn(b, "b", y, out, out, 3, 1, training, false);
  Var shortcut = (stride != 1 || in != out) ? conv_bn(b, "down", x, in, out, 1, stride, training, false) : x;
  return nn::relu(y + shortcut);
}

// 1x1 reduce, 3x3, 1x1 expand x4 (ResNet-50).
Var bottleneck(GraphBuilder& b, Var x, int64_t in, int64_t width, int64_t stride, bool training) {
  const int64_t out = width * 4;
  Var y = conv_bn(b, "a", x, in, width, 1, 1, training, true);
  y = conv_bn(b, "b", y, width, width, 3, stride, training, true);
  y = conv_bn(b, "c", y, width, out, 1, 1, training, false);
  Var shortcut = (stride != 1 || in != out) ? conv_bn(b, "down", x, in, out, 1, stride, training, false) : x;
  return nn::relu(y + shortcut);
}

}  // namespace

Var resnet(GraphBuilder& b, Var x, const ResnetConfig& config) {
  std::vector<int> blocks;
  if (config.depth == 18) {
    blocks = {2, 2, 2, 2};
  } else if (config.depth == 50) {
    blocks = {3, 4, 6, 3};
  } else {
    b.fail(ErrorKind::kInvalidArgument, "resnet: depth " + std::to_string(config.depth) + " is not 18 or 50");
    return {};
  }
  const bool bottlenecks = config.depth == 50;
  const int64_t w = config.base_width;
  Var h;
  {
    auto scope = b.scope("stem");
    h = conv_bn(b, "stem", x, config.in_channels, w, 7, 2, config.training, true);
    h = nn::max_pool2d(h, 3, 2, 1);
  }
  int64_t channels = w;
  for (size_t stage = 0; stage < blocks.size(); ++stage) {
    const int64_t width = w << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      auto scope = b.scope("layer" + std::to_string(stage + 1) + "." + std::to_string(i));
      const int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      if (bottlenecks) {
        h = bottleneck(b, h, channels, width, stride, config.training);
        channels = width * 4;
      } else {
        h = basic_block(b, h, channels, width, stride, config.training);
        channels = width;
      }
    }
  }
  h = nn::flatten(nn::global_avg_pool(h), 1);
  nn::Linear fc(b, "fc", channels, config.classes);
  return fc(h);
}

}  // namespace weir::models
