// The ONNX opset adapters (frontend/onnx/onnx_node_adapters.cc): each old
// form of an op, imported from a model at its old opset, against the same
// computation written at a newer opset, on the same random inputs. Old
// semantics Weir does not implement are refused by name.
#include <gtest/gtest.h>

#include "core/error.h"
#include "ops/graph_evaluator.h"
#include "tests/frontend/onnx_model_builder.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::add_float;
using testing::add_floats;
using testing::add_int;
using testing::add_ints;
using testing::add_string;
using testing::ModelBuilder;
using testing::random_tensor;
using testing::to_doubles;

// Imports both models, runs them on `feeds` and expects every output equal.
void expect_same_results(const ModelBuilder& old_model, const ModelBuilder& new_model,
                         const std::map<std::string, Tensor>& feeds, double tolerance = 0) {
  Model old_imported = old_model.import();
  Model new_imported = new_model.import();
  std::vector<Tensor> old_results = evaluate_graph(*old_imported.graph, feeds);
  std::vector<Tensor> new_results = evaluate_graph(*new_imported.graph, feeds);
  ASSERT_EQ(old_results.size(), new_results.size());
  for (size_t i = 0; i < old_results.size(); ++i) {
    EXPECT_EQ(old_results[i].sizes(), new_results[i].sizes()) << "output " << i;
    EXPECT_EQ(old_results[i].dtype(), new_results[i].dtype()) << "output " << i;
    std::vector<double> a = to_doubles(old_results[i]), b = to_doubles(new_results[i]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], tolerance) << "output " << i << " element " << j;
  }
  // The old model's declared output shapes are the new one's.
  for (size_t i = 0; i < old_imported.graph->outputs().size(); ++i) {
    EXPECT_EQ(old_imported.graph->outputs()[i]->shape().to_string(), new_imported.graph->outputs()[i]->shape().to_string())
        << "output " << i;
  }
}

// Softmax, LogSoftmax and Hardmax before opset 13 flattened the input to 2-D
// at `axis` (default 1): opset 11 against Flatten -> op(axis=-1) -> Reshape at 13.
TEST(OnnxOpsetAdapters, SoftmaxFamilyFlattensAtAxisBeforeOpset13) {
  Tensor x = random_tensor(DType::kFloat32, {2, 3, 4}, 1);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    for (int64_t axis : {0, 1, 2, -1, -2}) {
      ModelBuilder old_model(11);
      old_model.input("x", {2, 3, 4}).output("y");
      add_int(old_model.node(op, {"x"}, {"y"}, "op"), "axis", axis);

      ModelBuilder new_model(13);
      new_model.input("x", {2, 3, 4}).output("y");
      add_int(new_model.node("Flatten", {"x"}, {"flat"}, "flatten"), "axis", axis < 0 ? axis + 3 : axis);
      add_int(new_model.node(op, {"flat"}, {"z"}, "op"), "axis", -1);
      new_model.initializer(Tensor::from_vector<int64_t>({2, 3, 4}, {3}), "shape");
      new_model.node("Reshape", {"z", "shape"}, {"y"}, "reshape");
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      expect_same_results(old_model, new_model, {{"x", x}}, 1e-6);
    }
    // Without `axis`, opset 11 flattens at 1 and opset 13 normalizes over -1.
    ModelBuilder old_default(11), new_explicit(11);
    old_default.input("x", {2, 3, 4}).output("y");
    old_default.node(op, {"x"}, {"y"}, "op");
    new_explicit.input("x", {2, 3, 4}).output("y");
    add_int(new_explicit.node(op, {"x"}, {"y"}, "op"), "axis", 1);
    expect_same_results(old_default, new_explicit, {{"x", x}});
  }
}

