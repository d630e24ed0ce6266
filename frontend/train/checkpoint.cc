#include "frontend/train/checkpoint.h"

#include <map>

#include "core/error.h"
#include "frontend/data/npy.h"

namespace weir {

namespace {

// Reserved member names; value names never start with "__".
constexpr const char* kStepKey = "__step__";
constexpr const char* kRngKey = "__rng_state__";

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const Session& session, int64_t step) {
  std::vector<std::pair<std::string, Tensor>> arrays;
  arrays.emplace_back(kStepKey, Tensor::scalar<int64_t>(step));
  arrays.emplace_back(kRngKey, Tensor::scalar<int64_t>(static_cast<int64_t>(session.rng_state())));
  for (const Value* value : session.plan().graph().persistents()) {
    arrays.emplace_back(value->name(), session.host_state(value->name()));
  }
  write_npz(path, arrays);
}

int64_t load_checkpoint(const std::filesystem::path& path, Session& session) {
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
