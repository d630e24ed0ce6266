#include "tools/graph-runner/verify_command.h"

#include <cstdio>
#include <optional>

#include "core/error.h"
#include "tools/graph-runner/model_loading.h"
#include "tools/graph-runner/pass_verification.h"

namespace weir::tools {

namespace {

struct VerifyArgs {
  std::string model;
  std::vector<std::string> plugins;
  ModelOptions passes;
  std::vector<std::string> inputs;
  std::optional<double> tolerance;
};

void verify(const VerifyArgs& args) {
  std::unique_ptr<OpSet> ops = make_op_set(args.plugins);
  const bool amp = amp_precision(args.passes).has_value();
  const double tolerance = args.tolerance.value_or(amp ? kAmpTolerance : 1e-4);
  const char* what = amp ? "relative L2 change" : "largest absolute change";
  const PassVerification result =
      verify_passes(args.model, *ops, args.passes, args.inputs, tolerance, [](const PassCheck& check) {
        if (!check.changed) {
          std::printf("pass %-34s unchanged\n", check.pass.c_str());
          return;
        }
        std::printf("pass %-34s max_abs_diff=%.3g relative_l2=%.3g (vs original %.3g, relative L2 %.3g)%s\n",
                    check.pass.c_str(), check.max_abs_diff, check.relative_l2_step, check.max_abs_diff_total, check.relative_l2,
                    check.breaks_tolerance ? "  BREAKS TOLERANCE" : "");
      });
  if (!result.first_broken.empty()) {
    throw Error(ErrorKind::kInvalidGraph, "pass '" + result.first_broken + "' changed the outputs by more than " +
                                              std::to_string(tolerance) + " (" + what + ")").with_file(args.model);
  }
  std::printf("verified: every pass within %.3g (%s)\n", tolerance, what);
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand("verify", "Check each pass numerically: outputs before and after, same random inputs");
  cmd->add_option("model", args->model, "the model file (.weir, .weirtxt or .onnx)")->required();
  add_model_options(*cmd, args->plugins, args->passes);
  cmd->add_option("-i,--input", args->inputs, "an input as NAME=FILE.npy or NAME=FILE.pb; others are seeded random");
  cmd->add_option("--tolerance", args->tolerance,
                  "the largest absolute difference a pass may make (default 1e-4); with --amp, the largest relative L2 "
                  "change (default 3e-2: bf16 rounds each value by up to 2^-8 of itself)");
  cmd->callback([args] { verify(*args); });
}

}  // namespace weir::tools
