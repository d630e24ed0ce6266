#include "tools/graph-runner/model_quantization.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/model_io.h"
#include "core/type_inference.h"
#include "frontend/data/npy.h"
#include "frontend/onnx/onnx_exporter.h"
#include "ops/graph_evaluator.h"
#include "ops/linalg/gemm_attributes.h"
#include "passes/graph_match.h"
#include "passes/pass_manager.h"

namespace weir::tools {

namespace {

// Level 2 folds weights and BatchNorm into the convs; level 3 would fuse the
// convs (FusedConv, channels-last), which qdq_fusion does not match.
constexpr int kSimplifyLevel = 2;
constexpr int kHistogramBins = 4096;

bool is_quantizable_op(const Node& node) {
  return node.domain().empty() &&
         (node.op_type() == "Conv" || node.op_type() == "MatMul" || node.op_type() == "Gemm");
}

bool is_constant_f32(const Value* v) {
  return v != nullptr && v->is_constant() && v->data().defined() && v->data().dtype() == DType::kFloat32;
}

// The axis of the weight's output channels, or why the node stays f32.
struct WeightPlan {
  int64_t axis = 0;
  std::string why_not;
};

WeightPlan weight_plan(const Node& node) {
  if (node.num_outputs() != 1) return {0, "more than one output"};
  if (node.num_inputs() < 2 || node.input(0) == nullptr || node.input(0)->dtype() != DType::kFloat32) {
    return {0, "its input is not f32"};
  }
  const Value* w = node.input(1);
  if (!is_constant_f32(w)) return {0, "its weight (input 1) is not a constant f32 tensor"};
  const int64_t rank = w->data().rank();
  const std::string& op = node.op_type();
  if (op == "Conv") {
    if (rank < 3) return {0, "its weight has rank " + std::to_string(rank)};
    if (node.num_inputs() > 2 && node.input(2) != nullptr && !is_constant_f32(node.input(2))) {
      return {0, "its bias is not a constant f32 tensor"};
    }
    return {0, ""};
  }
  if (rank != 2) return {0, "its weight is not 2-D"};
  if (op == "MatMul") return {1, ""};
  if (node.num_inputs() > 2 && node.input(2) != nullptr) return {0, "Gemm with a bias C (QLinearMatMul has none)"};
  const GemmAttributes gemm(node);
  if (gemm.alpha != 1.0) return {0, "Gemm with alpha != 1"};
  if (gemm.transpose_a) return {0, "Gemm with transA"};
  return {gemm.transpose_b ? 0 : 1, ""};
}

struct Planned {
  Node* node;
  int64_t weight_axis;
  Value* input;   // the activation it reads
  Value* output;  // where the output Q/DQ goes: its output, or that of the Relu (or Clip) after a conv
  Node* clip = nullptr;  // a Clip(0, max) after the conv, which becomes a Relu
};

// A scalar f32 constant bound of a Clip, or nullopt (absent: no bound).
std::optional<float> clip_bound(const Node& clip, size_t index, bool& constant) {
  if (index >= clip.num_inputs() || clip.input(index) == nullptr) return std::nullopt;
  const Value* v = clip.input(index);
  constant = constant && is_constant_f32(v) && v->data().num_elements() == 1;
  return constant ? std::optional<float>(v->data().data<float>()[0]) : std::nullopt;
}

// Clip(x, 0, max) then QuantizeLinear with zero point 0 and scale
// hi / 255, hi <= max the largest value calibration saw after the Clip,
// is Relu then the same QuantizeLinear: its saturation at 255 clips at hi
// already. So ReLU6 convs (MobileNet) become int8 convs with a Relu.
bool is_relu_like_clip(const Node& node) {
  if (node.op_type() != "Clip" || !node.domain().empty() || node.num_outputs() != 1) return false;
  bool constant = true;
  const std::optional<float> lo = clip_bound(node, 1, constant);
  const std::optional<float> hi = clip_bound(node, 2, constant);
  return constant && lo.has_value() && *lo == 0.0f && (!hi.has_value() || *hi > 0.0f);
}

// A Relu after a conv is part of the int8 conv when the Q/DQ pair follows it.
Planned planned_for(const Graph& graph, Node& node, int64_t weight_axis) {
  Planned p{&node, weight_axis, node.input(0), node.output(0)};
  Value* out = node.output(0);
  if (node.op_type() != "Conv" || out->uses().size() != 1 || is_graph_output(graph, out)) return p;
  Node* reader = out->uses()[0].node;
  const bool relu = reader->op_type() == "Relu" && reader->domain().empty() && reader->num_outputs() == 1;
  if ((!relu && !is_relu_like_clip(*reader)) || is_graph_output(graph, reader->output(0))) return p;
  p.output = reader->output(0);
  if (!relu) p.clip = reader;
  return p;
}

// A graph output, or read by one Identity that is (the name kept for the interface).
bool is_model_result(const Graph& graph, const Value* v) {
  if (is_graph_output(graph, v)) return true;
  if (v->uses().size() != 1) return false;
  const Node* reader = v->uses()[0].node;
  return reader->op_type() == "Identity" && reader->domain().empty() && reader->num_outputs() == 1 &&
         is_graph_output(graph, reader->output(0));
}

// The model's output layer: its result is a graph output, directly or
// through one Add of a constant (the bias of a MatMul + Add). Its output
// would be u8 at (range / 255) steps, coarser than the differences between
// an untrained or near-tied model's logits; left f32 it costs one layer.
bool is_output_layer(const Graph& graph, const Value* out) {
  if (is_model_result(graph, out)) return true;
  if (out->uses().size() != 1) return false;
  const Node* reader = out->uses()[0].node;
  if (reader->op_type() != "Add" || !reader->domain().empty() || reader->num_inputs() != 2) return false;
  const Value* other = reader->input(reader->input(0) == out ? 1 : 0);
  return other != nullptr && other->is_constant() && is_model_result(graph, reader->output(0));
}

struct Range {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
};

const Tensor& value_of(const std::unordered_map<const Value*, Tensor>& all, const Value* v) {
  auto it = all.find(v);
  if (it == all.end() || !it->second.defined() || it->second.dtype() != DType::kFloat32) {
    throw Error(ErrorKind::kInternal, "calibration run computed no f32 value for '" + v->name() + "'");
  }
  return it->second;
}

// The calibration ranges of `values`: min and max, or the percentile of each
// tail from a histogram over [min, max] (a second pass).
std::vector<Range> calibrate(const Graph& graph, const std::vector<Value*>& values, const std::vector<Tensor>& examples,
                             const OpSet& ops, const QuantizeOptions& options) {
  const std::string input = graph.inputs().at(0)->name();
  EvaluateOptions evaluate{.kernels = &ops.kernels};
  std::vector<Range> ranges(values.size());
  for (const Tensor& example : examples) {
    std::unordered_map<const Value*, Tensor> all = evaluate_all_values(graph, {{input, example}}, evaluate);
    for (size_t i = 0; i < values.size(); ++i) {
      const Tensor& t = value_of(all, values[i]);
      const float* data = t.data<float>();
      for (int64_t j = 0; j < t.num_elements(); ++j) {
        if (!std::isfinite(data[j])) continue;
        ranges[i].lo = std::min(ranges[i].lo, data[j]);
        ranges[i].hi = std::max(ranges[i].hi, data[j]);
      }
    }
  }
  if (options.method != RangeMethod::kPercentile) return ranges;
  std::vector<std::vector<int64_t>> histograms(values.size(), std::vector<int64_t>(kHistogramBins, 0));
  for (const Tensor& example : examples) {
    std::unordered_map<const Value*, Tensor> all = evaluate_all_values(graph, {{input, example}}, evaluate);
    for (size_t i = 0; i < values.size(); ++i) {
      const Range& r = ranges[i];
      if (!(r.hi > r.lo)) continue;
      const Tensor& t = value_of(all, values[i]);
      const float* data = t.data<float>();
      const double width = (static_cast<double>(r.hi) - r.lo) / kHistogramBins;
      for (int64_t j = 0; j < t.num_elements(); ++j) {
        if (!std::isfinite(data[j])) continue;
        auto bin = static_cast<int64_t>((static_cast<double>(data[j]) - r.lo) / width);
        ++histograms[i][static_cast<size_t>(std::clamp<int64_t>(bin, 0, kHistogramBins - 1))];
      }
    }
  }
  const double tail = 1.0 - options.percentile / 100.0;
  for (size_t i = 0; i < values.size(); ++i) {
    Range& r = ranges[i];
    if (!(r.hi > r.lo)) continue;
    const std::vector<int64_t>& h = histograms[i];
    int64_t total = 0;
    for (int64_t c : h) total += c;
    const double width = (static_cast<double>(r.hi) - r.lo) / kHistogramBins;
    const auto cut = static_cast<int64_t>(std::floor(tail * static_cast<double>(total)));
    // Lowest bin with more than `cut` values at or below it; highest with more than `cut` at or above.
    int64_t below = 0;
    int first = 0;
    for (; first < kHistogramBins - 1; ++first) {
      below += h[static_cast<size_t>(first)];
      if (below > cut) break;
    }
    int64_t above = 0;
    int last = kHistogramBins - 1;
    for (; last > 0; --last) {
      above += h[static_cast<size_t>(last)];
      if (above > cut) break;
    }
    const float lo = static_cast<float>(r.lo + first * width);
    const float hi = static_cast<float>(r.lo + (last + 1) * width);
    if (hi > lo) r = {lo, hi};
  }
  return ranges;
}

// QuantizeLinear -> DequantizeLinear on `v` (u8, asymmetric); every reader
// of `v` then reads the dequantized value.
void insert_activation_qdq(Graph& graph, Value* v, Range range) {
  const double lo = std::min(0.0, std::isfinite(range.lo) ? static_cast<double>(range.lo) : 0.0);
  const double hi = std::max(0.0, std::isfinite(range.hi) ? static_cast<double>(range.hi) : 0.0);
  float scale = static_cast<float>((hi - lo) / 255.0);
  if (!(scale > 0) || !std::isfinite(scale)) scale = 1.0f;  // all zeros: any scale is exact
  const auto zero = static_cast<uint8_t>(std::clamp(std::nearbyint(-lo / scale), 0.0, 255.0));
  Value* s = graph.add_constant(graph.unique_name(v->name() + "_scale"), Tensor::scalar<float>(scale));
  Value* z = graph.add_constant(graph.unique_name(v->name() + "_zero_point"), Tensor::scalar<uint8_t>(zero));
  const std::vector<Use> uses = v->uses();
  Node* q = graph.add_node("QuantizeLinear", {v, s, z}, 1, {}, graph.unique_name(v->name() + "_quantize"));
  q->output(0)->set_type(TensorType{DType::kUInt8, v->shape()});
  Node* dq = graph.add_node("DequantizeLinear", {q->output(0), s, z}, 1, {}, graph.unique_name(v->name() + "_dequantize"));
  dq->output(0)->set_type(TensorType{DType::kFloat32, v->shape()});
  for (const Use& use : uses) use.node->set_input(static_cast<size_t>(use.input_index), dq->output(0));
}

// The weight as s8, symmetric, one scale per index of `axis`.
struct QuantizedWeight {
  Tensor q;
  Tensor scales;
};

QuantizedWeight quantize_weight(const Tensor& w, int64_t axis) {
  const std::vector<int64_t>& sizes = w.sizes();
  const int64_t channels = sizes[static_cast<size_t>(axis)];
  int64_t outer = 1;
  int64_t inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= sizes[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < w.rank(); ++d) inner *= sizes[static_cast<size_t>(d)];
  const float* in = w.data<float>();
  QuantizedWeight out{Tensor::uninitialized(DType::kInt8, sizes), Tensor::uninitialized(DType::kFloat32, {channels})};
  float* scales = out.scales.data<float>();
  int8_t* q = out.q.data<int8_t>();
  for (int64_t c = 0; c < channels; ++c) {
    float amax = 0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) amax = std::max(amax, std::abs(in[(o * channels + c) * inner + i]));
    }
    const float scale = amax > 0 && std::isfinite(amax) ? amax / 127.0f : 1.0f;
    scales[c] = scale;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * channels + c) * inner + i;
        q[at] = static_cast<int8_t>(std::clamp(std::nearbyint(in[at] / scale), -127.0f, 127.0f));
      }
    }
  }
  return out;
}

