#include "tools/graph-runner/launch_rendezvous.h"

#include <thread>

#include "distributed/liveness_beacon.h"

#include "core/error.h"

namespace weir::tools {

namespace {

using Clock = std::chrono::steady_clock;

// How long node 0's launch keeps serving the store for the others to say
// they saw every node done (they say it within one poll of the last one).
constexpr std::chrono::seconds kFinishedLimit{30};
constexpr std::chrono::milliseconds kPoll{200};
constexpr std::chrono::seconds kProbeLimit{2};

std::string node_key(const std::string& what, int node) { return "launch/" + what + "/" + std::to_string(node); }

}  // namespace

LaunchRendezvous::LaunchRendezvous(int nnodes, int node_rank, const std::string& master_addr, int master_port,
                                   const std::string& host, std::chrono::milliseconds timeout)
    : nnodes_(nnodes), node_rank_(node_rank), beacon_(host) {
  if (node_rank == 0) server_ = std::make_unique<TcpStoreServer>(master_port + 1);
  store_ = std::make_unique<TcpStore>(master_addr, master_port + 1, timeout);
  beacons_ = all_gather("beacon", beacon_.address());
}

LaunchRendezvous::~LaunchRendezvous() = default;

std::vector<std::string> LaunchRendezvous::all_gather(const std::string& key, const std::string& mine) {
  store_->set(node_key(key, node_rank_), mine);
  const auto deadline = Clock::now() + store_->timeout();
  std::vector<bool> said(static_cast<size_t>(nnodes_), false);
  while (true) {
    std::string missing;
    for (int n = 0; n < nnodes_; ++n) {
      if (said[static_cast<size_t>(n)]) continue;
      said[static_cast<size_t>(n)] = store_->check(node_key(key, n));
      if (said[static_cast<size_t>(n)]) continue;
      check_alive(n);
      missing += (missing.empty() ? "" : ", ") + std::to_string(n);
    }
    if (missing.empty()) break;
    if (Clock::now() > deadline) {
      throw Error(ErrorKind::kCommunication,
                  "the launches of node(s) " + missing + " did not say their " + key + " within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(store_->timeout()).count()) +
                      " s (the launches meet at " + store_->address() +
                      ": is `launch --node-rank N` running on every host with the same --nnodes, --master-addr "
                      "and --master-port?)");
    }
    std::this_thread::sleep_for(kPoll);
  }
  std::vector<std::string> values;
  for (int n = 0; n < nnodes_; ++n) values.push_back(store_->get(node_key(key, n)));
  return values;
}

void LaunchRendezvous::check_alive(int node) {
  if (store_->check(node_key("failed", node))) {
    throw Error(ErrorKind::kCommunication, "the launch of node " + std::to_string(node) + " failed: " +
                                               store_->get(node_key("failed", node)));
  }
  if (static_cast<size_t>(node) >= beacons_.size()) return;  // not met yet
  const std::string& beacon = beacons_[static_cast<size_t>(node)];
  const std::string why = probe_liveness(beacon, kProbeLimit);
  if (!why.empty()) {
    throw Error(ErrorKind::kCommunication, "the launch of node " + std::to_string(node) + " is gone (" +
                                               beacon + ": " + why + ")");
  }
}

void LaunchRendezvous::finish(const std::function<bool()>& between_polls) {
  store_->set(node_key("done", node_rank_), "1");
  std::vector<bool> done(static_cast<size_t>(nnodes_), false);
  done[static_cast<size_t>(node_rank_)] = true;
  while (true) {
    bool all = true;
    for (int n = 0; n < nnodes_; ++n) {
      if (done[static_cast<size_t>(n)]) continue;
      if (store_->check(node_key("done", n))) {
        done[static_cast<size_t>(n)] = true;
        continue;
      }
      all = false;
      check_alive(n);
    }
    if (all) break;
    if (!between_polls()) return;
  }
  store_->add("launch/finished", 1);
  if (node_rank_ != 0) return;
  // Node 0 serves the store: the others still read it until they saw
  // every node done.
  const auto deadline = Clock::now() + kFinishedLimit;
  while (store_->add("launch/finished", 0) < nnodes_ && Clock::now() < deadline) std::this_thread::sleep_for(kPoll);
}

void LaunchRendezvous::fail(const std::string& why) noexcept {
  try {
    store_->set(node_key("failed", node_rank_), why);
  } catch (...) {
    // The store is gone (node 0's launch ended): the others learn it from
    // their servers and beacons instead.
  }
}

}  // namespace weir::tools
