// Tensor storage (owned, external, views) and the CPU allocator's statistics.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "core/error.h"
#include "core/tensor.h"
#include "tests/test_util.h"

namespace weir {
namespace {

TEST(CpuAllocator, TracksBytesInUsePeakAndCounts) {
  CpuAllocator allocator;
  void* a = allocator.allocate(1000);
  void* b = allocator.allocate(24);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kTensorAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % kTensorAlignment, 0u);
  EXPECT_EQ(allocator.stats().bytes_in_use, 1024);
  allocator.deallocate(a, 1000);
  void* c = allocator.allocate(10);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.bytes_in_use, 34);
  EXPECT_EQ(stats.peak_bytes, 1024);
  EXPECT_EQ(stats.num_allocations, 3);
  EXPECT_EQ(stats.live_allocations, 2);
  allocator.reset_peak();
  EXPECT_EQ(allocator.stats().peak_bytes, 34);
  allocator.deallocate(b, 24);
  allocator.deallocate(c, 10);
  EXPECT_EQ(allocator.stats().bytes_in_use, 0);
  EXPECT_EQ(allocator.allocate(0), nullptr);
  EXPECT_THROW(allocator.allocate(16, 48), Error);  // not a power of two
}

TEST(CpuAllocator, StatisticsStayExactUnderConcurrentUse) {
  CpuAllocator allocator;
  auto worker = [&allocator](int seed) {
    for (int i = 0; i < 2000; ++i) {
      size_t bytes = static_cast<size_t>(1 + (seed * 7919 + i * 104729) % 4096);
      void* p = allocator.allocate(bytes);
      allocator.deallocate(p, bytes);
    }
  };
  std::thread first(worker, 1), second(worker, 2);
  first.join();
  second.join();
  EXPECT_EQ(allocator.stats().bytes_in_use, 0);
  EXPECT_EQ(allocator.stats().num_allocations, 4000);
  EXPECT_GT(allocator.stats().peak_bytes, 0);
}