// The node reads DequantizeLinear(s8 weight, per-channel scale, zero 0, axis) instead of its f32 weight.
void quantize_weight_input(Graph& graph, Node& node, int64_t axis) {
  Value* w = node.input(1);
  QuantizedWeight qw = quantize_weight(w->data(), axis);
  const int64_t channels = qw.scales.num_elements();
  Value* q = graph.add_constant(graph.unique_name(w->name() + "_s8"), qw.q);
  Value* s = graph.add_constant(graph.unique_name(w->name() + "_scale"), qw.scales);
  Value* z = graph.add_constant(graph.unique_name(w->name() + "_zero_point"), Tensor(DType::kInt8, {channels}));
  Node* dq = graph.add_node("DequantizeLinear", {q, s, z}, 1, {{"axis", Attribute(axis)}},
                            graph.unique_name(w->name() + "_dequantize"));
  dq->output(0)->set_type(w->type());
  node.set_input(1, dq->output(0));
}

// "[N, 3, 224, 224]": a batch of the input, N rows.
std::string batch_shape_text(const Shape& shape) {
  std::string text = "[N";
  for (size_t i = 1; i < shape.dims().size(); ++i) {
    const Dim& d = shape.dims()[i];
    text += ", " + (d.is_static() ? std::to_string(d.size()) : std::string("any"));
  }
  return text + "]";
}

}  // namespace

