// Writes a zoo model's inference graph at a chosen input shape, as .weir or
// (through the ONNX exporter) .onnx, for `graph-runner bench` and for
// comparisons with other runtimes on the same file.
//
//   weir_zoo_export resnet50 r50.onnx --channels 3 --image-size 224 --classes 1000
//   weir_zoo_export bert bert6.onnx --layers 6 --hidden 768 --heads 12 --seq 128
//
// Weights are the zoo's seeded initial weights: latency does not depend on
// their values. BatchNorm's running statistics, though, start at mean 0 and
// variance 1, and through a deep net at initial weights the activations then
// fade to nothing (MobileNetV2's logits come out as the classifier's bias),
// which would make `graph-runner verify` compare zeros. --calibrate N (on by
// default) runs the training form N times on random images first, so the
// running statistics are the batches', and the exported activations have
// unit scale. The batch dim stays symbolic unless --batch is given.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "core/model.h"
#include "core/model_io.h"
#include "frontend/onnx/onnx_exporter.h"
#include "frontend/train/trainer.h"
#include "models/zoo.h"
#include "runtime/plan.h"
#include "runtime/session.h"

int main(int argc, char** argv) {
  CLI::App app("weir_zoo_export: write a zoo model's inference graph", "weir_zoo_export");
  std::string name, out;
  int64_t batch = 0;
  weir::models::ZooOptions zoo;
  app.add_option("model", name, "zoo model: mlp, lenet, resnet18, resnet50, mobilenet_v2, squeezenet, bert")->required();
  app.add_option("output", out, "output file: .weir, .weirtxt or .onnx")->required();
  app.add_option("--batch", batch, "fixed batch size (default: symbolic N)");
  app.add_option("--channels", zoo.in_channels, "image channels")->capture_default_str();
  app.add_option("--image-size", zoo.image_size, "image side")->capture_default_str();
  app.add_option("--classes", zoo.classes, "classes")->capture_default_str();
  app.add_option("--layers", zoo.layers, "bert: encoder layers")->capture_default_str();
  app.add_option("--hidden", zoo.hidden, "bert: hidden size")->capture_default_str();
  app.add_option("--heads", zoo.heads, "bert: attention heads")->capture_default_str();
  app.add_option("--seq", zoo.seq, "bert: sequence length")->capture_default_str();
  app.add_option("--vocab", zoo.vocab, "bert: vocabulary size")->capture_default_str();
  app.add_option("--seed", zoo.seed, "weight seed")->capture_default_str();
  int calibrate = 20;
  app.add_option("--calibrate", calibrate, "training-form runs on random images to set BatchNorm's running statistics")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    weir::models::ClassifierGraph built = weir::models::build_classifier(name, batch, /*training=*/false, zoo);
    weir::Model model;
    model.graph = std::move(built.graph);
    bool has_batch_norm = false;
    for (const weir::Node* node : model.graph->nodes()) has_batch_norm = has_batch_norm || node->op_type() == "BatchNormalization";
    if (calibrate > 0 && has_batch_norm) {
      // The same seed gives the training form the same weights under the same names.
      weir::models::ClassifierGraph train = weir::models::build_classifier(name, 4, /*training=*/true, zoo);
      weir::Session session(weir::compile(*train.graph));
      std::mt19937 rng(static_cast<uint32_t>(zoo.seed));
      std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
      std::vector<int64_t> sizes = {4};
      sizes.insert(sizes.end(), train.example_shape.begin(), train.example_shape.end());
      for (int i = 0; i < calibrate; ++i) {
        weir::Tensor x = weir::Tensor::uninitialized(weir::DType::kFloat32, sizes);
        for (int64_t j = 0; j < x.num_elements(); ++j) x.data<float>()[j] = pixel(rng);
        std::vector<int64_t> classes(4);
        for (int64_t j = 0; j < 4; ++j) classes[static_cast<size_t>(j)] = j % std::max<int64_t>(zoo.classes, 1);
        weir::Tensor labels = weir::Tensor::from_vector(classes, {4});
        session.run({{train.input, x}, {train.labels, labels}});
      }
      weir::bake_state(session, *model.graph);
    }
    if (std::filesystem::path(out).extension() == ".onnx") {
      weir::export_onnx_model(model, out);
    } else {
      weir::save_model(model, out);
    }
  } catch (const weir::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
