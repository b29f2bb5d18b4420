// `tpbench run|sweep|allreduce` started as the ranks of a job by torchrun, mpirun, or two
// processes carrying Slurm's variables: the same training as tpbench's own launcher, one
// writer, refusals on every rank, and a killed rank that ends the job without a hang or an
// orphan. Tests skip, saying why, where torchrun or mpirun is missing.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "comm/transports.h"
#include "harness/external_job.h"
#include "record/trace_file.h"
#include "tests/cli_util.h"

namespace tpb {
namespace {

using nlohmann::json;
using test::CliResult;
using test::readJson;
using test::runCli;
using test::runProgram;

const char* kPython = "/usr/bin/python3";

// `name` found on PATH, or "".
std::string onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, colon - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return "";
}

bool haveTorchrun() {
  if (access(kPython, X_OK) != 0) return false;
  return runProgram(kPython, {"-c", "import torch.distributed.run"}).exitCode == 0;
}

// mpirun as root on a machine with fewer cores than ranks.
std::vector<std::string> mpirunArgs(int np) {
  return {"--allow-run-as-root", "--oversubscribe", "-np", std::to_string(np), TPB_BINARY};
}

// torchrun's arguments; --redirects/--tee 1 work around torch 1.13 on Python >= 3.11, whose
// default "0" parses to None there (and nothing else changes: rank output still reaches us).
// -u: torchrun's copy of the ranks' output (--tee) reaches its stdout, a file here, as it is
// printed, not in 8 KiB blocks (PYTHONUNBUFFERED is not set in CI).
std::vector<std::string> torchrunArgs(bool standalone, int port) {
  std::vector<std::string> a{"-u", "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--nproc_per_node", "2"};
  if (standalone) a.push_back("--standalone");
  else a.insert(a.end(), {"--master_port", std::to_string(port)});
  a.insert(a.end(), {"--no_python", TPB_BINARY});
  return a;
}

// Live processes started under this test process (any command line: launchers, ranks).
std::vector<int> taggedProcesses() {
  const std::string tag = test::testTag();
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string env = test::readText("/proc/" + std::to_string(pid) + "/environ");
    if (('\0' + env + '\0').find('\0' + tag + '\0') != std::string::npos) pids.push_back(pid);
  }
  if (d) closedir(d);
  return pids;
}

