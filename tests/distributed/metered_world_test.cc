// The metered world (distributed/metered_world.h) on an in-process world of
// 3 ranks: each rank's meter counts what a ring sends for every collective
// (subgroups included) and nothing for a skipped one; a simulated link
// makes a call take at least its α-β time; the link text is parsed or
// refused naming what is expected.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"
#include "distributed/metered_world.h"
#include "runtime/in_process_ranks.h"
#include "runtime/in_process_world.h"

namespace weir {
namespace {

TEST(MeteredWorld, CountsWhatEachRankSends) {
  constexpr int kRanks = 3;
  std::vector<std::shared_ptr<CommunicationMeter>> meters;
  for (int r = 0; r < kRanks; ++r) meters.push_back(std::make_shared<CommunicationMeter>());
  InProcessWorldOptions options;
  options.wrap = [&](std::shared_ptr<World> world) {
    return metered_world(world, meters[static_cast<size_t>(world->rank())]);
  };
  std::vector<std::shared_ptr<World>> worlds = make_in_process_world(kRanks, options);
  constexpr int64_t kFloats = 3000;  // 12000 bytes
  run_on_ranks(kRanks, [&](int rank) {
    World& world = *worlds[static_cast<size_t>(rank)];
    Tensor t(DType::kFloat32, {kFloats});
    for (int64_t i = 0; i < kFloats; ++i) t.data<float>()[i] = static_cast<float>(rank + i);
    world.communicator()->all_reduce(t, ReduceOp::kSum, "a");
    EXPECT_EQ(t.data<float>()[1], 3.0f + 3.0f);  // the real call still runs: (0+1)+(1+1)+(2+1)
    Tensor gathered = world.communicator()->all_gather(t, "g");
    EXPECT_EQ(gathered.sizes()[0], kRanks * kFloats);
    world.communicator()->barrier("b");
    if (rank < 2) {
      std::shared_ptr<Communicator> pair = world.group({0, 1});
      Tensor small(DType::kFloat32, {10});
      if (rank == 0) pair->send(small, 1, "p");
      if (rank == 1) pair->recv(small, 0, "p");
    }
  });
  const int64_t n = kFloats * 4;
  const int64_t ring = 2 * (kRanks - 1) * n / kRanks + (kRanks - 1) * n;  // allreduce, allgather
  EXPECT_EQ(meters[0]->sent_bytes(), ring + 40);  // and the 10 floats rank 0 sent
  EXPECT_EQ(meters[1]->sent_bytes(), ring);       // a recv sends nothing
  EXPECT_EQ(meters[2]->sent_bytes(), ring);
  EXPECT_EQ(meters[0]->calls(), 4);
  EXPECT_EQ(meters[2]->calls(), 3);
  // 2(p-1) + (p-1) + 2(p-1) messages (the barrier's), and the send's.
  EXPECT_EQ(meters[0]->messages(), 4 + 2 + 4 + 1);
  EXPECT_EQ(meters[0]->simulated_seconds(), 0.0);
}

TEST(MeteredWorld, SimulatedLinkTakesAtLeastTheAlphaBetaTime) {
  constexpr int kRanks = 2;
  std::vector<std::shared_ptr<CommunicationMeter>> meters = {std::make_shared<CommunicationMeter>(),
                                                             std::make_shared<CommunicationMeter>()};
  const SimulatedLink link{.gigabits_per_second = 1, .latency_us = 2000};
  InProcessWorldOptions options;
  options.wrap = [&](std::shared_ptr<World> world) {
    return metered_world(world, meters[static_cast<size_t>(world->rank())], link);
  };
  std::vector<std::shared_ptr<World>> worlds = make_in_process_world(kRanks, options);
  constexpr int64_t kBytes = 2500000;  // 20 ms at 1 Gbit/s
  std::vector<double> seconds(kRanks);
  run_on_ranks(kRanks, [&](int rank) {
    Tensor t(DType::kUInt8, {kBytes});
    const auto start = std::chrono::steady_clock::now();
    worlds[static_cast<size_t>(rank)]->communicator()->all_reduce(t, ReduceOp::kSum, "slow");
    seconds[static_cast<size_t>(rank)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  // 2 messages of 2 ms, 2.5 MB over 125 MB/s: 24 ms.
  const double expected = 2 * 2e-3 + 2500000.0 / 125e6;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NEAR(meters[static_cast<size_t>(r)]->simulated_seconds(), expected, 1e-6);
    EXPECT_GE(seconds[static_cast<size_t>(r)], expected * 0.99) << "rank " << r;
  }
}

TEST(MeteredWorld, LinkTextIsParsedOrRefused) {
  const SimulatedLink one = parse_simulated_link("1");
  EXPECT_EQ(one.gigabits_per_second, 1.0);
  EXPECT_EQ(one.latency_us, 0.0);
  const SimulatedLink ten = parse_simulated_link("10,50");
  EXPECT_EQ(ten.gigabits_per_second, 10.0);
  EXPECT_EQ(ten.latency_us, 50.0);
  EXPECT_EQ(describe(ten), "10 Gbit/s, 50 us per message");
  for (const char* bad : {"", "0", "-1", "fast", "1,", "1,-5", "1,2,3", "nan", "inf"}) {
    try {
      parse_simulated_link(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("GBPS[,LATENCY_US]"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace weir
