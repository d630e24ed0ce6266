// Loading malformed models: every case ends in a weir::Error that names the
// file and the problem, never a crash or an abort.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/model_io.h"
#include "tests/core/model_fixtures.h"

namespace weir {
namespace {

using testing::make_rich_model;
using testing::read_bytes;
using testing::read_model_proto;
using testing::ScratchDir;
using testing::write_bytes;
using testing::write_model_proto;

void expect_load_error(const std::filesystem::path& path, ErrorKind kind, const std::string& fragment) {
  try {
    load_model(path);
    FAIL() << "loading succeeded; expected: " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(e.file(), path.string()) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// A small valid model with one external tensor ("big") and its message.
struct SavedModel {
  ScratchDir dir;
  std::filesystem::path path = dir / "m.weir";
  proto::Model message;

  SavedModel() {
    Model model;
    model.graph = std::make_unique<Graph>("g");
    Value* x = model.graph->add_input("x", {DType::kFloat32, Shape{4}});
    Value* big = model.graph->add_constant("big", testing::random_tensor({512}, 3));
    Node* add = model.graph->add_node("Add", {x, big}, 1, {}, "add");
    model.graph->add_output(add->output(0));
    save_model(model, path);
    message = read_model_proto(path);
  }
  proto::Tensor* big_tensor() { return message.mutable_graph()->mutable_constant(0)->mutable_tensor(); }
  void rewrite() { write_model_proto(path, message); }
};

TEST(ModelLoadErrors, MissingFileAndDirectory) {
  ScratchDir dir;
  expect_load_error(dir / "nope.weir", ErrorKind::kIo, "no such file");
  expect_load_error(dir.path(), ErrorKind::kIo, "not a regular file");
}

TEST(ModelLoadErrors, EveryTruncationIsRejected) {
  ScratchDir dir;
  SaveOptions inline_only{.format = ModelFormat::kAuto, .external_data_threshold = std::numeric_limits<size_t>::max()};
  save_model(make_rich_model(), dir / "full.weir", inline_only);
  std::string bytes = read_bytes(dir / "full.weir");
  size_t step = std::max<size_t>(1, bytes.size() / 2000);
  for (size_t length = 0; length < bytes.size(); length += step) {
    write_bytes(dir / "cut.weir", bytes.substr(0, length));
    EXPECT_THROW(load_model(dir / "cut.weir"), Error) << "truncated to " << length << " of " << bytes.size();
  }
  write_bytes(dir / "cut.weir", bytes.substr(0, bytes.size() / 2));
  expect_load_error(dir / "cut.weir", ErrorKind::kFormat, "truncated or corrupt");
}

TEST(ModelLoadErrors, RandomBytesAreRejected) {
  ScratchDir dir;
  std::mt19937 engine(2024);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(static_cast<size_t>(1 + trial * 13), '\0');
    for (char& c : bytes) c = static_cast<char>(byte(engine));
    write_bytes(dir / "random.weir", bytes);
    EXPECT_THROW(load_model(dir / "random.weir"), Error) << "trial " << trial;
    write_bytes(dir / "random.weirtxt", bytes);
    EXPECT_THROW(load_model(dir / "random.weirtxt"), Error) << "trial " << trial;
  }
}

TEST(ModelLoadErrors, CorruptedBytesLoadOrFailCleanly) {
  // Flipping bytes of a valid file may still give a valid model; what must
  // never happen is a crash, an abort or a huge allocation.
  ScratchDir dir;
  save_model(make_rich_model(), dir / "m.weir");
  std::string bytes = read_bytes(dir / "m.weir");
  std::mt19937 engine(7);
  std::uniform_int_distribution<size_t> where(0, bytes.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  int rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string corrupt = bytes;
    for (int flips = 0; flips < 1 + trial % 4; ++flips) corrupt[where(engine)] = static_cast<char>(byte(engine));
    write_bytes(dir / "m.weir", corrupt);
    try {
      load_model(dir / "m.weir");
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST(ModelLoadErrors, MalformedTextNamesTheLine) {
  ScratchDir dir;
  write_bytes(dir / "bad.weirtxt", "ir_version: 1\ngraph {\n  node { name: \"a\" op_type: }\n");
  expect_load_error(dir / "bad.weirtxt", ErrorKind::kFormat, "line 3");
}

TEST(ModelLoadErrors, NewerIrVersionOrOpsetIsRefusedWithBothVersions) {
  SavedModel saved;
  saved.message.set_ir_version(kIrVersion + 1);
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kUnsupported,
                    "IR version " + std::to_string(kIrVersion + 1) + "; this build of Weir reads up to " +
                        std::to_string(kIrVersion));
  saved.message.set_ir_version(kIrVersion);
  saved.message.set_opset_version(kOpsetVersion + 5);
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kUnsupported, "op set " + std::to_string(kOpsetVersion + 5));
  saved.message.set_ir_version(0);
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "not a Weir model");
}

TEST(ModelLoadErrors, ExternalDataMustStayInsideTheModelDirectory) {
  SavedModel saved;
  std::string data_name = saved.big_tensor()->external().location();
  // The same bytes placed outside the directory, so only the location is wrong.
  std::filesystem::path outside = saved.dir.path().parent_path() / (saved.dir.path().filename().string() + "-outside.data");
  std::filesystem::copy_file(saved.dir / data_name, outside, std::filesystem::copy_options::overwrite_existing);

  saved.big_tensor()->mutable_external()->set_location("../" + outside.filename().string());
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "contains '..'");

  saved.big_tensor()->mutable_external()->set_location(outside.string());
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "absolute path");

