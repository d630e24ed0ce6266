#include "models/zoo.h"

#include "frontend/builder/graph_builder.h"
#include "frontend/nn/functional.h"
#include "frontend/nn/margin_head.h"
#include "models/models.h"
#include "models/named_output.h"

namespace weir::models {

std::vector<std::string> zoo_names() { return {"mlp", "lenet", "resnet18", "resnet50", "mobilenet_v2", "squeezenet", "bert", "arcface"}; }

namespace {

nn::MarginHeadOptions head_options(const ZooOptions& options) {
  nn::MarginHeadOptions head = nn::margin_preset(options.margin);
  head.classes = options.classes;
  head.embedding = options.embedding;
  head.ranks = options.head_ranks;
  head.sample_ratio = options.sample_ratio;
  head.seed = options.seed;
  return head;
}

}  // namespace

ClassifierGraph build_classifier(const std::string& name, int64_t batch, bool training, const ZooOptions& options) {
  ClassifierGraph result;
  const bool is_bert = name == "bert";
  bool known = false;
  for (const std::string& n : zoo_names()) known = known || n == name;
  if (!known) {
    std::string names;
    for (const std::string& n : zoo_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::kInvalidArgument, "unknown model '" + name + "' (the zoo has: " + names + ")");
  }
  if (is_bert) {
    result.example_shape = {options.seq};
    result.input_dtype = DType::kInt64;
  } else {
    result.example_shape = {options.in_channels, options.image_size, options.image_size};
  }
  GraphBuilder b(name, options.seed);
  std::vector<Dim> dims = {batch > 0 ? Dim(batch) : Dim::symbol("N")};
  for (int64_t s : result.example_shape) dims.emplace_back(s);
  Var x = b.input(result.input, {result.input_dtype, Shape(dims)});
  Var features = x;
  if (!is_bert && options.input_std > 0) {
    auto scope = b.scope("standardize");
    features = (x + (-options.input_mean)) * (1.0 / options.input_std);
  }
  Var logits;
  Var loss;  // arcface's training form: the margin head's
  if (name == "arcface") {
    Var embedding = arcface_embedding(
        b, features, {.in_channels = options.in_channels, .image_size = options.image_size, .embedding = options.embedding});
    if (training) {
      Var labels = b.input(result.labels, {DType::kInt64, Shape(std::vector<Dim>{dims.front()})});
      nn::MarginHead head = nn::margin_softmax_loss(b, embedding, labels, head_options(options));
      loss = head.loss;
      result.class_centres = ClassCentres{.weight = head.weight, .classes = options.classes, .ranks = options.head_ranks,
                                          .seed = options.seed};
    } else {
      logits = nn::margin_logits(b, embedding, head_options(options), options.class_centres_in_graph);
    }
  } else if (name == "mlp") {
    logits = mlp(b, features,
                 {.hidden = std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(options.mlp_layers, 0)), options.mlp_width),
                  .classes = options.classes, .dropout = training ? options.mlp_dropout : 0.0});
  } else if (name == "lenet") {
    logits = lenet(b, features, {.in_channels = options.in_channels, .image_size = options.image_size, .classes = options.classes});
  } else if (name == "resnet18" || name == "resnet50") {
    logits = resnet(b, features,
                    {.depth = name == "resnet18" ? 18 : 50, .in_channels = options.in_channels, .classes = options.classes,
                     .base_width = options.resnet_width, .training = training});
  } else if (name == "mobilenet_v2") {
    logits = mobilenet_v2(b, features, {.in_channels = options.in_channels, .classes = options.classes, .training = training});
  } else if (name == "squeezenet") {
    logits = squeezenet(b, features, {.in_channels = options.in_channels, .classes = options.classes, .training = training});
  } else {
    logits = bert(b, x,
                  {.layers = options.layers, .hidden = options.hidden, .heads = options.heads, .vocab = options.vocab,
                   .max_positions = std::max<int64_t>(options.seq, 1), .classes = options.classes, .training = training});
  }
  // Graph outputs get stable names ("loss", "logits"), which files and feeds use.
  auto add_named_output = [&](Var value, const std::string& output_name) { models::add_named_output(b, value, output_name); };
  if (training && loss.valid()) {
    add_named_output(loss, result.loss);
  } else if (training) {
    Var labels = b.input(result.labels, {DType::kInt64, Shape(std::vector<Dim>{dims.front()})});
    add_named_output(nn::cross_entropy(logits, labels), result.loss);
  } else {
    add_named_output(logits, result.logits);
  }
  result.graph = b.finish();
  return result;
}

}  // namespace weir::models
