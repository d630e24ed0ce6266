#include "tools/graph-runner/quantize_command.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "tools/graph-runner/model_loading.h"
#include "tools/graph-runner/model_quantization.h"

namespace weir::tools {

namespace {

struct QuantizeArgs {
  std::string model;
  std::vector<std::string> calibration;
  std::string output;
  std::string method = "minmax";
  double percentile = 99.99;
  std::vector<std::string> plugins;
};

void quantize(const QuantizeArgs& args) {
  if (args.model.empty() || args.output.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "quantize needs MODEL, --calibration FILE.npy and -o OUT");
  }
  QuantizeOptions options{.method = range_method(args.method), .percentile = args.percentile};
  std::unique_ptr<OpSet> ops = make_op_set(args.plugins);
  const QuantizationReport report = quantize_model(args.model, args.calibration, args.output, *ops, options);
  if (options.method == RangeMethod::kMinMax) {
    std::printf("calibrated on %zu runs (min-max ranges)\n", report.calibration_runs);
  } else {
    std::printf("calibrated on %zu runs (%g-th percentile ranges)\n", report.calibration_runs, options.percentile);
  }
  std::printf("quantized: %zu convs, %zu matmuls/gemms (s8 per-channel weights), %zu activations (u8 per tensor)\n",
              report.quantized_convs, report.quantized_matmuls, report.quantized_activations);
  std::printf("left f32: %zu\n", report.left_f32.size());
  for (const std::string& line : report.left_f32) std::printf("  %s\n", line.c_str());
  std::printf("written to %s\n", args.output.c_str());
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Static post-training quantization: write a QDQ model (.weir/.weirtxt/.onnx) from calibration inputs");
  cmd->add_option("model", args->model, "the f32 model file (.weir, .weirtxt or .onnx)");
  cmd->add_option("--calibration", args->calibration,
                  "calibration inputs: .npy batches [N, ...] of the model's first input, comma-separated")
      ->delimiter(',');
  cmd->add_option("-o,--output", args->output, "the quantized model: .weir, .weirtxt or .onnx");
  cmd->add_option("--method", args->method, "activation ranges: minmax (default) or percentile");
  cmd->add_option("--percentile", args->percentile, "with --method percentile: the percentile of each tail (default 99.99)");
  cmd->add_option("--plugin", args->plugins, "a plugin library whose ops the model uses (repeatable)");
  cmd->callback([args] { quantize(*args); });
}

}  // namespace weir::tools