// Before opset 7, B broadcast only with broadcast=1, aligned at `axis`.
TEST(OnnxOpsetAdapters, LegacyBroadcastAlignsBAtAxis) {
  Tensor a = random_tensor(DType::kFloat32, {2, 3, 4, 5}, 2);
  Tensor b = random_tensor(DType::kFloat32, {3, 4}, 3);
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    ModelBuilder old_model(6);
    old_model.input("a", {2, 3, 4, 5}).input("b", {3, 4}).output("y");
    onnx::NodeProto* node = old_model.node(op, {"a", "b"}, {"y"}, "op");
    add_int(node, "broadcast", 1);
    add_int(node, "axis", 1);

    ModelBuilder new_model(13);
    new_model.input("a", {2, 3, 4, 5}).input("b", {3, 4}).output("y");
    new_model.initializer(Tensor::from_vector<int64_t>({3, 4, 1}, {3}), "shape");
    new_model.node("Reshape", {"b", "shape"}, {"b3"}, "reshape");
    new_model.node(op, {"a", "b3"}, {"y"}, "op");
    SCOPED_TRACE(op);
    expect_same_results(old_model, new_model, {{"a", a}, {"b", b}});
  }
  // broadcast=1 without axis lines B up with A's trailing dims, as NumPy does.
  Tensor tail = random_tensor(DType::kFloat32, {5}, 4);
  ModelBuilder old_model(6), new_model(13);
  old_model.input("a", {2, 3, 4, 5}).input("b", {5}).output("y");
  add_int(old_model.node("Add", {"a", "b"}, {"y"}, "add"), "broadcast", 1);
  new_model.input("a", {2, 3, 4, 5}).input("b", {5}).output("y");
  new_model.node("Add", {"a", "b"}, {"y"}, "add");
  expect_same_results(old_model, new_model, {{"a", a}, {"b", tail}});
  // An axis that does not fit B into A is refused, naming the ranks.
  ModelBuilder bad(6);
  bad.input("a", {2, 3}).input("b", {3, 4}).output("y");
  onnx::NodeProto* node = bad.node("Add", {"a", "b"}, {"y"}, "add");
  add_int(node, "broadcast", 1);
  add_int(node, "axis", 1);
  std::string message = testing::error_of([&] { bad.import(); }, ErrorKind::kUnsupported);
  EXPECT_NE(message.find("does not fit B of rank 2 into A of rank 2"), std::string::npos) << message;
}

TEST(OnnxOpsetAdapters, GemmBroadcastAttributeBeforeOpset7) {
  Tensor a = random_tensor(DType::kFloat32, {3, 4}, 5);
  Tensor b = random_tensor(DType::kFloat32, {4, 2}, 6);
  Tensor c = random_tensor(DType::kFloat32, {2}, 7);
  ModelBuilder old_model(6), new_model(13);
  for (ModelBuilder* m : {&old_model, &new_model}) {
    m->input("a", {3, 4}).input("b", {4, 2}).input("c", {2}).output("y");
    onnx::NodeProto* gemm = m->node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
    add_float(gemm, "beta", 0.5f);
    if (m == &old_model) add_int(gemm, "broadcast", 1);
  }
  expect_same_results(old_model, new_model, {{"a", a}, {"b", b}, {"c", c}});
}

// PRelu-6 applied a 1-D slope per channel; PRelu-16 broadcasts it
// unidirectionally, so the same model writes it as [C, 1, 1].
TEST(OnnxOpsetAdapters, PReluChannelSlopeBeforeOpset7) {
  Tensor x = random_tensor(DType::kFloat32, {2, 3, 4, 5}, 18);
  Tensor slope = random_tensor(DType::kFloat32, {3}, 19);
  ModelBuilder old_model(6), new_model(16);
  old_model.input("x", {2, 3, 4, 5}).output("y");
  old_model.initializer(slope, "slope");
  old_model.node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  new_model.input("x", {2, 3, 4, 5}).output("y");
  new_model.initializer(slope.reshape({3, 1, 1}), "slope");
  new_model.node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  expect_same_results(old_model, new_model, {{"x", x}});
}

