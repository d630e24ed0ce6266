// ONNX importer: malformed files, the single unsupported-op error, opset
// adapters, external data and symbolic dims. Models are built here as
// ModelProto messages so each test states exactly what it feeds the importer.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "core/allocation_limits.h"
#include "core/error.h"
#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/onnx_tensor.h"
#include "frontend/onnx/onnx_wire.h"
#include "ops/graph_evaluator.h"
#include "tests/frontend/onnx_model_builder.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using testing::add_float;
using testing::add_ints;
using testing::ModelBuilder;
using testing::random_tensor;
using testing::to_doubles;

fs::path temp_dir(const std::string& name) {
  const char* root = std::getenv("WEIR_TEST_TMPDIR");
  fs::path dir = fs::path(root != nullptr ? root : fs::temp_directory_path().string()) / ("onnx_import_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The message of the weir::Error `body` throws; fails the test otherwise.
template <typename Body>
std::string error_of(Body body, ErrorKind kind) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error_kind_name(error.kind()), std::string(error_kind_name(kind))) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

ModelBuilder small_conv_model() {
  ModelBuilder m(13);
  m.input("x", {1, 2, 5, 5}).output("y");
  m.initializer(random_tensor(DType::kFloat32, {3, 2, 3, 3}, 1), "w");
  m.initializer(random_tensor(DType::kFloat32, {3}, 2), "b");
  onnx::NodeProto* conv = m.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  add_ints(conv, "pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"y"}, "relu");
  return m;
}

TEST(OnnxImport, RunsAnImportedModel) {
  Model model = small_conv_model().import();
  Tensor x = random_tensor(DType::kFloat32, {1, 2, 5, 5}, 3);
  std::vector<Tensor> y = evaluate_graph(*model.graph, {{"x", x}});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].sizes(), (std::vector<int64_t>{1, 3, 5, 5}));
  for (double v : to_doubles(y[0])) EXPECT_GE(v, 0.0);
  EXPECT_EQ(model.graph->constants().size(), 2u);
}

TEST(OnnxImport, MissingFileAndGarbageAreClearErrors) {
  EXPECT_NE(error_of([] { import_onnx_model("/nonexistent/model.onnx"); }, ErrorKind::kIo).find("/nonexistent/model.onnx"),
            std::string::npos);
  EXPECT_NE(error_of([] { import_onnx_model_from_bytes("", "empty.onnx"); }, ErrorKind::kFormat).find("empty"),
            std::string::npos);
  std::mt19937 engine(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(static_cast<size_t>(engine() % 512), '\0');
    for (char& c : bytes) c = static_cast<char>(engine());
    try {
      import_onnx_model_from_bytes(bytes, "random.onnx");
      ADD_FAILURE() << "random bytes imported";
    } catch (const Error&) {
    }
  }
}

TEST(OnnxImport, EveryTruncationIsAnErrorOrAValidPrefix) {
  const std::string bytes = small_conv_model().bytes();
  for (size_t length = 0; length < bytes.size(); ++length) {
    try {
      import_onnx_model_from_bytes(bytes.substr(0, length), "truncated.onnx");
    } catch (const Error&) {
      // expected: anything but a crash or a non-Weir exception
    }
  }
}