std::size_t countOf(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// A small training point every launcher runs the same way.
std::vector<std::string> trainArgs(const std::string& out) {
  return {"run", "--strategy", "ring_all_reduce", "--batch_size", "32", "--epochs", "2",
          "--train_size", "1024", "--test_size", "500", "--out", out};
}

// The own launcher's run of trainArgs: the reference the external launches must equal.
json referenceRun() {
  static const json run = [] {
    const std::string out = test::tempPath("ext_ref.json");
    std::vector<std::string> args = trainArgs(out);
    args.insert(args.end(), {"--n_gpus", "2"});
    const CliResult r = runCli(args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    const json doc = readJson(out);
    std::remove(out.c_str());
    EXPECT_EQ(doc.at("meta").at("launcher"), "tpbench");
    return doc.at("runs").at(0);
  }();
  return run;
}

// `doc` holds one ok run whose config and per-epoch losses and accuracies equal the reference's,
// written by rank 0 of a one-node job of two ranks started by `launcher`.
void expectSameTraining(const json& doc, const std::string& launcher) {
  const json ref = referenceRun();
  ASSERT_EQ(doc.at("runs").size(), 1u) << doc.dump();
  const json& run = doc.at("runs").at(0);
  EXPECT_EQ(run.at("status"), "ok") << run.dump();
  EXPECT_EQ(run.at("config"), ref.at("config"));
  ASSERT_EQ(run.at("epochs").size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(run.at("epochs")[e].at("train_loss"), ref.at("epochs")[e].at("train_loss")) << "epoch " << e + 1;
    EXPECT_EQ(run.at("epochs")[e].at("test_accuracy"), ref.at("epochs")[e].at("test_accuracy"));
  }
  const json& meta = doc.at("meta");
  EXPECT_EQ(meta.at("launcher"), launcher);
  EXPECT_EQ(meta.at("world_size"), 2);
  EXPECT_EQ(meta.at("nodes"), 1);
  EXPECT_EQ(meta.at("ranks_per_node"), 2);
  ASSERT_EQ(meta.at("hosts").size(), 1u);
  EXPECT_EQ(meta.at("hosts")[0], meta.at("host"));
}

// Rank 0 alone prints the progress line and the table.
void expectOneReporter(const CliResult& r) {
  EXPECT_EQ(countOf(r.err, "[1/1]"), 1u) << r.err;
  EXPECT_EQ(countOf(r.out, "# strategy"), 1u) << r.out;
}

TEST(ExternalLaunch, TorchrunTrainsLikeTheOwnLauncher) {
  if (!haveTorchrun()) GTEST_SKIP() << kPython << " cannot import torch.distributed.run (torchrun)";
  // Static rendezvous: torchrun's agent hosts the store and every rank is its client; then
  // --standalone, where rank 0 hosts the store at the port torchrun picked.
  for (bool standalone : {false, true}) {
    SCOPED_TRACE(standalone ? "--standalone" : "static rendezvous (agent store)");
    const std::string out = test::tempPath("ext_torchrun.json");
    std::vector<std::string> args = torchrunArgs(standalone, test::freePort());
    for (const auto& a : trainArgs(out)) args.push_back(a);
    const CliResult r = runProgram(kPython, args);
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    expectSameTraining(readJson(out), "torchrun");
    expectOneReporter(r);
    std::remove(out.c_str());
  }
}

TEST(ExternalLaunch, MpirunTrainsLikeTheOwnLauncher) {
  const std::string mpirun = onPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  const std::string out = test::tempPath("ext_mpirun.json"), trace = test::tempPath("ext_mpirun.trace.json");
  std::vector<std::string> args = mpirunArgs(2);
  for (const auto& a : trainArgs(out)) args.push_back(a);
  args.insert(args.end(), {"--trace", trace});
  const CliResult r = runProgram(mpirun, args);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  expectSameTraining(readJson(out), "mpirun");
  expectOneReporter(r);
  // --trace under mpirun: rank 0 gathers both ranks' spans into the one file it writes.
  const json doc = readJson(trace);
  const json& points = doc.at("tpbench").at("points");
  ASSERT_EQ(points.size(), 1u);
  ASSERT_EQ(points[0].at("ranks").size(), 2u);
  std::set<int> tids;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("name") == "step") tids.insert(e.at("tid").get<int>());
  EXPECT_EQ(tids, (std::set<int>{traceTid(0, 0), traceTid(1, 0)}));
  std::remove(out.c_str());
  std::remove(trace.c_str());
}

TEST(ExternalLaunch, TwoProcessesWithSlurmVariablesTrain) {
  const std::string out = test::tempPath("ext_slurm.json");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // What srun sets for a step of two tasks on one node; the port comes from the job id.
  auto slurmEnv = [&](int rank) {
    return std::vector<std::pair<std::string, std::string>>{
        {"SLURM_PROCID", std::to_string(rank)}, {"SLURM_LOCALID", std::to_string(rank)},
        {"SLURM_NTASKS", "2"}, {"SLURM_NTASKS_PER_NODE", "2"}, {"SLURM_NNODES", "1"}, {"SLURM_NODEID", "0"},
        {"SLURM_STEP_NODELIST", host}, {"SLURM_JOB_ID", std::to_string(getpid())}, {"SLURM_STEP_ID", "0"}};
  };
  CliResult r0, r1;
  std::thread other([&] { r1 = runCli(trainArgs(out), slurmEnv(1)); });
  r0 = runCli(trainArgs(out), slurmEnv(0));
  other.join();
  ASSERT_EQ(r0.exitCode, 0) << r0.err;
  ASSERT_EQ(r1.exitCode, 0) << r1.err;
  expectSameTraining(readJson(out), "slurm");
  expectOneReporter(r0);
  // The other rank prints nothing at all: no progress, no epochs, no table.
  EXPECT_EQ(r1.out, "");
  EXPECT_EQ(r1.err, "");
  std::remove(out.c_str());
}

TEST(ExternalLaunch, MpirunSweepWritesEveryPoint) {
  const std::string mpirun = onPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  const std::string out = test::tempPath("ext_sweep.json");
  std::vector<std::string> args = mpirunArgs(2);
  for (const auto& a : {"sweep", "--strategies", "ring_all_reduce", "--n_gpus", "1..2", "--batch_size", "32",
                        "--epochs", "1", "--train_size", "512", "--test_size", "200", "--out"})
    args.push_back(a);
  args.push_back(out);
  const CliResult r = runProgram(mpirun, args);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const json doc = readJson(out);
  ASSERT_EQ(doc.at("runs").size(), 2u) << doc.dump();
  for (int i = 0; i < 2; ++i) {
    const json& run = doc.at("runs")[i];
    EXPECT_EQ(run.at("config").at("n_gpus"), i + 1);
    EXPECT_EQ(run.at("status"), "ok") << run.dump();
    EXPECT_EQ(run.at("epochs").size(), 1u);
  }
  // N = 1 ran on rank 0 alone: one process, no transport traffic, the same samples.
  EXPECT_EQ(doc.at("runs")[0].at("epochs")[0].at("samples"), 512);
  EXPECT_EQ(countOf(r.err, "[1/2]"), 1u) << r.err;
  EXPECT_EQ(countOf(r.err, "[2/2]"), 1u) << r.err;
  std::remove(out.c_str());
}

TEST(ExternalLaunch, MpirunAllreduceVerifiesExactly) {
  const std::string mpirun = onPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  const std::string out = test::tempPath("ext_ar.json");
  std::vector<std::string> args = mpirunArgs(2);
  for (const auto& a : {"allreduce", "--algos", "ring,param_server,library", "--bytes", "4K,1M", "--iters", "3",
                        "--warmup", "1", "--out"})
    args.push_back(a);
  args.push_back(out);
  const CliResult r = runProgram(mpirun, args);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const json doc = readJson(out);
  ASSERT_EQ(doc.at("allreduce").size(), 6u) << doc.dump();  // 3 algorithms x 2 sizes at N = 2..2
  for (const auto& p : doc.at("allreduce")) {
    EXPECT_EQ(p.at("status"), "ok") << p.dump();
    EXPECT_EQ(p.at("n_gpus"), 2);
    EXPECT_EQ(p.at("wrong"), 0);
  }
  EXPECT_EQ(doc.at("meta").at("launcher"), "mpirun");
  EXPECT_EQ(countOf(r.out, "# allreduce  algo=ring"), 1u) << r.out;  // rank 0's tables only
  std::remove(out.c_str());
}

// Without --n_gpus, a command under an external launcher of W ranks uses: run all W, sweep
// every count, allreduce and collective every count from 2 (one rank has nothing to exchange).
TEST(ExternalLaunch, DefaultRankCountsPerCommand) {
  EXPECT_EQ(externalDefaultRanks("run", 4), "4");
  EXPECT_EQ(externalDefaultRanks("sweep", 4), "1..4");
  EXPECT_EQ(externalDefaultRanks("allreduce", 4), "2..4");
  EXPECT_EQ(externalDefaultRanks("collective", 4), "2..4");
  EXPECT_EQ(externalDefaultRanks("collective", 1), "1");
}

// Under mpirun -np 3, the N = 2 point leaves rank 2 idle: MPI_Init waits for every rank of the
// job, so each rank initialises MPI before the first point that uses it, and the mpi transport
// and the mpi allreduce run on the first N ranks. The ring's exact traffic comes through too.
TEST(ExternalLaunch, MpirunPointsOnFewerRanksUseMpi) {
  const std::string mpirun = onPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  bool mpi = false;
  for (const auto& t : transports()) mpi = mpi || t.name == "mpi";
  if (!mpi) GTEST_SKIP() << "this build has no MPI (libopenmpi-dev was not found at configure time)";
  const std::string out = test::tempPath("ext_mpi.json");
  std::vector<std::string> args = mpirunArgs(3);
  for (const auto& a : {"allreduce", "--algos", "ring,mpi", "--transport", "mpi", "--n_gpus", "2,3", "--bytes",
                        "4K,400012", "--iters", "2", "--warmup", "1", "--timeout", "60", "--out"})
    args.push_back(a);
  args.push_back(out);
  const CliResult r = runProgram(mpirun, args);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const json doc = readJson(out);
  ASSERT_EQ(doc.at("allreduce").size(), 8u) << doc.dump();  // 2 algorithms x N = 2, 3 x 2 sizes
  for (const auto& p : doc.at("allreduce")) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p.at("status"), "ok");
    EXPECT_EQ(p.at("wrong"), 0);
    EXPECT_EQ(p.at("transport"), "mpi");
    if (p.at("algo") != "ring") continue;
    // Ring allreduce: each rank sends 2(N-1)/N of the buffer (blocks of whole floats).
    const int n = p.at("n_gpus");
    const std::size_t count = p.at("count");
    std::size_t expected = 0;
    for (int b = 0; b < n; ++b) {
      const std::size_t block = count / n + (static_cast<std::size_t>(b) < count % n ? 1 : 0);
      expected += block;
    }
    const auto& sent = p.at("traffic").at("bytes_sent");
    ASSERT_EQ(sent.size(), static_cast<std::size_t>(n));
    std::size_t total = 0;
    for (const auto& b : sent) total += b.get<std::size_t>();
    // Over the whole ring every block travels N-1 times in each half.
    EXPECT_EQ(total, 2 * static_cast<std::size_t>(n - 1) * expected * sizeof(float));
  }
  std::remove(out.c_str());
}

