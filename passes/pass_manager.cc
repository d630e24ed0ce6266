#include "passes/pass_manager.h"

#include "core/error.h"
#include "core/type_inference.h"
#include "core/verifier.h"
#include "passes/fusion/attention_fusion.h"
#include "passes/fusion/concat_conv_split.h"
#include "passes/fusion/conv_activation_fusion.h"
#include "passes/fusion/conv_batch_norm_folding.h"
#include "passes/fusion/conv_input_affine_folding.h"
#include "passes/fusion/conv_residual_fusion.h"
#include "passes/fusion/elementwise_fusion.h"
#include "passes/fusion/gelu_fusion.h"
#include "passes/fusion/layer_norm_fusion.h"
#include "passes/fusion/matmul_add_to_gemm.h"
#include "passes/fusion/matmul_fusion.h"
#include "passes/fusion/qdq_fusion.h"
#include "passes/fusion/qdq_residual_fusion.h"
#include "passes/layout/channels_last_layout.h"
#include "passes/precision/auto_mixed_precision.h"
#include "passes/precision/wide_output_fusion.h"
#include "passes/simplify/common_subexpression_elimination.h"
#include "passes/simplify/constant_folding.h"
#include "passes/simplify/dead_code_elimination.h"
#include "passes/simplify/freeze_parameters.h"
#include "passes/simplify/identity_elimination.h"
#include "passes/simplify/no_op_elimination.h"
#include "passes/simplify/shape_op_folding.h"

namespace weir {

Pipeline& Pipeline::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

bool Pipeline::run(Graph& graph, PassContext& context) {
  bool any = false;
  for (const std::unique_ptr<Pass>& pass : passes_) {
    bool changed = pass->run(graph, context);
    if (changed) {
      try {
        infer_graph_types(graph, context.registry());
        verify_graph(graph, context.registry());
      } catch (const Error& e) {
        throw Error(ErrorKind::kInternal, "pass '" + pass->name() + "' left an invalid graph: " + e.what());
      }
    }
    if (after_) after_(*pass, graph, changed);
    any = any || changed;
  }
  return any;
}

bool FixedPoint::run(Graph& graph, PassContext& context) {
  bool any = false;
  for (int i = 0; i < max_ && pass_->run(graph, context); ++i) any = true;
  return any;
}

namespace {

struct Registered {
  const char* name;
  int level;  // the lowest optimization level that runs it
  std::unique_ptr<Pass> (*make)();
};

// In pipeline order, with why each sits where it does:
// freezing first (at level 2: weights nothing writes become constants, which
// folding and the fusions need); identities next (they hide producers from
// the patterns); static Shape/Size become constants (then a Reshape to its
// own shape has a static output type, which no-op elimination needs, and
// folding finishes the shape arithmetic); no-ops; the QDQ fusion (int8
// convs and matmuls: before folding, which would turn DequantizeLinear of
// constant int8 weights into f32 weights), then the quantized residual Adds
// into the int8 convs it made; folding (shape arithmetic and frozen-weight arithmetic
// become constants); CSE (folded duplicates now read the same values); the
// fusions, on the simplified graph (Conv+BN needs constant weights, and
// runs before Conv+Relu so Conv-BN-Relu ends as one FusedConv; an input
// normalization folds into the conv after it, on the constant weights; the layout
// after the conv fusions, so it moves whole FusedConvs; the concat split
// after the layout, which decides the channel axis and moves the pools next
// to the Concats; elementwise chains
// last, so activations fuse into their convs and matmuls first);
// DCE last (it sweeps what the others left unread).
const std::vector<Registered>& registered() {
  static const std::vector<Registered> passes = {
      {"freeze_parameters", 2, [] { return std::unique_ptr<Pass>(new FreezeParameters()); }},
      {"identity_elimination", 1, [] { return std::unique_ptr<Pass>(new IdentityElimination()); }},
      {"shape_op_folding", 1, [] { return std::unique_ptr<Pass>(new ShapeOpFolding()); }},
      {"no_op_elimination", 1, [] { return std::unique_ptr<Pass>(new NoOpElimination()); }},
      {"qdq_fusion", 2, [] { return std::unique_ptr<Pass>(new QdqFusion()); }},
      {"qdq_residual_fusion", 2, [] { return std::unique_ptr<Pass>(new QdqResidualFusion()); }},
      {"constant_folding", 1, [] { return std::unique_ptr<Pass>(new ConstantFolding()); }},
      {"common_subexpression_elimination", 2, [] { return std::unique_ptr<Pass>(new CommonSubexpressionElimination()); }},
      {"conv_batch_norm_folding", 2, [] { return std::unique_ptr<Pass>(new ConvBatchNormFolding()); }},
      {"conv_input_affine_folding", 2, [] { return std::unique_ptr<Pass>(new ConvInputAffineFolding()); }},
      {"conv_residual_fusion", 3, [] { return std::unique_ptr<Pass>(new ConvResidualFusion()); }},
      {"conv_activation_fusion", 3, [] { return std::unique_ptr<Pass>(new ConvActivationFusion()); }},
      {"gelu_fusion", 2, [] { return std::unique_ptr<Pass>(new GeluFusion()); }},
      {"layer_norm_fusion", 2, [] { return std::unique_ptr<Pass>(new LayerNormFusion()); }},
      {"attention_fusion", 3, [] { return std::unique_ptr<Pass>(new AttentionFusion()); }},
      {"channels_last_layout", 3, [] { return std::unique_ptr<Pass>(new ChannelsLastLayout()); }},
      {"concat_conv_split", 3, [] { return std::unique_ptr<Pass>(new ConcatConvSplit()); }},
      {"matmul_fusion", 3, [] { return std::unique_ptr<Pass>(new MatMulFusion()); }},
      {"matmul_add_to_gemm", 3, [] { return std::unique_ptr<Pass>(new MatMulAddToGemm()); }},
      {"elementwise_fusion", 3, [] { return std::unique_ptr<Pass>(new ElementwiseFusion()); }},
      {"dead_code_elimination", 1, [] { return std::unique_ptr<Pass>(new DeadCodeElimination()); }},
  };
  return passes;
}

}  // namespace

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const Registered& r : registered()) names.push_back(r.name);
  names.push_back("autodiff");  // needs options (the loss): not in the inference pipeline
  names.push_back("auto_mixed_precision");  // needs options (the precision): in the pipeline under --amp
  names.push_back("wide_output_fusion");    // only under --amp, after auto_mixed_precision
  return names;
}

