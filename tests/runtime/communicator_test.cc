// The in-process communicator: every collective against a plain reference
// on random data, with one thread per rank; outputs the caller allocated,
// with a timeout per call; mismatched calls, abort and timeouts end in
// kCommunication errors instead of hangs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "core/error.h"
#include "runtime/in_process_communicator.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using weir::testing::random_floats;

Tensor random_tensor(std::vector<int64_t> sizes, uint32_t seed) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return Tensor::from_vector(random_floats(static_cast<size_t>(n), seed), sizes);
}

// Runs fn(rank) on one thread per rank; rethrows the first failure.
void on_ranks(int size, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(size);
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

TEST(InProcessCommunicator, AllReduceMatchesReferenceForEveryReduction) {
  const int size = 4;
  auto comms = make_in_process_group(size);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<Tensor> inputs, results(size);
    for (int r = 0; r < size; ++r) inputs.push_back(random_tensor({37, 3}, 100 + r));
    on_ranks(size, [&](int r) {
      results[r] = inputs[r].clone();
      comms[r]->all_reduce(results[r], op, "t");
    });
    for (int64_t i = 0; i < 111; ++i) {
      float expected = inputs[0].data<float>()[i];
      for (int r = 1; r < size; ++r) {
        float v = inputs[r].data<float>()[i];
        if (op == ReduceOp::kSum || op == ReduceOp::kAvg) expected += v;
        if (op == ReduceOp::kMax) expected = std::max(expected, v);
        if (op == ReduceOp::kMin) expected = std::min(expected, v);
      }
      if (op == ReduceOp::kAvg) expected /= size;
      for (int r = 0; r < size; ++r) {
        ASSERT_FLOAT_EQ(results[r].data<float>()[i], expected) << reduce_op_name(op) << " rank " << r << " at " << i;
      }
    }
  }
}

TEST(InProcessCommunicator, BroadcastAllGatherReduceScatter) {
  const int size = 3;
  auto comms = make_in_process_group(size);
  std::vector<Tensor> inputs;
  for (int r = 0; r < size; ++r) inputs.push_back(random_tensor({6, 2}, 7 + r));
  std::vector<Tensor> broadcast(size), gathered(size), scattered(size);
  on_ranks(size, [&](int r) {
    broadcast[r] = inputs[r].clone();
    comms[r]->broadcast(broadcast[r], 2, "b");
    gathered[r] = comms[r]->all_gather(inputs[r], "g");
    scattered[r] = comms[r]->reduce_scatter(inputs[r], ReduceOp::kSum, "s");
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_TRUE(broadcast[r].bitwise_equal(inputs[2]));
    ASSERT_EQ(gathered[r].sizes(), (std::vector<int64_t>{18, 2}));
    for (int s = 0; s < size; ++s) {
      EXPECT_EQ(0, std::memcmp(gathered[r].data<float>() + s * 12, inputs[s].data<float>(), 12 * sizeof(float)));
    }
    ASSERT_EQ(scattered[r].sizes(), (std::vector<int64_t>{2, 2}));
    for (int64_t i = 0; i < 4; ++i) {
      float expected = 0;
      for (int s = 0; s < size; ++s) expected += inputs[s].data<float>()[r * 4 + i];
      EXPECT_FLOAT_EQ(scattered[r].data<float>()[i], expected);
    }
  }
}

TEST(InProcessCommunicator, SendRecvBarrierAndSubgroups) {
  const int size = 4;
  auto comms = make_in_process_group(size);
  Tensor message = random_tensor({5}, 3);
  Tensor received(DType::kFloat32, {5});
  std::vector<Tensor> pair_sums(size);
  on_ranks(size, [&](int r) {
    if (r == 1) comms[r]->send(message, 3, "m");
    if (r == 3) comms[r]->recv(received, 1, "m");
    comms[r]->barrier("after");
    // Even and odd ranks reduce separately.
    auto group = comms[r]->subgroup(r % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3});
    EXPECT_EQ(group->size(), 2);
    EXPECT_EQ(group->rank(), r / 2);
    pair_sums[r] = Tensor::from_vector<float>({static_cast<float>(r)}, {1});
    group->all_reduce(pair_sums[r], ReduceOp::kSum, "pairs");
  });
  EXPECT_TRUE(received.bitwise_equal(message));
  EXPECT_EQ(pair_sums[0].data<float>()[0], 2.0f);
  EXPECT_EQ(pair_sums[2].data<float>()[0], 2.0f);
  EXPECT_EQ(pair_sums[1].data<float>()[0], 4.0f);
  EXPECT_EQ(pair_sums[3].data<float>()[0], 4.0f);
}

TEST(InProcessCommunicator, MismatchedCallsFailOnEveryRank) {
  const int size = 2;
  auto comms = make_in_process_group(size);
  std::vector<std::string> errors(size);
  on_ranks(size, [&](int r) {
    Tensor t = random_tensor({r == 0 ? 4 : 5}, r);  // different shapes under one tag
    try {
      comms[r]->all_reduce(t, ReduceOp::kSum, "grad");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCommunication);
      errors[r] = e.what();
    }
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_NE(errors[r].find("'grad'"), std::string::npos) << errors[r];
  }
}