// BatchNormalization-6 with is_test=1 and consumed_inputs, -7 with spatial=1,
// against BatchNormalization-15.
TEST(OnnxOpsetAdapters, BatchNormalizationLegacyAttributes) {
  Tensor x = random_tensor(DType::kFloat32, {2, 3, 4, 4}, 8);
  Tensor variance = Tensor::from_vector<float>({0.5f, 1.5f, 2.0f}, {3});
  auto build = [&](int64_t opset) {
    ModelBuilder m(opset);
    m.input("x", {2, 3, 4, 4}).output("y");
    m.initializer(random_tensor(DType::kFloat32, {3}, 10), "scale");
    m.initializer(random_tensor(DType::kFloat32, {3}, 11), "bias");
    m.initializer(random_tensor(DType::kFloat32, {3}, 12), "mean");
    m.initializer(variance, "var");
    onnx::NodeProto* bn = m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn");
    add_float(bn, "epsilon", 1e-3f);
    if (opset == 6) {
      add_int(bn, "is_test", 1);
      add_ints(bn, "consumed_inputs", {0, 0, 0, 1, 1});
    }
    if (opset == 7) add_int(bn, "spatial", 1);
    return m;
  };
  expect_same_results(build(6), build(15), {{"x", x}});
  expect_same_results(build(7), build(15), {{"x", x}});

  // Semantics Weir does not implement are refused with the reason.
  ModelBuilder training = build(6);
  training.graph->mutable_node(0)->mutable_attribute(1)->set_i(0);  // is_test=0
  std::string message = testing::error_of([&] { training.import(); }, ErrorKind::kUnsupported);
  EXPECT_NE(message.find("is_test=0"), std::string::npos) << message;
  ModelBuilder per_activation = build(7);
  per_activation.graph->mutable_node(0)->mutable_attribute(1)->set_i(0);  // spatial=0
  message = testing::error_of([&] { per_activation.import(); }, ErrorKind::kUnsupported);
  EXPECT_NE(message.find("spatial=0"), std::string::npos) << message;
}

// Slice-9, Reshape-4 and TopK-9 took as attributes what later became inputs.
TEST(OnnxOpsetAdapters, AttributesThatBecameInputs) {
  Tensor x = random_tensor(DType::kFloat32, {4, 6}, 13);
  ModelBuilder old_slice(9), new_slice(13);
  old_slice.input("x", {4, 6}).output("y");
  onnx::NodeProto* slice = old_slice.node("Slice", {"x"}, {"y"}, "slice");
  add_ints(slice, "starts", {1, -4});
  add_ints(slice, "ends", {3, 100});
  add_ints(slice, "axes", {0, 1});
  new_slice.input("x", {4, 6}).output("y");
  new_slice.initializer(Tensor::from_vector<int64_t>({1, -4}, {2}), "starts");
  new_slice.initializer(Tensor::from_vector<int64_t>({3, 100}, {2}), "ends");
  new_slice.initializer(Tensor::from_vector<int64_t>({0, 1}, {2}), "axes");
  new_slice.node("Slice", {"x", "starts", "ends", "axes"}, {"y"}, "slice");
  expect_same_results(old_slice, new_slice, {{"x", x}});

  ModelBuilder old_reshape(4), new_reshape(13);
  old_reshape.input("x", {4, 6}).output("y");
  onnx::NodeProto* reshape = old_reshape.node("Reshape", {"x"}, {"y"}, "reshape");
  add_ints(reshape, "shape", {3, -1, 2});
  add_ints(reshape, "consumed_inputs", {0});
  new_reshape.input("x", {4, 6}).output("y");
  new_reshape.initializer(Tensor::from_vector<int64_t>({3, -1, 2}, {3}), "shape");
  new_reshape.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  expect_same_results(old_reshape, new_reshape, {{"x", x}});

  ModelBuilder old_top_k(9), new_top_k(11);
  old_top_k.input("x", {4, 6}).output("values");
  add_int(old_top_k.node("TopK", {"x"}, {"values", "indices"}, "top_k"), "k", 3);
  new_top_k.input("x", {4, 6}).output("values");
  new_top_k.initializer(Tensor::from_vector<int64_t>({3}, {1}), "k");
  new_top_k.node("TopK", {"x", "k"}, {"values", "indices"}, "top_k");
  expect_same_results(old_top_k, new_top_k, {{"x", x}});
}

