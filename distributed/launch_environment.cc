#include "distributed/launch_environment.h"

#include <charconv>
#include <climits>
#include <optional>

#include "core/error.h"

extern char** environ;

namespace weir {

namespace {

// More hosts than any Slurm cluster has: a list past it is malformed.
constexpr size_t kMaxHosts = 1000000;

Error bad(const std::string& message) { return Error(ErrorKind::kInvalidArgument, message); }

std::optional<std::string> lookup(const EnvironmentVariables& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

int parse_int(const std::string& name, const std::string& text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw bad(name + "='" + text + "' is not an integer");
  }
  return value;
}

// Both or neither of a pair; nullopt when neither.
std::optional<std::pair<std::string, std::string>> pair_of(const EnvironmentVariables& env, const std::string& first,
                                                           const std::string& second) {
  std::optional<std::string> a = lookup(env, first), b = lookup(env, second);
  if (a.has_value() != b.has_value()) {
    const std::string& set = a ? first : second;
    const std::string& unset = a ? second : first;
    throw bad(set + " is set but " + unset + " is not: set both (or neither)");
  }
  if (!a) return std::nullopt;
  return std::make_pair(*a, *b);
}

// A rank and its world's size from a pair of variables.
bool read_rank_pair(const EnvironmentVariables& env, const std::string& rank_name, const std::string& size_name,
                    int& rank, int& size) {
  auto pair = pair_of(env, rank_name, size_name);
  if (!pair) return false;
  rank = parse_int(rank_name, pair->first);
  size = parse_int(size_name, pair->second);
  if (size < 1) throw bad(size_name + "=" + std::to_string(size) + ": a world needs at least one rank");
  if (rank < 0 || rank >= size) {
    throw bad(rank_name + "=" + std::to_string(rank) + " is not a rank of a world of " + std::to_string(size) + " (" +
              size_name + ")");
  }
  return true;
}

// Rank 0's address and port as given in `addr_name` and `port_name`.
std::string master_addr_of(const std::string& addr_name, const std::string& text) {
  if (text.empty()) throw bad(addr_name + " is empty: give rank 0's host name or address");
  return text;
}

int master_port_of(const std::string& port_name, const std::string& text) {
  int port = parse_int(port_name, text);
  if (port < 1 || port > 65535) throw bad(port_name + "=" + std::to_string(port) + " is not a TCP port (1-65535)");
  return port;
}

bool read_master(const EnvironmentVariables& env, const std::string& addr_name, const std::string& port_name,
                 LaunchEnvironment& out) {
  auto pair = pair_of(env, addr_name, port_name);
  if (!pair) return false;
  out.master_addr = master_addr_of(addr_name, pair->first);
  out.master_port = master_port_of(port_name, pair->second);
  return true;
}

// Under launchers that know (Slurm) or can assume (Open MPI on one host)
// where rank 0 is, WEIR_MASTER_* or MASTER_* may give the address, the
// port, or both; each one given overrides the launcher's. Returns whether
// an address was given.
bool read_master_overrides(const EnvironmentVariables& env, LaunchEnvironment& out, bool& port_given) {
  bool addr_given = false;
  port_given = false;
  for (const char* prefix : {"WEIR_", ""}) {
    const std::string addr_name = std::string(prefix) + "MASTER_ADDR", port_name = std::string(prefix) + "MASTER_PORT";
    std::optional<std::string> addr = lookup(env, addr_name), port = lookup(env, port_name);
    if (!addr && !port) continue;
    if (addr) out.master_addr = master_addr_of(addr_name, *addr);
    if (port) out.master_port = master_port_of(port_name, *port);
    addr_given = addr.has_value();
    port_given = port.has_value();
    break;
  }
  return addr_given;
}

void read_local(const EnvironmentVariables& env, const std::string& rank_name, const std::string& size_name,
                LaunchEnvironment& out) {
  if (!read_rank_pair(env, rank_name, size_name, out.local_rank, out.local_world_size)) {
    // No local variables: every rank on this host.
    out.local_rank = out.rank;
    out.local_world_size = out.world_size;
  }
  if (out.local_world_size > out.world_size) {
    throw bad(size_name + "=" + std::to_string(out.local_world_size) + " is larger than the world of " +
              std::to_string(out.world_size));
  }
  out.node_rank = out.rank / out.local_world_size;
}

// One host pattern without top-level commas: "node[01-03]-a[1,2]".
void expand_pattern(const std::string& list, const std::string& pattern, std::vector<std::string>& out) {
  size_t open = pattern.find('[');
  if (open == std::string::npos) {
    if (pattern.find(']') != std::string::npos) throw bad("SLURM_NODELIST '" + list + "' has a ']' without '['");
    out.push_back(pattern);
    return;
  }
  size_t close = pattern.find(']', open);
  if (close == std::string::npos) throw bad("SLURM_NODELIST '" + list + "' has a '[' without ']'");
  const std::string prefix = pattern.substr(0, open), inside = pattern.substr(open + 1, close - open - 1);
  const std::string rest = pattern.substr(close + 1);
  if (inside.empty()) throw bad("SLURM_NODELIST '" + list + "' has an empty range []");
  size_t start = 0;
  while (start <= inside.size()) {
    size_t comma = inside.find(',', start);
    std::string item = inside.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = item.find('-');
    std::string low = item.substr(0, dash), high = dash == std::string::npos ? low : item.substr(dash + 1);
    auto digits = [&](const std::string& text) {
      if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
        throw bad("SLURM_NODELIST '" + list + "' has the range item '" + item + "', not N or N-M");
      }
      return std::stoi(text);
    };
    int from = digits(low), to = digits(high);
    if (to < from || to - from > 100000) throw bad("SLURM_NODELIST '" + list + "' has the backwards or huge range '" + item + "'");
    for (int n = from; n <= to; ++n) {
      std::string number = std::to_string(n);
      if (number.size() < low.size()) number.insert(0, low.size() - number.size(), '0');  // keep the padding
      expand_pattern(list, prefix + number + rest, out);
      // Several bracket groups multiply: bound the whole list, not just each range.
      if (out.size() > kMaxHosts) {
        throw bad("SLURM_NODELIST '" + list + "' expands to more than " + std::to_string(kMaxHosts) + " hosts");
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

}  // namespace

EnvironmentVariables process_environment() {
  EnvironmentVariables env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text(*entry);
    size_t equals = text.find('=');
    if (equals != std::string::npos) env[text.substr(0, equals)] = text.substr(equals + 1);
  }
  return env;
}

std::vector<std::string> expand_slurm_nodelist(const std::string& list) {
  std::vector<std::string> hosts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) throw bad("SLURM_NODELIST '" + list + "' has unbalanced or nested brackets");
    if (c == ',' && depth == 0) {
      std::string pattern = list.substr(start, i - start);
      if (pattern.empty()) throw bad("SLURM_NODELIST '" + list + "' has an empty host name");
      expand_pattern(list, pattern, hosts);
      start = i + 1;
    }
  }
  if (depth != 0) throw bad("SLURM_NODELIST '" + list + "' has a '[' without ']'");
  return hosts;
}

LaunchEnvironment read_launch_environment(const EnvironmentVariables& env) {
  LaunchEnvironment out;
  if (read_rank_pair(env, "WEIR_RANK", "WEIR_WORLD_SIZE", out.rank, out.world_size)) {
    out.source = "WEIR_*";
    read_local(env, "WEIR_LOCAL_RANK", "WEIR_LOCAL_WORLD_SIZE", out);
    if (!read_master(env, "WEIR_MASTER_ADDR", "WEIR_MASTER_PORT", out) && out.world_size > 1) {
      throw bad("WEIR_MASTER_ADDR and WEIR_MASTER_PORT are needed for a world of " + std::to_string(out.world_size) +
                ": where rank 0 serves the rendezvous store");
    }
    return out;
  }
  if (read_rank_pair(env, "RANK", "WORLD_SIZE", out.rank, out.world_size)) {
    out.source = "torchrun";
    read_local(env, "LOCAL_RANK", "LOCAL_WORLD_SIZE", out);
    if (!read_master(env, "MASTER_ADDR", "MASTER_PORT", out) && out.world_size > 1) {
      throw bad("MASTER_ADDR and MASTER_PORT are needed with RANK and WORLD_SIZE for a world of " +
                std::to_string(out.world_size));
    }
    return out;
  }
  if (read_rank_pair(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", out.rank, out.world_size)) {
    out.source = "Open MPI";
    read_local(env, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", out);
    bool port_given = false;
    if (!read_master_overrides(env, out, port_given) && out.local_world_size < out.world_size) {
      throw bad("an Open MPI job over several hosts needs rank 0's address: run mpirun -x WEIR_MASTER_ADDR=HOST -x "
                "WEIR_MASTER_PORT=PORT");
    }
    return out;
  }
  if (read_rank_pair(env, "SLURM_PROCID", "SLURM_NTASKS", out.rank, out.world_size)) {
    out.source = "Slurm";
    read_local(env, "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", out);
    if (auto node = lookup(env, "SLURM_NODEID")) out.node_rank = parse_int("SLURM_NODEID", *node);
    bool port_given = false;
    if (!read_master_overrides(env, out, port_given)) {
      std::optional<std::string> list = lookup(env, "SLURM_NODELIST");
      if (!list) list = lookup(env, "SLURM_JOB_NODELIST");
      if (list) out.master_addr = expand_slurm_nodelist(*list).front();
    }
    if (!port_given) {
      if (auto job = lookup(env, "SLURM_JOB_ID")) out.master_port = 20000 + parse_int("SLURM_JOB_ID", *job) % 10000;
    }
    return out;
  }
  read_master(env, "WEIR_MASTER_ADDR", "WEIR_MASTER_PORT", out) ||
      read_master(env, "MASTER_ADDR", "MASTER_PORT", out);  // a world of one may still name its store
  return out;
}

}  // namespace weir
