// Sequence and optional ops: each kernel against a reference written here
// (explicit coordinates, plain loops) on random inputs, type inference of
// sequence and optional values, SequenceMap's body with tensor and captured
// inputs, Identity and If on sequences, and errors that say what was expected.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "core/verifier.h"
#include "ops/graph_evaluator.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::make_tensor;
using testing::random_tensor;
using testing::to_doubles;
using testing::unflatten;
using testing::flatten;
using testing::count_of;

// A graph of one `op_type` node on graph inputs of the given values' types
// (an undefined Tensor: an absent input); returns the node's outputs.
std::vector<Tensor> run(const std::string& op_type, const std::vector<Tensor>& inputs,
                        std::map<std::string, Attribute> attributes = {}, size_t num_outputs = 1,
                        std::vector<TensorType>* inferred = nullptr) {
  Graph g("one_" + op_type);
  std::vector<Value*> values;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      values.push_back(nullptr);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    values.push_back(g.add_input(name, inputs[i].type()));
    feeds[name] = inputs[i];
  }
  Node* node = g.add_node(op_type, values, num_outputs, std::move(attributes), "op");
  infer_node_types(*node, default_op_registry());
  for (Value* output : node->outputs()) g.add_output(output);
  if (inferred != nullptr) {
    inferred->clear();
    for (Value* output : node->outputs()) inferred->push_back(output->type());
  }
  return evaluate_graph(g, feeds);
}

std::string error_of(const std::string& op_type, const std::vector<Tensor>& inputs,
                     std::map<std::string, Attribute> attributes = {}, size_t num_outputs = 1) {
  try {
    run(op_type, inputs, std::move(attributes), num_outputs);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' missing from: " << text;
}

// Same dtype, sizes and values.
void expect_same(const Tensor& actual, const Tensor& expected) {
  ASSERT_FALSE(actual.is_sequence() || actual.is_none()) << actual.type_string();
  EXPECT_EQ(actual.dtype(), expected.dtype());
  EXPECT_EQ(actual.sizes(), expected.sizes());
  EXPECT_EQ(to_doubles(actual), to_doubles(expected));
}

void expect_sequence(const Tensor& actual, const std::vector<Tensor>& expected) {
  ASSERT_TRUE(actual.is_sequence()) << actual.type_string();
  ASSERT_EQ(actual.elements().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("element " + std::to_string(i));
    expect_same(actual.elements()[i], expected[i]);
  }
}

Tensor position(int64_t value) { return Tensor::scalar(value); }

std::vector<Tensor> random_elements(DType dtype, const std::vector<std::vector<int64_t>>& shapes, uint32_t seed) {
  std::vector<Tensor> elements;
  for (size_t i = 0; i < shapes.size(); ++i) elements.push_back(random_tensor(dtype, shapes[i], seed + static_cast<uint32_t>(i)));
  return elements;
}

TEST(SequenceOps, ConstructCopiesItsInputsAndSequenceAtReadsThemBack) {
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    std::vector<Tensor> inputs = random_elements(dtype, {{2, 3}, {2, 5}, {2, 1}}, 10);
    std::vector<TensorType> inferred;
    Tensor sequence = run("SequenceConstruct", inputs, {}, 1, &inferred)[0];
    expect_sequence(sequence, inputs);
    // The elements are copies: they do not share the inputs' memory.
    for (size_t i = 0; i < inputs.size(); ++i) EXPECT_NE(sequence.elements()[i].raw_data(), inputs[i].raw_data());
    ASSERT_EQ(inferred.size(), 1u);
    EXPECT_TRUE(inferred[0].sequence);
    EXPECT_EQ(inferred[0].dtype, dtype);
    ASSERT_EQ(inferred[0].shape.rank(), 2);
    EXPECT_EQ(inferred[0].shape[0], Dim(2));
    EXPECT_TRUE(inferred[0].shape[1].is_symbolic());

    EXPECT_EQ(to_doubles(run("SequenceLength", {sequence})[0]), std::vector<double>{3});
    for (int64_t p = -3; p < 3; ++p) {
      Tensor element = run("SequenceAt", {sequence, position(p)})[0];
      const Tensor& expected = inputs[static_cast<size_t>(p < 0 ? p + 3 : p)];
      expect_same(element, expected);
      EXPECT_NE(element.raw_data(), sequence.elements()[static_cast<size_t>(p < 0 ? p + 3 : p)].raw_data());
    }
  }
}

