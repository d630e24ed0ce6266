// Files that must not hang, exhaust memory or be left behind: FIFOs where a
// model, data or tensor file is expected, sizes declared far beyond the
// bytes present or the allocation caps, and the temporary files of saves
// that a crash interrupted.
#include <gtest/gtest.h>
#include <sys/file.h>

#include <chrono>

#include "core/allocation_limits.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/model_io.h"
#include "tests/core/model_fixtures.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::FifoWithWatchdog;
using testing::ScratchDir;
using Clock = std::chrono::steady_clock;

// The error `body` throws, checked to name `file`; fails the test otherwise.
template <typename Body>
Error error_of(Body body, const std::string& file) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(file), std::string::npos) << error.what();
    return error;
  }
  ADD_FAILURE() << "no error for " << file;
  return Error(ErrorKind::kInternal, "none");
}

// Restores the process's allocation caps when the test ends.
struct LimitsGuard {
  AllocationLimits saved = allocation_limits();
  ~LimitsGuard() { set_allocation_limits(saved); }
};

// A model with one f32[n] constant "w" stored at `location` (external) or inline.
proto::Model model_with_constant(const std::vector<int64_t>& dims, const std::string& location) {
  Model model;
  model.graph = std::make_unique<Graph>("g");
  Value* x = model.graph->add_input("x", {DType::kFloat32, Shape{1}});
  Value* w = model.graph->add_constant("w", Tensor(DType::kFloat32, {1}));
  Node* add = model.graph->add_node("Add", {x, w}, 1, {}, "add");
  model.graph->add_output(add->output(0));
  ScratchDir dir;
  save_model(model, dir / "m.weir");
  proto::Model message = testing::read_model_proto(dir / "m.weir");
  proto::Tensor* tensor = message.mutable_graph()->mutable_constant(0)->mutable_tensor();
  tensor->clear_dims();
  for (int64_t d : dims) tensor->add_dims(d);
  tensor->clear_raw_data();
  if (!location.empty()) {
    uint64_t bytes = 4;
    for (int64_t d : dims) bytes *= static_cast<uint64_t>(d);
    tensor->mutable_external()->set_location(location);
    tensor->mutable_external()->set_offset(0);
    tensor->mutable_external()->set_length(static_cast<int64_t>(bytes));
  }
  return message;
}

TEST(HostileFiles, FifosAreRefusedWithoutBlocking) {
  ScratchDir dir;
  {
    FifoWithWatchdog fifo(dir / "model.weir");
    auto start = Clock::now();
    Error error = error_of([&] { load_model(fifo.path()); }, "model.weir");
    EXPECT_NE(std::string(error.what()).find("not a regular file (a FIFO)"), std::string::npos) << error.what();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
    EXPECT_FALSE(fifo.blocked());
  }
  {
    FifoWithWatchdog fifo(dir / "tensor.bin");
    error_of([&] { read_file(fifo.path(), 1 << 20); }, "tensor.bin");
    EXPECT_FALSE(fifo.blocked());
  }
  {
    // External data that is a FIFO.
    FifoWithWatchdog fifo(dir / "w.data");
    testing::write_model_proto(dir / "external.weir", model_with_constant({4}, "w.data"));
    Error error = error_of([&] { load_model(dir / "external.weir"); }, "external.weir");
    EXPECT_NE(std::string(error.what()).find("'w.data' is refused: not a regular file (a FIFO)"), std::string::npos)
        << error.what();
    EXPECT_FALSE(fifo.blocked());
  }
}

