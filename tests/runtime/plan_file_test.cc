// The compiled plan file: a saved plan loads with the same schedule and
// memory plan and gives bit-identical outputs, its weights are used in place,
// and truncated or corrupted files are rejected with errors, never crashes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/fbs/plan_generated.h"
#include "runtime/plan_file.h"
#include "runtime/session.h"
#include "runtime/weight_packing.h"
#include "tests/runtime/runtime_test_util.h"

namespace weir {
namespace {

using weir::testing::random_tensor;
using weir::testing::resnet_style_graph;
using weir::testing::ScratchDir;

TEST(PlanFile, RoundTripGivesTheSamePlanAndBitIdenticalOutputs) {
  ScratchDir dir;
  auto g = resnet_style_graph(3, 8, 16);
  auto plan = compile(*g);
  save_plan(*plan, dir / "resnet.weirplan");
  auto loaded = load_plan(dir / "resnet.weirplan");
  EXPECT_EQ(loaded->to_string(), plan->to_string());
  Tensor x = random_tensor({1, 3, 16, 16}, 21);
  Session original(plan), reloaded(loaded);
  std::vector<Tensor> a = original.run({{"x", x}});
  std::vector<Tensor> b = reloaded.run({{"x", x}});
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].bitwise_equal(b[i]));
  // Weights are views of the mapped file, 64-byte aligned.
  for (const Value* constant : loaded->graph().constants()) {
    EXPECT_FALSE(constant->data().storage()->is_owned()) << constant->name();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(constant->data().raw_data()) % 64, 0u) << constant->name();
  }
}

TEST(PlanFile, KeepsDevicesStreamsAndCollectives) {
  ScratchDir dir;
  Graph g("two");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{3, 4}});
  for (int d = 0; d < 2; ++d) {
    Node* relu = g.add_node("Relu", {x}, 1, {}, "relu" + std::to_string(d));
    relu->set_device(Device::cpu(d));
    Node* reduce = g.add_node("AllReduce", {relu->output(0)}, 1,
                              {{"reduction", Attribute(std::string("max"))}, {"tag", Attribute(std::string("t"))}},
                              "reduce" + std::to_string(d));
    reduce->set_device(Device::cpu(d));
    g.add_output(reduce->output(0));
  }
  CompileOptions options;
  options.devices = {Device::cpu(0), Device::cpu(1)};
  auto plan = compile(g, options);
  save_plan(*plan, dir / "two.weirplan");
  auto loaded = load_plan(dir / "two.weirplan");
  EXPECT_EQ(loaded->to_string(), plan->to_string());
  Tensor input = random_tensor({3, 4}, 2);
  std::vector<Tensor> out = Session(loaded).run({{"x", input}});
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(out[1].data<float>()[i], std::max(0.0f, input.data<float>()[i]));
}

// A graph whose five convs (four of them Winograd: 3x3, 128 channels) pack
// their constant weights into oneDNN's layouts at level 3.
std::unique_ptr<Graph> packing_graph() { return resnet_style_graph(2, 128, 8); }

CompileOptions level3() {
  CompileOptions options;
  options.opt_level = 3;
  return options;
}

struct PackCount {
  size_t kernels = 0, adopted = 0;
};

PackCount count_packs(const Plan& plan) {
  PackCount count;
  for (size_t step = 0; step < plan.schedule().steps.size(); ++step) {
    std::vector<PackedConstant> packs = plan.kernel(step).packed_constants();
    if (packs.empty()) continue;
    ++count.kernels;
    bool all_adopted = true;
    for (const PackedConstant& pack : packs) all_adopted = all_adopted && pack.adopted;
    if (all_adopted) ++count.adopted;
  }
  return count;
}

