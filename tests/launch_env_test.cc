// Tests for worker/launch_env: every launcher's variables read into one LaunchEnv, their
// precedence, Slurm's compact host and task lists, and malformed values named in the error.
#include "worker/launch_env.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace tpb {
namespace {

using Hosts = std::vector<std::string>;

TEST(LaunchEnv, NoLauncherVariablesIsNoJob) {
  EXPECT_FALSE(detectLaunchEnv({}).has_value());
  EXPECT_FALSE(detectLaunchEnv({{"PATH", "/usr/bin"}, {"MASTER_ADDR", "h"}}).has_value());
  // Empty values count as unset.
  EXPECT_FALSE(detectLaunchEnv({{"RANK", ""}, {"WORLD_SIZE", ""}}).has_value());
}

TEST(LaunchEnv, TorchrunStaticRendezvousUsesTheAgentsStore) {
  const auto e = detectLaunchEnv({{"RANK", "5"},
                                  {"WORLD_SIZE", "8"},
                                  {"LOCAL_RANK", "1"},
                                  {"LOCAL_WORLD_SIZE", "4"},
                                  {"GROUP_RANK", "1"},
                                  {"GROUP_WORLD_SIZE", "2"},
                                  {"MASTER_ADDR", "node0"},
                                  {"MASTER_PORT", "29500"},
                                  {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                  {"TORCHELASTIC_RUN_ID", "none"},
                                  {"TORCHELASTIC_RESTART_COUNT", "2"}});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->launcher, "torchrun");
  EXPECT_EQ(e->rank, 5);
  EXPECT_EQ(e->worldSize, 8);
  EXPECT_EQ(e->localRank, 1);
  EXPECT_EQ(e->localWorldSize, 4);
  EXPECT_EQ(e->nodes, 2);
  EXPECT_EQ(e->nodeRank, 1);
  EXPECT_EQ(e->masterAddr, "node0");
  EXPECT_EQ(e->masterPort, 29500);
  EXPECT_TRUE(e->agentStore);
  EXPECT_EQ(e->jobKey, "none.2");  // a restart gets keys of its own in the agent's store
}

TEST(LaunchEnv, TorchrunStandaloneRankZeroHostsTheStore) {
  const auto e = detectLaunchEnv({{"RANK", "0"},
                                  {"WORLD_SIZE", "2"},
                                  {"MASTER_ADDR", "localhost"},
                                  {"MASTER_PORT", "40619"},
                                  {"TORCHELASTIC_USE_AGENT_STORE", "False"}});
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->agentStore);
  // Without LOCAL_*: one node holding every rank.
  EXPECT_EQ(e->localWorldSize, 2);
  EXPECT_EQ(e->localRank, 0);
  EXPECT_EQ(e->nodes, 0);  // not said
}

TEST(LaunchEnv, OpenMpiOnOneNodeNeedsNoMaster) {
  const auto e = detectLaunchEnv({{"OMPI_COMM_WORLD_RANK", "1"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                  {"OMPI_MCA_ess_base_jobid", "582221825"}});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->launcher, "mpirun");
  EXPECT_EQ(e->rank, 1);
  EXPECT_EQ(e->worldSize, 2);
  EXPECT_EQ(e->localRank, 1);
  EXPECT_EQ(e->nodes, 1);
  EXPECT_EQ(e->masterAddr, "127.0.0.1");
  EXPECT_EQ(e->masterPort, -1);
  EXPECT_EQ(e->jobKey, "582221825");
  // The port derived from the job id: the same on every rank, different for another job.
  const int port = defaultMasterPort(*e);
  EXPECT_GE(port, 20000);
  EXPECT_LT(port, 32768);  // below the ephemeral ports other processes' connections hold
  LaunchEnv other = *e;
  other.jobKey = "582221826";
  EXPECT_NE(defaultMasterPort(other), port);
  other.jobKey.clear();
  EXPECT_EQ(defaultMasterPort(other), 29500);
}