// A 3 KB model declaring a 4 GiB constant in a file that is not there: the
// location is checked before the tensor is allocated (it once zero-filled
// 4 GiB for 16 s first).
TEST(HostileFiles, ExternalConstantAtAMissingFileFailsBeforeAllocating) {
  ScratchDir dir;
  testing::write_model_proto(dir / "huge.weir", model_with_constant({int64_t{1} << 30}, "absent.data"));
  auto start = Clock::now();
  Error error = error_of([&] { load_model(dir / "huge.weir"); }, "huge.weir");
  EXPECT_EQ(error.kind(), ErrorKind::kFormat);
  EXPECT_NE(std::string(error.what()).find("constant 'w'"), std::string::npos) << error.what();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));

  // Present but short: the range is checked against the file's size.
  testing::write_bytes(dir / "short.data", std::string(1024, '\0'));
  testing::write_model_proto(dir / "short.weir", model_with_constant({int64_t{1} << 30}, "short.data"));
  error = error_of([&] { load_model(dir / "short.weir"); }, "short.weir");
  EXPECT_NE(std::string(error.what()).find("runs past the end of 'short.data'"), std::string::npos) << error.what();
}

TEST(HostileFiles, DeclaredSizesAreChargedAgainstTheCaps) {
  ScratchDir dir;
  LimitsGuard guard;
  testing::write_bytes(dir / "w.data", std::string(4096, '\0'));
  testing::write_model_proto(dir / "m.weir", model_with_constant({1024}, "w.data"));
  set_allocation_limits({1000, 1 << 20});
  Error error = error_of([&] { load_model(dir / "m.weir"); }, "m.weir");
  EXPECT_EQ(error.kind(), ErrorKind::kOutOfMemory);
  EXPECT_NE(std::string(error.what()).find("constant 'w' needs 4096 bytes, over the limit of 1000 bytes per tensor "
                                           "(WEIR_MAX_TENSOR_BYTES)"),
            std::string::npos)
      << error.what();
  set_allocation_limits({1 << 20, 4000});
  error = error_of([&] { load_model(dir / "m.weir"); }, "m.weir");
  EXPECT_NE(std::string(error.what()).find("over the limit of 4000 bytes per model (WEIR_MAX_MODEL_BYTES)"),
            std::string::npos)
      << error.what();
  set_allocation_limits({1 << 20, 1 << 20});
  EXPECT_NO_THROW(load_model(dir / "m.weir"));

  // The model cap counts every tensor of one load, and only that load's.
  set_allocation_limits({1 << 20, 6000});
  EXPECT_NO_THROW(load_model(dir / "m.weir"));
  EXPECT_NO_THROW(load_model(dir / "m.weir"));
  {
    LoadBudget budget;
    charge_allocation(3000, "first");
    charge_allocation(3000, "second");
    EXPECT_THROW(charge_allocation(1, "third"), Error);
  }
  EXPECT_NO_THROW(charge_allocation(6000, "outside any load"));
}

// A save that a crash interrupted leaves its temporary file; the next save of
// the same file that succeeds removes it, but leaves a temporary that a
// writer still holds (its flock) alone.
TEST(HostileFiles, AbandonedTemporariesGoWithTheNextSave) {
  ScratchDir dir;
  testing::write_bytes(dir / ".ck.npz.tmp.AbCdE1", std::string(1000, 'x'));  // its writer died
  testing::write_bytes(dir / ".ck.npz.tmp.AbCdE2", std::string(1000, 'y'));  // its writer is alive
  testing::write_bytes(dir / ".other.npz.tmp.AbCdE3", "z");                  // another file's
  int held = ::open((dir / ".ck.npz.tmp.AbCdE2").c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);

  write_file_atomically(dir / "ck.npz", "checkpoint");
  EXPECT_EQ(read_file(dir / "ck.npz", 100), "checkpoint");
  EXPECT_FALSE(std::filesystem::exists(dir / ".ck.npz.tmp.AbCdE1"));
  EXPECT_TRUE(std::filesystem::exists(dir / ".ck.npz.tmp.AbCdE2"));
  EXPECT_TRUE(std::filesystem::exists(dir / ".other.npz.tmp.AbCdE3"));
  ::close(held);
  write_file_atomically(dir / "ck.npz", "again");
  EXPECT_FALSE(std::filesystem::exists(dir / ".ck.npz.tmp.AbCdE2"));
  EXPECT_EQ(testing::list_dir(dir.path()), (std::vector<std::string>{".other.npz.tmp.AbCdE3", "ck.npz"}));
}

}  // namespace
}  // namespace weir
