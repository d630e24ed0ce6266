// The Gloo communicator between real processes on 127.0.0.1 (a fresh
// FileStore directory per test, a time limit, no process left behind):
// every collective for every reduction and dtype on worlds of 1 to 4
// against a reference the ranks compute; send/recv around a ring;
// subgroups; a rank that never arrives and a peer that dies are
// kCommunication errors within their timeouts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/stream.h"
#include "distributed/gloo/gloo_communicator.h"
#include "ops/comm/rank_order_reduction.h"
#include "tests/distributed/process_group.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

// Rank r's values: small integers (exact in every dtype's sums), different per rank.
std::vector<double> values_of(int rank, int64_t count, DType dtype) {
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int v = static_cast<int>((i * 7 + rank * 13) % 17) - 8;
    values[static_cast<size_t>(i)] = dtype == DType::kUInt8 ? std::abs(v) : v;
  }
  return values;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& expected, double tolerance,
                  const std::string& what) {
  if (got.size() != expected.size()) throw std::runtime_error(what + ": size " + std::to_string(got.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - expected[i]) > tolerance * std::max(1.0, std::abs(expected[i]))) {
      throw std::runtime_error(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                               ", expected " + std::to_string(expected[i]));
    }
  }
}

// Every collective on rank `rank` of `size`, checked against the reference.
void check_collectives(int rank, int size, const std::filesystem::path& store, GlooAllreduce algorithm) {
  std::shared_ptr<Communicator> comm = make_gloo_communicator(
      rank, size, {.store_directory = store.string(), .timeout = 20s, .allreduce = algorithm});
  // One element per rank (Gloo's segments are then single elements),
  // twelve (both divide by the size for reduce_scatter), and a count that
  // splits unevenly over the ranks.
  for (int64_t count : {int64_t{size}, int64_t{12} * size, int64_t{5} * size + 3}) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kBFloat16}) {
    const std::string name(dtype_name(dtype));
    const double tolerance = dtype == DType::kFloat16 || dtype == DType::kBFloat16 ? 1e-2 : 1e-6;
    Tensor input = testing::make_tensor(dtype, values_of(rank, count, dtype), {count});
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
      std::vector<double> expected(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        double sum = 0, most = -1e9, least = 1e9;
        for (int r = 0; r < size; ++r) {
          double v = values_of(r, count, dtype)[static_cast<size_t>(i)];
          sum += v;
          most = std::max(most, v);
          least = std::min(least, v);
        }
        double avg = is_integer(dtype) ? std::trunc(sum / size) : sum / size;
        expected[static_cast<size_t>(i)] = op == ReduceOp::kSum ? sum : op == ReduceOp::kAvg ? avg : op == ReduceOp::kMax ? most : least;
      }
      Tensor output(dtype, {count});
      comm->all_reduce(input, output, op, {.tag = "reduce"});
      expect_close(testing::to_doubles(output), expected, tolerance,
                   "all_reduce " + std::string(reduce_op_name(op)) + " " + name);
      Tensor in_place = input.clone();
      comm->all_reduce(in_place, in_place, op, {.tag = "in place"});
      expect_close(testing::to_doubles(in_place), expected, tolerance, "in-place all_reduce " + name);
      if (op == ReduceOp::kSum && count % size == 0) {
        Tensor part(dtype, {count / size});
        comm->reduce_scatter(input, part, op, {.tag = "scatter"});
        std::vector<double> mine(expected.begin() + rank * (count / size), expected.begin() + (rank + 1) * (count / size));
        expect_close(testing::to_doubles(part), mine, tolerance, "reduce_scatter " + name);
      }
    }
    Tensor root_copy(dtype, {count});
    comm->broadcast(input, root_copy, size - 1, {.tag = "broadcast"});
    expect_close(testing::to_doubles(root_copy), values_of(size - 1, count, dtype), 0, "broadcast " + name);
    Tensor gathered(dtype, {count * size});
    comm->all_gather(input, gathered, {.tag = "gather"});
    std::vector<double> all;
    for (int r = 0; r < size; ++r) {
      std::vector<double> v = values_of(r, count, dtype);
      all.insert(all.end(), v.begin(), v.end());
    }
    expect_close(testing::to_doubles(gathered), all, 0, "all_gather " + name);
  }
  }
  comm->barrier("done");
}