TEST(LaunchEnv, OpenMpiOverSeveralNodesTakesMasterAddrOrNothing) {
  EnvMap env{{"OMPI_COMM_WORLD_RANK", "3"},
             {"OMPI_COMM_WORLD_SIZE", "8"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
             {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
  auto e = detectLaunchEnv(env);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->nodes, 2);
  EXPECT_EQ(e->masterAddr, "");  // unknown: join refuses, naming MASTER_ADDR
  env["MASTER_ADDR"] = "head";
  env["MASTER_PORT"] = "1234";
  e = detectLaunchEnv(env);
  EXPECT_EQ(e->masterAddr, "head");
  EXPECT_EQ(e->masterPort, 1234);
}

TEST(LaunchEnv, MpichPmi) {
  const auto e = detectLaunchEnv({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->launcher, "mpirun");
  EXPECT_EQ(e->rank, 2);
  EXPECT_EQ(e->worldSize, 3);
  EXPECT_EQ(e->localRank, 2);
  EXPECT_EQ(e->localWorldSize, 3);
}

TEST(LaunchEnv, SlurmStepTakesTheFirstHostAsMaster) {
  const auto e = detectLaunchEnv({{"SLURM_PROCID", "6"},
                                  {"SLURM_NTASKS", "8"},
                                  {"SLURM_LOCALID", "2"},
                                  {"SLURM_NODEID", "1"},
                                  {"SLURM_STEP_NUM_NODES", "2"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
                                  {"SLURM_STEP_NODELIST", "gpu[07-08]"},
                                  {"SLURM_JOB_ID", "4242"},
                                  {"SLURM_STEP_ID", "0"}});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->launcher, "slurm");
  EXPECT_EQ(e->rank, 6);
  EXPECT_EQ(e->worldSize, 8);
  EXPECT_EQ(e->localRank, 2);
  EXPECT_EQ(e->localWorldSize, 4);
  EXPECT_EQ(e->nodes, 2);
  EXPECT_EQ(e->nodeRank, 1);
  EXPECT_EQ(e->nodeList, (Hosts{"gpu07", "gpu08"}));
  EXPECT_EQ(e->masterAddr, "gpu07");
  EXPECT_EQ(e->masterPort, -1);
  EXPECT_EQ(e->jobKey, "4242.0");
}

// srun with the pmi2 plugin also sets PMI_RANK and PMI_SIZE, equal to Slurm's: the step is still
// read as Slurm's (two nodes here), not as an MPICH mpirun on one node. PMI variables that differ
// from Slurm's (MPICH's mpirun inside an allocation) stay MPI's.
TEST(LaunchEnv, SrunsPmiVariablesDoNotHideTheSlurmLayout) {
  EnvMap env{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODEID", "1"}, {"SLURM_STEP_NUM_NODES", "2"},
             {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}, {"SLURM_STEP_NODELIST", "n[1-2]"}, {"SLURM_JOB_ID", "77"},
             {"PMI_RANK", "1"}, {"PMI_SIZE", "2"}};
  auto e = detectLaunchEnv(env);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->launcher, "slurm");
  EXPECT_EQ(e->nodes, 2);
  EXPECT_EQ(e->masterAddr, "n1");
  env["PMI_RANK"] = "3";
  env["PMI_SIZE"] = "4";
  e = detectLaunchEnv(env);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->launcher, "mpirun");
  EXPECT_EQ(e->worldSize, 4);
}

TEST(LaunchEnv, SlurmMasterAddrAndNtasksPerNodeWin) {
  const auto e = detectLaunchEnv({{"SLURM_PROCID", "1"},
                                  {"SLURM_NTASKS", "3"},
                                  {"SLURM_NODEID", "1"},
                                  {"SLURM_NNODES", "2"},
                                  {"SLURM_NTASKS_PER_NODE", "2"},
                                  {"SLURM_TASKS_PER_NODE", "2,1"},
                                  {"SLURM_STEP_NODELIST", "a,b"},
                                  {"MASTER_ADDR", "10.0.0.1"},
                                  {"MASTER_PORT", "29400"}});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->localWorldSize, 2);  // --ntasks-per-node's plain number
  EXPECT_EQ(e->localRank, 1);       // no SLURM_LOCALID: rank % local size
  EXPECT_EQ(e->masterAddr, "10.0.0.1");
  EXPECT_EQ(e->masterPort, 29400);
}

TEST(LaunchEnv, SlurmOneNodeUsesLoopbackAndOneTaskIsNoJob) {
  EnvMap env{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NNODES", "1"}, {"SLURM_STEP_NODELIST", "n1"}};
  const auto e = detectLaunchEnv(env);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->masterAddr, "127.0.0.1");
  EXPECT_EQ(e->localWorldSize, 2);
  env["SLURM_NTASKS"] = "1";  // a shell in an allocation, or srun -n 1: tpbench launches its own
  EXPECT_FALSE(detectLaunchEnv(env).has_value());
  // An allocation's shell without a step: no job of ranks either.
  EXPECT_FALSE(detectLaunchEnv({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}).has_value());
}

