// `graph-runner quantize MODEL --calibration A.npy[,B.npy] -o OUT`: static
// post-training quantization (tools/graph-runner/model_quantization.h);
// writes a QDQ model as .weir / .weirtxt or .onnx.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_quantize_command(CLI::App& app);

}  // namespace weir::tools
