// The world read from each launcher's variables (set by the test): Weir's,
// torchrun's, Open MPI's and Slurm's, their precedence, Slurm host lists,
// and every half-set pair or bad number as an error naming the variables.
#include <gtest/gtest.h>

#include "core/error.h"
#include "distributed/launch_environment.h"

namespace weir {
namespace {

std::string error_reading(const EnvironmentVariables& env) {
  try {
    read_launch_environment(env);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  return "(no error)";
}

TEST(LaunchEnvironment, NoLauncherIsAWorldOfOne) {
  LaunchEnvironment w = read_launch_environment({{"HOME", "/root"}});
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.world_size, 1);
  EXPECT_EQ(w.local_world_size, 1);
  EXPECT_EQ(w.source, "none");
  EXPECT_EQ(w.master_addr, "127.0.0.1");
  EXPECT_EQ(w.master_port, 29500);
}

TEST(LaunchEnvironment, WeirsVariables) {
  LaunchEnvironment w = read_launch_environment({{"WEIR_RANK", "5"}, {"WEIR_WORLD_SIZE", "8"},
                                                 {"WEIR_LOCAL_RANK", "1"}, {"WEIR_LOCAL_WORLD_SIZE", "4"},
                                                 {"WEIR_MASTER_ADDR", "10.0.0.7"}, {"WEIR_MASTER_PORT", "41000"},
                                                 {"RANK", "3"}, {"WORLD_SIZE", "4"}});  // Weir's win
  EXPECT_EQ(w.source, "WEIR_*");
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.world_size, 8);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_world_size, 4);
  EXPECT_EQ(w.node_rank, 1);
  EXPECT_EQ(w.master_addr, "10.0.0.7");
  EXPECT_EQ(w.master_port, 41000);
}

TEST(LaunchEnvironment, TorchrunsVariables) {
  LaunchEnvironment w = read_launch_environment({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"},
                                                 {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "trainer-0"},
                                                 {"MASTER_PORT", "29400"}});
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.local_world_size, 2);
  EXPECT_EQ(w.node_rank, 1);
  EXPECT_EQ(w.master_addr, "trainer-0");
  EXPECT_EQ(w.master_port, 29400);
}

TEST(LaunchEnvironment, OpenMpisVariables) {
  // One host: rank 0 is local.
  LaunchEnvironment w = read_launch_environment({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(w.source, "Open MPI");
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.master_addr, "127.0.0.1");
  // mpirun -x WEIR_MASTER_PORT=P alone: this host, that port.
  w = read_launch_environment({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"WEIR_MASTER_PORT", "4321"}});
  EXPECT_EQ(w.master_addr, "127.0.0.1");
  EXPECT_EQ(w.master_port, 4321);
  // Several hosts need rank 0's address passed through mpirun -x.
  EnvironmentVariables hosts = {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
  EXPECT_NE(error_reading(hosts).find("mpirun -x WEIR_MASTER_ADDR"), std::string::npos) << error_reading(hosts);
  hosts["WEIR_MASTER_ADDR"] = "node-a";
  hosts["WEIR_MASTER_PORT"] = "1234";
  w = read_launch_environment(hosts);
  EXPECT_EQ(w.master_addr, "node-a");
  EXPECT_EQ(w.node_rank, 1);
}

TEST(LaunchEnvironment, SlurmsVariables) {
  LaunchEnvironment w = read_launch_environment({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "1"},
                                                 {"SLURM_NTASKS_PER_NODE", "2"}, {"SLURM_NODEID", "2"},
                                                 {"SLURM_NODELIST", "gpu[07-09],login1"}, {"SLURM_JOB_ID", "4242"}});
  EXPECT_EQ(w.source, "Slurm");
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.world_size, 6);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.node_rank, 2);
  EXPECT_EQ(w.master_addr, "gpu07");
  EXPECT_EQ(w.master_port, 24242);
  // MASTER_ADDR/PORT, when set, say where rank 0 is.
  w = read_launch_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "a[1-2]"},
                               {"MASTER_ADDR", "b"}, {"MASTER_PORT", "5000"}});
  EXPECT_EQ(w.master_addr, "b");
  EXPECT_EQ(w.master_port, 5000);
  // Either alone overrides its half: the port, with the node list's first host.
  w = read_launch_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "a[1-2]"},
                               {"SLURM_JOB_ID", "7"}, {"MASTER_PORT", "5001"}});
  EXPECT_EQ(w.master_addr, "a1");
  EXPECT_EQ(w.master_port, 5001);
  w = read_launch_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "a[1-2]"},
                               {"SLURM_JOB_ID", "7"}, {"WEIR_MASTER_ADDR", "c"}});
  EXPECT_EQ(w.master_addr, "c");
  EXPECT_EQ(w.master_port, 20007);
}