TEST(GlooCommunicator, EveryCollectiveOnWorldsOfOneToFour) {
  for (GlooAllreduce algorithm : {GlooAllreduce::kRankOrder, GlooAllreduce::kRing, GlooAllreduce::kBcube}) {
    for (int size = 1; size <= 4; ++size) {
      std::filesystem::path store = testing::fresh_store_directory("gloo_collectives");
      std::vector<std::string> results =
          testing::run_processes(size, 60s, [&](int rank) { check_collectives(rank, size, store, algorithm); });
      for (int r = 0; r < size; ++r) {
        EXPECT_EQ(results[static_cast<size_t>(r)], "")
            << "rank " << r << " of " << size << ", algorithm " << static_cast<int>(algorithm);
      }
      std::filesystem::remove_all(store);
    }
  }
}

// Random floats: the rank-order allreduce and reduce-scatter give bitwise
// the rank-order reduction of every rank's input (what the in-process
// world computes), for f32 and bf16, on 3 ranks (where a ring's order of
// addition would differ).
TEST(GlooCommunicator, RankOrderReductionsAreBitwiseTheInProcessWorlds) {
  std::filesystem::path store = testing::fresh_store_directory("gloo_bitwise");
  const int size = 3;
  std::vector<std::string> results = testing::run_processes(size, 60s, [&](int rank) {
    std::shared_ptr<Communicator> comm = make_gloo_communicator(rank, size, {.store_directory = store.string(), .timeout = 20s});
    for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
      const int64_t count = 3 * 1001;
      std::vector<Tensor> inputs;
      std::vector<const void*> by_rank;
      for (int r = 0; r < size; ++r) {
        inputs.push_back(testing::random_tensor(dtype, {count}, 100 + static_cast<uint32_t>(r)));
        by_rank.push_back(inputs.back().raw_data());
      }
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
        Tensor expected(dtype, {count});
        reduce_in_rank_order(op, dtype, by_rank, expected.raw_data(), static_cast<size_t>(count));
        Tensor got(dtype, {count});
        comm->all_reduce(inputs[static_cast<size_t>(rank)], got, op, {.tag = "bits"});
        if (std::memcmp(got.raw_data(), expected.raw_data(), expected.nbytes()) != 0) {
          throw std::runtime_error("all_reduce " + std::string(reduce_op_name(op)) + " " + std::string(dtype_name(dtype)) +
                                   " differs from the rank-order reduction");
        }
        Tensor part(dtype, {count / size});
        comm->reduce_scatter(inputs[static_cast<size_t>(rank)], part, op, {.tag = "bits"});
        if (std::memcmp(part.raw_data(), static_cast<const char*>(expected.raw_data()) + part.nbytes() * rank, part.nbytes()) != 0) {
          throw std::runtime_error("reduce_scatter " + std::string(dtype_name(dtype)) + " differs");
        }
      }
    }
  });
  for (int r = 0; r < size; ++r) EXPECT_EQ(results[static_cast<size_t>(r)], "") << "rank " << r;
  std::filesystem::remove_all(store);
}

TEST(GlooCommunicator, SendRecvAroundARingAndSubgroups) {
  const int size = 3;
  std::filesystem::path store = testing::fresh_store_directory("gloo_ring");
  std::vector<std::string> results = testing::run_processes(size, 60s, [&](int rank) {
    std::shared_ptr<Communicator> comm = make_gloo_communicator(rank, size, {.store_directory = store.string(), .timeout = 20s});
    Tensor mine = Tensor::from_vector<float>({static_cast<float>(rank), 10.0f + rank}, {2});
    Tensor from_left(DType::kFloat32, {2});
    // Even ranks send first, odd ranks receive first: no cycle of waits.
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    if (rank % 2 == 0) {
      comm->send(mine, right, "ring");
      comm->recv(from_left, left, "ring");
    } else {
      comm->recv(from_left, left, "ring");
      comm->send(mine, right, "ring");
    }
    if (from_left.data<float>()[0] != static_cast<float>(left) || from_left.data<float>()[1] != 10.0f + left) {
      throw std::runtime_error("received the wrong values from rank " + std::to_string(left));
    }
    // Ranks 0 and 2 form a group of two: its ranks are 0 and 1.
    if (rank != 1) {
      std::shared_ptr<Communicator> pair = comm->subgroup({0, 2});
      if (pair->size() != 2 || pair->rank() != (rank == 0 ? 0 : 1)) throw std::runtime_error("wrong subgroup rank");
      Tensor sum = mine.clone();
      pair->all_reduce(sum, sum, ReduceOp::kSum, {.tag = "pair"});
      if (sum.data<float>()[0] != 2.0f || sum.data<float>()[1] != 22.0f) {
        throw std::runtime_error("wrong subgroup sum " + std::to_string(sum.data<float>()[0]) + ", " +
                                 std::to_string(sum.data<float>()[1]));
      }
    }
    comm->barrier("done");
  });
  for (int r = 0; r < size; ++r) EXPECT_EQ(results[static_cast<size_t>(r)], "") << "rank " << r;
  std::filesystem::remove_all(store);
}