TEST(SequenceOps, ConstructRejectsMixedDtypes) {
  expect_contains(error_of("SequenceConstruct", {Tensor::scalar(1.0f), Tensor::scalar(int64_t{1})}), "one dtype");
}

TEST(SequenceOps, SequenceAtOutOfRangeNamesIndexAndLength) {
  Tensor sequence = Tensor::sequence(DType::kFloat32, random_elements(DType::kFloat32, {{2}, {3}, {4}}, 3));
  for (int64_t p : {3, -4, 10}) {
    const std::string message = error_of("SequenceAt", {sequence, position(p)});
    expect_contains(message, "position " + std::to_string(p));
    expect_contains(message, "length 3");
  }
  // An i32 position of shape [1] is read too.
  expect_same(run("SequenceAt", {sequence, Tensor::from_vector<int32_t>({-1}, {1})})[0], sequence.elements()[2]);
}

TEST(SequenceOps, InsertMatchesAVectorInsert) {
  std::vector<Tensor> base = random_elements(DType::kFloat32, {{3}, {1}, {4}}, 20);
  Tensor sequence = Tensor::sequence(DType::kFloat32, base);
  Tensor x = random_tensor(DType::kFloat32, {2}, 99);
  // Absent position: at the end.
  {
    std::vector<Tensor> expected = base;
    expected.push_back(x);
    expect_sequence(run("SequenceInsert", {sequence, x})[0], expected);
  }
  for (int64_t p = -3; p <= 3; ++p) {
    SCOPED_TRACE("position " + std::to_string(p));
    std::vector<Tensor> expected = base;
    expected.insert(expected.begin() + (p < 0 ? p + 3 : p), x);
    Tensor out = run("SequenceInsert", {sequence, x, position(p)})[0];
    expect_sequence(out, expected);
    // The inserted tensor is a copy; the input sequence is unchanged.
    EXPECT_NE(out.elements()[static_cast<size_t>(p < 0 ? p + 3 : p)].raw_data(), x.raw_data());
    expect_sequence(sequence, base);
  }
  const std::string message = error_of("SequenceInsert", {sequence, x, position(4)});
  expect_contains(message, "position 4");
  expect_contains(message, "length 3");
  expect_contains(error_of("SequenceInsert", {sequence, Tensor::scalar(int64_t{1})}), "the sequence holds f32");
}

TEST(SequenceOps, InsertIntoEmptySequence) {
  Tensor x = random_tensor(DType::kInt64, {3}, 5);
  std::vector<TensorType> inferred;
  Tensor empty = run("SequenceEmpty", {}, {{"dtype", int64_t{7}}}, 1, &inferred)[0];
  EXPECT_TRUE(inferred[0].sequence);
  EXPECT_EQ(inferred[0].dtype, DType::kInt64);
  EXPECT_FALSE(inferred[0].shape.has_rank());
  ASSERT_TRUE(empty.is_sequence());
  EXPECT_EQ(empty.dtype(), DType::kInt64);
  EXPECT_TRUE(empty.elements().empty());
  expect_sequence(run("SequenceInsert", {empty, x, position(0)})[0], {x});
  // SequenceEmpty's dtype defaults to f32.
  EXPECT_EQ(run("SequenceEmpty", {})[0].dtype(), DType::kFloat32);
  expect_contains(error_of("SequenceEmpty", {}, {{"dtype", int64_t{8}}}), "dtype 8");
}

TEST(SequenceOps, EraseMatchesAVectorErase) {
  std::vector<Tensor> base = random_elements(DType::kInt32, {{2, 2}, {1, 2}, {3, 2}, {0, 2}}, 30);
  Tensor sequence = Tensor::sequence(DType::kInt32, base);
  {
    std::vector<Tensor> expected(base.begin(), base.end() - 1);
    expect_sequence(run("SequenceErase", {sequence})[0], expected);
  }
  for (int64_t p = -4; p < 4; ++p) {
    SCOPED_TRACE("position " + std::to_string(p));
    std::vector<Tensor> expected = base;
    expected.erase(expected.begin() + (p < 0 ? p + 4 : p));
    expect_sequence(run("SequenceErase", {sequence, position(p)})[0], expected);
  }
  const std::string message = error_of("SequenceErase", {sequence, position(4)});
  expect_contains(message, "position 4");
  expect_contains(message, "length 4");
  expect_contains(error_of("SequenceErase", {Tensor::sequence(DType::kInt32, {})}), "empty sequence");
}

