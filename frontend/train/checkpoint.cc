#include "frontend/train/checkpoint.h"

#include <cstring>
#include <map>

#include "core/error.h"
#include "core/shape.h"
#include "frontend/data/npy.h"

namespace weir {

namespace {

// Reserved member names; value names never start with "__".
constexpr const char* kStepKey = "__step__";
constexpr const char* kRngKey = "__rng_state__";

}  // namespace

Tensor gather_row_shard(const std::string& name, const std::vector<RowShard>& parts, const Tensor& own,
                        Communicator* comm, const std::function<Tensor(int rank)>& in_process) {
  const std::string tag = "row-shards/" + name;
  const int own_rank = comm != nullptr ? comm->rank() : 0;
  if (own_rank != 0) {
    comm->send(own, 0, tag);
    return {};
  }
  const int64_t rows = parts.empty() ? 0 : parts.front().rows;
  std::vector<int64_t> sizes = own.sizes();
  sizes.at(0) = rows;
  Tensor whole(own.dtype(), sizes);
  const size_t row_bytes = own.sizes()[0] > 0 ? own.nbytes() / static_cast<size_t>(own.sizes()[0]) : 0;
  for (int r = 0; r < static_cast<int>(parts.size()); ++r) {
    const RowShard& part = parts[static_cast<size_t>(r)];
    Tensor theirs;
    if (r == own_rank) {
      theirs = own;
    } else if (comm == nullptr) {
      theirs = in_process(r);
    } else {
      theirs = Tensor(own.dtype(), own.sizes());  // every rank's shard is padded to one height
      comm->recv(theirs, r, tag);
    }
    if (part.start < 0 || part.count < 0 || part.start + part.count > rows || part.count > theirs.sizes()[0]) {
      throw Error(ErrorKind::kInvalidArgument, "rank " + std::to_string(r) + "'s rows " + std::to_string(part.start) +
                                                   ".." + std::to_string(part.start + part.count) + " of '" + name +
                                                   "' do not fit " + theirs.type_string() + " or the whole " +
                                                   std::to_string(rows) + " rows");
    }
    std::memcpy(static_cast<char*>(whole.raw_data()) + static_cast<size_t>(part.start) * row_bytes, theirs.raw_data(),
                static_cast<size_t>(part.count) * row_bytes);
  }
  return whole;
}

void save_checkpoint(const std::filesystem::path& path, const Session& session, int64_t step,
                     const std::map<std::string, Tensor>& whole) {
  std::vector<std::pair<std::string, Tensor>> arrays;
  arrays.emplace_back(kStepKey, Tensor::scalar<int64_t>(step));
  arrays.emplace_back(kRngKey, Tensor::scalar<int64_t>(static_cast<int64_t>(session.rng_state())));
  for (const Value* value : session.plan().graph().persistents()) {
    auto gathered = whole.find(value->name());
    arrays.emplace_back(value->name(), gathered != whole.end() ? gathered->second : session.host_state(value->name()));
  }
  write_npz(path, arrays);
}

namespace {

// The session's value `current` with its first shard.count rows replaced by
// rows [start, start + count) of the checkpoint's whole value; padding rows
// are kept. Throws kFormat naming the value and the file unless the whole
// value is `current` with shard.rows rows.
Tensor rows_of_whole(const std::filesystem::path& path, const std::string& name, const Tensor& whole,
                     const Tensor& current, const RowShard& shard) {
  const std::vector<int64_t>& sizes = current.sizes();
  std::vector<int64_t> expected = sizes;
  if (!expected.empty()) expected[0] = shard.rows;
  if (sizes.empty() || shard.count < 0 || shard.count > sizes[0] || shard.start < 0 ||
      shard.start + shard.count > shard.rows) {
    throw Error(ErrorKind::kInvalidArgument, "value '" + name + "' (" + current.type_string() + ") cannot hold rows " +
                                                 std::to_string(shard.start) + ".." +
                                                 std::to_string(shard.start + shard.count) + " of " +
                                                 std::to_string(shard.rows));
  }
  if (whole.dtype() != current.dtype() || whole.sizes() != expected) {
    throw Error(ErrorKind::kFormat, "checkpoint value '" + name + "' is " + whole.type_string() + "; this rank holds " +
                                        std::to_string(shard.count) + " of its rows, so it must be " +
                                        std::string(dtype_name(current.dtype())) + format_sizes(expected))
        .with_file(path.string());
  }
  Tensor rows = current.clone();
  const size_t row_bytes = sizes[0] > 0 ? current.nbytes() / static_cast<size_t>(sizes[0]) : 0;
  if (shard.count > 0) {
    std::memcpy(rows.raw_data(), static_cast<const char*>(whole.raw_data()) + static_cast<size_t>(shard.start) * row_bytes,
                static_cast<size_t>(shard.count) * row_bytes);
  }
  return rows;
}

}  // namespace

int64_t load_checkpoint(const std::filesystem::path& path, Session& session, const RowShards& shards) {
  std::map<std::string, Tensor> arrays = read_npz(path);
  auto scalar = [&](const char* key) {
    auto it = arrays.find(key);
    if (it == arrays.end() || it->second.dtype() != DType::kInt64 || it->second.num_elements() != 1) {
      throw Error(ErrorKind::kFormat, std::string("not a Weir checkpoint: no int64 scalar '") + key + "'")
          .with_file(path.string());
    }
    int64_t v = it->second.data<int64_t>()[0];
    arrays.erase(it);
    return v;
  };
  int64_t step = scalar(kStepKey);
  if (step < 0) {
    throw Error(ErrorKind::kFormat, "checkpoint step " + std::to_string(step) + " is negative").with_file(path.string());
  }
  int64_t rng = scalar(kRngKey);
  const Graph& graph = session.plan().graph();
  // Everything is checked before anything is written, so a bad checkpoint
  // leaves the session as it was.
  for (const Value* value : graph.persistents()) {
    auto it = arrays.find(value->name());
    if (it == arrays.end()) {
      throw Error(ErrorKind::kFormat, "checkpoint has no value '" + value->name() + "' that graph '" + graph.name() +
                                          "' needs").with_file(path.string());
    }
    auto shard = shards.find(value->name());
    if (shard != shards.end()) {
      it->second = rows_of_whole(path, value->name(), it->second, session.host_state(value->name()), shard->second);
      continue;
    }
    Tensor current = session.state(value->name());
    if (it->second.dtype() != current.dtype() || it->second.sizes() != current.sizes()) {
      throw Error(ErrorKind::kFormat, "checkpoint value '" + value->name() + "' is " + it->second.type_string() +
                                          "; graph '" + graph.name() + "' has " + current.type_string())
          .with_file(path.string());
    }
  }
  for (const auto& [name, tensor] : arrays) {
    const Value* value = graph.find_value(name);
    if (value == nullptr || !value->is_persistent()) {
      throw Error(ErrorKind::kFormat, "checkpoint value '" + name + "' is not a persistent value of graph '" +
                                          graph.name() + "'").with_file(path.string());
    }
  }
  for (const auto& [name, tensor] : arrays) session.set_state(name, tensor);
  session.set_rng_state(static_cast<uint64_t>(rng));
  return step;
}

}  // namespace weir
