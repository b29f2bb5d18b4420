// Training as a user runs it: accuracy of every strategy, a rank killed in the middle of a
// sweep, and a two-"node" launch on one machine.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

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
  json runs = readJson(out).at("runs");
  const json sweep = readJson(out2);
  for (const auto& x : sweep.at("runs")) runs.push_back(x);
  ASSERT_EQ(runs.size(), 6u);
  for (const auto& run : runs) {
    SCOPED_TRACE(run.at("config").at("strategy").get<std::string>());
    EXPECT_EQ(run.at("status"), "ok");
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
      {}, [&](pid_t, const std::atomic<bool>& done) {
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

int freePort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

TEST(TrainCli, TwoNodesOnOneMachineTrainLikeOneNode) {
  const std::string port = std::to_string(freePort());
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
  std::thread t([&] { node1 = runCli(args(1, out1)); });
  const auto node0 = runCli(args(0, out0));
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

}  // namespace
}  // namespace tpb
