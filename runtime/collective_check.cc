#include "runtime/collective_check.h"

#include <algorithm>
#include <cstring>

#include "core/collective_group.h"
#include "core/error.h"

namespace weir {
namespace {

std::string attribute_text(const Attribute& attribute) {
  switch (attribute.type()) {
    case AttrType::kInt: return std::to_string(attribute.i());
    case AttrType::kFloat: return std::to_string(attribute.f());
    case AttrType::kString: return attribute.s();
    case AttrType::kInts: {
      std::string text = "[";
      for (size_t i = 0; i < attribute.ints().size(); ++i) text += (i ? "," : "") + std::to_string(attribute.ints()[i]);
      return text + "]";
    }
    default: return "<" + std::to_string(static_cast<int>(attribute.type())) + ">";
  }
}

// FNV-1a: the same on every rank and every build, unlike std::hash.
uint64_t fingerprint(const std::string& text, uint64_t hash = 0xcbf29ce484222325ULL) {
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

// Every rank's value of `mine`, by rank.
std::vector<int64_t> gather(Communicator& communicator, int64_t mine, const std::string& tag) {
  Tensor all = communicator.all_gather(Tensor::from_vector<int64_t>({mine}, {1}), tag);
  const int64_t* data = all.data<int64_t>();
  return std::vector<int64_t>(data, data + all.num_elements());
}

}  // namespace

std::vector<std::string> collective_signature(const Plan& plan) {
  std::vector<std::string> lines;
  const Schedule& schedule = plan.schedule();
  for (const ScheduleStep& step : schedule.steps) {
    if (!step.collective) continue;
    const Node& node = *step.node;
    // Point to point differs between ranks by design (a pipeline's stages
    // send and receive): a Send meets its Recv by peer and tag at run time,
    // and an unmatched one times out naming its tag.
    if (node.op_type() == "Send" || node.op_type() == "Recv") continue;
    std::string line = node.op_type();
    if (node.has_attr("tag")) line += " tag '" + attribute_text(node.attr("tag")) + "'";
    for (const auto& [name, attribute] : node.attributes()) {
      if (name != "tag") line += " " + name + "=" + attribute_text(attribute);
    }
    for (const Value* input : node.inputs()) line += " " + (input != nullptr ? input->type().to_string() : "-");
    line += " on " + schedule.streams[static_cast<size_t>(step.stream)].name;
    lines.push_back(std::move(line));
  }
  return lines;
}

void check_collectives_match(const std::vector<std::string>& signature, Communicator& communicator) {
  const std::string tag = "weir/session_start/collectives";
  uint64_t whole = fingerprint(std::to_string(signature.size()));
  for (const std::string& line : signature) whole = fingerprint(line, whole);
  std::vector<int64_t> wholes = gather(communicator, static_cast<int64_t>(whole), tag + "/fingerprint");
  if (std::all_of(wholes.begin(), wholes.end(), [&](int64_t w) { return w == wholes[0]; })) return;

  // They differ: find the first collective that does, between rank 0 and the
  // first rank unlike it, and exchange the two descriptions.
  std::vector<int64_t> counts = gather(communicator, static_cast<int64_t>(signature.size()), tag + "/count");
  const int64_t longest = *std::max_element(counts.begin(), counts.end());
  std::vector<int64_t> mine(static_cast<size_t>(longest), 0);
  for (size_t i = 0; i < signature.size(); ++i) mine[i] = static_cast<int64_t>(fingerprint(signature[i]));
  const int size = communicator.size();
  Tensor all = communicator.all_gather(Tensor::from_vector(mine, {longest}), tag + "/lines");
  const int64_t* lines = all.data<int64_t>();
  int other = 1;
  while (other < size && wholes[static_cast<size_t>(other)] == wholes[0]) ++other;
  int64_t first = 0;
  auto at = [&](int rank, int64_t i) { return lines[static_cast<int64_t>(rank) * longest + i]; };
  while (first < longest && at(0, first) == at(other, first)) ++first;

  // Each rank contributes its own description of collective #first (empty
  // when it has fewer), cut to a fixed width so every rank sends as much.
  constexpr int64_t kWidth = 480;
  std::string text = first < static_cast<int64_t>(signature.size()) ? signature[static_cast<size_t>(first)] : "";
  if (static_cast<int64_t>(text.size()) > kWidth) text = text.substr(0, kWidth - 3) + "...";
  Tensor buffer(DType::kUInt8, {kWidth});
  std::memcpy(buffer.raw_data(), text.data(), text.size());
  Tensor texts = communicator.all_gather(buffer, tag + "/text");
  auto text_of = [&](int rank) {
    const char* data = static_cast<const char*>(texts.raw_data()) + static_cast<int64_t>(rank) * kWidth;
    std::string described(data, strnlen(data, static_cast<size_t>(kWidth)));
    const int64_t count = counts[static_cast<size_t>(rank)];
    return described.empty() ? "nothing (it runs " + std::to_string(count) + " collective" + (count == 1 ? "" : "s") + ")"
                             : described;
  };
  throw Error(ErrorKind::kCommunication,
              "rank 0 and rank " + std::to_string(other) + " run different collectives: collective #" +
                  std::to_string(first + 1) + " is " + text_of(0) + " on rank 0 but " + text_of(other) + " on rank " +
                  std::to_string(other) + "; every rank must run the same program (the same model, batch and strategy)")
      .with_rank(communicator.rank());
}

void check_collective_ranks(const Plan& plan, int world_size, int rank) {
  for (const ScheduleStep& step : plan.schedule().steps) {
    if (!step.collective) continue;
    const Node& node = *step.node;
    auto refuse = [&](const std::string& why) {
      return Error(ErrorKind::kInvalidGraph, node.op_type() + " '" + node.name() + "': " + why).with_node(node.name());
    };
    const std::vector<int64_t> group = collective_group(node, rank, world_size);  // throws naming the node
    const int64_t position = std::find(group.begin(), group.end(), rank) - group.begin();  // this rank's rank in it
    const std::string world = "a world of " + std::to_string(world_size);
    if (node.has_attr("peer")) {
      int64_t peer = node.attr("peer").i();
      const bool whole_world = !node.has_attr("group") || node.attr("group").ints().empty();
      if (peer < 0 || peer >= static_cast<int64_t>(group.size())) {
        throw refuse("peer " + std::to_string(peer) + " is not a rank of " +
                     (whole_world ? world : "its group " + attribute_text(node.attr("group"))));
      }
      if (peer == position) throw refuse("peer " + std::to_string(peer) + " is the rank itself");
    }
  }
}

}  // namespace weir
