// Training as a user runs it: accuracy of every strategy, a rank killed in the middle of a
// sweep, and a two-"node" launch on one machine.
#include <gtest/gtest.h>

#include <map>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli_util.h"

namespace tpb {
namespace {

using nlohmann::json;
using test::runCli;

using test::readJson;

TEST(TrainCli, EveryStrategyLearnsTheSyntheticTask) {
  const std::string out = test::tempPath("acc.json");
  // single runs on one device; the five others on two.
  auto r = runCli({"run", "--strategy", "single", "--n_gpus", "1", "--batch_size", "64", "--epochs", "3",
                   "--train_size", "8192", "--test_size", "2000", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string out2 = test::tempPath("acc2.json");
  r = runCli({"sweep", "--strategies", "param_server,ring_all_reduce,allreduce,ddp,data_parallel",
              "--n_gpus", "2", "--batch_size", "64", "--epochs", "3", "--train_size", "8192",
              "--test_size", "2000", "--out", out2});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // What carried each point: Gloo's TCP for the library ones, not the run's shm.
  EXPECT_NE(r.err.find("ddp N=2 batch 64 train_size 8192 epochs 3 over gloo-tcp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ring_all_reduce N=2 batch 64 train_size 8192 epochs 3 over shm"), std::string::npos) << r.err;
  const std::map<std::string, std::string> carriers = {{"single", "in-process"},    {"param_server", "shm"},
                                                       {"ring_all_reduce", "shm"},  {"allreduce", "gloo-tcp"},
                                                       {"ddp", "gloo-tcp"},         {"data_parallel", "in-process"}};
  json runs = readJson(out).at("runs");
  const json sweep = readJson(out2);
  for (const auto& x : sweep.at("runs")) runs.push_back(x);
  ASSERT_EQ(runs.size(), 6u);
  for (const auto& run : runs) {
    SCOPED_TRACE(run.at("config").at("strategy").get<std::string>());
    EXPECT_EQ(run.at("status"), "ok");
    EXPECT_EQ(run.at("carrier"), carriers.at(run.at("config").at("strategy")));
    EXPECT_EQ(run.at("config").at("transport"), "shm");  // the run's, which compare matches on
    ASSERT_EQ(run.at("epochs").size(), 3u);
    EXPECT_GE(run.at("summary").at("final_test_accuracy").get<double>(), 0.90);
    // Loss must fall from epoch to epoch on this easy, deterministic task.
    EXPECT_LT(run.at("epochs")[2].at("train_loss").get<double>(), run.at("epochs")[0].at("train_loss").get<double>());
    for (const auto& e : run.at("epochs")) {
      EXPECT_GT(e.at("wall_s").get<double>(), 0);
      EXPECT_GT(e.at("samples_per_s").get<double>(), 0);
      EXPECT_GE(e.at("comm_s").get<double>(), 0);
    }
  }
  std::remove(out.c_str());
  std::remove(out2.c_str());
}

// Rank `rank` of a running launch, found through /proc (its environment says RANK=...).
int findWorker(int rank) {
  for (int pid : test::workerPids()) {
    const std::string env = test::readText("/proc/" + std::to_string(pid) + "/environ");
    if (env.find(std::string("\0RANK=", 6) + std::to_string(rank) + '\0') != std::string::npos) return pid;
  }
  return -1;
}

TEST(TrainCli, SigkilledRankFailsOnlyItsPointAndTheSweepGoesOn) {
  const std::string out = test::tempPath("sweepkill.json");
  std::atomic<bool> killed{false};
  const auto r = runCli(
      {"sweep", "--strategies", "ring_all_reduce", "--n_gpus", "2", "--batch_size", "32", "--epochs", "3",
       "--train_size", "8192", "--repeat", "3", "--out", out},
      {}, [&](pid_t, const std::atomic<bool>& done, const test::SaidSoFar&) {
        // Wait for the first point to be saved, then kill rank 1 of the next one.
        for (int i = 0; i < 600 && !killed && !done; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          std::ifstream in(out);
          if (!in.good()) continue;
          json doc;
          try {
            doc = json::parse(in);
          } catch (...) {
            continue;
          }
          if (doc.at("runs").size() != 1) continue;
          std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // into its training
          const int pid = findWorker(1);
          if (pid > 0 && kill(pid, SIGKILL) == 0) killed = true;
        }
      });
  ASSERT_TRUE(killed) << "never found rank 1 of the second point";
  EXPECT_EQ(r.exitCode, 1) << r.err;
  const json doc = readJson(out);
  ASSERT_EQ(doc.at("runs").size(), 3u) << "the sweep must finish the other points";
  int ok = 0, failed = 0;
  for (const auto& run : doc.at("runs")) {
    if (run.at("status") == "ok") ++ok;
    if (run.at("status") == "failed") {
      ++failed;
      const std::string err = run.at("error");
      EXPECT_NE(err.find("rank 1"), std::string::npos) << err;
      EXPECT_NE(err.find("SIGKILL"), std::string::npos) << err;
    }
  }
  EXPECT_EQ(ok, 2);
  EXPECT_EQ(failed, 1);
  EXPECT_TRUE(test::workerPids().empty());
  std::remove(out.c_str());
}

// A listening socket on a loopback port, to find that port taken.
struct BusyPort {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  BusyPort() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd, 1);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~BusyPort() { close(fd); }
};

// A valid gzipped MNIST of `train` and `test` blank samples (the launcher reads it whole).
std::string fakeMnistDir(std::uint32_t train, std::uint32_t test) {
  const std::string dir = test::tempPath("mnist");
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, std::uint32_t magic, std::uint32_t count) {
    std::vector<unsigned char> b;
    const std::uint32_t images = magic == 2051;
    for (std::uint32_t v : {magic, count, 28u, 28u})
      for (int i = 0; i < 4 && b.size() < (images ? 16u : 8u); ++i) b.push_back(static_cast<unsigned char>(v >> (24 - 8 * i)));
    b.resize(b.size() + std::size_t{count} * (images ? 784 : 1));
    gzFile f = gzopen((dir + "/" + name + ".gz").c_str(), "wb");
    gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
    gzclose(f);
  };
  write("train-images-idx3-ubyte", 2051, train);
  write("train-labels-idx1-ubyte", 2049, train);
  write("t10k-images-idx3-ubyte", 2051, test);
  write("t10k-labels-idx1-ubyte", 2049, test);
  return dir;
}

// One case per class of bad input (docs/cli.md, "Bad input"); each of these used to reach the
// ranks (exit 1), or ran and recorded something else than was asked for.
TEST(TrainCli, EveryClassOfBadInputIsRefusedBeforeLaunching) {
  const BusyPort busy;
  const std::string mnist = fakeMnistDir(100, 50);
  const std::string out = test::tempPath("bad.json");
  test::expectAllRefused(
      {"run", "--strategy", "single", "--n_gpus", "1", "--epochs", "1"},
      {
          // negative values for unsigned flags (CLI11 wrapped them to 2^64-1)
          {{"--train_size", "-1"}, "--train_size"},
          {{"--test_size", "-5"}, "--test_size"},
          {{"--seed", "-1"}, "--seed"},
          // signed flags in octal or hex (CLI11's strtoll in base 0 read "010" as 8 epochs)
          {{"--epochs", "010"}, "--epochs"},
          {{"--max_steps", "0x2"}, "--max_steps"},
          {{"--max_steps", "-01"}, "--max_steps"},
          {{"--timeout", "1e3"}, "--timeout"},
          // NaN, inf and negative reals
          {{"--lr", "nan"}, "--lr"},
          {{"--lr", "inf"}, "--lr"},
          {{"--momentum", "nan"}, "--momentum"},
          {{"--bucket_mb", "inf"}, "--bucket_mb"},
          // no steps at all, or a negative limit other than -1
          {{"--max_steps", "0"}, "--max_steps"},
          {{"--max_steps", "-5"}, "--max_steps"},
          // beyond the dataset: synthetic's fixed sizes, and MNIST's IDX headers
          {{"--train_size", "70000"}, "--train_size 70000 exceeds the 60000 training samples of synthetic"},
          {{"--test_size", "20000"}, "--test_size 20000 exceeds the 10000 test samples of synthetic"},
          {{"--dataset", "mnist:" + mnist, "--train_size", "200"}, "--train_size 200 exceeds the 100 training samples"},
          // a model that cannot fit: 1.1e12 parameters
          {{"--hidden", "1048576,1048576"}, "--hidden: "},
          // empty values
          {{"--out", ""}, "--out: must not be empty"},
          {{"--transport", ""}, "--transport: must not be empty"},
          {{"--master_addr", ""}, "--master_addr: must not be empty"},
          {{"--bind", "socket"}, "--bind: unknown placement 'socket'"},
          // layout and ports
          {{"--nproc_per_node", "-1"}, "--nproc_per_node"},
          {{"--master_port", "70000"}, "--master_port"},
          {{"--master_port", std::to_string(busy.port)}, "--master_port " + std::to_string(busy.port)},
          // an unusable TMPDIR
          {{}, "TMPDIR: ", {{"TMPDIR", ""}}},
          {{}, "TMPDIR: /no/such/dir", {{"TMPDIR", "/no/such/dir"}}},
      });
  test::expectAllRefused(
      {"sweep", "--strategies", "single", "--n_gpus", "1", "--epochs", "1"},
      {
          {{"--train_size", "-5..10", "--out", out}, "--train_size"},
          {{"--train_size", "1000,70000", "--out", out}, "--train_size 70000 exceeds"},
          {{"--max_steps", "0", "--out", out}, "--max_steps"},
          {{"--lr", "nan", "--out", out}, "--lr"},
          {{"--out", ""}, "--out: must not be empty"},
          // an absurd sweep: the count asked for is named
          {{"--batch_size", "1..20000", "--out", out}, "1 --strategies x 1 --n_gpus x 20000 --batch_size"},
          {{"--repeat", "20000", "--out", out}, "20000 --repeat = 20000 points"},
      });
  std::filesystem::remove_all(mnist);
  std::remove(out.c_str());
}

// Repeated list entries count once (docs/cli.md, "Duplicates"): an alias and its name, n_gpus
// 1,1 and so on make one point, not several.
TEST(TrainCli, DuplicateListEntriesRunOnce) {
  const std::string out = test::tempPath("dup.json");
  const auto r = runCli({"sweep", "--strategies", "ddp,ring_all_reduce_builtin,ddp", "--n_gpus", "1,1..1",
                         "--batch_size", "64,64", "--train_size", "256,256", "--test_size", "100", "--epochs", "1",
                         "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readJson(out).at("runs").size(), 1u);
  std::remove(out.c_str());
}

// The final table shows the spread of repeats: each configuration's repeats, then a median row
// with their samples/s min-max; a configuration run once gets no such row.
TEST(TrainCli, FinalTableHasAMedianRowPerRepeatedConfiguration) {
  const std::string out = test::tempPath("repeats.json");
  const auto r = runCli({"sweep", "--strategies", "single", "--n_gpus", "1", "--batch_size", "64,128", "--train_size",
                         "256", "--test_size", "100", "--epochs", "1", "--repeat", "3", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<double> rates;
  const json doc = readJson(out);
  for (const auto& run : doc.at("runs")) {
    if (run.at("config").at("batch_size") == 64) rates.push_back(run.at("summary").at("samples_per_s").get<double>());
  }
  ASSERT_EQ(rates.size(), 3u);
  std::sort(rates.begin(), rates.end());
  std::istringstream lines(r.out);
  std::vector<std::string> medians;
  std::string batch64;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" median ") == std::string::npos) continue;
    medians.push_back(line);
    std::istringstream fields(line);
    std::string strategy;
    int n = 0, batch = 0;
    fields >> strategy >> n >> batch;
    if (batch == 64) batch64 = line;
  }
  ASSERT_EQ(medians.size(), 2u) << r.out;  // batch 64 and batch 128
  char expected[96];
  std::snprintf(expected, sizeof expected, " median %12.0f ", rates[1]);
  EXPECT_NE(batch64.find(expected), std::string::npos) << r.out << "\nwanted " << expected;
  std::snprintf(expected, sizeof expected, "(samples/s min-max %.0f-%.0f, 3 repeats)", rates[0], rates[2]);
  EXPECT_NE(batch64.find(expected), std::string::npos) << r.out << "\nwanted " << expected;
  std::remove(out.c_str());
}

// Several nodes need the job's secret, the same on each (docs/launchers.md, "The store").
const std::vector<std::pair<std::string, std::string>> kTwoNodeSecret = {{"TPB_JOB_SECRET", "train-cli-test"}};

TEST(TrainCli, TwoNodesOnOneMachineTrainLikeOneNode) {
  const std::string port = std::to_string(test::freePort());
  const std::vector<std::string> common = {"run", "--strategy", "ring_all_reduce", "--n_gpus", "4",
                                           "--batch_size", "32", "--epochs", "1", "--train_size", "4096",
                                           "--test_size", "1000"};
  auto args = [&](int node, const std::string& out) {
    std::vector<std::string> a = common;
    for (const std::string& x : {std::string("--nnodes"), std::string("2"), std::string("--node_rank"),
                                 std::to_string(node), std::string("--nproc_per_node"), std::string("2"),
                                 std::string("--master_addr"), std::string("127.0.0.1"),
                                 std::string("--master_port"), port, std::string("--out"), out})
      a.push_back(x);
    return a;
  };
  const std::string out0 = test::tempPath("node0.json"), out1 = test::tempPath("node1.json");
  test::CliResult node1;
  std::thread t([&] { node1 = runCli(args(1, out1), kTwoNodeSecret); });
  const auto node0 = runCli(args(0, out0), kTwoNodeSecret);
  t.join();
  ASSERT_EQ(node0.exitCode, 0) << node0.err;
  ASSERT_EQ(node1.exitCode, 0) << node1.err;
  const json two = readJson(out0).at("runs").at(0);
  EXPECT_EQ(two.at("status"), "ok");
  EXPECT_EQ(two.at("config").at("transport"), "gloo");

  // The same training on one node (shm) must give the very same numbers: same ring, same order.
  const std::string outOne = test::tempPath("onenode.json");
  auto a = common;
  a.push_back("--out");
  a.push_back(outOne);
  ASSERT_EQ(runCli(a).exitCode, 0);
  const json one = readJson(outOne).at("runs").at(0);
  EXPECT_EQ(one.at("config").at("transport"), "shm");
  EXPECT_EQ(two.at("epochs")[0].at("train_loss"), one.at("epochs")[0].at("train_loss"));
  EXPECT_EQ(two.at("summary").at("final_test_accuracy"), one.at("summary").at("final_test_accuracy"));
  for (const auto& f : {out0, out1, outOne}) std::remove(f.c_str());
}

// Every node runs the same command, --out included, as on a cluster's shared file system: node 0
// alone writes the file (the others neither lock nor create it). A resumed sweep skips on every
// node what node 0's file holds, also on a node started without --resume, and runs the rest.
TEST(TrainCli, TwoNodesShareOneOutAndResumeAlike) {
  const std::string port = std::to_string(test::freePort()), out = test::tempPath("shared_out.json");
  auto args = [&](int node, const std::string& batches, bool resume) {
    std::vector<std::string> a = {"sweep", "--strategies", "ring_all_reduce", "--n_gpus", "4", "--batch_size", batches,
                                  "--epochs", "1", "--train_size", "1024", "--test_size", "200", "--hidden", "32",
                                  "--nnodes", "2", "--node_rank", std::to_string(node), "--nproc_per_node", "2",
                                  "--master_addr", "127.0.0.1", "--master_port", port, "--rendezvous_timeout", "30",
                                  "--out", out};
    if (resume) a.push_back("--resume");
    return a;
  };
  auto both = [&](const std::string& batches, bool resume0, bool resume1) {
    test::CliResult node1;
    std::thread t([&] { node1 = runCli(args(1, batches, resume1), kTwoNodeSecret); });
    const auto node0 = runCli(args(0, batches, resume0), kTwoNodeSecret);
    t.join();
    return std::make_pair(node0, node1);
  };
  const auto [a0, a1] = both("32,64", false, false);
  ASSERT_EQ(a0.exitCode, 0) << a0.err;
  ASSERT_EQ(a1.exitCode, 0) << a1.err;
  ASSERT_EQ(readJson(out).at("runs").size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(out + ".lock"));

  // Node 1 is not told to resume: it follows node 0 all the same.
  const auto [b0, b1] = both("32,64,128", true, false);
  ASSERT_EQ(b0.exitCode, 0) << b0.err;
  ASSERT_EQ(b1.exitCode, 0) << b1.err;
  const json runs = readJson(out).at("runs");
  ASSERT_EQ(runs.size(), 3u) << runs.dump();
  for (const json& r : runs) EXPECT_EQ(r.at("status"), "ok") << r.dump();
  EXPECT_EQ(runs[2].at("config").at("batch_size"), 128);
  EXPECT_NE(b0.err.find("ring_all_reduce N=4 b=64: already in " + out + ", skipped (--resume)"), std::string::npos)
      << b0.err;
  EXPECT_NE(b1.out.find("ring_all_reduce N=4 batch 128: node 1 (ranks 2..3) ok"), std::string::npos) << b1.out;
  EXPECT_EQ(b1.out.find("batch 32: node 1"), std::string::npos) << b1.out;
  // Node 0's final table shows the file's points beside the one it ran.
  std::size_t fromFile = 0;
  for (std::size_t at = b0.out.find("(from the file: --resume)"); at != std::string::npos;
       at = b0.out.find("(from the file: --resume)", at + 1))
    ++fromFile;
  EXPECT_EQ(fromFile, 2u) << b0.out;
  EXPECT_NE(b0.out.find("  ring_all_reduce     4    128       1024       ok"), std::string::npos) << b0.out;
  std::remove(out.c_str());
}

// An interrupted sweep says where its finished points are and that --resume goes on; the final
// table of a sweep with skipped points says why they were skipped, once per reason.
TEST(TrainCli, AnInterruptedSweepNamesItsFileAndResume) {
  const std::string out = test::tempPath("interrupted_sweep.json");
  std::remove(out.c_str());
  const auto r = runCli({"sweep", "--strategies", "single,ring_all_reduce", "--n_gpus", "1,2", "--batch_size", "32",
                         "--train_size", "1024", "--test_size", "200", "--epochs", "1", "--timeout", "60", "--out", out},
                        {{"TPB_FAULT", "1:hang:3"}}, test::interruptOnceSaid("injecting 'hang'"));
  EXPECT_EQ(r.exitCode, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted: the finished points are saved in " + out +
                       ", the interrupted one as failed; the same command with --resume runs the missing and failed "
                       "points"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("# skipped 1 of "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(single): single trains on one device (n_gpus 1 only)"), std::string::npos) << r.out;
  std::remove(out.c_str());
}

// Node 1 started with another --epochs than node 0: the point fails at once on both nodes,
// naming the difference, instead of hanging or training two different things.
TEST(TrainCli, TwoNodesWithDifferentCommandsFailThePointNamingTheDifference) {
  const std::string port = std::to_string(test::freePort()), out = test::tempPath("mismatch.json");
  auto args = [&](int node, const std::string& epochs) {
    return std::vector<std::string>{"run", "--strategy", "ring_all_reduce", "--n_gpus", "4", "--batch_size", "32",
                                    "--epochs", epochs, "--train_size", "1024", "--test_size", "200", "--hidden", "32",
                                    "--nnodes", "2", "--node_rank", std::to_string(node), "--nproc_per_node", "2",
                                    "--master_addr", "127.0.0.1", "--master_port", port, "--rendezvous_timeout", "60",
                                    "--out", out};
  };
  test::CliResult node1;
  std::thread t([&] { node1 = runCli(args(1, "2"), kTwoNodeSecret); });
  const auto node0 = runCli(args(0, "1"), kTwoNodeSecret);
  t.join();
  EXPECT_EQ(node0.exitCode, 1) << node0.err;
  EXPECT_EQ(node1.exitCode, 1) << node1.err;
  EXPECT_LT(node0.seconds, 30.0) << "node 0 waited for the rendezvous timeout";
  const json run = readJson(out).at("runs").at(0);
  EXPECT_EQ(run.at("status"), "failed");
  const std::string error = run.at("error");
  EXPECT_NE(error.find("runs another point than node 0 (start every node with the same command): config.epochs is "
                       "2 here, 1 on node 0"),
            std::string::npos)
      << error;
  EXPECT_NE(node1.err.find("config.epochs is 2 here, 1 on node 0"), std::string::npos) << node1.err;
  std::remove(out.c_str());
}

}  // namespace
}  // namespace tpb