TEST(SequenceOps, SequenceInputsMustBeSequences) {
  Tensor x = random_tensor(DType::kFloat32, {3}, 1);
  expect_contains(error_of("SequenceAt", {x, position(0)}), "input 'input_sequence' must be a sequence, got f32[3]");
  expect_contains(error_of("SequenceLength", {x}), "must be a sequence");
  expect_contains(error_of("SequenceInsert", {Tensor::sequence(DType::kFloat32, {}), Tensor::sequence(DType::kFloat32, {})}),
                  "input 'tensor' must be a tensor");
}

// Reference split: chunk k holds x's elements whose coordinate along `axis`
// is in [start_k, start_k + length_k).
std::vector<Tensor> reference_split(const Tensor& x, size_t axis, const std::vector<int64_t>& lengths, bool drop_axis) {
  std::vector<double> values = to_doubles(x);
  std::vector<Tensor> chunks;
  int64_t start = 0;
  for (int64_t length : lengths) {
    std::vector<int64_t> sizes = x.sizes();
    sizes[axis] = length;
    std::vector<double> chunk(static_cast<size_t>(count_of(sizes)));
    for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
      std::vector<int64_t> index = unflatten(flat, sizes);
      index[axis] += start;
      chunk[static_cast<size_t>(flat)] = values[static_cast<size_t>(flatten(index, x.sizes()))];
    }
    if (drop_axis) sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(axis));
    chunks.push_back(make_tensor(x.dtype(), chunk, sizes));
    start += length;
  }
  return chunks;
}

TEST(SequenceOps, SplitToSequenceMatchesReference) {
  struct Case {
    std::vector<int64_t> sizes;
    int64_t axis;
    std::optional<Tensor> split;
    int64_t keepdims;
    std::vector<int64_t> lengths;
  };
  const std::vector<Case> cases = {
      {{4, 6}, 1, Tensor::scalar(int64_t{2}), 1, {2, 2, 2}},
      {{4, 6}, 1, Tensor::scalar(int64_t{4}), 1, {4, 2}},  // the last chunk is shorter
      {{4, 6}, -2, Tensor::scalar(int32_t{3}), 0, {3, 1}},  // keepdims ignored with split
      {{3, 5, 2}, 1, Tensor::from_vector<int64_t>({1, 0, 4}, {3}), 1, {1, 0, 4}},
      {{3, 5, 2}, 0, std::nullopt, 1, {1, 1, 1}},
      {{3, 5, 2}, 2, std::nullopt, 0, {1, 1}},
      {{3, 5, 2}, -1, Tensor::from_vector<int32_t>({2}, {1}), 1, {2}},
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    for (DType dtype : {DType::kFloat32, DType::kInt8, DType::kFloat64}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " axis " + std::to_string(c.axis) + " case " + std::to_string(seed));
      Tensor x = random_tensor(dtype, c.sizes, seed++);
      std::vector<Tensor> inputs = {x};
      if (c.split) inputs.push_back(*c.split);
      std::vector<TensorType> inferred;
      Tensor out = run("SplitToSequence", inputs, {{"axis", c.axis}, {"keepdims", c.keepdims}}, 1, &inferred)[0];
      const size_t axis = static_cast<size_t>(c.axis < 0 ? c.axis + x.rank() : c.axis);
      expect_sequence(out, reference_split(x, axis, c.lengths, !c.split && c.keepdims == 0));
      EXPECT_TRUE(inferred[0].sequence);
      EXPECT_EQ(inferred[0].shape.rank(), x.rank() - (!c.split && c.keepdims == 0 ? 1 : 0));
    }
  }
  Tensor x = random_tensor(DType::kFloat32, {4, 6}, 1);
  expect_contains(error_of("SplitToSequence", {x, Tensor::from_vector<int64_t>({2, 3}, {2})}, {{"axis", int64_t{1}}}),
                  "split lengths sum to 5");
  expect_contains(error_of("SplitToSequence", {x, Tensor::scalar(int64_t{0})}), "must be positive");
  expect_contains(error_of("SplitToSequence", {x}, {{"axis", int64_t{2}}}), "axis 2");
}