RangeMethod range_method(const std::string& name) {
  if (name == "minmax") return RangeMethod::kMinMax;
  if (name == "percentile") return RangeMethod::kPercentile;
  throw Error(ErrorKind::kInvalidArgument, "unknown calibration method '" + name + "' (methods: minmax, percentile)");
}

std::vector<Tensor> read_calibration_examples(const Graph& graph, const std::vector<std::string>& files) {
  if (graph.inputs().empty()) throw Error(ErrorKind::kInvalidArgument, "the model has no input to calibrate");
  if (files.empty()) throw Error(ErrorKind::kInvalidArgument, "quantize needs --calibration FILE.npy[,...]");
  const Value* input = graph.inputs()[0];
  const Shape& shape = input->shape();
  if (!shape.has_rank() || shape.rank() < 1) {
    throw Error(ErrorKind::kUnsupported, "input '" + input->name() + "' has no batch dimension to calibrate over");
  }
  const Dim& batch_dim = shape.dims()[0];
  const int64_t per_run = batch_dim.is_static() ? batch_dim.size() : 1;
  std::vector<Tensor> examples;
  for (const std::string& file : files) {
    if (!std::filesystem::exists(file)) {
      throw Error(ErrorKind::kIo, "calibration file '" + file + "' does not exist");
    }
    Tensor batch = read_npy(file);
    bool fits = batch.dtype() == input->dtype() && batch.rank() == shape.rank() && batch.sizes()[0] > 0;
    for (int64_t d = 1; fits && d < shape.rank(); ++d) {
      const Dim& dim = shape.dims()[static_cast<size_t>(d)];
      fits = dim.is_symbolic() || dim.size() == batch.sizes()[static_cast<size_t>(d)];
    }
    if (fits && per_run > 0) fits = batch.sizes()[0] % per_run == 0;
    if (!fits || per_run <= 0) {
      throw Error(ErrorKind::kShape, "calibration file '" + file + "' holds " + std::string(dtype_name(batch.dtype())) +
                                         " " + format_sizes(batch.sizes()) + "; input '" + input->name() + "' needs " +
                                         std::string(dtype_name(input->dtype())) + " " + batch_shape_text(shape) +
                                         (per_run > 1 ? " with N a multiple of " + std::to_string(per_run) : ""));
    }
    std::vector<int64_t> run_sizes = batch.sizes();
    run_sizes[0] = per_run;
    const size_t run_bytes = batch.nbytes() / static_cast<size_t>(batch.sizes()[0] / per_run);
    for (int64_t start = 0; start < batch.sizes()[0]; start += per_run) {
      Tensor run = Tensor::uninitialized(batch.dtype(), run_sizes);
      std::memcpy(run.raw_data(), static_cast<const char*>(batch.raw_data()) + static_cast<size_t>(start / per_run) * run_bytes,
                  run_bytes);
      examples.push_back(std::move(run));
    }
  }
  return examples;
}