TEST(PlanFile, PackedWeightsAreStoredAndUsedWithoutPackingAgain) {
  ScratchDir dir;
  auto g = packing_graph();
  auto plan = compile(*g, level3());
  EXPECT_EQ(count_packs(*plan).kernels, 0u);  // nothing packs before a run
  WeightPacking packing = pack_weights(plan);
  EXPECT_EQ(packing.skipped, "");
  EXPECT_EQ(packing.kernels, 5u);  // the stem and the four block convs
  EXPECT_GT(packing.bytes, size_t{4 * 128 * 128 * 9 * 4});
  save_plan(*plan, dir / "packed.weirplan");

  auto loaded = load_plan(dir / "packed.weirplan");
  EXPECT_EQ(count_packs(*loaded).kernels, 0u);  // adopted packs wait for the run that wants them
  Tensor x = random_tensor({1, 3, 8, 8}, 31);
  std::vector<Tensor> expected = Session(plan).run({{"x", x}});
  std::vector<Tensor> got = Session(loaded).run({{"x", x}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].bitwise_equal(expected[0]));
  PackCount after = count_packs(*loaded);
  EXPECT_EQ(after.kernels, 5u);
  EXPECT_EQ(after.adopted, 5u);  // every kernel ran on the file's bytes, none packed again

  // Saved again from the loaded plan: the adopted packs are written out too.
  save_plan(*loaded, dir / "again.weirplan");
  EXPECT_EQ(count_packs(*load_plan(dir / "again.weirplan")).kernels, 0u);
  auto again = load_plan(dir / "again.weirplan");
  EXPECT_TRUE(Session(again).run({{"x", x}})[0].bitwise_equal(expected[0]));
  EXPECT_EQ(count_packs(*again).adopted, 5u);
}

// A file packed for another library version or instruction set: the loader
// leaves its packs unused and the kernels pack again, with the same result.
TEST(PlanFile, PacksMadeForAnotherTargetArePackedAgain) {
  ScratchDir dir;
  auto plan = compile(*packing_graph(), level3());
  ASSERT_EQ(pack_weights(plan).kernels, 5u);
  save_plan(*plan, dir / "packed.weirplan");
  std::string bytes = read_file(dir / "packed.weirplan", size_t{1} << 30);
  std::string target = packed_constant_target();
  size_t at = bytes.find(target);
  ASSERT_NE(at, std::string::npos);
  bytes[at + target.size() - 1] = bytes[at + target.size() - 1] == 'x' ? 'y' : 'x';  // another ISA's name
  write_file_atomically(dir / "elsewhere.weirplan", bytes);

  auto loaded = load_plan(dir / "elsewhere.weirplan");
  Tensor x = random_tensor({1, 3, 8, 8}, 32);
  EXPECT_TRUE(Session(loaded).run({{"x", x}})[0].bitwise_equal(Session(plan).run({{"x", x}})[0]));
  PackCount after = count_packs(*loaded);
  EXPECT_EQ(after.kernels, 5u);
  EXPECT_EQ(after.adopted, 0u);
}

// The int8 kernels (QLinearConv, QLinearMatMul on oneDNN) pack their
// constant s8 weights too, and a loaded plan uses the file's packs.
TEST(PlanFile, Int8WeightsArePackedToo) {
  ScratchDir dir;
  std::mt19937 engine(3);
  auto s8 = [&](std::vector<int64_t> sizes) {
    Tensor t(DType::kInt8, std::move(sizes));
    std::uniform_int_distribution<int> values(-127, 127);
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(values(engine));
    return t;
  };
  auto u8_zero = [](int value) {
    Tensor t(DType::kUInt8, {});
    t.data<uint8_t>()[0] = static_cast<uint8_t>(value);
    return t;
  };
  Graph g("int8");
  Value* x = g.add_input("x", {DType::kUInt8, Shape{1, 32, 8, 8}});
  Value* scale = g.add_constant("scale", Tensor::scalar<float>(0.02f));
  Value* zero = g.add_constant("zero", u8_zero(128));
  Value* w_scale = g.add_constant("w_scale", Tensor::scalar<float>(0.003f));
  Value* w_zero = g.add_constant("w_zero", Tensor(DType::kInt8, {}));
  Value* w = g.add_constant("w", s8({32, 32, 3, 3}));
  Value* y = g.add_node("QLinearConv", {x, scale, zero, w, w_scale, w_zero, scale, zero}, 1,
                        {{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}}, "conv")
                 ->output(0);
  Value* shape = g.add_constant("shape", Tensor::from_vector<int64_t>({64, 32}, {2}));
  Value* flat = g.add_node("Reshape", {y, shape}, 1, {}, "flat")->output(0);
  Value* b = g.add_constant("b", s8({32, 64}));
  g.add_output(
      g.add_node("QLinearMatMul", {flat, scale, zero, b, w_scale, w_zero, scale, zero}, 1, {}, "matmul")->output(0));
  auto plan = compile(g);
  WeightPacking packing = pack_weights(plan);
  EXPECT_EQ(packing.skipped, "");
  EXPECT_EQ(packing.kernels, 2u);
  save_plan(*plan, dir / "int8.weirplan");
  auto loaded = load_plan(dir / "int8.weirplan");
  Tensor input(DType::kUInt8, {1, 32, 8, 8});
  for (int64_t i = 0; i < input.num_elements(); ++i) input.data<uint8_t>()[i] = static_cast<uint8_t>(engine() % 256);
  EXPECT_TRUE(Session(loaded).run({{"x", input}})[0].bitwise_equal(Session(plan).run({{"x", input}})[0]));
  PackCount after = count_packs(*loaded);
  EXPECT_EQ(after.kernels, 2u);
  EXPECT_EQ(after.adopted, 2u);
}

