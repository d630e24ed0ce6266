// Saving and loading models: byte-identical round trips in binary and text,
// external data placement, and atomic saves that never lose a saved model.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/model_io.h"
#include "tests/core/model_fixtures.h"

namespace weir {
namespace {

using testing::list_dir;
using testing::make_rich_model;
using testing::read_bytes;
using testing::ScratchDir;

std::string only_data_file(const std::filesystem::path& dir) {
  std::string found;
  for (const std::string& name : list_dir(dir)) {
    if (name.size() > 5 && name.substr(name.size() - 5) == ".data") {
      EXPECT_TRUE(found.empty()) << "more than one data file: " << found << ", " << name;
      found = name;
    }
  }
  return found;
}

void expect_round_trip_identical(const std::string& file_name) {
  ScratchDir first, second;
  Model original = make_rich_model();
  save_model(original, first / file_name);
  Model loaded = load_model(first / file_name);
  save_model(loaded, second / file_name);

  EXPECT_EQ(read_bytes(first / file_name), read_bytes(second / file_name));
  std::string data = only_data_file(first.path());
  ASSERT_FALSE(data.empty()) << "the large tensors should have gone to a data file";
  EXPECT_EQ(data, only_data_file(second.path()));
  EXPECT_EQ(read_bytes(first / data), read_bytes(second / data));
  // Same graph, compared through its all-inline text form.
  EXPECT_EQ(model_to_text(original), model_to_text(loaded));
}

TEST(ModelIo, BinaryRoundTripIsByteIdentical) { expect_round_trip_identical("rich.weir"); }

TEST(ModelIo, TextRoundTripIsByteIdentical) { expect_round_trip_identical("rich.weirtxt"); }

TEST(ModelIo, BinaryAndTextConvertLosslessly) {
  ScratchDir dir;
  save_model(make_rich_model(), dir / "a.weir");
  save_model(load_model(dir / "a.weir"), dir / "b.weirtxt");
  save_model(load_model(dir / "b.weirtxt"), dir / "c.weir");
  // The data file name embeds the model's file name, so compare without it.
  proto::Model a = testing::read_model_proto(dir / "a.weir");
  proto::Model c = testing::read_model_proto(dir / "c.weir");
  EXPECT_EQ(model_to_text(load_model(dir / "a.weir")), model_to_text(load_model(dir / "c.weir")));
  EXPECT_EQ(a.ByteSizeLong(), c.ByteSizeLong());
}

// Sequence and optional value types survive .weir and .weirtxt.
TEST(ModelIo, SequenceAndOptionalTypesRoundTrip) {
  ScratchDir dir;
  Model model;
  model.graph = std::make_unique<Graph>("seqs");
  TensorType sequence{DType::kFloat32, Shape{Dim::symbol("n"), 3}};
  sequence.sequence = true;
  TensorType optional{DType::kInt64, Shape{2}};
  optional.optional = true;
  Value* s = model.graph->add_input("s", sequence);
  Value* o = model.graph->add_input("o", optional);
  model.graph->add_output(s);
  model.graph->add_output(o);
  for (const char* file : {"m.weir", "m.weirtxt"}) {
    save_model(model, dir / file);
    Model loaded = load_model(dir / file);
    EXPECT_EQ(loaded.graph->find_value("s")->type(), sequence) << file;
    EXPECT_EQ(loaded.graph->find_value("o")->type(), optional) << file;
  }
}

TEST(ModelIo, LoadedModelKeepsEveryDetail) {
  ScratchDir dir;
  save_model(make_rich_model(), dir / "m.weir");
  Model model = load_model(dir / "m.weir");
  const Graph& g = *model.graph;
  EXPECT_EQ(model.ir_version, kIrVersion);
  EXPECT_EQ(model.metadata.size(), 2u);
  EXPECT_EQ(g.find_value("mask")->shape().has_rank(), false);
  EXPECT_EQ(g.find_value("ids")->shape().to_string(), "[batch,seq]");
  EXPECT_EQ(g.find_value("w_moment")->role(), PersistentRole::kOptimizerState);
  EXPECT_FALSE(g.find_value("w_moment")->data().defined());
  EXPECT_EQ(g.find_value("step")->data().data<int64_t>()[0], 7);
  EXPECT_EQ(g.find_value("f16")->data().data<Float16>()[1].to_float(), -65504.0f);
  const Node* gemm = g.find_node("gemm");
  EXPECT_EQ(gemm->input(2), nullptr);
  const Node* allreduce = g.find_node("allreduce");
  EXPECT_EQ(allreduce->device(), Device::cuda(0));
  EXPECT_EQ(allreduce->stream(), "comm0");
  ASSERT_EQ(allreduce->control_inputs().size(), 2u);
  EXPECT_EQ(allreduce->control_inputs()[0]->name(), "attrs");
  const Node* attrs = g.find_node("attrs");
  EXPECT_EQ(attrs->domain(), "test.weir");
  EXPECT_EQ(attrs->attr("an_int").i(), -9007199254740993);
  EXPECT_EQ(attrs->attr("a_float").f(), 0.1);
  EXPECT_EQ(attrs->attr("a_string").s(), std::string("bytes\xff\x00 and text", 16));
  EXPECT_EQ(attrs->attr("graphs").graphs()[1]->name(), "else");
  EXPECT_TRUE(attrs->attr("a_big_tensor").t().bitwise_equal(testing::random_tensor({32, 32}, 6)));
  const Graph& body = *attrs->attr("a_graph").g();
  EXPECT_TRUE(body.find_value("body_big")->data().bitwise_equal(testing::random_tensor({16, 32}, 7)));
  EXPECT_EQ(g.outputs().size(), 3u);
}

TEST(ModelIo, LargeTensorsGoExternalAtAlignedOffsetsAndSmallOnesStayInline) {
  ScratchDir dir;
  save_model(make_rich_model(), dir / "m.weir");
  proto::Model message = testing::read_model_proto(dir / "m.weir");
  int external = 0;
  for (const proto::Constant& constant : message.graph().constant()) {
    bool is_big = constant.name() == "big";
    EXPECT_EQ(constant.tensor().has_external(), is_big) << constant.name();
    if (constant.tensor().has_external()) {
      ++external;
      EXPECT_EQ(constant.tensor().external().offset() % 64, 0);
      EXPECT_EQ(constant.tensor().external().location(), only_data_file(dir.path()));
    }
  }
  EXPECT_EQ(external, 1);

  SaveOptions inline_only;
  inline_only.external_data_threshold = std::numeric_limits<size_t>::max();
  ScratchDir other;
  save_model(make_rich_model(), other / "m.weir", inline_only);
  EXPECT_EQ(list_dir(other.path()), std::vector<std::string>{"m.weir"});
  EXPECT_EQ(model_to_text(load_model(other / "m.weir")), model_to_text(make_rich_model()));
}

TEST(ModelIo, ResavingReplacesTheDataFileAndLeavesNoTemporaries) {
  ScratchDir dir;
  Model model = make_rich_model();
  save_model(model, dir / "m.weir");
  std::string first_data = only_data_file(dir.path());

  Tensor changed = testing::random_tensor({64, 64}, 99);
  model.graph->find_value("big")->set_data(changed);
  save_model(model, dir / "m.weir");
  std::string second_data = only_data_file(dir.path());
  EXPECT_NE(first_data, second_data);  // the old model's data file was removed, not overwritten
  EXPECT_EQ(list_dir(dir.path()), (std::vector<std::string>{"m.weir", second_data}));
  EXPECT_TRUE(load_model(dir / "m.weir").graph->find_value("big")->data().bitwise_equal(changed));
}

TEST(ModelIo, FailedSaveLeavesThePreviousModelIntact) {
  ScratchDir dir;
  Model model = make_rich_model();
  save_model(model, dir / "m.weir");
  std::string before = read_bytes(dir / "m.weir");
  std::vector<std::string> files_before = list_dir(dir.path());

  // A tensor that claims to live on a GPU cannot be serialized: the save
  // fails part-way through converting the graph.
  static float host[4] = {1, 2, 3, 4};
  model.graph->add_constant("on_gpu", Tensor::wrap(DType::kFloat32, {4}, host, Device::cuda(0), nullptr));
  try {
    save_model(model, dir / "m.weir");
    FAIL() << "expected the save to fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m.weir"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(dir / "m.weir"), before);
  EXPECT_EQ(list_dir(dir.path()), files_before);

  // A target that cannot be renamed over (a directory) fails after writing;
  // the temporary file is removed.
  std::filesystem::create_directory(dir / "taken.weir");
  EXPECT_THROW(save_model(make_rich_model(), dir / "taken.weir",
                          {.format = ModelFormat::kBinary,
                           .external_data_threshold = std::numeric_limits<size_t>::max()}),
               Error);
  for (const std::string& name : list_dir(dir.path())) EXPECT_NE(name[0], '.') << name;

  EXPECT_THROW(save_model(make_rich_model(), dir / "missing" / "m.weir"), Error);
}

TEST(ModelIo, ModelWithoutGraphIsRejected) {
  ScratchDir dir;
  EXPECT_THROW(save_model(Model{}, dir / "m.weir"), Error);
}

}  // namespace
}  // namespace weir