  std::filesystem::create_symlink(outside, saved.dir / "link.data");
  saved.big_tensor()->mutable_external()->set_location("link.data");
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "outside the model's directory");

  saved.big_tensor()->mutable_external()->set_location("absent.data");
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "cannot be opened");
  std::filesystem::remove(outside);
}

TEST(ModelLoadErrors, ExternalDataRangeMustLieInsideItsFile) {
  SavedModel saved;
  auto size = static_cast<int64_t>(std::filesystem::file_size(saved.dir / saved.big_tensor()->external().location()));
  saved.big_tensor()->mutable_external()->set_offset(size - 100);
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "runs past the end");

  saved.big_tensor()->mutable_external()->set_offset(std::numeric_limits<int64_t>::max() - 10);
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "runs past the end");

  saved.big_tensor()->mutable_external()->set_offset(-64);
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "negative");

  saved.big_tensor()->mutable_external()->set_offset(0);
  saved.big_tensor()->mutable_external()->set_length(100);
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "the tensor needs 2048");
}

TEST(ModelLoadErrors, ShapesThatOverflowOrAreNegativeAreRejected) {
  SavedModel overflow;
  overflow.big_tensor()->clear_dims();
  overflow.big_tensor()->add_dims(int64_t{1} << 40);
  overflow.big_tensor()->add_dims(int64_t{1} << 40);
  overflow.rewrite();
  expect_load_error(overflow.path, ErrorKind::kFormat, "constant 'big' has a shape whose element count overflows 64 bits");

  SavedModel bytes_overflow;  // the element count fits, the byte count does not
  bytes_overflow.big_tensor()->clear_dims();
  bytes_overflow.big_tensor()->add_dims(int64_t{1} << 62);
  bytes_overflow.rewrite();
  expect_load_error(bytes_overflow.path, ErrorKind::kFormat, "overflows 64 bits");

  SavedModel negative;
  negative.big_tensor()->set_dims(0, -512);
  negative.rewrite();
  expect_load_error(negative.path, ErrorKind::kFormat, "negative dimension -512");

  SavedModel input_overflow;
  proto::Shape* shape = input_overflow.message.mutable_graph()->mutable_input(0)->mutable_type()->mutable_shape();
  shape->mutable_dim(0)->set_size(int64_t{1} << 62);
  shape->add_dim()->set_size(8);
  input_overflow.rewrite();
  expect_load_error(input_overflow.path, ErrorKind::kFormat, "graph input 'x' has a shape whose element count overflows");

  SavedModel input_negative;
  input_negative.message.mutable_graph()->mutable_input(0)->mutable_type()->mutable_shape()->mutable_dim(0)->set_size(-1);
  input_negative.rewrite();
  expect_load_error(input_negative.path, ErrorKind::kFormat, "graph input 'x' has negative dimension -1");
}

TEST(ModelLoadErrors, InlineDataMustMatchTheTensorType) {
  SavedModel saved;
  proto::Tensor* tensor = saved.big_tensor();
  tensor->clear_external();
  tensor->set_raw_data(std::string(2047, '\0'));
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "holds 2047 bytes of data");

  tensor->set_dtype(8);  // ONNX's string: not a Weir dtype
  saved.rewrite();
  expect_load_error(saved.path, ErrorKind::kFormat, "unknown dtype code 8");
}

TEST(ModelLoadErrors, BrokenReferencesNameTheNode) {
  SavedModel dangling;
  dangling.message.mutable_graph()->mutable_node(0)->set_input(0, "ghost");
  dangling.rewrite();
  expect_load_error(dangling.path, ErrorKind::kFormat, "node 'add': input 0 'ghost' is not produced by any node");

  SavedModel twice;
  proto::Node* copy = twice.message.mutable_graph()->add_node();
  *copy = twice.message.graph().node(0);
  copy->set_name("add_again");
  twice.rewrite();
  expect_load_error(twice.path, ErrorKind::kFormat, "node 'add_again': output 'add:0' is also produced by node 'add'");

  SavedModel same_name;
  *same_name.message.mutable_graph()->add_node() = same_name.message.graph().node(0);
  same_name.message.mutable_graph()->mutable_node(1)->set_output(0, "other");
  same_name.rewrite();
  expect_load_error(same_name.path, ErrorKind::kFormat, "two nodes are named 'add'");

  SavedModel control;
  control.message.mutable_graph()->mutable_node(0)->add_control_input("nobody");
  control.rewrite();
  expect_load_error(control.path, ErrorKind::kFormat, "control input 'nobody'");

  SavedModel device;
  device.message.mutable_graph()->mutable_node(0)->set_device("tpu:0");
  device.rewrite();
  expect_load_error(device.path, ErrorKind::kFormat, "node 'add': device 'tpu:0'");

  SavedModel output;
  output.message.mutable_graph()->set_output(0, "missing");
  output.rewrite();
  expect_load_error(output.path, ErrorKind::kFormat, "output 'missing'");

  SavedModel attribute;
  proto::Attribute* bad = attribute.message.mutable_graph()->mutable_node(0)->add_attribute();
  bad->set_name("weird");
  bad->set_type(static_cast<proto::AttributeType>(42));
  attribute.rewrite();
  expect_load_error(attribute.path, ErrorKind::kFormat, "node 'add': attribute 'weird' has unknown type code 42");

  SavedModel no_graph;
  no_graph.message.clear_graph();
  no_graph.rewrite();
  expect_load_error(no_graph.path, ErrorKind::kFormat, "no graph");
}

}  // namespace
}  // namespace weir