// Dropout-6 (is_test) and Dropout-10 (ratio attribute) in inference are the
// identity, as Dropout-13 without training_mode is.
TEST(OnnxOpsetAdapters, DropoutLegacyAttributes) {
  Tensor x = random_tensor(DType::kFloat32, {3, 5}, 14);
  ModelBuilder is_test(6), ratio(10), current(13);
  for (ModelBuilder* m : {&is_test, &ratio, &current}) m->input("x", {3, 5}).output("y");
  add_int(is_test.node("Dropout", {"x"}, {"y"}, "dropout"), "is_test", 1);
  add_float(ratio.node("Dropout", {"x"}, {"y"}, "dropout"), "ratio", 0.3f);
  current.node("Dropout", {"x"}, {"y"}, "dropout");
  expect_same_results(is_test, current, {{"x", x}});
  expect_same_results(ratio, current, {{"x", x}});
}

// Upsample-7 (scales attribute), Upsample-9 and Resize-10 (scales input)
// against Resize-13 with asymmetric coordinates (and floor for nearest).
TEST(OnnxOpsetAdapters, UpsampleAndResize10BecomeResize) {
  Tensor x = random_tensor(DType::kFloat32, {1, 2, 3, 4}, 15);
  const std::vector<float> scales = {1, 1, 2, 1.5f};
  for (const char* mode : {"nearest", "linear"}) {
    ModelBuilder current(13);
    current.input("x", {1, 2, 3, 4}).output("y");
    current.initializer(Tensor::from_vector<float>(scales, {4}), "scales");
    onnx::NodeProto* resize = current.node("Resize", {"x", "", "scales"}, {"y"}, "resize");
    add_string(resize, "mode", mode);
    add_string(resize, "coordinate_transformation_mode", "asymmetric");
    if (std::string(mode) == "nearest") add_string(resize, "nearest_mode", "floor");

    ModelBuilder upsample7(7);
    upsample7.input("x", {1, 2, 3, 4}).output("y");
    onnx::NodeProto* up = upsample7.node("Upsample", {"x"}, {"y"}, "upsample");
    add_floats(up, "scales", scales);
    add_string(up, "mode", mode);
    SCOPED_TRACE(mode);
    expect_same_results(upsample7, current, {{"x", x}});

    for (auto [op, opset] : {std::pair<const char*, int64_t>{"Upsample", 9}, {"Resize", 10}}) {
      ModelBuilder old_model(opset);
      old_model.input("x", {1, 2, 3, 4}).output("y");
      old_model.initializer(Tensor::from_vector<float>(scales, {4}), "scales");
      add_string(old_model.node(op, {"x", "scales"}, {"y"}, "resize"), "mode", mode);
      SCOPED_TRACE(op);
      expect_same_results(old_model, current, {{"x", x}});
    }
  }
}

