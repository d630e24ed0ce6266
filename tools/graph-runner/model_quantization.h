// Static post-training quantization: an f32 model becomes a QDQ model whose
// convs and matmuls the qdq_fusion pass turns into int8 nodes. What
// `graph-runner quantize` does.
//
//   std::vector<weir::Tensor> examples = weir::tools::read_calibration_examples(graph, {"calib.npy"});
//   weir::tools::QuantizationReport r = weir::tools::quantize_graph(graph, examples, *ops, {});
//   r.quantized_convs;  r.left_f32;   // each "node (op): why"
//
// The graph is first simplified at level 2 (weights frozen and folded,
// BatchNorm folded into the convs; nothing fused), so convs, matmuls and
// gemms read constant weights. Then:
//   - weights: s8, symmetric, per output channel (axis 0 of a conv weight
//     [M, C, k...], the N axis of a matmul weight), zero point 0 as oneDNN
//     wants, scale max|w| / 127; the bias stays f32 (qdq_fusion makes it
//     i32 at x_scale * w_scale);
//   - activations: u8, asymmetric, one scale and zero point per tensor from
//     the calibration runs: scale (hi - lo) / 255 over a range widened to
//     hold 0 (zero stays exact), zero point round(-lo / scale). The range is
//     the min and max seen, or (kPercentile) the given percentile of each
//     tail over every calibration value (a histogram, second pass);
//   - a QuantizeLinear -> DequantizeLinear pair goes on the input of each
//     quantized node and on its output, after a Relu that is the output's
//     only reader (so DQ -> Conv -> Relu -> Q is one FusedQLinearConv). A
//     value gets one pair whoever reads it; every reader reads the
//     dequantized value. A Clip(0, max) there (ReLU6) becomes a Relu: with
//     the pair after it (zero point 0, scale hi / 255, hi <= max what
//     calibration saw) the quantization saturates at hi, so the result is
//     the same, and the Relu fuses into the int8 conv.
// Left f32 (named in left_f32, with the reason): Gemm with a bias C, alpha,
// beta or transA (QLinearMatMul has none of them), non-constant or non-f32
// weights, and the output layer: a node whose result is a graph output,
// directly or through the Add of a constant bias (u8 logits would round
// away the small differences between classes; one f32 layer costs little).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

enum class RangeMethod { kMinMax, kPercentile };

struct QuantizeOptions {
  RangeMethod method = RangeMethod::kMinMax;
  double percentile = 99.99;  // kPercentile: of each tail, in (50, 100]
};

struct QuantizationReport {
  size_t quantized_convs = 0;
  size_t quantized_matmuls = 0;  // MatMul and Gemm
  size_t quantized_activations = 0;  // Q/DQ pairs inserted
  size_t calibration_runs = 0;
  std::vector<std::string> left_f32;  // "node (op): why"
};

// "minmax" or "percentile"; throws naming the choices.
RangeMethod range_method(const std::string& name);

// The calibration runs for the graph's first input: each file holds a batch
// [N, ...] of it. A model with a batch dim of 1 or a symbolic one gets one
// row per run; a static batch B > 1 gets B rows per run (N must divide).
// Errors name the file, the input and the shape expected.
std::vector<Tensor> read_calibration_examples(const Graph& graph, const std::vector<std::string>& files);

// Simplifies `graph` at level 2, calibrates on `examples` (feeds of the
// first input) and inserts the QDQ pairs. Throws when the graph has no conv,
// matmul or gemm, or none could be quantized.
QuantizationReport quantize_graph(Graph& graph, const std::vector<Tensor>& examples, const OpSet& ops,
                                  const QuantizeOptions& options);

// Loads `model`, quantizes it and writes `output`: .weir / .weirtxt, or
// .onnx (a QDQ ONNX model). Atomic write; errors name the files.
QuantizationReport quantize_model(const std::string& model, const std::vector<std::string>& calibration,
                                  const std::string& output, const OpSet& ops, const QuantizeOptions& options);

}  // namespace weir::tools