TEST(GlooCommunicator, ARankThatNeverArrivesFailsTheRendezvousNamingTheStore) {
  std::filesystem::path store = testing::fresh_store_directory("gloo_alone");
  auto start = std::chrono::steady_clock::now();
  try {
    make_gloo_communicator(0, 2, {.store_directory = store.string(), .timeout = 1s});
    FAIL() << "a group of two connected with one rank";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCommunication);
    EXPECT_NE(std::string(e.what()).find("could not connect its Gloo group through the store in " + store.string()),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  std::filesystem::remove_all(store);
}

// A host stream that only has a name: what a call's CommCall carries.
class NamedStream final : public Stream {
 public:
  explicit NamedStream(StreamId id) : id_(id) {}
  Device device() const override { return Device::cpu(); }
  StreamId id() const override { return id_; }
  std::shared_ptr<Event> launch(std::function<void()> work) override {
    work();
    return completed_event();
  }
  std::shared_ptr<Event> record() override { return completed_event(); }
  void wait(std::shared_ptr<Event>) override {}

 private:
  StreamId id_;
};

// Collectives on two communication streams run at once, each stream's in
// its own order, while the order between the streams differs between the
// ranks (rank 1 starts its second stream first): each stream has its own
// Gloo context, so they neither mix their tags nor wait for each other.
TEST(GlooCommunicator, CollectivesOnDifferentStreamsRunConcurrently) {
  std::filesystem::path store = testing::fresh_store_directory("gloo_streams");
  std::vector<std::string> results = testing::run_processes(2, 60s, [&](int rank) {
    std::shared_ptr<Communicator> comm = make_gloo_communicator(rank, 2, {.store_directory = store.string(), .timeout = 20s});
    NamedStream first({StreamKind::kCommunication, 0}), second({StreamKind::kCommunication, 1});
    std::string errors;
    std::mutex errors_mutex;
    auto run_stream = [&](Stream& stream, float base, int64_t count) {
      try {
        for (int i = 0; i < 40; ++i) {
          std::vector<float> values(static_cast<size_t>(count), base + static_cast<float>(rank + i));
          Tensor t = Tensor::from_vector(values, {count});
          Tensor out(DType::kFloat32, {count});
          comm->all_reduce(t, out, ReduceOp::kSum, {.tag = "s", .stream = &stream});
          const float expected = 2 * (base + static_cast<float>(i)) + 1;
          for (int64_t k = 0; k < count; ++k) {
            if (out.data<float>()[k] != expected) throw std::runtime_error("stream " + stream.id().to_string() + " call " +
                                                                           std::to_string(i) + ": wrong sum");
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(errors_mutex);
        errors += e.what();
      }
    };
    std::thread a, b;
    if (rank == 0) {
      a = std::thread(run_stream, std::ref(first), 0.0f, 1000);
      b = std::thread(run_stream, std::ref(second), 100.0f, 37);
    } else {
      b = std::thread(run_stream, std::ref(second), 100.0f, 37);
      std::this_thread::sleep_for(50ms);
      a = std::thread(run_stream, std::ref(first), 0.0f, 1000);
    }
    a.join();
    b.join();
    if (!errors.empty()) throw std::runtime_error(errors);
  });
  EXPECT_EQ(results[0], "");
  EXPECT_EQ(results[1], "");
  std::filesystem::remove_all(store);
}

TEST(GlooCommunicator, APeerThatDiesFailsTheCollectiveNamingIt) {
  std::filesystem::path store = testing::fresh_store_directory("gloo_dead");
  std::vector<std::string> results = testing::run_processes(2, 60s, [&](int rank) {
    std::shared_ptr<Communicator> comm = make_gloo_communicator(rank, 2, {.store_directory = store.string(), .timeout = 20s});
    comm->barrier("connected");  // every pair is up
    if (rank == 1) ::_exit(0);  // dies without a word
    Tensor t = Tensor::from_vector<float>({1, 2, 3}, {3});
    try {
      comm->all_reduce(t, t, ReduceOp::kSum, {.tag = "grads", .timeout = 5s});
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCommunication) throw;
      // Reported to the parent as rank 0's message.
      throw std::runtime_error(e.what());
    }
  });
  EXPECT_NE(results[0].find("all_reduce with tag 'grads' on rank 0"), std::string::npos) << results[0];
  EXPECT_NE(results[0].find("gone from the world: rank 1 (127.0.0.1:"), std::string::npos) << results[0];
  EXPECT_EQ(results[1], "");
  std::filesystem::remove_all(store);
}

}  // namespace
}  // namespace weir