std::unique_ptr<Pass> make_pass(const std::string& name) {
  for (const Registered& r : registered()) {
    if (name == r.name) return r.make();
  }
  std::string names;
  for (const std::string& n : pass_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::kInvalidArgument, "unknown pass '" + name + "' (passes: " + names + ")");
}

void require_pass_name(const std::string& name) {
  for (const std::string& n : pass_names()) {
    if (n == name) return;
  }
  make_pass(name);  // throws naming the choices
}

namespace {

void add_amp(Pipeline& pipeline, DType low, int level, const std::set<std::string>& disabled) {
  pipeline.add(std::make_unique<AutoMixedPrecision>(AmpOptions{.low = low}));
  if (level >= 1 && !disabled.count("constant_folding")) pipeline.add(std::make_unique<ConstantFolding>());
  if (level >= 3 && !disabled.count("wide_output_fusion")) pipeline.add(std::make_unique<WideOutputFusion>());
}

std::unique_ptr<Pipeline> pipeline_of(const char* pipeline_name, int level, const std::set<std::string>& disabled,
                                      const std::set<std::string>& allowed, std::optional<DType> amp = std::nullopt) {
  if (level < 0 || level > 3) {
    throw Error(ErrorKind::kInvalidArgument, "optimization level " + std::to_string(level) + " is not in 0..3");
  }
  for (const std::string& name : disabled) require_pass_name(name);
  auto pipeline = std::make_unique<Pipeline>(pipeline_name);
  const bool with_amp = amp.has_value() && !disabled.count("auto_mixed_precision");
  for (const Registered& r : registered()) {
    // AMP goes after the last fusion that picks ops by dtype-free patterns
    // and before the elementwise chains (which then fuse bf16 chains, casts
    // included) and DCE (which sweeps the f32 weights the casts replaced).
    if (with_amp && std::string(r.name) == "elementwise_fusion") add_amp(*pipeline, *amp, level, disabled);
    if (r.level <= level && !disabled.count(r.name) && (allowed.empty() || allowed.count(r.name))) pipeline->add(r.make());
  }
  return pipeline;
}

}  // namespace

std::unique_ptr<Pipeline> inference_pipeline(int level, const std::set<std::string>& disabled, std::optional<DType> amp) {
  return pipeline_of("inference", level, disabled, {}, amp);
}

std::unique_ptr<Pipeline> training_optimization_pipeline(int level, const std::set<std::string>& disabled) {
  // In the registered order, which suits training graphs too.
  return pipeline_of("training", level, disabled,
                     {"identity_elimination", "shape_op_folding", "no_op_elimination", "constant_folding",
                      "common_subexpression_elimination", "elementwise_fusion", "dead_code_elimination"});
}

}  // namespace weir