// Reference concatenation: output coordinate i along `axis` comes from the
// element whose range holds it.
Tensor reference_concat(const std::vector<Tensor>& elements, size_t axis, bool new_axis) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor& element : elements) {
    std::vector<int64_t> sizes = element.sizes();
    if (new_axis) sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(axis), 1);
    shapes.push_back(sizes);
  }
  std::vector<int64_t> out_sizes = shapes[0];
  out_sizes[axis] = 0;
  for (const auto& sizes : shapes) out_sizes[axis] += sizes[axis];
  std::vector<double> out(static_cast<size_t>(count_of(out_sizes)));
  for (int64_t flat = 0; flat < count_of(out_sizes); ++flat) {
    std::vector<int64_t> index = unflatten(flat, out_sizes);
    size_t e = 0;
    while (index[axis] >= shapes[e][axis]) index[axis] -= shapes[e++][axis];
    out[static_cast<size_t>(flat)] = to_doubles(elements[e])[static_cast<size_t>(flatten(index, shapes[e]))];
  }
  return make_tensor(elements[0].dtype(), out, out_sizes);
}

TEST(SequenceOps, ConcatFromSequenceMatchesReference) {
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    std::vector<Tensor> along1 = random_elements(dtype, {{2, 1, 3}, {2, 4, 3}, {2, 0, 3}, {2, 2, 3}}, 50);
    for (int64_t axis : {1, -2}) {
      std::vector<TensorType> inferred;
      Tensor out = run("ConcatFromSequence", {Tensor::sequence(dtype, along1)}, {{"axis", axis}}, 1, &inferred)[0];
      expect_same(out, reference_concat(along1, 1, false));
      EXPECT_EQ(inferred[0].shape.rank(), 3);
      EXPECT_FALSE(inferred[0].sequence);
    }
    std::vector<Tensor> same = random_elements(dtype, {{2, 3}, {2, 3}, {2, 3}}, 60);
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      SCOPED_TRACE("new axis " + std::to_string(axis));
      Tensor out = run("ConcatFromSequence", {Tensor::sequence(dtype, same)}, {{"axis", axis}, {"new_axis", int64_t{1}}})[0];
      expect_same(out, reference_concat(same, static_cast<size_t>(axis < 0 ? axis + 3 : axis), true));
    }
  }
  // Splitting and concatenating again gives the input back.
  Tensor x = random_tensor(DType::kFloat32, {3, 7}, 70);
  Tensor pieces = run("SplitToSequence", {x, Tensor::scalar(int64_t{3})}, {{"axis", int64_t{1}}})[0];
  expect_same(run("ConcatFromSequence", {pieces}, {{"axis", int64_t{1}}})[0], x);
}

TEST(SequenceOps, ConcatFromSequenceRejectsMismatchedShapes) {
  Tensor mismatched = Tensor::sequence(DType::kFloat32, random_elements(DType::kFloat32, {{2, 3}, {2, 3}, {3, 3}}, 1));
  const std::string message = error_of("ConcatFromSequence", {mismatched}, {{"axis", int64_t{1}}});
  expect_contains(message, "element 2 is f32[3,3], element 0 f32[2,3]");
  expect_contains(message, "only along axis 1");
  // Along axis 0 they fit; stacked they do not.
  EXPECT_EQ(run("ConcatFromSequence", {mismatched}, {{"axis", int64_t{0}}})[0].sizes(), (std::vector<int64_t>{7, 3}));
  expect_contains(error_of("ConcatFromSequence", {mismatched}, {{"axis", int64_t{0}}, {"new_axis", int64_t{1}}}),
                  "stacked elements must have one shape");
  expect_contains(error_of("ConcatFromSequence", {Tensor::sequence(DType::kFloat32, {})}, {{"axis", int64_t{0}}}),
                  "at least one element");
  expect_contains(error_of("ConcatFromSequence", {mismatched}, {{"axis", int64_t{2}}}), "axis 2");
}