TEST(Tensor, OwnedTensorIsZeroedAlignedAndFreedWithLastHandle) {
  CpuAllocator allocator;
  {
    Tensor t(DType::kFloat32, {3, 5}, allocator);
    EXPECT_EQ(t.num_elements(), 15);
    EXPECT_EQ(t.nbytes(), 60u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
    for (int i = 0; i < 15; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
    Tensor copy = t;  // shares storage
    EXPECT_EQ(copy.raw_data(), t.raw_data());
    EXPECT_EQ(allocator.stats().bytes_in_use, 60);
  }
  EXPECT_EQ(allocator.stats().bytes_in_use, 0);
}

TEST(Tensor, ViewsShareStorageAndCheckBounds) {
  std::vector<float> values = testing::random_floats(12, 7);
  Tensor t = Tensor::from_vector(values, {4, 3});
  Tensor row = t.slice(2, 3);
  EXPECT_EQ(row.sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(row.data<float>()[1], values[7]);
  row.data<float>()[1] = 42.0f;  // writes through to the parent
  EXPECT_EQ(t.data<float>()[7], 42.0f);

  Tensor flat = t.reshape({12});
  EXPECT_EQ(flat.data<float>()[11], values[11]);
  EXPECT_THROW(t.reshape({5}), Error);
  EXPECT_THROW(t.slice(3, 5), Error);
  EXPECT_THROW(t.slice(2, 1), Error);
  EXPECT_THROW(t.view(40, DType::kFloat32, {3}), Error);  // 12 bytes from offset 40 overruns 48
  Tensor tail = t.view(36, DType::kFloat32, {3});
  EXPECT_EQ(tail.data<float>()[2], values[11]);
}

TEST(Tensor, TypedAccessChecksDtype) {
  Tensor t = Tensor::from_vector<int64_t>({1, -2, 3}, {3});
  EXPECT_EQ(t.data<int64_t>()[1], -2);
  EXPECT_THROW(t.data<float>(), Error);
  EXPECT_THROW(Tensor::from_vector<float>({1.0f, 2.0f}, {3}), Error);
  Tensor flags = Tensor::from_vector<bool>({true, false, true}, {3});
  EXPECT_TRUE(flags.data<bool>()[2]);
  EXPECT_EQ(Tensor::scalar<double>(2.5).rank(), 0);
}

TEST(Tensor, CloneIsIndependentAndBitwiseEqual) {
  Tensor original = Tensor::from_vector(testing::random_floats(6, 3), {2, 3});
  Tensor copy = original.clone();
  EXPECT_TRUE(copy.bitwise_equal(original));
  copy.data<float>()[0] += 1.0f;
  EXPECT_FALSE(copy.bitwise_equal(original));
  EXPECT_EQ(original.type_string(), "f32[2,3]");
}

TEST(Tensor, WrappedExternalMemoryIsReleasedWithLastView) {
  auto buffer = std::make_shared<std::vector<float>>(testing::random_floats(8, 11));
  std::weak_ptr<std::vector<float>> watch = buffer;
  {
    Tensor wrapped = Tensor::wrap(DType::kFloat32, {8}, buffer->data(), Device::cpu(), buffer);
    buffer.reset();
    Tensor view = wrapped.slice(2, 4);
    EXPECT_FALSE(watch.expired());
    EXPECT_FALSE(view.storage()->is_owned());
  }
  EXPECT_TRUE(watch.expired());
  EXPECT_THROW(Tensor::wrap(DType::kFloat32, {4}, nullptr, Device::cpu(), nullptr), Error);
}

TEST(Tensor, RejectsNegativeAndOverflowingSizes) {
  EXPECT_THROW(Tensor(DType::kFloat32, {-1}), Error);
  EXPECT_THROW(Tensor(DType::kFloat32, {int64_t{1} << 62, 8}), Error);
  EXPECT_THROW(Tensor(DType::kUndefined, {1}), Error);
}

// Sequences and absent optionals (ONNX's seq and optional values) travel in
// a Tensor handle: their types, copies and comparisons.
TEST(Tensor, SequencesAndAbsentOptionals) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector<float>({7, 8, 9}, {1, 3});
  Tensor seq = Tensor::sequence(DType::kFloat32, {a, b});
  EXPECT_TRUE(seq.is_sequence());
  EXPECT_TRUE(seq.defined());
  EXPECT_EQ(seq.elements().size(), 2u);
  EXPECT_EQ(seq.nbytes(), 0u);
  EXPECT_EQ(seq.type_string(), "seq(f32)[2 elements]");
  // The elements agree on axis 1 only: axis 0 is symbolic in the type.
  TensorType type = seq.type();
  EXPECT_TRUE(type.sequence);
  EXPECT_EQ(type.to_string(), "seq(f32[?,3])");
  EXPECT_EQ(Tensor::sequence(DType::kFloat32, {a, a.reshape({6})}).type().to_string(), "seq(f32[?])");
  EXPECT_EQ(Tensor::sequence(DType::kInt64, {}).type().to_string(), "seq(i64[?])");
  // A clone copies every element's bytes.
  Tensor copy = seq.clone();
  EXPECT_TRUE(copy.bitwise_equal(seq));
  EXPECT_NE(copy.elements()[0].raw_data(), a.raw_data());
  EXPECT_FALSE(seq.bitwise_equal(Tensor::sequence(DType::kFloat32, {a})));
  EXPECT_FALSE(seq.bitwise_equal(a));
  // Elements must have the sequence's dtype and be tensors.
  EXPECT_THROW(Tensor::sequence(DType::kFloat32, {Tensor::from_vector<int64_t>({1}, {1})}), Error);
  EXPECT_THROW(Tensor::sequence(DType::kFloat32, {seq}), Error);
  EXPECT_THROW(a.elements(), Error);

  Tensor none = Tensor::none(DType::kFloat32, /*sequence=*/true);
  EXPECT_TRUE(none.is_none());
  EXPECT_FALSE(none.is_sequence());
  EXPECT_EQ(none.type().to_string(), "opt(seq(f32[?]))");
  EXPECT_EQ(none.type_string(), "none(seq(f32))");
  EXPECT_TRUE(none.bitwise_equal(Tensor::none(DType::kFloat32, true)));
  EXPECT_FALSE(none.bitwise_equal(Tensor::none(DType::kFloat32, false)));
}

}  // namespace
}  // namespace weir