// Runs `tpbench run` under mpirun -np 2 with TPB_FAULT=`fault`; expects the job to end non-zero
// within `limitS`, nothing left running, and the point recorded as failed. Returns its error.
std::string failedJobError(const std::string& fault, const std::string& timeout, double limitS) {
  const std::string mpirun = onPath("mpirun");
  const std::string out = test::tempPath("ext_fail.json");
  std::vector<std::string> args = mpirunArgs(2);
  for (const auto& a : {"run", "--strategy", "ring_all_reduce", "--n_gpus", "2", "--batch_size", "32", "--epochs",
                        "3", "--train_size", "8192", "--timeout"})
    args.push_back(a);
  args.insert(args.end(), {timeout, "--out", out});
  const CliResult r = runProgram(mpirun, args, {{"TPB_FAULT", fault}});
  EXPECT_NE(r.exitCode, 0) << r.err;
  EXPECT_LT(r.seconds, limitS) << r.err;
  // mpirun has reaped its ranks before it exits: nothing of this job may be left.
  EXPECT_TRUE(taggedProcesses().empty()) << "left running after mpirun exited";
  const json doc = readJson(out);
  std::remove(out.c_str());
  EXPECT_EQ(doc.at("runs").size(), 1u) << doc.dump();
  if (doc.at("runs").size() != 1u) return "";
  const json& run = doc.at("runs")[0];
  EXPECT_EQ(run.at("status"), "failed");
  EXPECT_EQ(run.at("config").at("n_gpus"), 2);
  return run.at("error").get<std::string>();
}

