#include "distributed/collective_cost.h"

#include "core/error.h"

namespace weir {

CollectiveCost collective_cost(const std::string& op_type, int64_t group_size, int64_t input_bytes, const LinkModel& link) {
  if (group_size < 1) {
    throw Error(ErrorKind::kInvalidArgument, op_type + ": a group has at least 1 rank, got " + std::to_string(group_size));
  }
  if (!(link.bytes_per_second > 0) || !(link.latency_seconds >= 0)) {
    throw Error(ErrorKind::kInvalidArgument, "collective cost: the link needs a positive bandwidth and a latency >= 0");
  }
  CollectiveCost cost;
  if (group_size == 1) return cost;
  const int64_t p = group_size;
  const double n = static_cast<double>(input_bytes);
  double sent = 0;
  if (op_type == "AllReduce") {
    cost.messages = 2 * (p - 1);
    sent = 2.0 * static_cast<double>(p - 1) / static_cast<double>(p) * n;
  } else if (op_type == "ReduceScatter") {
    cost.messages = p - 1;
    sent = static_cast<double>(p - 1) / static_cast<double>(p) * n;
  } else if (op_type == "AllGather") {
    cost.messages = p - 1;
    sent = static_cast<double>(p - 1) * n;
  } else if (op_type == "Broadcast") {
    cost.messages = p - 1;
    sent = n;
  } else {
    throw Error(ErrorKind::kUnsupported, "collective cost: no model of " + op_type +
                                             " (AllReduce, ReduceScatter, AllGather and Broadcast have one)");
  }
  cost.sent_bytes = static_cast<int64_t>(sent);
  cost.seconds = static_cast<double>(cost.messages) * link.latency_seconds + sent / link.bytes_per_second;
  return cost;
}

}  // namespace weir