TEST(InProcessCommunicator, AbortWakesABlockedRank) {
  auto comms = make_in_process_group(2);
  std::string error;
  std::thread waiter([&] {
    Tensor t = random_tensor({3}, 1);
    try {
      comms[0]->all_reduce(t, ReduceOp::kSum, "never");
    } catch (const Error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  comms[1]->abort("rank 1 failed");
  waiter.join();
  EXPECT_NE(error.find("rank 1 failed"), std::string::npos) << error;
  Tensor t = random_tensor({3}, 1);
  EXPECT_THROW(comms[1]->all_reduce(t, ReduceOp::kSum, "later"), Error);
}

TEST(InProcessCommunicator, AMissingPeerTimesOutNamingIt) {
  InProcessGroupOptions options;
  options.timeout = std::chrono::milliseconds(50);
  auto comms = make_in_process_group(3, options);
  Tensor t = random_tensor({3}, 1);
  try {
    comms[0]->all_reduce(t, ReduceOp::kSum, "lonely");
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCommunication);
    EXPECT_NE(std::string(e.what()).find("participants 1, 2"), std::string::npos) << e.what();
  }
}

// Every collective writes an output the caller allocated and leaves its
// input alone; an output of the wrong type is refused naming the tag and
// the expected type.
TEST(InProcessCommunicator, CollectivesWriteTheCallersOutputs) {
  const int size = 3;
  auto comms = make_in_process_group(size);
  std::vector<Tensor> inputs, originals;
  for (int r = 0; r < size; ++r) {
    inputs.push_back(random_tensor({6, 2}, 10 + static_cast<uint32_t>(r)));
    originals.push_back(inputs.back().clone());
  }
  std::vector<Tensor> sums(size), firsts(size), gathered(size), scattered(size);
  on_ranks(size, [&](int r) {
    Communicator& c = *comms[static_cast<size_t>(r)];
    sums[r] = Tensor(DType::kFloat32, {6, 2});
    firsts[r] = Tensor(DType::kFloat32, {6, 2});
    gathered[r] = Tensor(DType::kFloat32, {18, 2});
    scattered[r] = Tensor(DType::kFloat32, {2, 2});
    c.all_reduce(inputs[r], sums[r], ReduceOp::kSum, {.tag = "sum"});
    c.broadcast(inputs[r], firsts[r], 0, {.tag = "first"});
    c.all_gather(inputs[r], gathered[r], {.tag = "gather"});
    c.reduce_scatter(inputs[r], scattered[r], ReduceOp::kMax, {.tag = "scatter"});
  });
  for (int r = 0; r < size; ++r) {
    for (int64_t i = 0; i < 12; ++i) {
      ASSERT_EQ(inputs[r].data<float>()[i], originals[r].data<float>()[i]) << "rank " << r << " input changed";
      float sum = 0, most = -1e30f;
      for (int q = 0; q < size; ++q) sum += originals[q].data<float>()[i];
      EXPECT_NEAR(sums[r].data<float>()[i], sum, 1e-5f);
      EXPECT_EQ(firsts[r].data<float>()[i], originals[0].data<float>()[i]);
      for (int q = 0; q < size; ++q) EXPECT_EQ(gathered[r].data<float>()[q * 12 + i], originals[q].data<float>()[i]);
      if (i / 4 == r) {
        for (int q = 0; q < size; ++q) most = std::max(most, originals[q].data<float>()[i]);
        EXPECT_EQ(scattered[r].data<float>()[i - 4 * r], most);
      }
    }
  }
  Tensor wrong(DType::kFloat32, {5, 2});
  try {
    comms[0]->all_gather(inputs[0], wrong, {.tag = "gather again"});
    FAIL() << "a wrong output shape was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShape);
    EXPECT_NE(std::string(e.what()).find("all_gather with tag 'gather again': the output is f32[5,2], expected f32[18,2]"),
              std::string::npos) << e.what();
  }
}

// A call's own timeout wins over the group's: 50 ms in a group that would
// wait two minutes.
TEST(InProcessCommunicator, EachCallHasItsOwnTimeout) {
  auto comms = make_in_process_group(2);  // default: two minutes
  Tensor t = random_tensor({3}, 1);
  auto start = std::chrono::steady_clock::now();
  try {
    comms[0]->all_reduce(t, t, ReduceOp::kSum, {.tag = "impatient", .timeout = std::chrono::milliseconds(50)});
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCommunication);
    EXPECT_NE(std::string(e.what()).find("timed out after 50 ms"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(InProcessCommunicator, BadArgumentsAreRejected) {
  auto comms = make_in_process_group(2);
  Tensor t = random_tensor({3}, 1);
  EXPECT_THROW(comms[0]->broadcast(t, 5, "x"), Error);
  EXPECT_THROW(comms[0]->send(t, -1, "x"), Error);
  EXPECT_THROW(comms[0]->subgroup({1}), Error);
  EXPECT_THROW(comms[0]->subgroup({0, 0}), Error);
  EXPECT_THROW(comms[0]->reduce_scatter(t, ReduceOp::kSum, "x"), Error);  // 3 rows over 2 ranks
  EXPECT_THROW(make_in_process_group(0), Error);
  EXPECT_THROW(parse_reduce_op("mean"), Error);
}

}  // namespace
}  // namespace weir