// RoiAlign-10 sampled as opset 16's output_half_pixel does.
TEST(OnnxOpsetAdapters, RoiAlignBeforeOpset16UsesOutputHalfPixel) {
  Tensor x = random_tensor(DType::kFloat32, {1, 2, 6, 6}, 20);
  Tensor rois = Tensor::from_vector<float>({0.5f, 1, 4, 5.5f, 1, 0, 3, 2}, {2, 4});
  Tensor batch = Tensor::from_vector<int64_t>({0, 0}, {2});
  ModelBuilder old_model(10), new_model(16);
  for (ModelBuilder* m : {&old_model, &new_model}) {
    m->input("x", {1, 2, 6, 6}).output("y");
    m->initializer(rois, "rois");
    m->initializer(batch, "batch");
    onnx::NodeProto* roi_align = m->node("RoiAlign", {"x", "rois", "batch"}, {"y"}, "roi_align");
    add_int(roi_align, "output_height", 2);
    add_int(roi_align, "output_width", 3);
    if (m == &new_model) add_string(roi_align, "coordinate_transformation_mode", "output_half_pixel");
  }
  expect_same_results(old_model, new_model, {{"x", x}}, 1e-6);
  // The default at opset 16 (half_pixel) samples elsewhere: the adapter matters.
  ModelBuilder half_pixel(16);
  half_pixel.input("x", {1, 2, 6, 6}).output("y");
  half_pixel.initializer(rois, "rois");
  half_pixel.initializer(batch, "batch");
  onnx::NodeProto* roi_align = half_pixel.node("RoiAlign", {"x", "rois", "batch"}, {"y"}, "roi_align");
  add_int(roi_align, "output_height", 2);
  add_int(roi_align, "output_width", 3);
  EXPECT_NE(to_doubles(evaluate_graph(*half_pixel.import().graph, {{"x", x}})[0]),
            to_doubles(evaluate_graph(*old_model.import().graph, {{"x", x}})[0]));
}

TEST(OnnxOpsetAdapters, ScatterIsScatterElements) {
  Tensor data = random_tensor(DType::kFloat32, {3, 4}, 16);
  Tensor updates = random_tensor(DType::kFloat32, {2, 4}, 17);
  Tensor indices = Tensor::from_vector<int64_t>({2, 0, 1, 1, 0, 2, 2, 0}, {2, 4});
  ModelBuilder old_model(10), new_model(13);
  for (auto [m, op] : {std::pair<ModelBuilder*, const char*>{&old_model, "Scatter"}, {&new_model, "ScatterElements"}}) {
    m->input("data", {3, 4}).input("updates", {2, 4}).output("y");
    m->initializer(indices, "indices");
    add_int(m->node(op, {"data", "indices", "updates"}, {"y"}, "scatter"), "axis", 0);
  }
  expect_same_results(old_model, new_model, {{"data", data}, {"updates", updates}});
}

// Pow with an integer base and a float exponent computes in float and casts
// back to the base type, as written out with Casts.
TEST(OnnxOpsetAdapters, PowOfIntegerBaseWithFloatExponent) {
  Tensor base = Tensor::from_vector<int32_t>({1, 2, 3, -2, 5, 0}, {6});
  Tensor exponent = Tensor::from_vector<float>({4, 0.5f, 3, 2, -1, 2}, {6});
  ModelBuilder mixed(15), cast(15);
  for (ModelBuilder* m : {&mixed, &cast}) {
    m->input("x", {6}, onnx::TensorProto::INT32).input("e", {6}).output("y");
    m->graph->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT32);
  }
  mixed.node("Pow", {"x", "e"}, {"y"}, "pow");
  add_int(cast.node("Cast", {"x"}, {"xf"}, "to_float"), "to", onnx::TensorProto::FLOAT);
  cast.node("Pow", {"xf", "e"}, {"yf"}, "pow");
  add_int(cast.node("Cast", {"yf"}, {"y"}, "to_int"), "to", onnx::TensorProto::INT32);
  expect_same_results(mixed, cast, {{"x", base}, {"e", exponent}});
  std::vector<double> y = to_doubles(evaluate_graph(*mixed.import().graph, {{"x", base}, {"e", exponent}})[0]);
  EXPECT_EQ(y, (std::vector<double>{1, 1, 27, 4, 0, 0}));
}