QuantizationReport quantize_graph(Graph& graph, const std::vector<Tensor>& examples, const OpSet& ops,
                                  const QuantizeOptions& options) {
  if (options.method == RangeMethod::kPercentile && !(options.percentile > 50 && options.percentile <= 100)) {
    throw Error(ErrorKind::kInvalidArgument,
                "--percentile " + std::to_string(options.percentile) + " is not in (50, 100]");
  }
  if (examples.empty()) throw Error(ErrorKind::kInvalidArgument, "quantization needs at least one calibration example");
  infer_graph_types(graph, ops.ops);
  PassContext context(ops.ops, &ops.kernels);
  inference_pipeline(kSimplifyLevel)->run(graph, context);

  QuantizationReport report;
  std::vector<Planned> planned;
  size_t candidates = 0;
  for (Node* node : graph.topological_order()) {
    if (!is_quantizable_op(*node)) continue;
    ++candidates;
    WeightPlan plan = weight_plan(*node);
    Planned p{};
    if (plan.why_not.empty()) p = planned_for(graph, *node, plan.axis);
    if (plan.why_not.empty() && is_output_layer(graph, p.output)) {
      plan.why_not = "the output layer (its result is a graph output; u8 would round the logits)";
    }
    if (!plan.why_not.empty()) {
      report.left_f32.push_back(node->name() + " (" + node->op_type() + "): " + plan.why_not);
      continue;
    }
    planned.push_back(p);
  }
  if (candidates == 0) {
    throw Error(ErrorKind::kUnsupported, "the model has no Conv, MatMul or Gemm to quantize");
  }
  if (planned.empty()) {
    std::string why;
    for (const std::string& line : report.left_f32) why += "; " + line;
    throw Error(ErrorKind::kUnsupported, "no Conv, MatMul or Gemm of the model can be quantized" + why);
  }

  std::vector<Value*> activations;
  std::set<const Value*> seen;
  for (const Planned& p : planned) {
    for (Value* v : {p.input, p.output}) {
      if (seen.insert(v).second) activations.push_back(v);
    }
  }
  const std::vector<Range> ranges = calibrate(graph, activations, examples, ops, options);
  report.calibration_runs = examples.size();

  for (const Planned& p : planned) {
    quantize_weight_input(graph, *p.node, p.weight_axis);
    (p.node->op_type() == "Conv" ? report.quantized_convs : report.quantized_matmuls) += 1;
  }
  for (size_t i = 0; i < activations.size(); ++i) insert_activation_qdq(graph, activations[i], ranges[i]);
  report.quantized_activations = activations.size();
  for (const Planned& p : planned) {
    if (p.clip == nullptr) continue;
    Node* relu = graph.add_node("Relu", {p.clip->input(0)}, 1, {}, graph.unique_name(p.clip->name() + "_relu"));
    relu->output(0)->set_type(p.clip->output(0)->type());
    graph.replace_all_uses(p.clip->output(0), relu->output(0));
    graph.remove_node(p.clip);
  }
  // The f32 weights nothing reads now.
  make_pass("dead_code_elimination")->run(graph, context);
  infer_graph_types(graph, ops.ops);
  return report;
}

QuantizationReport quantize_model(const std::string& model, const std::vector<std::string>& calibration,
                                  const std::string& output, const OpSet& ops, const QuantizeOptions& options) {
  std::unique_ptr<Graph> graph = load_graph(model, ops);
  const std::vector<Tensor> examples = read_calibration_examples(*graph, calibration);
  QuantizationReport report;
  try {
    report = quantize_graph(*graph, examples, ops, options);
  } catch (Error& e) {
    throw e.with_file(model);
  }
  Model saved;
  saved.graph = std::move(graph);
  if (std::filesystem::path(output).extension() == ".onnx") {
    export_onnx_model(saved, output);
  } else {
    save_model(saved, output);
  }
  return report;
}

}  // namespace weir::tools
