// How the launches of a parameter-server job on several hosts meet
// (`launch --nnodes N --servers S`). Node 0's launch serves a TcpStore on
// --master-port + 1 of --master-addr: the workers' rendezvous store on
// --master-port is rank 0's and lives only as long as rank 0, while the
// launches need theirs from before the first worker starts until after the
// last one ends. Through it they
//   - exchange their servers' endpoints, so that every worker gets the
//     whole job's servers in node order, and
//   - wait for each other at the end, so that no host stops its servers
//     while another host's workers still use them.
// Each launch also has a LivenessBeacon on its --server-host, so that a
// launch waiting for another host learns when that host's launch is gone
// (killed, machine down) instead of waiting for it forever.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/liveness_beacon.h"
#include "distributed/tcp_store.h"

namespace weir::tools {

class LaunchRendezvous {
 public:
  // Meets the other nodes' launches: serves the store on node 0, connects
  // to it, publishes this launch's beacon and reads every node's, waiting
  // `timeout` at most (hosts start their launches at different times).
  // Throws weir::Error(kCommunication) naming the store's address or the
  // nodes that did not come.
  LaunchRendezvous(int nnodes, int node_rank, const std::string& master_addr, int master_port,
                   const std::string& host, std::chrono::milliseconds timeout);
  ~LaunchRendezvous();
  LaunchRendezvous(const LaunchRendezvous&) = delete;
  LaunchRendezvous& operator=(const LaunchRendezvous&) = delete;

  // Every node's value of `key`, in node order (this node's is `mine`),
  // waiting the constructor's `timeout` at most. Throws naming the nodes
  // that did not say it, or a node whose launch failed or is gone.
  std::vector<std::string> all_gather(const std::string& key, const std::string& mine);

  // Says this node's workers are done and returns once every node's are.
  // Between looks at the store it calls `between_polls`, which waits a
  // moment (launch reads its children's output for 200 ms) and returns
  // false to stop waiting (a signal to launch, a server of this host that
  // ended). Throws naming a node whose launch said it failed or whose
  // beacon no longer answers, or the store when it is gone.
  void finish(const std::function<bool()>& between_polls);

  // Tells the other nodes' launches that this one failed, and why; best
  // effort (the store may be gone already).
  void fail(const std::string& why) noexcept;

 private:
  // Throws when `node`'s launch said it failed, or its beacon (once known)
  // does not answer.
  void check_alive(int node);

  int nnodes_;
  int node_rank_;
  std::unique_ptr<TcpStoreServer> server_;  // node 0's
  std::unique_ptr<TcpStore> store_;
  LivenessBeacon beacon_;
  std::vector<std::string> beacons_;  // every node's, in node order
};

}  // namespace weir::tools