TEST(WeightPacking, LeavesAlonePlansARunOnZerosCannotStandFor) {
  Graph symbolic("symbolic");
  Value* x = symbolic.add_input("x", {DType::kFloat32, Shape{Dim::symbol("batch"), 4}});
  symbolic.add_output(symbolic.add_node("MatMul", {x, symbolic.add_constant("w", random_tensor({4, 4}, 1))})->output(0));
  WeightPacking packing = pack_weights(compile(symbolic, level3()));
  EXPECT_EQ(packing.kernels, 0u);
  EXPECT_NE(packing.skipped.find("input 'x' is f32[batch,4], not of a static shape"), std::string::npos)
      << packing.skipped;

  Graph training("training");
  Value* y = training.add_input("y", {DType::kFloat32, Shape{2, 4}});
  Value* w = training.add_persistent("w", {DType::kFloat32, Shape{4, 4}}, PersistentRole::kParameter,
                                     random_tensor({4, 4}, 2));
  training.add_output(training.add_node("MatMul", {y, w})->output(0));
  packing = pack_weights(compile(training));
  EXPECT_NE(packing.skipped.find("persistent values ('w')"), std::string::npos) << packing.skipped;
}

// Every prefix length and many single-byte corruptions: each load either
// succeeds or throws weir::Error; nothing else escapes and nothing crashes.
TEST(PlanFile, TruncatedAndCorruptedFilesAreRejected) {
  ScratchDir dir;
  auto g = resnet_style_graph(1, 4, 8);
  auto plan = compile(*g);
  pack_weights(plan);  // the packed-constant tables are corrupted too
  save_plan(*plan, dir / "good.weirplan");
  std::string bytes = read_file(dir / "good.weirplan", size_t{1} << 30);
  auto try_load = [&](const std::string& content) -> std::string {
    write_file_atomically(dir / "bad.weirplan", content);
    try {
      load_plan(dir / "bad.weirplan");
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  };
  int rejected = 0;
  for (size_t length = 0; length < bytes.size(); length += std::max<size_t>(1, bytes.size() / 97)) {
    std::string error = try_load(bytes.substr(0, length));
    EXPECT_FALSE(error.empty()) << "a file cut at " << length << " of " << bytes.size() << " bytes loaded";
    EXPECT_NE(error.find("bad.weirplan"), std::string::npos) << error;
    ++rejected;
  }
  std::mt19937 engine(5);
  size_t header_and_table = bytes.size() / 2;  // corrupt the header and the table, not only weights
  int loaded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string corrupted = bytes;
    size_t at = engine() % header_and_table;
    corrupted[at] = static_cast<char>(corrupted[at] ^ (1 + engine() % 255));
    if (try_load(corrupted).empty()) ++loaded;
  }
  std::cout << rejected << " truncations rejected; " << 300 - loaded << " of 300 corruptions rejected, " << loaded
            << " loaded (a flipped byte can still be a valid plan, e.g. in a weight or a name)\n";
  EXPECT_NE(try_load("").find("not a Weir plan"), std::string::npos);
  EXPECT_NE(try_load(std::string(4096, 'x')).find("not a Weir plan"), std::string::npos);
  try {
    load_plan(dir / "missing.weirplan");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("missing.weirplan"), std::string::npos);
  }
}

