#include "core/parameter_client.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/splitmix.h"

namespace weir {

const char* table_rule_name(TableRule rule) {
  switch (rule) {
    case TableRule::kSgd: return "sgd";
    case TableRule::kAdagrad: return "adagrad";
    case TableRule::kAdam: return "adam";
    case TableRule::kDelta: return "delta";
  }
  return "sgd";
}

TableRule parse_table_rule(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (TableRule rule : {TableRule::kSgd, TableRule::kAdagrad, TableRule::kAdam, TableRule::kDelta}) {
    if (lower == table_rule_name(rule)) return rule;
  }
  throw Error(ErrorKind::kInvalidArgument,
              "unknown table rule '" + name + "' (choices: sgd, adagrad, adam, delta)");
}

void initial_table_row(const TableInitializer& init, int64_t id, float* row, int64_t width) {
  if (init.kind == TableInitializer::Kind::kZeros) {
    std::fill(row, row + width, 0.0f);
    return;
  }
  uint64_t state = init.seed ^ (static_cast<uint64_t>(id) * 0xD1B54A32D192ED03ULL);
  if (init.kind == TableInitializer::Kind::kUniform) {
    for (int64_t i = 0; i < width; ++i) {
      row[i] = static_cast<float>((2 * splitmix64_unit(state) - 1) * init.scale);
    }
    return;
  }
  for (int64_t i = 0; i < width; i += 2) {
    const auto [z0, z1] = splitmix64_normal_pair(state);
    row[i] = static_cast<float>(z0 * init.scale);
    if (i + 1 < width) row[i + 1] = static_cast<float>(z1 * init.scale);
  }
}

void wait_for_workers(ParameterClient& servers, int workers, int64_t generation, const std::string& what) {
  ParameterTableConfig barrier;
  barrier.name = std::string(kJobTablePrefix) + "weir_job_barrier";
  barrier.width = 1;
  barrier.rule = TableRule::kSgd;
  barrier.sync_workers = workers;
  try {
    servers.create_table(barrier);
    // Round `generation` is applied once every worker pushed it; the pull
    // of round generation + 1 waits for exactly that.
    const float zero = 0;
    servers.push_dense(barrier.name, &zero, 1, 0.0f, generation);
    float value = 0;
    servers.pull_dense(barrier.name, &value, 1, generation + 1);
  } catch (const Error& e) {
    throw Error(e.kind(), "waiting for all " + std::to_string(workers) + " workers " + what + " (barrier " +
                              std::to_string(generation) + "): " + e.what());
  }
}

}  // namespace weir