// Files are imported with the initializer payloads lifted out before
// parsing (onnx_wire.h): the same graph and outputs as parsing the whole
// bytes, and every truncated file is an error or a valid prefix, never a crash.
TEST(OnnxImport, FilesReadInitializersFromTheMappingLikeBytes) {
  ModelBuilder m = small_conv_model();
  const std::string bytes = m.bytes();
  std::optional<WeightlessModel> split = split_initializer_data(bytes);
  ASSERT_TRUE(split.has_value());
  ASSERT_EQ(split->raw_data.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(split->raw_data[static_cast<size_t>(i)].has_value());
    EXPECT_EQ(*split->raw_data[static_cast<size_t>(i)], m.graph->initializer(i).raw_data());
  }
  onnx::ModelProto weightless;
  ASSERT_TRUE(weightless.ParseFromString(split->bytes));
  EXPECT_EQ(weightless.graph().initializer_size(), 2);
  EXPECT_FALSE(weightless.graph().initializer(0).has_raw_data());
  EXPECT_EQ(weightless.graph().initializer(0).name(), "w");
  EXPECT_LT(split->bytes.size(), bytes.size() - 216);

  fs::path dir = temp_dir("mapped");
  fs::path file = dir / "conv.onnx";
  std::ofstream(file, std::ios::binary) << bytes;
  Model from_file = import_onnx_model(file.string());
  Model from_bytes = import_onnx_model_from_bytes(bytes, "conv.onnx");
  Tensor x = random_tensor(DType::kFloat32, {1, 2, 5, 5}, 3);
  EXPECT_TRUE(evaluate_graph(*from_file.graph, {{"x", x}})[0].bitwise_equal(evaluate_graph(*from_bytes.graph, {{"x", x}})[0]));

  int rejected = 0;
  for (size_t length = 0; length < bytes.size(); length += 3) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes.substr(0, length);
    try {
      import_onnx_model(file.string());
    } catch (const Error& e) {
      ++rejected;
      EXPECT_NE(std::string(e.what()).find("conv.onnx"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(rejected, 0);
  // A raw_data field given twice (protobuf keeps the last), or a length past
  // the end: not split, so protobuf parses (and judges) the original bytes.
  const std::string tensor = std::string("\x4a\x01" "A" "\x4a\x01" "B", 6);
  const std::string graph = std::string("\x2a\x06", 2) + tensor;
  EXPECT_FALSE(split_initializer_data(std::string("\x3a\x08", 2) + graph).has_value());
  EXPECT_FALSE(split_initializer_data(std::string("\x3a\x09", 2) + graph).has_value());
  EXPECT_TRUE(split_initializer_data(std::string("\x3a\x04\x2a\x02\x4a\x00", 6)).has_value());
  fs::remove_all(dir);
}

// Random byte changes to a model file go through the payload splitter and
// the importer: each gives a weir::Error naming the file or imports, never a
// crash (the splitter is new parsing code on untrusted bytes; run under ASan).
TEST(OnnxImport, MutatedFilesAreErrorsNotCrashes) {
  const std::string bytes = small_conv_model().bytes();
  fs::path dir = temp_dir("mutated");
  fs::path file = dir / "mutated.onnx";
  std::mt19937 engine(11);
  int rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string mutated = bytes;
    int changes = 1 + static_cast<int>(engine() % 4);
    for (int c = 0; c < changes; ++c) mutated[engine() % mutated.size()] = static_cast<char>(engine());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << mutated;
    try {
      import_onnx_model(file.string());
    } catch (const Error& e) {
      ++rejected;
      EXPECT_NE(std::string(e.what()).find("mutated.onnx"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(rejected, 0);
  fs::remove_all(dir);
}

// Constant nodes, tensor attributes and sub-graph initializers live in the
// parsed proto, not in the lifted payloads; tensors made from them must stay
// valid after the importer returns (they viewed the freed proto once: a
// Reshape shape read as f32[94698743129481,12,64]). The heap is churned
// between import and run so that freed bytes would be overwritten; under
// ASan any read of them is a report.
TEST(OnnxImport, ConstantNodeTensorsOutliveTheImport) {
  ModelBuilder m(13);
  m.input("x", {2, 6}).output("y");
  m.initializer(random_tensor(DType::kFloat32, {1, 12}, 5), "bias");
  auto int64_constant = [&](const std::string& name, const std::vector<int64_t>& values) {
    onnx::NodeProto* node = m.node("Constant", {}, {name}, name + "_node");
    onnx::AttributeProto* value = node->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    Tensor tensor(DType::kInt64, {static_cast<int64_t>(values.size())});
    for (size_t i = 0; i < values.size(); ++i) tensor.data<int64_t>()[i] = values[i];
    *value->mutable_t() = tensor_to_onnx(tensor, name);
  };
  int64_constant("shape", {1, 12});
  int64_constant("repeats", {3, 1});
  m.node("Reshape", {"x", "shape"}, {"flat"}, "reshape");
  m.node("Add", {"flat", "bias"}, {"biased"}, "add");
  m.node("Tile", {"biased", "repeats"}, {"y"}, "tile");

  fs::path dir = temp_dir("constants");
  fs::path file = dir / "constants.onnx";
  std::ofstream(file, std::ios::binary) << m.bytes();
  ASSERT_TRUE(split_initializer_data(m.bytes()).has_value());  // the mapped path, where the proto was local
  Model model = import_onnx_model(file.string());
  std::vector<std::string> churn;
  for (int i = 0; i < 2000; ++i) churn.emplace_back(static_cast<size_t>(16 + i % 200), static_cast<char>(0xAB));
  churn.clear();

  Tensor x = random_tensor(DType::kFloat32, {2, 6}, 6);
  std::vector<Tensor> y = evaluate_graph(*model.graph, {{"x", x}});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].sizes(), (std::vector<int64_t>{3, 12}));
  std::vector<Tensor> expected = evaluate_graph(*m.import().graph, {{"x", x}});
  EXPECT_TRUE(y[0].bitwise_equal(expected[0]));
  const float* bias = nullptr;
  for (const Value* constant : model.graph->constants()) {
    if (constant->name() == "bias") bias = constant->data().data<float>();
  }
  ASSERT_NE(bias, nullptr);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 12; ++c) {
      EXPECT_FLOAT_EQ(y[0].data<float>()[r * 12 + c], x.data<float>()[c] + bias[c]);
    }
  }
  fs::remove_all(dir);
}

// An initializer that declares 2^40 elements of external data: the file and
// the range are checked, and the caps, before anything is allocated.
TEST(OnnxImport, HugeDeclaredInitializersFailBeforeAllocating) {
  fs::path dir = temp_dir("huge");
  std::ofstream(dir / "weights.bin", std::ios::binary) << std::string(64, '\0');
  ModelBuilder m(13);
  m.input("x", {1}).output("y");
  onnx::TensorProto* w = m.graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(int64_t{1} << 20);
  w->add_dims(int64_t{1} << 20);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  m.node("Add", {"x", "w"}, {"y"}, "add");
  std::ofstream(dir / "huge.onnx", std::ios::binary) << m.bytes();
  auto start = std::chrono::steady_clock::now();
  std::string message = error_of([&] { import_onnx_model((dir / "huge.onnx").string()); }, ErrorKind::kFormat);
  EXPECT_NE(message.find("initializer 'w'"), std::string::npos) << message;
  EXPECT_NE(message.find("runs past the end of 'weights.bin'"), std::string::npos) << message;
  EXPECT_NE(message.find("huge.onnx"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  // Inline data of the right size but over a lowered per-tensor cap.
  AllocationLimits saved = allocation_limits();
  set_allocation_limits({1024, 1 << 20});
  ModelBuilder small(13);
  small.input("x", {1}).output("y");
  small.initializer(random_tensor(DType::kFloat32, {512}, 1), "big");
  small.node("Add", {"x", "big"}, {"y"}, "add");
  message = error_of([&] { small.import(); }, ErrorKind::kOutOfMemory);
  set_allocation_limits(saved);
  EXPECT_NE(message.find("initializer 'big' needs 2048 bytes, over the limit of 1024 bytes per tensor"),
            std::string::npos) << message;
  fs::remove_all(dir);
}

TEST(OnnxImport, BadInitializerDataNamesTheInitializer) {
  ModelBuilder m = small_conv_model();
  m.graph->mutable_initializer(0)->mutable_raw_data()->resize(10);  // 3*2*3*3 floats need 216 bytes
  std::string message = error_of([&] { m.import(); }, ErrorKind::kFormat);
  EXPECT_NE(message.find("initializer 'w'"), std::string::npos) << message;
  EXPECT_NE(message.find("216"), std::string::npos) << message;

  ModelBuilder typed = small_conv_model();
  onnx::TensorProto* b = typed.graph->mutable_initializer(1);
  b->clear_raw_data();
  b->add_int64_data(1);  // an f32 tensor with int64 values: float_data is empty
  message = error_of([&] { typed.import(); }, ErrorKind::kFormat);
  EXPECT_NE(message.find("initializer 'b'"), std::string::npos) << message;
  EXPECT_NE(message.find("float_data"), std::string::npos) << message;

  ModelBuilder huge = small_conv_model();
  huge.graph->mutable_initializer(1)->set_dims(0, int64_t{1} << 50);
  message = error_of([&] { huge.import(); }, ErrorKind::kFormat);
  EXPECT_NE(message.find("initializer 'b'"), std::string::npos) << message;
}

// uint16 sits in int32_data, uint32 and uint64 in uint64_data; a value the
// type cannot hold is a format error naming the tensor.
TEST(OnnxImport, UnsignedTypesFromTheTypedFields) {
  onnx::TensorProto u16;
  u16.set_data_type(onnx::TensorProto::UINT16);
  u16.add_dims(2);
  u16.add_int32_data(65535);
  u16.add_int32_data(7);
  EXPECT_EQ(to_doubles(tensor_from_onnx(u16, "u16", nullptr)), (std::vector<double>{65535, 7}));
  onnx::TensorProto u32 = u16;
  u32.set_data_type(onnx::TensorProto::UINT32);
  u32.clear_int32_data();
  u32.add_uint64_data(4294967295u);
  u32.add_uint64_data(1);
  Tensor t32 = tensor_from_onnx(u32, "u32", nullptr);
  EXPECT_EQ(t32.dtype(), DType::kUInt32);
  EXPECT_EQ(to_doubles(t32), (std::vector<double>{4294967295.0, 1}));
  onnx::TensorProto u64 = u32;
  u64.set_data_type(onnx::TensorProto::UINT64);
  u64.set_uint64_data(0, 18446744073709551615u);
  EXPECT_EQ(tensor_from_onnx(u64, "u64", nullptr).data<uint64_t>()[0], 18446744073709551615u);
  u32.set_uint64_data(0, uint64_t{1} << 32);
  std::string message = error_of([&] { tensor_from_onnx(u32, "initializer 'big'", nullptr); }, ErrorKind::kFormat);
  EXPECT_NE(message.find("initializer 'big': uint64_data value 4294967296 does not fit u32"), std::string::npos) << message;
  // Written back through raw_data and read again, bit for bit.
  Tensor again = tensor_from_onnx(tensor_to_onnx(t32, "t"), "t", nullptr);
  EXPECT_TRUE(again.bitwise_equal(t32));
}

TEST(OnnxImport, InputNobodyProducesNamesNodeAndValue) {
  ModelBuilder m(13);
  m.input("x", {2}).output("y");
  m.node("Add", {"x", "ghost"}, {"y"}, "adder");
  std::string message = error_of([&] { m.import(); }, ErrorKind::kFormat);
  EXPECT_NE(message.find("adder"), std::string::npos) << message;
  EXPECT_NE(message.find("ghost"), std::string::npos) << message;
}

TEST(OnnxImport, OneErrorListsEveryUnsupportedOpWithNodesAndOpset) {
  ModelBuilder m(13);
  m.input("x", {2, 3}).output("y");
  m.node("Enigma", {"x"}, {"a"}, "enigma_1");
  m.node("Relu", {"a"}, {"b"}, "relu");
  m.node("Enigma", {"b"}, {"c"}, "enigma_2");
  m.node("NoSuchOp", {"c"}, {"y"}, "mystery");
  std::string message = error_of([&] { m.import(); }, ErrorKind::kUnsupported);
  for (const char* part : {"2 op types", "Enigma (opset 13)", "'enigma_1', 'enigma_2'", "NoSuchOp (opset 13)", "'mystery'"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " missing from: " << message;
  }
  EXPECT_EQ(message.find("relu"), std::string::npos) << message;
}

TEST(OnnxImport, UnsupportedTypesAndOldSemanticsAreListed) {
  ModelBuilder m(6);
  m.input("x", {2, 3}).input("s", {2}, onnx::TensorProto::STRING).output("y");
  testing::add_int(m.node("Dropout", {"x"}, {"y"}, "dropout"), "is_test", 0);
  std::string message = error_of([&] { m.import(); }, ErrorKind::kUnsupported);
  EXPECT_NE(message.find("Dropout (opset 6): training mode before opset 7 (is_test=0) is not supported"), std::string::npos)
      << message;
  EXPECT_NE(message.find("graph input 's' has element type STRING"), std::string::npos) << message;
}

TEST(OnnxImport, AxesMovedFromAttributeToInputAcrossOpsets) {
  Tensor x = random_tensor(DType::kFloat32, {2, 1, 3}, 4);
  // Squeeze-11 (attribute) and Squeeze-13 (constant input) give the same graph.
  for (int64_t opset : {11, 13}) {
    ModelBuilder m(opset);
    m.input("x", {2, 1, 3}).output("y");
    onnx::NodeProto* squeeze = m.node("Squeeze", {"x"}, {"y"}, "squeeze");
    if (opset == 11) {
      add_ints(squeeze, "axes", {1});
    } else {
      m.initializer(Tensor::from_vector<int64_t>({1}, {1}), "axes");
      squeeze->add_input("axes");
    }
    Model model = m.import();
    EXPECT_EQ(model.graph->outputs()[0]->shape(), (Shape{2, 3})) << "opset " << opset;
    EXPECT_EQ(to_doubles(evaluate_graph(*model.graph, {{"x", x}})[0]), to_doubles(x));
  }
  // ReduceSum-13 with axes fed at run time.
  ModelBuilder m(13);
  m.input("x", {2, 1, 3}).input("axes", {1}, onnx::TensorProto::INT64).output("y");
  onnx::NodeProto* reduce = m.node("ReduceSum", {"x", "axes"}, {"y"}, "sum");
  onnx::AttributeProto* keepdims = reduce->add_attribute();
  keepdims->set_name("keepdims");
  keepdims->set_type(onnx::AttributeProto::INT);
  keepdims->set_i(0);
  Model model = m.import();
  std::vector<double> y = to_doubles(evaluate_graph(*model.graph, {{"x", x}, {"axes", Tensor::from_vector<int64_t>({2}, {1})}})[0]);
  std::vector<double> in = to_doubles(x);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], in[0] + in[1] + in[2], 1e-5);
  EXPECT_NEAR(y[1], in[3] + in[4] + in[5], 1e-5);
}

TEST(OnnxImport, OldClipAndSplitAttributesBecomeInputs) {
  Tensor x = random_tensor(DType::kFloat32, {6}, 5);
  ModelBuilder m(6);
  m.input("x", {6}).output("y");
  onnx::NodeProto* clip = m.node("Clip", {"x"}, {"y"}, "clip");
  add_float(clip, "min", -0.5f);
  add_float(clip, "max", 0.25f);
  std::vector<double> y = to_doubles(evaluate_graph(*m.import().graph, {{"x", x}})[0]);
  std::vector<double> in = to_doubles(x);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(y[i], std::clamp(in[i], -0.5, 0.25));

  ModelBuilder s(11);
  s.input("x", {6}).output("a").output("b");
  add_ints(s.node("Split", {"x"}, {"a", "b"}, "split"), "split", {2, 4});
  std::vector<Tensor> parts = evaluate_graph(*s.import().graph, {{"x", x}});
  EXPECT_EQ(parts[0].sizes(), (std::vector<int64_t>{2}));
  EXPECT_EQ(parts[1].sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(to_doubles(parts[1])[0], in[2]);
}

// Old Pad and Clip carry float attributes that become constants of the
// input's dtype. A value an integer dtype cannot hold (the fuzzer's: Pad of
// a uint8 tensor with value -2.6e33) is an error naming the value, not an
// undefined conversion.
TEST(OnnxImport, AttributeValuesAnIntegerInputCannotHoldAreRefused) {
  for (float value : {-2.59615e33f, 256.0f, std::numeric_limits<float>::quiet_NaN(), -1.0f}) {
    ModelBuilder m(2);
    m.input("x", {2, 3}, onnx::TensorProto::UINT8).output("y");
    m.graph->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::UINT8);
    onnx::NodeProto* pad = m.node("Pad", {"x"}, {"y"}, "pad");
    add_ints(pad, "pads", {0, 1, 0, 1});
    add_float(pad, "value", value);
    std::string error = error_of([&] { m.import(); }, ErrorKind::kInvalidArgument);
    EXPECT_NE(error.find("does not fit u8"), std::string::npos) << value << ": " << error;
  }
  ModelBuilder fits(2);
  fits.input("x", {2, 3}, onnx::TensorProto::UINT8).output("y");
  fits.graph->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::UINT8);
  onnx::NodeProto* pad = fits.node("Pad", {"x"}, {"y"}, "pad");
  add_ints(pad, "pads", {0, 1, 0, 1});
  add_float(pad, "value", 255.0f);
  Tensor x(DType::kUInt8, {2, 3});
  std::vector<Tensor> y = evaluate_graph(*fits.import().graph, {{"x", x}});
  ASSERT_EQ(y[0].sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(y[0].data<uint8_t>()[0], 255);
  EXPECT_EQ(y[0].data<uint8_t>()[1], 0);
}

TEST(OnnxImport, DimParamBecomesASymbolicDim) {
  ModelBuilder m(13);
  m.input("x", {-1, 4}).output("y");
  m.node("Relu", {"x"}, {"y"}, "relu");
  Model model = m.import();
  EXPECT_EQ(model.graph->inputs()[0]->shape(), (Shape{Dim::symbol("batch"), 4}));
  EXPECT_EQ(model.graph->outputs()[0]->shape(), (Shape{Dim::symbol("batch"), 4}));
  Tensor x = random_tensor(DType::kFloat32, {3, 4}, 6);
  EXPECT_EQ(evaluate_graph(*model.graph, {{"x", x}})[0].sizes(), (std::vector<int64_t>{3, 4}));
}

TEST(OnnxImport, ExternalDataStaysInTheModelDirectory) {
  fs::path dir = temp_dir("external");
  Tensor w = random_tensor(DType::kFloat32, {3}, 8);
  {
    std::ofstream data(dir / "weights.bin", std::ios::binary);
    data.write("padding!", 8);
    data.write(static_cast<const char*>(w.raw_data()), static_cast<std::streamsize>(w.nbytes()));
  }
  auto write_model = [&](const std::string& location) {
    ModelBuilder m(13);
    m.input("x", {3}).output("y");
    onnx::TensorProto* init = m.initializer(w, "w");
    init->clear_raw_data();
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] : {std::pair<std::string, std::string>{"location", location}, {"offset", "8"}, {"length", "12"}}) {
      onnx::StringStringEntryProto* entry = init->add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    m.node("Add", {"x", "w"}, {"y"}, "add");
    std::ofstream(dir / "model.onnx", std::ios::binary) << m.bytes();
  };
  write_model("weights.bin");
  Model model = import_onnx_model((dir / "model.onnx").string());
  Tensor zeros(DType::kFloat32, {3});
  EXPECT_TRUE(evaluate_graph(*model.graph, {{"x", zeros}})[0].bitwise_equal(w));

  write_model("../outside.bin");
  std::string message = error_of([&] { import_onnx_model((dir / "model.onnx").string()); }, ErrorKind::kFormat);
  EXPECT_NE(message.find("initializer 'w'"), std::string::npos) << message;
}

}  // namespace
}  // namespace weir
