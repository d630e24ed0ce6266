#include "frontend/nn/functional.h"
#include "frontend/nn/layers.h"
#include "models/models.h"

namespace weir::models {

namespace {

Var conv_bn(GraphBuilder& b, const std::string& name, Var x, int64_t in, int64_t out, int64_t kernel, int64_t stride,
            int64_t groups, bool training, bool relu6) {
  nn::Conv2d conv(b, name + "_conv",
                  {.in_channels = in, .out_channels = out, .kernel = kernel, .stride = stride, .padding = kernel / 2,
                   .bias = false, .groups = groups});
  nn::BatchNorm2d bn(b, name + "_bn", out, training);
  Var y = bn(conv(x));
  return relu6 ? nn::relu6(y) : y;
}

// Inverted residual: 1x1 expand (skipped at expansion 1), 3x3 depthwise,
// 1x1 linear projection; a shortcut when the shape is kept.
Var inverted_residual(GraphBuilder& b, Var x, int64_t in, int64_t out, int64_t stride, int64_t expansion, bool training) {
  const int64_t hidden = in * expansion;
  Var h = x;
  if (expansion != 1) h = conv_bn(b, "expand", h, in, hidden, 1, 1, 1, training, true);
  h = conv_bn(b, "depthwise", h, hidden, hidden, 3, stride, hidden, training, true);
  h = conv_bn(b, "project", h, hidden, out, 1, 1, 1, training, false);
  return stride == 1 && in == out ? h + x : h;
}

}  // namespace

Var mobilenet_v2(GraphBuilder& b, Var x, const MobilenetConfig& config) {
  // (expansion t, channels c, repeats n, first stride s), Sandler et al. 2018, Table 2.
  const int64_t settings[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  Var h;
  {
    auto scope = b.scope("stem");
    h = conv_bn(b, "stem", x, config.in_channels, 32, 3, 2, 1, config.training, true);
  }
  int64_t channels = 32, index = 0;
  for (const auto& [t, c, n, s] : settings) {
    for (int64_t i = 0; i < n; ++i) {
      auto scope = b.scope("block" + std::to_string(index++));
      h = inverted_residual(b, h, channels, c, i == 0 ? s : 1, t, config.training);
      channels = c;
    }
  }
  {
    auto scope = b.scope("head");
    h = conv_bn(b, "head", h, channels, 1280, 1, 1, 1, config.training, true);
  }
  h = nn::flatten(nn::global_avg_pool(h), 1);
  h = nn::dropout(h, 0.2, config.training);
  nn::Linear fc(b, "fc", 1280, config.classes);
  return fc(h);
}

}  // namespace weir::models