// SequenceMap(seq, x, captured c): body y = elem * x + c, and Shape(elem).
TEST(SequenceOps, SequenceMapRunsTheBodyPerElement) {
  const TensorType f32_n{DType::kFloat32, Shape{Dim::symbol("N")}};
  auto body = std::make_shared<Graph>("body");
  Value* element = body->add_input("element", f32_n);
  Value* x = body->add_input("x", f32_n);
  Value* c = body->add_input("c", TensorType{DType::kFloat32, Shape{}});
  Node* mul = body->add_node("Mul", {element, x}, 1, {}, "mul");
  infer_node_types(*mul, default_op_registry());
  Node* add = body->add_node("Add", {mul->output(0), c}, 1, {}, "add");
  infer_node_types(*add, default_op_registry());
  Node* shape = body->add_node("Shape", {element}, 1, {}, "shape");
  infer_node_types(*shape, default_op_registry());
  body->add_output(add->output(0));
  body->add_output(shape->output(0));

  std::vector<Tensor> elements = random_elements(DType::kFloat32, {{3}, {3}, {3}, {3}}, 80);
  Tensor xs = random_tensor(DType::kFloat32, {3}, 90);
  Tensor cs = Tensor::scalar(0.5f);
  std::vector<TensorType> inferred;
  std::vector<Tensor> out = run("SequenceMap", {Tensor::sequence(DType::kFloat32, elements), xs, cs},
                                {{"body", body}, {"num_captured", int64_t{1}}}, 2, &inferred);
  EXPECT_EQ(inferred[0].to_string(), "seq(f32[N])");
  EXPECT_EQ(inferred[1].to_string(), "seq(i64[1])");
  std::vector<Tensor> expected_y, expected_shape;
  for (const Tensor& e : elements) {
    std::vector<double> y;
    for (size_t i = 0; i < 3; ++i) {
      y.push_back(static_cast<double>(static_cast<float>(to_doubles(e)[i] * to_doubles(xs)[i]) + 0.5f));
    }
    expected_y.push_back(make_tensor(DType::kFloat32, y, {3}));
    expected_shape.push_back(Tensor::from_vector<int64_t>({3}, {1}));
  }
  expect_sequence(out[0], expected_y);
  expect_sequence(out[1], expected_shape);

  // An empty sequence maps to empty sequences of the body's dtypes.
  out = run("SequenceMap", {Tensor::sequence(DType::kFloat32, {}), xs, cs}, {{"body", body}, {"num_captured", int64_t{1}}}, 2);
  ASSERT_TRUE(out[0].is_sequence() && out[1].is_sequence());
  EXPECT_TRUE(out[0].elements().empty());
  EXPECT_EQ(out[1].dtype(), DType::kInt64);
}

TEST(SequenceOps, SequenceMapTakesElementsOfEverySequenceInput) {
  const TensorType f32_unknown{DType::kFloat32, Shape::unknown_rank()};
  auto body = std::make_shared<Graph>("body");
  Value* a = body->add_input("a", f32_unknown);
  Value* b = body->add_input("b", f32_unknown);
  Node* add = body->add_node("Add", {a, b}, 1, {}, "add");
  infer_node_types(*add, default_op_registry());
  Node* identity = body->add_node("Identity", {b}, 1, {}, "identity");
  infer_node_types(*identity, default_op_registry());
  body->add_output(add->output(0));
  body->add_output(identity->output(0));

  std::vector<Tensor> first = random_elements(DType::kFloat32, {{2}, {4, 1}, {}}, 100);
  std::vector<Tensor> second = random_elements(DType::kFloat32, {{2}, {4, 3}, {5}}, 110);
  std::vector<Tensor> out = run("SequenceMap", {Tensor::sequence(DType::kFloat32, first), Tensor::sequence(DType::kFloat32, second)},
                                {{"body", body}}, 2);
  std::vector<Tensor> sums;
  for (size_t i = 0; i < first.size(); ++i) sums.push_back(run("Add", {first[i], second[i]})[0]);
  expect_sequence(out[0], sums);
  expect_sequence(out[1], second);
  // Identity's output is a copy inside the output sequence.
  EXPECT_NE(out[1].elements()[0].raw_data(), second[0].raw_data());

  std::map<std::string, Attribute> attributes = {{"body", body}};
  expect_contains(error_of("SequenceMap", {Tensor::sequence(DType::kFloat32, first),
                                           Tensor::sequence(DType::kFloat32, {second[0]})}, attributes, 2),
                  "input 1 has 1 elements, input 0 has 3");
  expect_contains(error_of("SequenceMap", {first[0], first[0]}, attributes, 2), "must be a sequence");
  expect_contains(error_of("SequenceMap", {Tensor::sequence(DType::kFloat32, first), first[0]}, attributes),
                  "body gives 2 outputs, the node has 1");
}

