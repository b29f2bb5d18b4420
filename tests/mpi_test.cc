// MPI: the mpi transport under the from-scratch algorithms, the mpi library allreduce, and
// tpbench's --launcher mpirun. MPI ranks must be processes that mpirun started, so these tests
// run either the rank program tests/mpi_driver.cc under mpirun, or tpbench itself; without MPI
// in the build, or without Open MPI's mpirun on PATH, they are skipped with the reason.
// (MpirunOutput's parsing needs neither, and always runs.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "comm/transports.h"
#include "common/cores.h"
#include "core/collective.h"
#include "core/registry.h"
#include "harness/launch.h"
#include "harness/mpirun.h"
#include "tests/cli_util.h"
#include "tests/listeners_util.h"

namespace tpb {
namespace {

using nlohmann::json;
using test::readJson;
using test::runCli;

// The mpi transport is in the table exactly when MPI was compiled in.
bool mpiCompiled() {
  for (const auto& t : transports())
    if (t.name == "mpi") return true;
  return false;
}

std::string mpiMissing() {
  if (!mpiCompiled()) return "this build has no MPI (libopenmpi-dev was not found at configure time)";
#ifndef TPB_MPI_DRIVER
  return "tests/mpi_driver.cc was not built";
#endif
  return mpirunProblem();
}

#define TPB_SKIP_WITHOUT_MPI()                                        \
  do {                                                                \
    if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

// ---- the rank program under mpirun ---------------------------------------------------------

struct DriverRun {
  int exitCode = -1;
  std::string out;
};

DriverRun runDriver(int n, const std::string& which) {
  DriverRun r;
#ifdef TPB_MPI_DRIVER
  std::string cmd;
  for (const auto& a : mpirunArgv(n, {TPB_MPI_DRIVER, which}, {})) cmd += "'" + a + "' ";
  // The test's own limit, far above what a case needs; mpirun's output is the case's.
  FILE* p = popen(("timeout -s KILL 120 " + cmd + "2>&1 </dev/null").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) r.out += buf;
  const int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
#else
  (void)n;
  (void)which;
#endif
  return r;
}

// Every rank passed `which` and none failed.
void expectDriverPasses(int n, const std::string& which) {
  SCOPED_TRACE(which + " with N=" + std::to_string(n));
  const DriverRun r = runDriver(n, which);
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  for (int rank = 0; rank < n; ++rank)
    EXPECT_NE(r.out.find("PASS rank " + std::to_string(rank) + " " + which), std::string::npos) << r.out;
}

TEST(MpiRanks, RingParamServerAndMpiAllreduceGiveExactSumsForEveryNAndCount) {
  TPB_SKIP_WITHOUT_MPI();
  for (int n = 1; n <= 4; ++n) expectDriverPasses(n, "exact");
}

TEST(MpiRanks, MessagesKeepTheirOrderAndLargeExchangesDoNotDeadlock) {
  TPB_SKIP_WITHOUT_MPI();
  expectDriverPasses(2, "fifo");
}

TEST(MpiRanks, SizeMismatchIsAnErrorNamingThePeer) {
  TPB_SKIP_WITHOUT_MPI();
  expectDriverPasses(2, "mismatch");
}

TEST(MpiRanks, WaitingOnAnAbsentPeerTimesOutNamingIt) {
  TPB_SKIP_WITHOUT_MPI();
  expectDriverPasses(2, "timeout");
}

// ---- tpbench through mpirun ----------------------------------------------------------------

// Every record of `doc` measured, verified (wrong == 0) and ok; `expected` of them.
void expectAllVerified(const json& doc, std::size_t expected) {
  ASSERT_EQ(doc.at("allreduce").size(), expected) << doc.dump();
  for (const auto& p : doc.at("allreduce")) {
    EXPECT_EQ(p.at("status"), "ok") << p.dump();
    EXPECT_EQ(p.at("wrong"), 0) << p.dump();
  }
}

TEST(MpiCli, RingAndParamServerOverTheMpiTransportVerifyExactly) {
  TPB_SKIP_WITHOUT_MPI();
  const std::string out = test::tempPath("mpi_transport.json");
  // No --launcher: the mpi transport makes tpbench start the ranks through mpirun. 1 KiB ring
  // chunks make the 100003-element size many chunks with an odd tail.
  const auto r = runCli({"allreduce", "--algos", "ring,param_server", "--transport", "mpi", "--n_gpus", "1..4",
                         "--bytes", "4,12,28,400012", "--iters", "2", "--warmup", "1", "--timeout", "120", "--out", out},
                        {{"TPB_RING_CHUNK_KB", "1"}});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = readJson(out);
  expectAllVerified(doc, 2 * 4 * 4);
  for (const auto& p : doc.at("allreduce")) EXPECT_EQ(p.at("transport"), "mpi");
  EXPECT_TRUE(test::workerPids().empty());
  std::remove(out.c_str());
}

TEST(MpiCli, MpiAllreduceThroughLauncherMpirunVerifiesExactlyBesideGloo) {
  TPB_SKIP_WITHOUT_MPI();
  const std::string out = test::tempPath("mpi_algo.json");
  const auto r = runCli({"allreduce", "--algos", "gloo,mpi", "--launcher", "mpirun", "--n_gpus", "2,3", "--bytes",
                         "4,400012", "--iters", "2", "--warmup", "1", "--timeout", "120", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = readJson(out);
  expectAllVerified(doc, 2 * 2 * 2);
  EXPECT_EQ(doc.at("allreduce").at(4).at("algo"), "mpi");
  EXPECT_EQ(doc.at("allreduce").at(4).at("origin"), "library");
  EXPECT_EQ(doc.at("allreduce").at(4).at("carrier"), "mpi");  // MPI's own, not the run's transport
  EXPECT_EQ(doc.at("allreduce").at(0).at("carrier"), "gloo-tcp");
  EXPECT_NE(r.out.find("algo=mpi  N=2  over=mpi  transport="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("algo=gloo"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("algo=mpi"), std::string::npos) << r.out;
  // mpirun's --tag-output lines come back with the launcher's own prefix.
  EXPECT_NE(r.err.find("[rank 0] allreduce mpi N=3"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("<stderr>:"), std::string::npos) << r.err;
  std::remove(out.c_str());
}

// TPB_MPI_THREAD: the level reaches mpirun's ranks (a rank that asked for another would not
// match: with "single" each rank reads back MPI_THREAD_SINGLE from MPI_Query_thread, which the
// mpi job's check fails on otherwise) and the record names it; the default is funneled.
TEST(MpiCli, ThreadLevelReachesTheRanksAndIsRecorded) {
  TPB_SKIP_WITHOUT_MPI();
  for (const std::string level : {"single", ""}) {
    SCOPED_TRACE(level);
    const std::string out = test::tempPath("mpi_thread.json");
    const auto r = runCli({"allreduce", "--algos", "mpi", "--launcher", "mpirun", "--n_gpus", "2", "--bytes", "4K",
                           "--iters", "2", "--warmup", "1", "--timeout", "120", "--out", out, "--overwrite"},
                          {{"TPB_MPI_THREAD", level}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json doc = readJson(out);
    expectAllVerified(doc, 1);
    EXPECT_EQ(doc.at("meta").at("mpi_thread"), level.empty() ? "funneled" : level);
    EXPECT_EQ(doc.at("allreduce").at(0).at("mpi_thread"), level.empty() ? "funneled" : level) << doc.dump();
    std::remove(out.c_str());
  }
}

// --bind core under mpirun: --map-by core --bind-to core, so that mpirun's ranks sit where
// tpbench's own launcher puts them (where a core has one hardware thread, on the same CPUs).
TEST(MpiCli, BindCorePlacesMpirunsRanksAsTpbenchsOwn) {
  TPB_SKIP_WITHOUT_MPI();
  const std::vector<int> order = placementOrder();
  const std::string out = test::tempPath("mpi_bound.json");
  const auto r = runCli({"allreduce", "--algos", "mpi", "--launcher", "mpirun", "--bind", "core", "--n_gpus", "2",
                         "--bytes", "4K", "--iters", "2", "--warmup", "1", "--timeout", "120", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = readJson(out);
  expectAllVerified(doc, 1);
  EXPECT_EQ(doc.at("meta").at("bind"), "core");
  std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(order[0]) + "/topology/thread_siblings_list");
  std::string siblings;
  std::getline(in, siblings);
  if (parseCpuList(siblings).size() == 1) {  // else mpirun binds each rank to a core's threads, not one CPU
    const std::vector<long long> want{order[0], order[1 % order.size()]};
    EXPECT_EQ(doc.at("allreduce").at(0).at("ranks").at("cpu").get<std::vector<long long>>(), want) << doc.dump();
  }
  std::remove(out.c_str());
}

// Every op's MPI baseline under --launcher mpirun: exact values in place and out of place, over
// an odd N and awkward counts, recorded as the library's (no traffic: MPI moves it).
TEST(MpiCli, EveryCollectiveHasAnMpiBaselineThatVerifies) {
  TPB_SKIP_WITHOUT_MPI();
  const std::string out = test::tempPath("mpi_coll.json");
  const auto r = runCli({"collective", "--op", "all", "--algos", "mpi", "--launcher", "mpirun", "--n_gpus", "2,3",
                         "--bytes", "4,400012", "--place", "in,out", "--root", "1", "--iters", "2", "--warmup", "1",
                         "--timeout", "120", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = readJson(out);
  // Every op of the table in and out of place where it has both (alltoall and sendrecv are out
  // of place only); 2 sizes, N = 2 and 3.
  std::size_t placements = 0;
  for (const CollectiveOp& op : collectiveOps()) placements += op.hasInPlace ? 2 : 1;
  ASSERT_GE(placements, 12u) << "allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall, sendrecv";
  expectAllVerified(doc, placements * 2 * 2);
  for (const auto& p : doc.at("allreduce")) {
    EXPECT_EQ(p.at("algo"), "mpi");
    EXPECT_EQ(p.at("origin"), "library");
    EXPECT_FALSE(p.contains("traffic")) << p.dump();
  }
  std::remove(out.c_str());
}

// A rank killed (or exiting) under mpirun: the point fails with the rank and the reason, and no
// rank process is left.
TEST(MpiCli, KilledRankFailsThePointAndNothingIsLeftRunning) {
  TPB_SKIP_WITHOUT_MPI();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"KILL", "rank 1 was killed by signal 9 (SIGKILL)"},
      {"SEGV", "rank 1 was killed by signal 11 (SIGSEGV)"},
      {"exit", "rank 1 exited with code 3"}};
  for (const auto& [action, reason] : cases) {
    SCOPED_TRACE(action);
    const std::string out = test::tempPath("mpi_kill.json");
    const auto r = runCli({"allreduce", "--algos", "ring", "--transport", "mpi", "--launcher", "mpirun", "--n_gpus",
                           "3", "--bytes", "4K,64K", "--iters", "5", "--timeout", "60", "--out", out, "--overwrite"},
                          {{"TPB_FAULT", "1:" + action + ":3"}});
    EXPECT_EQ(r.exitCode, 1) << r.err;
    EXPECT_LT(r.seconds, 30) << "the launcher must not wait for the survivors' timeouts";
    const json doc = readJson(out);
    ASSERT_EQ(doc.at("allreduce").size(), 2u);
    for (const auto& p : doc.at("allreduce")) {
      EXPECT_EQ(p.at("status"), "failed");
      EXPECT_NE(p.at("error").get<std::string>().find(reason), std::string::npos) << p.dump();
    }
    EXPECT_TRUE(test::workerPids().empty()) << "ranks outlived mpirun";
    std::remove(out.c_str());
  }
}

TEST(MpiCli, HungRankIsStoppedAtTheTimeoutWithNothingLeft) {
  TPB_SKIP_WITHOUT_MPI();
  const std::string out = test::tempPath("mpi_hang.json");
  const auto r = runCli({"allreduce", "--algos", "param_server", "--transport", "mpi", "--n_gpus", "2", "--bytes",
                         "4K", "--iters", "5", "--timeout", "3", "--out", out},
                        {{"TPB_FAULT", "1:hang:2"}});
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_LT(r.seconds, 25);
  EXPECT_EQ(readJson(out).at("allreduce").at(0).at("status"), "failed");
  EXPECT_TRUE(test::workerPids().empty()) << r.err;
  std::remove(out.c_str());
}

// Training over MPI gives what the same algorithm gives elsewhere: at N = 2 every allreduce adds
// the same two numbers, so losses match to the last bit.
TEST(MpiCli, TrainingOverMpiMatchesShmAndGloo) {
  TPB_SKIP_WITHOUT_MPI();
  auto train = [](const std::vector<std::string>& extra) {
    const std::string out = test::tempPath("mpi_train.json");
    std::vector<std::string> args = {"run", "--n_gpus", "2", "--batch_size", "32", "--epochs", "1",
                                     "--train_size", "512", "--test_size", "256", "--timeout", "120", "--out", out,
                                     "--overwrite"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = runCli(args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    json run = readJson(out).at("runs").at(0);
    std::remove(out.c_str());
    return run;
  };
  const json ringMpi = train({"--strategy", "ring_all_reduce", "--transport", "mpi"});
  const json ringShm = train({"--strategy", "ring_all_reduce", "--transport", "shm"});
  ASSERT_EQ(ringMpi.at("status"), "ok") << ringMpi.dump();
  EXPECT_EQ(ringMpi.at("config").at("transport"), "mpi");
  EXPECT_EQ(ringMpi.at("epochs").at(0).at("train_loss"), ringShm.at("epochs").at(0).at("train_loss"));

  const json libMpi = train({"--strategy", "allreduce", "--library", "mpi"});
  const json libDefault = train({"--strategy", "allreduce", "--library", "gloo"});
  ASSERT_EQ(libMpi.at("status"), "ok") << libMpi.dump();
  EXPECT_EQ(libMpi.at("config").at("library"), "mpi");
  // gloo is the CPU's default library: recorded as absent, like every file before --library.
  EXPECT_FALSE(libDefault.at("config").contains("library")) << libDefault.dump();
  EXPECT_EQ(libMpi.at("epochs").at(0).at("train_loss"), libDefault.at("epochs").at(0).at("train_loss"));
}

// ---- refused before anything is launched --------------------------------------------------

TEST(MpiCli, WhatCannotRunIsRefusedUpFront) {
  std::vector<test::BadInput> cases = {
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--launcher", "srun"}, "--launcher: unknown launcher 'srun'"},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--launcher", ""}, "--launcher: must not be empty"},
      {{"run", "--strategy", "ring_all_reduce", "--library", "gloo"}, "--library: only the allreduce strategy"},
      {{"run", "--strategy", "allreduce", "--library", "ring"}, "--library: ring is not a library allreduce"},
      {{"run", "--strategy", "allreduce", "--library", "nope"}, "--library: unknown algorithm 'nope'"},
      // One rank per node, so the point itself is runnable and the launcher is what is refused.
      {{"run", "--strategy", "ring_all_reduce", "--nnodes", "2", "--nproc_per_node", "1", "--master_port", "29777",
        "--launcher", "mpirun"},
       "--launcher mpirun: tpbench starts mpirun on one node only"},
  };
  if (mpiCompiled()) {
    cases.push_back({{"allreduce", "--algos", "mpi", "--n_gpus", "2", "--launcher", "tpbench"},
                     "--launcher tpbench: --algos mpi needs ranks started by mpirun"});
    cases.push_back({{"allreduce", "--algos", "ring", "--transport", "mpi", "--n_gpus", "2", "--launcher", "tpbench"},
                     "--launcher tpbench: --transport mpi needs ranks started by mpirun"});
    cases.push_back({{"run", "--strategy", "allreduce", "--library", "mpi", "--launcher", "tpbench"},
                     "--launcher tpbench: --library mpi needs ranks started by mpirun"});
    // Without mpirun on PATH, asking for MPI says so (tpbench itself is started by its path).
    cases.push_back({{"allreduce", "--algos", "mpi", "--n_gpus", "2"}, "--algos mpi: mpirun is not on PATH",
                     {{"PATH", "/nonexistent"}}});
  }
  test::expectAllRefused({}, cases);
}

// mpirun, Open MPI's TCP layers and tpbench's store listen on loopback alone on one host
// (mpirun's defaults listen on 0.0.0.0 and [::]): the mpi transport, and the mpi library.
TEST(MpiCli, NothingListensBeyondLoopback) {
  TPB_SKIP_WITHOUT_MPI();
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--strategy", "ring_all_reduce", "--transport", "mpi"},
        std::vector<std::string>{"--strategy", "allreduce", "--library", "mpi"}}) {
    std::vector<std::string> args = {"run", "--n_gpus", "2", "--batch_size", "32", "--epochs", "2",
                                     "--train_size", "512", "--test_size", "256", "--timeout", "120"};
    args.insert(args.end(), extra.begin(), extra.end());
    test::Listeners seen;
    const auto r = runCli(args, {}, test::sampleListeners(seen));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_FALSE(seen.loopback.empty()) << "saw no listening socket at all";
    for (const std::string& a : seen.other) ADD_FAILURE() << extra.back() << ": a process of the run listened on " << a;
  }
}

// ---- mpirun's output, read by the launcher (no MPI needed) ---------------------------------

TEST(MpirunOutput, TagsBecomeRankPrefixesAndFailuresTheirReason) {
  {
    MpirunOutput o;
    EXPECT_EQ(o.retag("[1,2]<stdout>:hello"), "[rank 2] hello");
    EXPECT_EQ(o.retag("[3,0]<stderr>:error: [x.cc:1] boom"), "[rank 0] error: [x.cc:1] boom");
    EXPECT_EQ(o.retag("[3,1]<stderr>:error: later"), "[rank 1] error: later");
    EXPECT_EQ(o.retag("---------"), "[mpirun] ---------");
    EXPECT_EQ(o.describeFailure(1, 0), "rank 0: error: [x.cc:1] boom");  // the first error line wins
    o.retag("  Process name: [[3,1],1]");  // ... unless mpirun names the rank that failed first
    EXPECT_EQ(o.describeFailure(1, 0), "rank 1: error: later");
  }
  {
    MpirunOutput o;
    o.retag("[1,0]<stderr>:progress");
    o.retag("mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9 (Killed).");
    EXPECT_EQ(o.describeFailure(137, 0), "rank 2 was killed by signal 9 (SIGKILL) (reported by mpirun)");
  }
  {
    MpirunOutput o;
    o.retag("  Process name: [[16557,1],1]");
    o.retag("  Exit code:    3");
    EXPECT_EQ(o.describeFailure(3, 0), "rank 1 exited with code 3 (reported by mpirun)");
  }
  {
    MpirunOutput o;
    o.retag("some launcher trouble");
    o.retag("----------");
    EXPECT_EQ(o.describeFailure(0, 15), "mpirun was killed by signal 15 (SIGTERM): some launcher trouble");
  }
}

TEST(MpirunOutput, TheCommandExportsTheRendezvousAndOversubscribes) {
  const auto argv = mpirunArgv(3, {"/bin/tpbench", "worker", "--job", "j"}, {"MASTER_ADDR", "TPB_RUN_ID"});
  std::string joined;
  for (const auto& a : argv) joined += a + " ";
  const std::string root = geteuid() == 0 ? "--allow-run-as-root " : "";
  EXPECT_EQ(joined, "mpirun -np 3 " + root +
                        "--oversubscribe --bind-to none --tag-output --stdin none --mca btl self,vader --mca "
                        "oob_tcp_if_include 127.0.0.1/8 -x MASTER_ADDR -x TPB_RUN_ID /bin/tpbench worker --job j ");
  // --bind core: a core each, ranks beyond the cores sharing them rather than refused.
  const auto bound = mpirunArgv(3, {"/bin/tpbench"}, {}, true);
  const auto at = std::find(bound.begin(), bound.end(), "--bind-to");
  ASSERT_NE(at, bound.end());
  ASSERT_NE(at + 1, bound.end());
  EXPECT_EQ(at[1], "core:overload-allowed");
}

// `library` stands for the device's default library, and `--algos all` runs each library once.
TEST(LibraryAllreduce, LibraryStandsForTheDevicesDefault) {
  const AllreduceAlgo& lib = findAllreduce("--algos", "library");
  ASSERT_TRUE(lib.standsFor);
  EXPECT_EQ(lib.standsFor(Device::Cpu), "gloo");
  EXPECT_EQ(lib.standsFor(Device::Cuda), "nccl");
  EXPECT_EQ(findAllreduce("--algos", "gloo").origin, Origin::Library);
  for (const auto& a : allreduceAlgos()) {
    if (a.name == "library") continue;
    EXPECT_FALSE(a.standsFor) << a.name;
  }
}

}  // namespace
}  // namespace tpb