// Clip-6 (min/max attributes), Pad-2 (pads/value attributes) and Split-11
// (split attribute) against their opset-13 forms with constant inputs.
TEST(OnnxOpsetAdapters, ClipPadAndSplitAttributesBecameInputs) {
  Tensor x = random_tensor(DType::kFloat32, {3, 4}, 21);
  ModelBuilder old_clip(6), new_clip(13);
  old_clip.input("x", {3, 4}).output("y");
  onnx::NodeProto* clip = old_clip.node("Clip", {"x"}, {"y"}, "clip");
  add_float(clip, "min", -0.5f);
  add_float(clip, "max", 0.75f);
  new_clip.input("x", {3, 4}).output("y");
  new_clip.initializer(Tensor::scalar(-0.5f), "min");
  new_clip.initializer(Tensor::scalar(0.75f), "max");
  new_clip.node("Clip", {"x", "min", "max"}, {"y"}, "clip");
  expect_same_results(old_clip, new_clip, {{"x", x}});

  ModelBuilder old_pad(2), new_pad(13);
  old_pad.input("x", {3, 4}).output("y");
  onnx::NodeProto* pad = old_pad.node("Pad", {"x"}, {"y"}, "pad");
  add_ints(pad, "pads", {1, 0, 2, 3});
  add_float(pad, "value", 1.5f);
  new_pad.input("x", {3, 4}).output("y");
  new_pad.initializer(Tensor::from_vector<int64_t>({1, 0, 2, 3}, {4}), "pads");
  new_pad.initializer(Tensor::scalar(1.5f), "value");
  new_pad.node("Pad", {"x", "pads", "value"}, {"y"}, "pad");
  expect_same_results(old_pad, new_pad, {{"x", x}});

  ModelBuilder old_split(11), new_split(13);
  for (ModelBuilder* m : {&old_split, &new_split}) m->input("x", {3, 4}).output("a").output("b");
  onnx::NodeProto* split = old_split.node("Split", {"x"}, {"a", "b"}, "split");
  add_int(split, "axis", 1);
  add_ints(split, "split", {1, 3});
  new_split.initializer(Tensor::from_vector<int64_t>({1, 3}, {2}), "sizes");
  add_int(new_split.node("Split", {"x", "sizes"}, {"a", "b"}, "split"), "axis", 1);
  expect_same_results(old_split, new_split, {{"x", x}});
}

// LSTM-1 with output_sequence (which only said whether Y may be left out)
// against LSTM-14, on the same weights: Y, Y_h and Y_c equal.
TEST(OnnxOpsetAdapters, RecurrentOutputSequenceBeforeOpset7) {
  Tensor x = random_tensor(DType::kFloat32, {3, 2, 4}, 22);
  ModelBuilder old_model(6), new_model(14);
  for (ModelBuilder* m : {&old_model, &new_model}) {
    m->input("x", {3, 2, 4}).output("y").output("y_h").output("y_c");
    m->initializer(random_tensor(DType::kFloat32, {1, 20, 4}, 23), "w");
    m->initializer(random_tensor(DType::kFloat32, {1, 20, 5}, 24), "r");
    onnx::NodeProto* lstm = m->node("LSTM", {"x", "w", "r"}, {"y", "y_h", "y_c"}, "lstm");
    add_int(lstm, "hidden_size", 5);
    if (m == &old_model) add_int(lstm, "output_sequence", 1);
  }
  expect_same_results(old_model, new_model, {{"x", x}});
}

// An attribute no opset of the op has stays a clear error naming it.
TEST(OnnxOpsetAdapters, UnknownAttributeStaysAnError) {
  ModelBuilder m(6);
  m.input("a", {2}).input("b", {2}).output("y");
  add_int(m.node("Add", {"a", "b"}, {"y"}, "add"), "no_such_attribute", 1);
  std::string message = testing::error_of([&] { m.import(); }, ErrorKind::kUnsupported);
  EXPECT_NE(message.find("attribute 'no_such_attribute' is not supported"), std::string::npos) << message;
}

}  // namespace
}  // namespace weir