TEST(ExternalLaunch, KilledRankUnderMpirunEndsTheJobAndIsRecorded) {
  if (onPath("mpirun").empty()) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  // Rank 1 is SIGKILLed at its 5th step: mpirun tears the job down, and the results file keeps
  // the point rank 0 saved as failed before it started (or, when rank 0 saw the failure before
  // mpirun stopped it, what rank 0 saw).
  const std::string error = failedJobError("1:KILL:5", "60", 50);
  EXPECT_NE(error.find("rank"), std::string::npos) << error;
}

TEST(ExternalLaunch, HungRankUnderMpirunIsRecordedWithTheRankAndReason) {
  if (onPath("mpirun").empty()) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  // Rank 1 hangs at its 5th step: rank 0's watchdog (or its transport) gives up after --timeout,
  // records why, and exits 1; mpirun then stops rank 1.
  const std::string error = failedJobError("1:hang:5", "8", 40);
  EXPECT_TRUE(error.find("timed out") != std::string::npos || error.find("rank 0: ") != std::string::npos) << error;
  EXPECT_EQ(error.find("a rank died or the launcher stopped the job"), std::string::npos) << error;
}

TEST(ExternalLaunch, ConflictsAreRefusedOnEveryRankWithOneLine) {
  const std::string mpirun = onPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not on PATH (openmpi-bin)";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--n_gpus", "3"}, "--n_gpus"},                       // more ranks than the job has
      {{"sweep", "--n_gpus", "1..4", "--out", test::tempPath("x.json")}, "--n_gpus"},
      {{"allreduce", "--n_gpus", "2..3", "--bytes", "4K"}, "--n_gpus"},
      {{"run", "--nproc_per_node", "4"}, "--nproc_per_node"},      // disagrees with the launcher
      {{"run", "--nnodes", "2"}, "--nnodes"},
      {{"run", "--epochs", "-3"}, "--epochs"},                     // plain bad input, on every rank
      // Only rank 0 checks --out (it alone writes): it exits 2 at once, and mpirun ends rank 1.
      {{"run", "--out", "/proc/nonexistent/x.json"}, "--out"},
  };
  for (const auto& [extra, flag] : cases) {
    std::vector<std::string> args = mpirunArgs(2);
    args.insert(args.end(), extra.begin(), extra.end());
    SCOPED_TRACE(extra[0] + " " + extra[1] + " " + extra[2]);
    const CliResult r = runProgram(mpirun, args);
    EXPECT_EQ(r.exitCode, 2) << r.err;
    EXPECT_EQ(countOf(r.err, "tpbench: "), 1u) << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("[1/"), std::string::npos) << "a point was started: " << r.err;
    EXPECT_EQ(r.out, "");
  }
}

