// The world a launcher started this process into, read once from the
// environment: Weir's own variables (graph-runner launch), torchrun's, Open
// MPI's (mpirun) or Slurm's (srun), in that order of precedence.
//
//   weir::LaunchEnvironment world = weir::read_launch_environment(weir::process_environment());
//   world.rank, world.world_size;          // 1 of 4
//   world.master_addr, world.master_port;  // where rank 0 serves the rendezvous store
//   world.source;                          // "WEIR_*", "torchrun", "Open MPI", "Slurm" or "none"
//
// Variables come in pairs (rank and world size, local rank and local size,
// master address and port): half a pair is an error naming both, and so is
// a number that does not parse or a rank outside its world. Without any
// launcher's variables the process is a world of one.
//
// Where rank 0 is: Weir's and torchrun's master variables (both of a pair);
// under Open MPI and Slurm, the address and the port each from
// WEIR_MASTER_ADDR/PORT or else MASTER_ADDR/PORT when set (either alone
// too), else the first host of SLURM_NODELIST (ranges expanded) and a port
// derived from SLURM_JOB_ID (20000 + id mod 10000), or 127.0.0.1 for an
// Open MPI job on one host; otherwise port 29500, torchrun's default.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace weir {

using EnvironmentVariables = std::map<std::string, std::string>;

// This process's environment.
EnvironmentVariables process_environment();

struct LaunchEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;         // among the ranks on this host
  int local_world_size = 1;
  int node_rank = 0;          // this host among the job's hosts
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "none";  // whose variables these were
};

// Throws weir::Error(kInvalidArgument) naming the variables at fault.
LaunchEnvironment read_launch_environment(const EnvironmentVariables& env);

// Slurm's compressed host lists: "node[01-03,7],gpu-a" -> node01 node02
// node03 node7 gpu-a (zero padding kept; several bracket groups multiply).
// Throws weir::Error(kInvalidArgument) naming the list when it is malformed.
std::vector<std::string> expand_slurm_nodelist(const std::string& list);

}  // namespace weir