TEST(LaunchEnvironment, SlurmHostListsExpand) {
  EXPECT_EQ(expand_slurm_nodelist("node[01-03,7],gpu-a"),
            (std::vector<std::string>{"node01", "node02", "node03", "node7", "gpu-a"}));
  EXPECT_EQ(expand_slurm_nodelist("rack[1-2]-n[08-09]"),
            (std::vector<std::string>{"rack1-n08", "rack1-n09", "rack2-n08", "rack2-n09"}));
  EXPECT_EQ(expand_slurm_nodelist("solo"), std::vector<std::string>{"solo"});
  // Ranges that multiply past any cluster are refused, not expanded into memory.
  try {
    expand_slurm_nodelist("a[0-99999]b[0-99999]");
    FAIL() << "ten billion hosts expanded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expands to more than 1000000 hosts"), std::string::npos) << e.what();
  }
  for (const char* bad : {"node[1-", "node]1", "node[]", "node[3-1]", "node[a-b]", "a,,b", "n[[1]]"}) {
    EXPECT_THROW(expand_slurm_nodelist(bad), Error) << bad;
  }
}

TEST(LaunchEnvironment, HalfPairsAndBadNumbersNameTheVariables) {
  EXPECT_NE(error_reading({{"WEIR_RANK", "0"}}).find("WEIR_RANK is set but WEIR_WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(error_reading({{"WORLD_SIZE", "2"}}).find("WORLD_SIZE is set but RANK is not"), std::string::npos);
  EXPECT_NE(error_reading({{"WEIR_RANK", "0"}, {"WEIR_WORLD_SIZE", "2"}, {"WEIR_MASTER_ADDR", "h"}})
                .find("WEIR_MASTER_ADDR is set but WEIR_MASTER_PORT is not"),
            std::string::npos);
  EXPECT_NE(error_reading({{"WEIR_RANK", "2"}, {"WEIR_WORLD_SIZE", "2"}}).find("WEIR_RANK=2 is not a rank of a world of 2"),
            std::string::npos);
  EXPECT_NE(error_reading({{"WEIR_RANK", "x"}, {"WEIR_WORLD_SIZE", "2"}}).find("WEIR_RANK='x' is not an integer"),
            std::string::npos);
  EXPECT_NE(error_reading({{"WEIR_RANK", "0"}, {"WEIR_WORLD_SIZE", "0"}}).find("at least one rank"), std::string::npos);
  EXPECT_NE(error_reading({{"WEIR_RANK", "1"}, {"WEIR_WORLD_SIZE", "2"}})
                .find("WEIR_MASTER_ADDR and WEIR_MASTER_PORT are needed for a world of 2"),
            std::string::npos);
  EXPECT_NE(error_reading({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT=70000 is not a TCP port"),
            std::string::npos);
  EXPECT_NE(error_reading({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "3"},
                           {"MASTER_ADDR", "h"}, {"MASTER_PORT", "7"}})
                .find("LOCAL_WORLD_SIZE=3 is larger than the world of 2"),
            std::string::npos);
}

}  // namespace
}  // namespace weir