using Env = std::vector<std::pair<std::string, std::string>>;

// torchrun's variables for rank `rank` of two on this host, the store at a port nobody serves.
Env torchrunRank(int rank) {
  return {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(rank)},
          {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(test::freePort())}};
}

// Runs tpbench as one rank; stops it should it still run after `guard` s (a hang guard far above
// any refusal, far below the rendezvous a refusal used to wait for), so a wait fails the test
// (exit 137) instead of stalling it. Prints how long the rank took.
CliResult runRank(const std::vector<std::string>& args, const Env& env, int guard = 60) {
  const CliResult r = runCli(args, env, [guard](pid_t pid, const std::atomic<bool>& done, const test::SaidSoFar&) {
    for (int tenths = 0; tenths < guard * 10 && !done; ++tenths) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!done) kill(pid, SIGKILL);
  });
  std::printf("    %s ... exit %d after %.2f s\n", args[0].c_str(), r.exitCode, r.seconds);
  return r;
}

// A rank whose input is bad exits 2 at once, whatever its rank, without waiting at the rendezvous
// for ranks that never come: it once waited the 300 s rendezvous, whatever --timeout said.
TEST(ExternalLaunch, RefusalsComeAtOnceWithoutWaitingForTheOtherRanks) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--epochs", "0", "--timeout", "5"}, "--epochs"},
      {{"run", "--out", "/proc/nonexistent/x.json"}, "--out"},                 // rank 0 alone checks it
      {{"sweep", "--n_gpus", "1..3", "--out", test::tempPath("never.json")}, "--n_gpus"},
      {{"allreduce", "--iters", "0"}, "--iters"},
  };
  for (int rank : {0, 1}) {
    for (const auto& [args, flag] : cases) {
      // Rank 1 does not check --out: it joins, and the launcher ends it when rank 0 exits 2.
      if (rank == 1 && flag == "--out") continue;
      SCOPED_TRACE("rank " + std::to_string(rank) + ": " + args[0] + " " + args[1]);
      const CliResult r = runRank(args, torchrunRank(rank));
      EXPECT_EQ(r.exitCode, 2) << r.err;
      // Rank 0 prints the line; rank 1, not the first of its node, leaves it to rank 0.
      EXPECT_EQ(r.err.find(flag) != std::string::npos, rank == 0) << r.err;
      EXPECT_EQ(r.err.find("[1/"), std::string::npos) << r.err;
    }
  }
}

// The master's address is resolved before anything waits on it, and refused naming where it
// came from: it once went to the rendezvous, which failed later with exit 1.
TEST(ExternalLaunch, UnresolvableMasterIsRefusedNamingItsSource) {
  Env torchrun = torchrunRank(0);
  torchrun[4].second = "tpb-no-such-host.invalid";
  CliResult r = runRank({"run"}, torchrun);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("MASTER_ADDR tpb-no-such-host.invalid: cannot resolve it"), std::string::npos) << r.err;
  r = runRank({"allreduce", "--bytes", "4K"}, torchrun);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("MASTER_ADDR"), std::string::npos) << r.err;
  // --master_addr wins over MASTER_ADDR, and is then what is checked.
  r = runRank({"run", "--epochs", "0", "--master_addr", "127.0.0.1"}, torchrun);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("--epochs"), std::string::npos) << r.err;
  r = runRank({"run", "--master_addr", "tpb-no-such-host.invalid"}, torchrunRank(0));
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("--master_addr tpb-no-such-host.invalid"), std::string::npos) << r.err;
  // Slurm's master: the first host of the step.
  r = runRank({"run"}, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NNODES", "2"},
                        {"SLURM_STEP_NODELIST", "tpbnohost[1-2].invalid"}, {"SLURM_NTASKS_PER_NODE", "1"}});
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("SLURM_STEP_NODELIST tpbnohost1.invalid"), std::string::npos) << r.err;
}

// The rendezvous waits --rendezvous_timeout for ranks that never come (it waited --timeout), on
// rank 0, which hosts the store, and on a rank that cannot reach it.
TEST(ExternalLaunch, RendezvousHonoursItsTimeout) {
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const CliResult r = runRank({"run", "--rendezvous_timeout", "1", "--timeout", "30"}, torchrunRank(rank));
    EXPECT_EQ(r.exitCode, 1) << r.err;
    EXPECT_NE(r.err.find("--rendezvous_timeout"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tpb