TEST(OptionalOps, PresentAndEmptyOptionals) {
  Tensor x = random_tensor(DType::kFloat32, {4}, 120);
  std::vector<TensorType> inferred;
  Tensor present = run("Optional", {x}, {}, 1, &inferred)[0];
  EXPECT_EQ(inferred[0].to_string(), "opt(f32[4])");
  expect_same(present, x);
  EXPECT_EQ(to_doubles(run("OptionalHasElement", {present})[0]), std::vector<double>{1});
  expect_same(run("OptionalGetElement", {present})[0], x);

  Tensor none = run("Optional", {}, {{"type", std::vector<int64_t>{7, 0, 1, -1}}}, 1, &inferred)[0];
  EXPECT_EQ(inferred[0].dtype, DType::kInt64);
  EXPECT_TRUE(inferred[0].optional && !inferred[0].sequence);
  ASSERT_EQ(inferred[0].shape.rank(), 1);
  ASSERT_TRUE(none.is_none());
  EXPECT_EQ(none.dtype(), DType::kInt64);
  EXPECT_EQ(to_doubles(run("OptionalHasElement", {none})[0]), std::vector<double>{0});
  expect_contains(error_of("OptionalGetElement", {none}), "the optional input is empty (none(i64))");
  // An absent input has no element.
  EXPECT_EQ(to_doubles(run("OptionalHasElement", {Tensor()})[0]), std::vector<double>{0});

  Tensor none_sequence = run("Optional", {}, {{"type", std::vector<int64_t>{1, 1, -1}}}, 1, &inferred)[0];
  EXPECT_TRUE(inferred[0].optional && inferred[0].sequence);
  EXPECT_FALSE(inferred[0].shape.has_rank());
  EXPECT_EQ(none_sequence.type_string(), "none(seq(f32))");
  expect_contains(error_of("Optional", {}), "'type' attribute");
  expect_contains(error_of("Optional", {}, {{"type", std::vector<int64_t>{8, 0, -1}}}), "dtype 8");
}

TEST(OptionalOps, OptionalOfASequence) {
  std::vector<Tensor> elements = random_elements(DType::kInt32, {{2}, {3}}, 130);
  Tensor sequence = Tensor::sequence(DType::kInt32, elements);
  std::vector<TensorType> inferred;
  Tensor optional = run("Optional", {sequence}, {}, 1, &inferred)[0];
  EXPECT_TRUE(inferred[0].optional && inferred[0].sequence);
  EXPECT_EQ(to_doubles(run("OptionalHasElement", {optional})[0]), std::vector<double>{1});
  Tensor got = run("OptionalGetElement", {optional}, {}, 1, &inferred)[0];
  EXPECT_TRUE(inferred[0].sequence && !inferred[0].optional);
  expect_sequence(got, elements);
}

TEST(OptionalOps, IdentityPassesSequencesAndOptionals) {
  std::vector<Tensor> elements = random_elements(DType::kFloat32, {{2}, {3}}, 140);
  std::vector<TensorType> inferred;
  expect_sequence(run("Identity", {Tensor::sequence(DType::kFloat32, elements)}, {}, 1, &inferred)[0], elements);
  EXPECT_TRUE(inferred[0].sequence);
  Tensor none = run("Identity", {Tensor::none(DType::kFloat32, true)}, {}, 1, &inferred)[0];
  EXPECT_TRUE(none.is_none());
  EXPECT_EQ(inferred[0].to_string(), Tensor::none(DType::kFloat32, true).type().to_string());
}

// If whose branches give a sequence and an optional sequence: the output is
// an optional sequence.
TEST(OptionalOps, IfMergesSequenceAndOptionalBranches) {
  Graph g("if_seq");
  Value* cond = g.add_input("cond", TensorType{DType::kBool, Shape{}});
  auto then_branch = std::make_shared<Graph>("then");
  {
    Node* empty = then_branch->add_node("Optional", {}, 1, {{"type", std::vector<int64_t>{1, 1, 1, 5}}}, "none");
    infer_node_types(*empty, default_op_registry());
    then_branch->add_output(empty->output(0));
  }
  Tensor x = random_tensor(DType::kFloat32, {5}, 150);
  auto else_branch = std::make_shared<Graph>("else");
  {
    Node* construct = else_branch->add_node("SequenceConstruct", {else_branch->add_constant("x", x)}, 1, {}, "construct");
    infer_node_types(*construct, default_op_registry());
    else_branch->add_output(construct->output(0));
  }
  Node* node = g.add_node("If", {cond}, 1, {{"then_branch", then_branch}, {"else_branch", else_branch}}, "if");
  infer_node_types(*node, default_op_registry());
  g.add_output(node->output(0));
  verify_graph(g, default_op_registry());
  EXPECT_EQ(node->output(0)->type().to_string(), "opt(seq(f32[5]))");
  EXPECT_TRUE(evaluate_graph(g, {{"cond", Tensor::scalar(true)}})[0].is_none());
  expect_sequence(evaluate_graph(g, {{"cond", Tensor::scalar(false)}})[0], {x});
}

}  // namespace
}  // namespace weir