// Flatbuffers 2.0's verifier checks only 4-byte alignment of a vector's
// length word, so a crafted plan can point a [long] vector 4 bytes off 8
// (the fuzzer's finding): the reader refuses it instead of reading the
// int64 sizes misaligned. The test saves a plan with one constant of sizes
// [1, 41] and moves the offset to its sizes vector 4 bytes on: the length
// word is then the low half of 1, and the one element starts 4 bytes off 8.
// Empty vectors may sit anywhere (flatbuffers does not align them): the plan
// also has a scalar constant, whose empty sizes must not be refused.
TEST(PlanFile, MisalignedVectorsAreRefused) {
  ScratchDir dir;
  Graph g("constant");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 41}});
  Value* c = g.add_constant("c", random_tensor({1, 41}, 3));
  Value* sum = g.add_node("Add", {x, c}, 1, {}, "add")->output(0);
  Value* two = g.add_constant("two", Tensor::scalar<float>(2.0f));
  g.add_output(g.add_node("Mul", {sum, two}, 1, {}, "twice")->output(0));
  infer_graph_types(g, default_op_registry());
  save_plan(*compile(g), dir / "good.weirplan");
  Tensor input = random_tensor({1, 41}, 4);
  std::vector<Tensor> out = Session(load_plan(dir / "good.weirplan")).run({{"x", input}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].bitwise_equal(Session(compile(g)).run({{"x", input}})[0]));
  std::string bytes = read_file(dir / "good.weirplan", size_t{1} << 30);
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  // The sizes vector: length 2, then 1 and 41 as int64.
  std::string pattern(20, '\0');
  pattern[0] = 2;
  pattern[4] = 1;
  pattern[12] = 41;
  size_t vector = bytes.find(pattern);
  ASSERT_NE(vector, std::string::npos);
  int patched = 0;
  for (size_t at = 0; at + 4 <= vector; at += 4) {
    if (at + u32(at) == vector) {
      uint32_t moved = u32(at) + 4;
      std::memcpy(bytes.data() + at, &moved, 4);
      ++patched;
    }
  }
  ASSERT_EQ(patched, 1);
  write_file_atomically(dir / "misaligned.weirplan", bytes);
  try {
    load_plan(dir / "misaligned.weirplan");
    FAIL() << "a misaligned vector loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat) << e.what();
    EXPECT_NE(std::string(e.what()).find("is not aligned to 8 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("misaligned.weirplan"), std::string::npos) << e.what();
  }
}

// A plan's arena size comes from the file: one larger than its slots reach,
// or past the allocation caps, is refused at load, where the file is named,
// instead of being allocated when a session starts. And a FIFO in place of
// the plan is refused without blocking.
TEST(PlanFile, ArenasLargerThanTheirSlotsAndFifosAreRefused) {
  ScratchDir dir;
  auto g = resnet_style_graph(1, 4, 8);
  save_plan(*compile(*g), dir / "good.weirplan");
  const std::string bytes = read_file(dir / "good.weirplan", size_t{1} << 30);
  uint64_t table_offset = 0;
  std::memcpy(&table_offset, bytes.data() + 8, 8);
  // The arena's size field, found through the generated accessors.
  const fbs::Plan* plan = fbs::GetPlan(bytes.data() + table_offset);
  ASSERT_TRUE(plan->arenas() != nullptr && plan->arenas()->size() > 0);
  const auto* arena = reinterpret_cast<const flatbuffers::Table*>(plan->arenas()->Get(0));
  const uint8_t* field = arena->GetAddressOf(fbs::Arena::VT_BYTES);
  ASSERT_NE(field, nullptr);
  const size_t at = static_cast<size_t>(reinterpret_cast<const char*>(field) - bytes.data());
  auto with_arena = [&](int64_t arena_bytes) {
    std::string edited = bytes;
    std::memcpy(edited.data() + at, &arena_bytes, 8);
    write_file_atomically(dir / "edited.weirplan", edited);
    try {
      load_plan(dir / "edited.weirplan");
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(with_arena(plan->arenas()->Get(0)->bytes()), "");
  std::string error = with_arena(int64_t{1} << 32);
  EXPECT_NE(error.find("declares 4294967296 bytes, but its slots end at"), std::string::npos) << error;
  EXPECT_NE(error.find("edited.weirplan"), std::string::npos) << error;
  error = with_arena(int64_t{1} << 62);
  EXPECT_NE(error.find("over the limit of"), std::string::npos) << error;

  testing::FifoWithWatchdog fifo(dir / "fifo.weirplan");
  auto start = std::chrono::steady_clock::now();
  try {
    load_plan(fifo.path());
    ADD_FAILURE() << "a FIFO loaded as a plan";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file (a FIFO)"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_FALSE(fifo.blocked());
}

}  // namespace
}  // namespace weir
