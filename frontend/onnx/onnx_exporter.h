// ONNX export: writes a Weir model as an ONNX model (opset 17), so that a
// Weir graph opens in ONNX tools (Netron, onnx.checker, other runtimes).
//
//   weir::export_onnx_model(model, "mlp.onnx");
//
// Exported are the ops that map one-to-one onto ONNX ops (same name, same
// inputs and attributes); Weir keeps Squeeze/Unsqueeze/ReduceSum axes as an
// attribute, which is written as the constant input ONNX 13+ expects; Gelu
// (ONNX 20) is written out with Erf (or Tanh), as PyTorch exports it; If,
// Loop and Scan are written with their sub-graphs, whose captured inputs
// become outer-scope references again (Scan's opset-8 batch form as a Loop
// over the batch of opset-17 Scans). Weir's
// own ops (backward ops, optimizer updates, ...) have no ONNX form: a graph
// with any is refused with ONE weir::Error(kUnsupported) listing them all.
// Constants and persistent values become initializers; symbolic dims become
// dim_param. The file is written atomically.
#pragma once

#include <string>

#include "core/model.h"
#include "frontend/onnx/onnx_tensor.h"

namespace weir {

inline constexpr int64_t kOnnxExportOpset = 17;

onnx::ModelProto to_onnx_model(const Model& model);
void export_onnx_model(const Model& model, const std::string& path);

}  // namespace weir
