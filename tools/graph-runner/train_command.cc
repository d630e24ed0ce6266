#include "tools/graph-runner/train_command.h"

#include <cstdio>
#include <iostream>
#include <random>

#include "core/error.h"
#include "core/model_io.h"
#include "frontend/data/idx.h"
#include "frontend/data/npy.h"
#include "models/train_classifier.h"

namespace weir::tools {

namespace {

struct TrainArgs {
  std::string model;
  std::string data = kFashionMnistDir;
  int64_t epochs = 1;
  int64_t steps = 0;
  int64_t batch = 64;
  std::string optimizer = "adam";
  double lr = 1e-3;
  double weight_decay = 0;
  double clip = 0;
  uint64_t seed = 42;
  int threads = 1;
  int64_t layers = 2;
  std::string save;
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  std::string resume;
  std::string test_batch;
};

// Seeded random examples shaped like the model's input, and random labels.
std::pair<Tensor, Tensor> synthetic_data(const models::ClassifierGraph& shape, const models::ZooOptions& zoo,
                                         int64_t count, uint64_t seed) {
  std::vector<int64_t> sizes = {count};
  sizes.insert(sizes.end(), shape.example_shape.begin(), shape.example_shape.end());
  Tensor x(shape.input_dtype, sizes);
  Tensor y(DType::kInt64, {count});
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (shape.input_dtype == DType::kInt64) {
      x.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.vocab));
    } else {
      x.data<float>()[i] = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53);
    }
  }
  for (int64_t i = 0; i < count; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.classes));
  return {x, y};
}

void train(const TrainArgs& args) {
  models::ClassifierTraining options;
  options.model = args.model;
  options.zoo.seed = args.seed;
  options.zoo.layers = args.layers;
  options.batch = args.batch;
  options.epochs = args.epochs;
  options.steps = args.steps;
  options.optimizer.kind = parse_optimizer_kind(args.optimizer);
  options.optimizer.weight_decay = args.weight_decay;
  options.optimizer.clip_global_norm = args.clip;
  options.lr = args.lr;
  options.inter_op_threads = args.threads;
  options.checkpoint = args.checkpoint;
  options.checkpoint_every = args.checkpoint_every;
  options.resume = args.resume;

  Tensor train_x, train_y, test_x, test_y;
  bool has_test = false;
  if (args.data == "synthetic") {
    models::ClassifierGraph shape = models::build_classifier(args.model, 1, false, options.zoo);
    int64_t count = args.batch * std::max<int64_t>(args.steps > 0 ? std::min<int64_t>(args.steps, 16) : 16, 1);
    std::tie(train_x, train_y) = synthetic_data(shape, options.zoo, count, args.seed + 1);
  } else {
    if (args.model == "bert") {
      throw Error(ErrorKind::kInvalidArgument, "--model bert trains on --data synthetic (token ids), not on images");
    }
    FashionMnist data = load_fashion_mnist(args.data);
    train_x = data.train_images;
    train_y = data.train_labels;
    test_x = data.test_images;
    test_y = data.test_labels;
    has_test = true;
    if (args.model.starts_with("resnet")) options.zoo.resnet_width = 16;
  }
  if (!args.test_batch.empty()) {
    if (!has_test) throw Error(ErrorKind::kInvalidArgument, "--save-test-batch needs a dataset with a test set");
    int64_t n = std::min<int64_t>(16, test_x.sizes()[0]);
    write_npy(args.test_batch + "-images.npy", test_x.slice(0, n).clone());
    write_npy(args.test_batch + "-labels.npy", test_y.slice(0, n).clone());
  }

  models::ClassifierTrainingResult result = models::train_classifier(
      options, train_x, train_y, has_test ? &test_x : nullptr, has_test ? &test_y : nullptr);
  if (!args.save.empty()) {
    Model model;
    model.graph = std::move(result.inference_graph);
    save_model(model, args.save);
    std::cerr << "saved the trained model to " << args.save << "\n";
  }
  std::printf("steps: %lld\n", static_cast<long long>(result.total_steps));
  std::printf("final_loss: %.4f\n", result.last_loss);
  std::printf("ms_per_step: %.3f\n", result.ms_per_step);
  std::printf("peak_memory_bytes: %lld\n", static_cast<long long>(result.peak_memory_bytes));
  if (result.test_accuracy >= 0) std::printf("test_accuracy: %.4f\n", result.test_accuracy);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train a zoo model (mlp, lenet, resnet18, resnet50, bert) on a dataset");
  cmd->add_option("--model", args->model, "mlp, lenet, resnet18, resnet50 or bert")->required();
  cmd->add_option("--data", args->data,
                  "a directory of Fashion-MNIST IDX files (default: " + std::string(kFashionMnistDir) +
                      "), or 'synthetic' for seeded random batches");
  auto* epochs = cmd->add_option("--epochs", args->epochs, "epochs to train (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", args->steps, "steps to train instead of epochs")->check(CLI::PositiveNumber)->excludes(epochs);
  cmd->add_option("--batch", args->batch, "batch size (default 64)")->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer", args->optimizer, "sgd, momentum, adam, adamw or lamb (default adam)");
  cmd->add_option("--lr", args->lr, "learning rate (default 1e-3)")->check(CLI::PositiveNumber);
  cmd->add_option("--weight-decay", args->weight_decay, "weight decay (default 0)");
  cmd->add_option("--clip-global-norm", args->clip, "clip gradients to this global L2 norm (default: off)");
  cmd->add_option("--seed", args->seed, "parameter initialization seed (default 42)");
  cmd->add_option("--threads", args->threads, "inter-op threads (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--layers", args->layers, "bert: encoder layers (default 2)")->check(CLI::PositiveNumber);
  cmd->add_option("--save", args->save, "write the trained inference model (.weir / .weirtxt) here");
  cmd->add_option("--checkpoint", args->checkpoint, "write a training checkpoint (.npz) here at the end");
  cmd->add_option("--checkpoint-every", args->checkpoint_every, "also every N steps");
  cmd->add_option("--resume", args->resume, "continue from this checkpoint");
  cmd->add_option("--save-test-batch", args->test_batch,
                  "write the first 16 test images and labels to PREFIX-images.npy and PREFIX-labels.npy");
  cmd->callback([args] { train(*args); });
}

}  // namespace weir::tools
