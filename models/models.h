// The model zoo: classifiers built with the frontend, each a function from
// an input Var to logits [batch, classes].
//
//   weir::GraphBuilder b("lenet", 42);
//   weir::Var x = b.input("x", {weir::DType::kFloat32, weir::Shape{64, 1, 28, 28}});
//   weir::Var logits = weir::models::lenet(b, x, {});
//
// `training` selects the training form of BatchNorm and Dropout.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/builder/graph_builder.h"

namespace weir::models {

struct MlpConfig {
  std::vector<int64_t> hidden = {256};  // 784-256-10
  int64_t classes = 10;
  double dropout = 0.0;  // > 0: Dropout (training) after each ReLU
};
// Flatten, then Linear+ReLU(+Dropout) per hidden size, then a Linear to the classes.
Var mlp(GraphBuilder& b, Var x, const MlpConfig& config);

struct LenetConfig {
  int64_t in_channels = 1;
  int64_t image_size = 28;
  int64_t classes = 10;
};
// conv5x5-32 (pad 2), ReLU, max-pool 2; conv5x5-64 (pad 2), ReLU, max-pool 2;
// fc 512, ReLU; fc classes.
Var lenet(GraphBuilder& b, Var x, const LenetConfig& config);

struct ResnetConfig {
  int depth = 18;              // 18 (basic blocks) or 50 (bottlenecks)
  int64_t in_channels = 3;
  int64_t classes = 1000;
  int64_t base_width = 64;     // channels of the first stage
  bool training = true;
};
// He et al. 2016: 7x7/2 stem, max-pool, four stages, global average pool, fc.
Var resnet(GraphBuilder& b, Var x, const ResnetConfig& config);

struct MobilenetConfig {
  int64_t in_channels = 3;
  int64_t classes = 1000;
  bool training = true;
};
// MobileNetV2 (Sandler et al. 2018), width 1.0: a 3x3/2 stem, 17 inverted
// residual blocks (1x1 expand, 3x3 depthwise, 1x1 linear projection; ReLU6),
// a 1x1 head to 1280 channels, global average pool, dropout 0.2, fc.
Var mobilenet_v2(GraphBuilder& b, Var x, const MobilenetConfig& config);

struct SqueezenetConfig {
  int64_t in_channels = 3;
  int64_t classes = 1000;
  bool training = true;
};
// SqueezeNet 1.1 (Iandola et al. 2016): a 3x3/2 stem, eight fire modules
// (1x1 squeeze, 1x1 and 3x3 expands concatenated) between ceil-mode
// max-pools, dropout 0.5, a 1x1 conv classifier and a global average pool.
Var squeezenet(GraphBuilder& b, Var x, const SqueezenetConfig& config);

struct BertConfig {
  int64_t layers = 2;
  int64_t hidden = 128;
  int64_t heads = 4;
  int64_t intermediate = 0;    // 0: 4 * hidden
  int64_t vocab = 1000;
  int64_t max_positions = 128;
  int64_t classes = 2;
  double dropout = 0.1;
  bool training = true;
};
// A BERT-style encoder (Devlin et al. 2019) over int64 token ids [batch, seq]:
// token + position embeddings, LayerNorm, `layers` post-norm transformer
// blocks (self-attention, GELU feed-forward), mean pooling, a classifier.
Var bert(GraphBuilder& b, Var ids, const BertConfig& config);

struct ArcfaceConfig {
  int64_t in_channels = 1;
  int64_t image_size = 28;
  int64_t embedding = 512;
};
// The backbone of the zoo's "arcface": conv3x3-32, ReLU, max-pool 2;
// conv3x3-64, ReLU, max-pool 2; a linear embedding [batch, embedding]. The
// margin head on top is frontend/nn/margin_head.h's.
Var arcface_embedding(GraphBuilder& b, Var x, const ArcfaceConfig& config);

}  // namespace weir::models