TEST(LaunchEnv, PrecedenceIsInnermostLauncherFirst) {
  // torchrun started by srun: torchrun's names describe the worker.
  auto e = detectLaunchEnv({{"RANK", "3"},
                            {"WORLD_SIZE", "4"},
                            {"MASTER_ADDR", "h"},
                            {"SLURM_PROCID", "1"},
                            {"SLURM_NTASKS", "2"},
                            {"SLURM_STEP_NODELIST", "h,g"}});
  EXPECT_EQ(e->launcher, "torchrun");
  EXPECT_EQ(e->rank, 3);
  // mpirun inside a Slurm allocation.
  e = detectLaunchEnv({{"OMPI_COMM_WORLD_RANK", "1"},
                       {"OMPI_COMM_WORLD_SIZE", "2"},
                       {"SLURM_PROCID", "0"},
                       {"SLURM_NTASKS", "2"},
                       {"SLURM_STEP_NODELIST", "h"}});
  EXPECT_EQ(e->launcher, "mpirun");
  EXPECT_EQ(e->rank, 1);
}

// Expects detectLaunchEnv(env) to throw UsageError mentioning every needle.
void expectRefused(const EnvMap& env, const std::vector<std::string>& needles) {
  try {
    detectLaunchEnv(env);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(LaunchEnv, MalformedValuesNameTheVariable) {
  expectRefused({{"RANK", "0"}}, {"WORLD_SIZE", "not set"});
  expectRefused({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, {"RANK='x'", "whole number"});
  expectRefused({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, {"RANK=2", "0..1"});
  expectRefused({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, {"RANK=-1", "0..1"});
  expectRefused({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, {"WORLD_SIZE=0"});
  expectRefused({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}, {"MASTER_PORT=70000"});
  expectRefused({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}},
                {"LOCAL_RANK=2"});
  expectRefused({{"OMPI_COMM_WORLD_RANK", "0"}}, {"OMPI_COMM_WORLD_SIZE"});
  expectRefused({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "n[1-"}},
                {"SLURM_STEP_NODELIST", "n[1-"});
}

// Every number a launcher sets is plain decimal (common/decimal.h) and fits: "01" is a typo, not
// rank 1, and a 20-digit WORLD_SIZE is refused naming the variable, not read as something else.
TEST(LaunchEnv, NumbersArePlainDecimal) {
  expectRefused({{"RANK", "01"}, {"WORLD_SIZE", "2"}}, {"RANK='01'", "leading zero"});
  expectRefused({{"RANK", "0"}, {"WORLD_SIZE", "02"}}, {"WORLD_SIZE='02'", "leading zero"});
  expectRefused({{"RANK", "0"}, {"WORLD_SIZE", "99999999999999999999"}}, {"WORLD_SIZE='99999999999999999999'", "out of range"});
  expectRefused({{"RANK", "+1"}, {"WORLD_SIZE", "2"}}, {"RANK='+1'"});
  expectRefused({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "029500"}}, {"MASTER_PORT='029500'"});
  expectRefused({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0x2"}}, {"OMPI_COMM_WORLD_SIZE='0x2'"});
  expectRefused({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "a"}, {"SLURM_LOCALID", "00"}},
                {"SLURM_LOCALID='00'"});
}

// A node's index is below the node count, a node holds no more tasks than the step, and a step
// has no more nodes than tasks.
TEST(LaunchEnv, VariablesMustAgreeWithEachOther) {
  expectRefused({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"GROUP_WORLD_SIZE", "2"}, {"GROUP_RANK", "2"}},
                {"GROUP_RANK=2", "0..1"});
  const EnvMap slurm{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "a,b"}};
  auto with = [&](const EnvMap& extra) {
    EnvMap env = slurm;
    for (const auto& [k, v] : extra) env[k] = v;
    return env;
  };
  expectRefused(with({{"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_NODEID", "2"}}), {"SLURM_NODEID=2", "0..1"});
  expectRefused(with({{"SLURM_STEP_NUM_NODES", "3"}}), {"SLURM_STEP_NUM_NODES=3", "1..2"});
  expectRefused(with({{"SLURM_STEP_NODELIST", "n[1-3]"}}), {"SLURM_STEP_NODELIST", "3 hosts", "SLURM_NTASKS=2"});
  expectRefused(with({{"SLURM_STEP_TASKS_PER_NODE", "5,1"}}), {"SLURM_STEP_TASKS_PER_NODE='5,1'", "5 tasks"});
}

// A job id prefixes the job's store keys and seeds its default port: a huge one or one with
// controls or spaces is refused naming its variable; an ordinary one still makes the key.
TEST(LaunchEnv, JobIdsAreShortPrintableAscii) {
  const EnvMap torchrun{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RESTART_COUNT", "0"}};
  auto with = [](EnvMap env, const std::string& k, const std::string& v) {
    env[k] = v;
    return env;
  };
  expectRefused(with(torchrun, "TORCHELASTIC_RUN_ID", std::string(100000, 'a')),
                {"TORCHELASTIC_RUN_ID", "100000 characters"});
  expectRefused(with(torchrun, "TORCHELASTIC_RUN_ID", "my job"), {"TORCHELASTIC_RUN_ID", "printable ASCII"});
  expectRefused(with(torchrun, "TORCHELASTIC_RUN_ID", "a\x1b[2Jb"), {"TORCHELASTIC_RUN_ID", "printable ASCII"});
  expectRefused({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_MCA_ess_base_jobid", "1\n2"}},
                {"OMPI_MCA_ess_base_jobid"});
  expectRefused({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "a"},
                 {"SLURM_JOB_ID", std::string(300, '7')}, {"SLURM_STEP_ID", "0"}},
                {"SLURM_JOB_ID", "300 characters"});
  const auto ok = detectLaunchEnv(with(torchrun, "TORCHELASTIC_RUN_ID", "my-job_1"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->jobKey, "my-job_1.0");
}

// Host lists and task repeats are counted before they are expanded: each of these once ran the
// process out of memory (the product of two brackets, many brackets, many repeats), or would
// now expand to far more than any job; every one is refused at once, naming the variable.
TEST(LaunchEnv, HugeSlurmListsAreRefusedBeforeExpanding) {
  std::string manyRanges = "n[", manyRepeats;
  for (int i = 0; i < 2000; ++i) {
    manyRanges += (i ? ",0-99999" : "0-99999");
    manyRepeats += (i ? ",1(x1048576)" : "1(x1048576)");
  }
  manyRanges += "]";
  for (const std::string& list : {std::string("a[0-99999]b[0-99999]"), std::string("n[0-999999999]"),
                                  std::string("n[0-99999999999]"), std::string("n[0-70000]"), manyRanges}) {
    SCOPED_TRACE(list.substr(0, 40));
    expectRefused({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", list}},
                  {"SLURM_STEP_NODELIST: "});
  }
  for (const std::string& tasks : {std::string("1(x99999999999)"), std::string("1(x70000)"), manyRepeats}) {
    SCOPED_TRACE(tasks.substr(0, 40));
    expectRefused({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "a,b"},
                   {"SLURM_STEP_TASKS_PER_NODE", tasks}},
                  {"SLURM_STEP_TASKS_PER_NODE: "});
  }
}

TEST(SlurmHostList, AtMostTheBoundIsExpanded) {
  const std::string max = "n[1-" + std::to_string(kMaxSlurmHosts) + "]";
  EXPECT_EQ(expandSlurmHostList(max).size(), kMaxSlurmHosts);
  EXPECT_THROW(expandSlurmHostList(max + ",extra"), UsageError);
  EXPECT_THROW(expandSlurmHostList("n[1-" + std::to_string(kMaxSlurmHosts + 1) + "]"), UsageError);
  EXPECT_EQ(expandSlurmTasksPerNode("1(x" + std::to_string(kMaxSlurmHosts) + ")").size(), kMaxSlurmHosts);
  EXPECT_THROW(expandSlurmTasksPerNode("1(x" + std::to_string(kMaxSlurmHosts) + "),1"), UsageError);
}

TEST(SlurmHostList, CommonForms) {
  EXPECT_EQ(expandSlurmHostList("a"), (Hosts{"a"}));
  EXPECT_EQ(expandSlurmHostList("a,b"), (Hosts{"a", "b"}));
  EXPECT_EQ(expandSlurmHostList("node[01-04,07]"), (Hosts{"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(expandSlurmHostList("pre[1-3]-suf"), (Hosts{"pre1-suf", "pre2-suf", "pre3-suf"}));
  EXPECT_EQ(expandSlurmHostList("n[9-11]"), (Hosts{"n9", "n10", "n11"}));
  EXPECT_EQ(expandSlurmHostList("n[098-101]"), (Hosts{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expandSlurmHostList("gpu[1-2],cpu7,x[5]"), (Hosts{"gpu1", "gpu2", "cpu7", "x5"}));
  EXPECT_EQ(expandSlurmHostList("r[1-2]n[1-2]"), (Hosts{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expandSlurmHostList("a-b.c,d"), (Hosts{"a-b.c", "d"}));
}

TEST(SlurmHostList, MalformedListsAreRefused) {
  for (const std::string bad : {"", "n[1-", "n]1[", "n[[1]]", "n[a-b]", "n[3-1]", "a,,b", "n[1,]", "n[]"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(expandSlurmHostList(bad), UsageError);
  }
}

TEST(SlurmTasksPerNode, CountsAndRepeats) {
  EXPECT_EQ(expandSlurmTasksPerNode("4"), (std::vector<int>{4}));
  EXPECT_EQ(expandSlurmTasksPerNode("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expandSlurmTasksPerNode("1,3(x2)"), (std::vector<int>{1, 3, 3}));
  for (const std::string bad : {"", "x", "2(x", "2(x0)", "0", "2(3)", "1,,2"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(expandSlurmTasksPerNode(bad), UsageError);
  }
}

}  // namespace
}  // namespace tpb
