// The TCP rendezvous store: set/get/add/wait between clients of one server;
// get waiting for a key set later; every failure a kCommunication error
// naming the address in bounded time (nothing listening, a port in use, a
// server that never answers, a key never set); and a Gloo group of real
// processes meeting through it instead of a shared directory.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "core/error.h"
#include "distributed/gloo/gloo_communicator.h"
#include "distributed/tcp_store.h"
#include "tests/distributed/process_group.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCommunication) << e.what();
    return e.what();
  }
  return "(no error)";
}

TEST(TcpStore, ClientsShareKeysCountersAndWaits) {
  TcpStoreServer server(0);
  TcpStore a("127.0.0.1", server.port(), 10s), b("localhost", server.port(), 10s);
  a.set("job/rank0", "10.0.0.1:41000");
  EXPECT_EQ(b.get("job/rank0"), "10.0.0.1:41000");
  EXPECT_TRUE(b.check("job/rank0"));
  EXPECT_FALSE(b.check("job/rank1"));
  EXPECT_EQ(a.add("job/arrived", 2), 2);
  EXPECT_EQ(b.add("job/arrived", 3), 5);
  std::string binary("\0\1\2 bytes", 9);
  a.set("blob", binary);
  EXPECT_EQ(b.get("blob"), binary);
  // get() waits for a key another client sets later.
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    a.set("late", "here");
  });
  EXPECT_EQ(b.get("late"), "here");
  later.join();
  // A key nobody sets: the wait ends at its timeout, naming the key and the address.
  auto start = std::chrono::steady_clock::now();
  std::string message = error_of([&] { b.wait({"late", "never"}, 200ms); });
  EXPECT_NE(message.find("has no 'never' after 200 ms"), std::string::npos) << message;
  EXPECT_NE(message.find("localhost:" + std::to_string(server.port())), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(TcpStore, FailuresNameTheAddressInBoundedTime) {
  const int port = testing::unused_port();
  auto start = std::chrono::steady_clock::now();
  std::string unreachable = error_of([&] { TcpStore store("127.0.0.1", port, 500ms); });
  EXPECT_NE(unreachable.find("cannot reach the rendezvous store at 127.0.0.1:" + std::to_string(port) + " within 500 ms"),
            std::string::npos)
      << unreachable;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);

  TcpStoreServer taken(0);
  std::string in_use = error_of([&] { TcpStoreServer again(taken.port()); });
  EXPECT_NE(in_use.find("cannot listen on port " + std::to_string(taken.port())), std::string::npos) << in_use;

  // A server that accepts connections (the kernel's backlog) but never answers.
  int mute = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(mute, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(mute, 4), 0);
  socklen_t length = sizeof(address);
  ::getsockname(mute, reinterpret_cast<sockaddr*>(&address), &length);
  TcpStore silent("127.0.0.1", ntohs(address.sin_port), 300ms);
  start = std::chrono::steady_clock::now();
  std::string stopped = error_of([&] { silent.set("k", "v"); });
  EXPECT_NE(stopped.find("stopped answering (key 'k')"), std::string::npos) << stopped;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ::close(mute);
}

TEST(TcpStore, AGlooGroupMeetsThroughIt) {
  const int port = testing::unused_port();
  std::vector<std::string> results = testing::run_processes(3, 60s, [&](int rank) {
    GlooGroupOptions options;
    options.master_port = port;
    options.timeout = 20s;
    std::shared_ptr<Communicator> comm = make_gloo_communicator(rank, 3, options);
    Tensor t = Tensor::from_vector<float>({1.0f + rank, 10.0f}, {2});
    comm->all_reduce(t, ReduceOp::kSum, "sum");
    if (t.data<float>()[0] != 6.0f || t.data<float>()[1] != 30.0f) throw std::runtime_error("wrong sum");
    comm->barrier("done");  // rank 0's server stays up until everyone is through
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[static_cast<size_t>(r)], "") << "rank " << r;
}

}  // namespace
}  // namespace weir
