// Two hosts for real: node 0 and node 1 in network namespaces of their own, joined by a veth
// pair (tests/netns_util.h), each running `tpbench ... --nnodes 2 --node_rank N`. Suite Netns*
// carries the ctest label `netns`; where namespaces cannot be made (not root) it skips with the
// reason.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sched.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/store_client.h"
#include "tests/cli_util.h"
#include "tests/listeners_util.h"
#include "tests/netns_util.h"

namespace tpb::test {
namespace {

using namespace std::string_literals;

using nlohmann::json;

// A different port per test process and case: tests may run side by side (each in namespaces of
// its own, so they could not collide anyway; the host's one-node reference runs use port 0).
std::string portFor(int test) { return std::to_string(20000 + (getpid() % 2000) * 4 + test); }

// Tiny points: a 784-32-10 MLP over 512 samples, batch 32 per rank, one epoch.
std::vector<std::string> tinyTraining() {
  return {"--batch_size", "32", "--train_size", "512", "--test_size", "200", "--epochs", "1", "--hidden", "32",
          "--timeout", "120"};
}

std::vector<std::string> twoNodes(int node, const std::string& port, const std::string& rendezvousS) {
  return {"--nnodes",      "2", "--node_rank",  std::to_string(node), "--nproc_per_node", "2",
          "--master_addr", NetnsPair::kAddress[0], "--master_port", port, "--rendezvous_timeout", rendezvousS};
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Every run of `two` (two hosts) trained as its counterpart in `ref` (one host): same strategy,
// N=4 over gloo, the same loss to rel 1e-5 and the same accuracy.
void expectSameTraining(const json& two, const json& ref, std::size_t runs) {
  ASSERT_EQ(two["runs"].size(), runs);
  ASSERT_EQ(ref["runs"].size(), runs);
  for (std::size_t i = 0; i < runs; ++i) {
    const json& a = two["runs"][i];
    const json& b = ref["runs"][i];
    SCOPED_TRACE(a["config"]["strategy"].get<std::string>());
    EXPECT_EQ(a["status"], "ok");
    EXPECT_EQ(a["config"]["strategy"], b["config"]["strategy"]);
    EXPECT_EQ(a["config"]["n_gpus"], 4);
    EXPECT_EQ(a["config"]["transport"], "gloo");
    const double la = a["epochs"][0]["train_loss"], lb = b["epochs"][0]["train_loss"];
    EXPECT_GT(la, 0.0);
    EXPECT_NEAR(la, lb, 1e-5 * std::fabs(lb));
    EXPECT_EQ(a["epochs"][0]["test_accuracy"], b["epochs"][0]["test_accuracy"]);
  }
}

// torchrun's arguments on node `node` of two (static rendezvous at node 0's address), starting
// two tpbench ranks with `args`; python runs unbuffered (-u), so its --tee copy of the ranks'
// output reaches the node's file line by line.
std::vector<std::string> torchrunArgs(int node, const std::string& port, const std::vector<std::string>& args) {
  return concat({"-u", "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--nnodes", "2", "--node_rank",
                 std::to_string(node), "--nproc_per_node", "2", "--master_addr", NetnsPair::kAddress[0],
                 "--master_port", port, "--no_python", TPB_BINARY},
                args);
}

// Waits (at most 60 s) until rank 0 has printed its first epoch of 100 in node 0's output.
void awaitFirstEpoch(const NetnsPair::Node& node0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (readText(node0.outPath).find("epoch 1/100") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(readText(node0.outPath).find("epoch 1/100"), std::string::npos) << readText(node0.errPath);
}

#define TPB_NETNS_OR_SKIP(pair) \
  if (!(pair).skipReason().empty()) GTEST_SKIP() << (pair).skipReason()

// Debian's PyTorch, whose torch.distributed.run is torchrun.
constexpr const char* kPython = "/usr/bin/python3";
#define TPB_TORCHRUN_OR_SKIP()                                                 \
  if (runProgram(kPython, {"-c", "import torch.distributed.run"}).exitCode != 0) \
  GTEST_SKIP() << kPython << " cannot import torch.distributed.run (torchrun)"

// One long point of ring_all_reduce at N=4 over gloo (batch 8: 64 steps an epoch, 100 epochs):
// it runs far longer than a failure takes to spread.
std::vector<std::string> longPoint() {
  return {"sweep", "--strategies", "ring_all_reduce", "--n_gpus", "4", "--transport", "gloo", "--batch_size", "8",
          "--train_size", "2048", "--test_size", "100", "--epochs", "100", "--hidden", "32", "--timeout", "120"};
}

// Starts longPoint() with `extra` on both hosts under tpbench's own launcher, node 0 writing
// `out`, and waits until rank 0 has trained its first epoch.
void startLongPoint(NetnsPair& pair, const std::string& port, const std::string& out,
                    const std::vector<std::string>& extra, NetnsPair::Node& node0, NetnsPair::Node& node1) {
  const std::vector<std::string> sweep = concat(longPoint(), extra);
  node1 = pair.start(1, concat(sweep, twoNodes(1, port, "60")));
  node0 = pair.start(0, concat(concat(sweep, twoNodes(0, port, "60")), {"--out", out}));
  ASSERT_NO_FATAL_FAILURE(awaitFirstEpoch(node0));
}

// ring_all_reduce, ddp and param_server over gloo on two hosts with two ranks each (N = 4) train
// exactly as the same four ranks on one host do.
TEST(NetnsTwoHosts, TrainingMatchesOneHost) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  const std::vector<std::string> sweep = concat(
      {"sweep", "--strategies", "ring_all_reduce,ddp,param_server", "--n_gpus", "4", "--transport", "gloo"},
      tinyTraining());
  const std::string port = portFor(0), twoPath = tempPath("two_hosts.json"), onePath = tempPath("one_host.json");
  const std::string tracePath = tempPath("two_hosts.trace.json");
  // Every node traces (the same command); node 0 alone writes the results and the trace.
  const auto node1 = pair.start(1, concat(sweep, concat(twoNodes(1, port, "60"), {"--trace", tracePath})));
  const auto node0 =
      pair.start(0, concat(concat(sweep, twoNodes(0, port, "60")), {"--out", twoPath, "--trace", tracePath}));
  const CliResult r0 = pair.wait(node0), r1 = pair.wait(node1);
  ASSERT_EQ(r0.exitCode, 0) << r0.err;
  ASSERT_EQ(r1.exitCode, 0) << r1.err;
  const CliResult one = runCli(concat(sweep, {"--out", onePath}));
  ASSERT_EQ(one.exitCode, 0) << one.err;

  const json two = readJson(twoPath), ref = readJson(onePath);
  expectSameTraining(two, ref, 3);
  for (std::size_t i = 0; i < two["runs"].size() && i < ref["runs"].size(); ++i)
    std::printf("%s N=4: final train loss %.6f on two hosts, %.6f on one\n",
                two["runs"][i]["config"]["strategy"].get<std::string>().c_str(),
                two["runs"][i]["summary"]["final_train_loss"].get<double>(),
                ref["runs"][i]["summary"]["final_train_loss"].get<double>());
  for (const json& a : two["runs"]) {
    // Node 1 prints its own ranks' outcome per point, never the table.
    EXPECT_NE(r1.out.find(a["config"]["strategy"].get<std::string>() + " N=4 batch 32: node 1 (ranks 2..3) ok"),
              std::string::npos)
        << r1.out;
  }
  EXPECT_EQ(r1.out.find("# strategy"), std::string::npos) << r1.out;
  EXPECT_NE(r0.out.find("# strategy"), std::string::npos) << r0.out;
  // The trace holds every rank of both hosts, on node 0's clock (one kernel: no offset).
  const json points = readJson(tracePath).at("tpbench").at("points");
  ASSERT_EQ(points.size(), 3u);
  for (const json& p : points) {
    ASSERT_EQ(p.at("ranks").size(), 4u) << p.dump();
    for (const json& rk : p.at("ranks")) {
      EXPECT_EQ(rk.at("host"), "tpb-node" + std::to_string(rk.at("rank").get<int>() / 2)) << rk.dump();
      EXPECT_EQ(rk.at("clock_offset_ns"), 0);
    }
  }
  // Each node's host name and address, as it registered them.
  const json& nodes = two["meta"]["node_hosts"];
  ASSERT_EQ(nodes.size(), 2u) << two["meta"].dump();
  for (int n = 0; n < 2; ++n) {
    EXPECT_EQ(nodes[n]["node_rank"], n);
    EXPECT_EQ(nodes[n]["host"], "tpb-node" + std::to_string(n));
    EXPECT_EQ(nodes[n]["address"], NetnsPair::kAddress[n]);
  }
}

// torch_ddp's Python children across hosts (a c10d TCPStore at node 0's address, Gloo on each
// node's interface toward the other): they train as tpbench's ddp does on the same two hosts.
TEST(NetnsTwoHosts, TorchDdpTrainsLikeDdp) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch.distributed (Debian's python3-torch is not installed)";
  const std::vector<std::string> sweep =
      concat({"sweep", "--strategies", "ddp,torch_ddp", "--n_gpus", "4"}, tinyTraining());
  const std::string port = portFor(0), out = tempPath("torch_ddp_two_hosts.json");
  const auto node1 = pair.start(1, concat(sweep, twoNodes(1, port, "60")));
  const auto node0 = pair.start(0, concat(concat(sweep, twoNodes(0, port, "60")), {"--out", out}));
  // Node 0's listeners while it runs: the processes are gone once wait returns.
  Listeners seen;
  std::atomic<bool> over{false};
  std::thread sampler([&] {
    for (; !over; std::this_thread::sleep_for(std::chrono::milliseconds(5))) addListeners(node0.pid, seen);
  });
  const CliResult r0 = pair.wait(node0);
  over = true;
  sampler.join();
  const CliResult r1 = pair.wait(node1);
  ASSERT_EQ(r0.exitCode, 0) << r0.err;
  ASSERT_EQ(r1.exitCode, 0) << r1.err;
  // Everything on node 0's address toward node 1 (tpbench's store, Gloo's pairs): the children
  // meet in tpbench's store, none hosts a TCPStore (PyTorch 1.13's binds the wildcard address).
  for (const std::string& a : seen.other)
    EXPECT_EQ(a.rfind(std::string(NetnsPair::kAddress[0]) + ":", 0), 0u) << "node 0 listened on " << a;
  EXPECT_GT(seen.other.size(), 1u) << "saw no Gloo pair listening beside the store";
  const json runs = readJson(out).at("runs");
  ASSERT_EQ(runs.size(), 2u);
  for (const json& r : runs) ASSERT_EQ(r.at("status"), "ok") << r.dump();
  EXPECT_NEAR(runs[1]["summary"]["final_train_loss"].get<double>(), runs[0]["summary"]["final_train_loss"].get<double>(),
              1e-4);
}

// torchrun on each host (static rendezvous: node 0's agent hosts the store at --master_addr), each
// starting two tpbench ranks: the ranks of both hosts connect and train as on one host.
TEST(NetnsTwoHosts, TorchrunOnEachHostTrainsLikeOneHost) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  TPB_TORCHRUN_OR_SKIP();
  const std::string port = portFor(3), twoPath = tempPath("torchrun_hosts.json"), onePath = tempPath("torchrun_one.json");
  const std::vector<std::string> sweep =
      concat({"sweep", "--strategies", "ring_all_reduce,ddp", "--n_gpus", "4", "--transport", "gloo"}, tinyTraining());
  // The same command on both: rank 0 alone writes.
  auto torchrun = [&](int node) { return torchrunArgs(node, port, concat(sweep, {"--out", twoPath})); };
  const auto node1 = pair.start(1, torchrun(1), kPython);
  const auto node0 = pair.start(0, torchrun(0), kPython);
  const CliResult r0 = pair.wait(node0), r1 = pair.wait(node1);
  ASSERT_EQ(r0.exitCode, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exitCode, 0) << r1.out << r1.err;
  const CliResult one = runCli(concat(sweep, {"--out", onePath}));
  ASSERT_EQ(one.exitCode, 0) << one.err;
  const json two = readJson(twoPath), ref = readJson(onePath);
  expectSameTraining(two, ref, 2);
  const json& meta = two["meta"];
  EXPECT_EQ(meta["launcher"], "torchrun");
  EXPECT_EQ(meta["world_size"], 4);
  EXPECT_EQ(meta["nodes"], 2) << meta.dump();
}

// The pid of the rank of this test that torchrun started as global rank `rank`; -1 when none.
int torchrunRank(int rank) {
  const std::string tag = testTag();
  DIR* d = opendir("/proc");
  int found = -1;
  while (dirent* e = d ? readdir(d) : nullptr) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string proc = "/proc/" + std::string(e->d_name);
    if (readText(proc + "/cmdline").rfind(std::string(TPB_BINARY) + '\0' + "sweep", 0) != 0) continue;
    const std::string env = '\0' + readText(proc + "/environ") + '\0';
    // std::string literals: a "\0..." const char* would end at its first byte and match anything.
    if (env.find('\0' + tag + '\0') != std::string::npos && env.find("\0TORCHELASTIC_RUN_ID="s) != std::string::npos &&
        env.find("\0RANK="s + std::to_string(rank) + '\0') != std::string::npos)
      found = pid;
  }
  if (d) closedir(d);
  return found;
}

// Under torchrun on each host, a rank killed on node 1 fails the point on node 0 within
// seconds, recorded with the rank and host it lost, and the job ends on both hosts (an external
// launcher's job stops at its first failed point).
TEST(NetnsTwoHosts, TorchrunKilledRankOnNodeOneIsRecordedOnNodeZero) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  TPB_TORCHRUN_OR_SKIP();
  const std::string port = portFor(2), out = tempPath("torchrun_killed.json");
  auto torchrun = [&](int node) { return torchrunArgs(node, port, concat(longPoint(), {"--out", out})); };
  const auto node1 = pair.start(1, torchrun(1), kPython);
  const auto node0 = pair.start(0, torchrun(0), kPython);
  // Rank 0's epoch lines reach node0.outPath through torchrun's --tee, which python buffers in
  // 8 KiB blocks when its stdout is a file unless run with -u (as above): without it the first
  // line came only after some 75 epochs, past this deadline on a loaded machine.
  ASSERT_NO_FATAL_FAILURE(awaitFirstEpoch(node0));
  const int victim = torchrunRank(3);
  ASSERT_GT(victim, 0) << "rank 3 not found";
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const auto killedAt = std::chrono::steady_clock::now();
  const CliResult r0 = pair.wait(node0), r1 = pair.wait(node1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killedAt).count();
  EXPECT_NE(r0.exitCode, 0) << r0.err;
  EXPECT_NE(r1.exitCode, 0) << r1.err;
  EXPECT_LT(seconds, 30.0) << "both hosts' jobs ended";
  const json doc = readJson(out);
  ASSERT_EQ(doc["runs"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["runs"][0]["status"], "failed");
  // torchrun does not tell the ranks why one died: the record holds a surviving rank's view,
  // which names the peer it lost and that peer's host (torchrun's own log names the signal).
  const std::string error = doc["runs"][0]["error"];
  EXPECT_NE(error.find("rank 3"), std::string::npos) << error << "\nnode 0:\n" << r0.err << "\nnode 1:\n" << r1.err;
  EXPECT_NE(error.find(NetnsPair::kAddress[1]), std::string::npos) << error;
  RecordProperty("error", error);
  RecordProperty("seconds_to_end_both_hosts", std::to_string(seconds));
}

// A rank killed on node 1 ends the point on node 0 within seconds, recorded as failed with the
// host, rank and reason; both nodes then run the next point.
TEST(NetnsTwoHosts, KilledRankOnNodeOneFailsThePointEverywhere) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  // Point 1 (batch 8: 64 steps an epoch, 100 epochs) runs far longer than the kill takes to
  // spread; point 2 (batch 512: one step an epoch) is quick.
  const std::vector<std::string> sweep = {
      "sweep", "--strategies", "ring_all_reduce", "--n_gpus", "4", "--batch_size", "8,512", "--train_size", "2048",
      "--test_size", "100", "--epochs", "100", "--hidden", "32", "--timeout", "120"};
  const std::string port = portFor(1), out = tempPath("killed.json");
  const auto node1 = pair.start(1, concat(sweep, twoNodes(1, port, "60")));
  const auto node0 = pair.start(0, concat(concat(sweep, twoNodes(0, port, "60")), {"--out", out}));

  // Once rank 0 has printed its first epoch, SIGKILL rank 3 (on node 1).
  ASSERT_NO_FATAL_FAILURE(awaitFirstEpoch(node0));
  int victim = -1;
  for (int pid : workerPids())
    if (('\0' + readText("/proc/" + std::to_string(pid) + "/environ") + '\0').find(std::string(1, '\0') + "RANK=3" + '\0') !=
        std::string::npos)
      victim = pid;
  ASSERT_GT(victim, 0) << "rank 3 not found";
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const auto killedAt = std::chrono::steady_clock::now();

  // Node 0 saves the failed point (the results file is rewritten after every point).
  double seconds = -1;
  while (std::chrono::steady_clock::now() - killedAt < std::chrono::seconds(30)) {
    const std::string text = readText(out);
    if (!text.empty() && json::parse(text)["runs"].size() >= 1) {
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killedAt).count();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(seconds, 0) << "node 0 recorded nothing within 30 s of the kill";
  EXPECT_LT(seconds, 10.0);
  std::printf("node 0 saved the failed point %.2f s after rank 3 on node 1 was killed\n", seconds);

  const CliResult r0 = pair.wait(node0), r1 = pair.wait(node1);
  EXPECT_EQ(r0.exitCode, 1) << r0.err;
  EXPECT_EQ(r1.exitCode, 1) << r1.err;
  const json doc = readJson(out);
  ASSERT_EQ(doc["runs"].size(), 2u) << doc.dump();
  EXPECT_EQ(doc["runs"][0]["status"], "failed");
  const std::string why = "rank 3 on host tpb-node1 (10.77.0.2) was killed by signal 9 (SIGKILL)";
  EXPECT_EQ(doc["runs"][0]["error"], why);
  EXPECT_NE(r1.err.find(why), std::string::npos) << r1.err;  // node 1 records the same failure
  EXPECT_EQ(doc["runs"][1]["status"], "ok") << doc["runs"][1].dump();
  EXPECT_EQ(doc["runs"][1]["config"]["batch_size"], 512);
  EXPECT_NE(r1.out.find("ring_all_reduce N=4 batch 512: node 1 (ranks 2..3) ok"), std::string::npos) << r1.out;
}

// The link between the hosts is cut mid-point, so that nothing closes and nothing errs: node 0's
// rank 0 misses node 1's heartbeats and fails the point naming the silent rank and its host,
// node 1's ranks and launcher find node 0's store silent, and both jobs end within seconds of
// --heartbeat_timeout instead of the transports' --timeout.
TEST(NetnsTwoHosts, CutLinkFailsThePointOnBothHostsWithinTheHeartbeat) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  const std::string port = portFor(3), out = tempPath("cut.json");
  NetnsPair::Node node0, node1;
  ASSERT_NO_FATAL_FAILURE(startLongPoint(pair, port, out, {"--heartbeat_timeout", "3"}, node0, node1));
  ASSERT_NO_FATAL_FAILURE(pair.cut(1));
  const auto cutAt = std::chrono::steady_clock::now();
  const CliResult r0 = pair.wait(node0);
  const double s0 = std::chrono::duration<double>(std::chrono::steady_clock::now() - cutAt).count();
  const CliResult r1 = pair.wait(node1);
  const double s1 = std::chrono::duration<double>(std::chrono::steady_clock::now() - cutAt).count();
  std::printf("after the cut: node 0 ended in %.2f s, node 1 in %.2f s (--heartbeat_timeout 3)\n", s0, s1);
  EXPECT_EQ(r0.exitCode, 1) << r0.err;
  EXPECT_EQ(r1.exitCode, 1) << r1.err;
  EXPECT_LT(s0, 20.0);
  EXPECT_LT(s1, 20.0);
  const json doc = readJson(out);
  ASSERT_EQ(doc["runs"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["runs"][0]["status"], "failed");
  const std::string error = doc["runs"][0]["error"];
  EXPECT_NE(error.find("on host tpb-node1 (10.77.0.2) stopped answering: no heartbeat for 3 s (--heartbeat_timeout)"),
            std::string::npos)
      << error;
  EXPECT_NE(r1.err.find("node 0's rendezvous store at 10.77.0.1:" + port + " has not answered for 3 s"),
            std::string::npos)
      << r1.err;
  EXPECT_NE(r1.err.find("node 1 stops its sweep here"), std::string::npos) << r1.err;
  RecordProperty("node0_err", r0.err);
  RecordProperty("node1_err", r1.err);
}

// Node 1 freezes (every process of it stopped, as a machine that hangs: its sockets stay open and
// silent): node 0 fails the point naming a rank of node 1 within seconds of --heartbeat_timeout.
// Thawed, node 1 finds its point gone and ends too.
TEST(NetnsTwoHosts, FrozenNodeOneFailsThePointOnNodeZeroWithinTheHeartbeat) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  const std::string out = tempPath("frozen.json");
  NetnsPair::Node node0, node1;
  ASSERT_NO_FATAL_FAILURE(startLongPoint(pair, portFor(2), out, {"--heartbeat_timeout", "3"}, node0, node1));
  ASSERT_EQ(kill(-node1.pid, SIGSTOP), 0);
  const auto frozenAt = std::chrono::steady_clock::now();
  const auto r0 = pair.waitUpTo(node0, std::chrono::seconds(60));
  kill(-node1.pid, SIGCONT);
  ASSERT_TRUE(r0.has_value()) << "node 0 still runs 60 s after node 1 froze";
  const double s0 = std::chrono::duration<double>(std::chrono::steady_clock::now() - frozenAt).count();
  std::printf("node 1 frozen: node 0 ended in %.2f s (--heartbeat_timeout 3)\n", s0);
  EXPECT_EQ(r0->exitCode, 1) << r0->err;
  EXPECT_LT(s0, 20.0);
  const json doc = readJson(out);
  ASSERT_EQ(doc["runs"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["runs"][0]["status"], "failed");
  const std::string error = doc["runs"][0]["error"];
  EXPECT_NE(error.find("on host tpb-node1 (10.77.0.2) stopped answering: no heartbeat for 3 s"), std::string::npos)
      << error;
  const auto r1 = pair.waitUpTo(node1, std::chrono::seconds(30));
  ASSERT_TRUE(r1.has_value()) << "node 1 still runs 30 s after it was thawed";
  EXPECT_NE(r1->exitCode, 0) << r1->err;
}

// The same cut under torchrun on each host: rank 0's watchdog misses node 1's heartbeats and
// records the point as failed, naming the silent rank and its host, within seconds of
// --heartbeat_timeout, then leaves; node 1's ranks find the store silent and leave too.
TEST(NetnsTwoHosts, TorchrunCutLinkIsRecordedOnNodeZeroWithinTheHeartbeat) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  TPB_TORCHRUN_OR_SKIP();
  const std::string port = portFor(1), out = tempPath("torchrun_cut.json");
  auto torchrun = [&](int node) {
    return torchrunArgs(node, port, concat(longPoint(), {"--heartbeat_timeout", "3", "--out", out}));
  };
  const auto node1 = pair.start(1, torchrun(1), kPython);
  const auto node0 = pair.start(0, torchrun(0), kPython);
  ASSERT_NO_FATAL_FAILURE(awaitFirstEpoch(node0));
  ASSERT_NO_FATAL_FAILURE(pair.cut(1));
  const auto cutAt = std::chrono::steady_clock::now();
  // Rank 0 records the point (over the placeholder saved when it began) before it leaves.
  std::string error;
  double s0 = -1;
  while (std::chrono::steady_clock::now() - cutAt < std::chrono::seconds(60)) {
    const std::string text = readText(out);
    if (text.find("stopped answering") != std::string::npos) {
      s0 = std::chrono::duration<double>(std::chrono::steady_clock::now() - cutAt).count();
      const json doc = json::parse(text);
      ASSERT_EQ(doc["runs"].size(), 1u) << doc.dump();
      EXPECT_EQ(doc["runs"][0]["status"], "failed");
      error = doc["runs"][0]["error"];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(s0, 0) << "node 0 recorded no lost rank within 60 s of the cut\n" << readText(node0.errPath);
  std::printf("after the cut: node 0 recorded the lost rank in %.2f s (--heartbeat_timeout 3)\n", s0);
  EXPECT_LT(s0, 20.0);
  EXPECT_NE(error.find("on host tpb-node1 stopped answering: no heartbeat for 3 s (--heartbeat_timeout)"),
            std::string::npos)
      << error;
  // Node 1's ranks leave once the store has been silent that long.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto node1Said = [&] { return readText(node1.outPath) + readText(node1.errPath); };
  while (node1Said().find("has not answered for 3 s") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_NE(node1Said().find("has not answered for 3 s (--heartbeat_timeout)"), std::string::npos) << node1Said();
  // Whether torchrun's agents end as well is torchrun's affair: node 0's was seen to log its
  // rank's exit and then wait on past 60 s with node 1 unreachable. The namespaces' teardown
  // stops both.
  const auto r0 = pair.waitUpTo(node0, std::chrono::seconds(5));
  std::printf("node 0's torchrun %s\n",
              r0 ? ("ended, exit " + std::to_string(r0->exitCode)).c_str() : "still ran 5 s after that");
}

// Node 1 never starts: node 0 fails the point at the rendezvous timeout, naming ranks 2 and 3.
TEST(NetnsTwoHosts, MissingNodeFailsAtTheRendezvousTimeout) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  const std::string out = tempPath("missing.json");
  const auto node0 = pair.start(
      0, concat(concat(concat({"run", "--strategy", "ring_all_reduce", "--n_gpus", "4"}, tinyTraining()),
                       twoNodes(0, portFor(2), "3")),
                {"--out", out}));
  const CliResult r0 = pair.wait(node0);
  EXPECT_EQ(r0.exitCode, 1) << r0.err;
  EXPECT_LT(r0.seconds, 30.0);
  const json doc = readJson(out);
  ASSERT_EQ(doc["runs"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["status"], "failed");
  const std::string error = doc["runs"][0]["error"];
  EXPECT_NE(error.find("ranks 2, 3 of 4 did not arrive within 3 s (--rendezvous_timeout"), std::string::npos) << error;
  EXPECT_NE(error.find("on host tpb-node0 (10.77.0.1)"), std::string::npos) << error;
  EXPECT_EQ(error.find("interrupted"), std::string::npos) << error;
}

// Node 0's store listens on its --master_addr alone (main's TCPStore: the wildcard address). A
// process on the hosts' network without the job's secret (here: in node 1's namespace) can
// reach node 0's store but cannot join it or write a key: neither with c10d's TCPStore client,
// which any PyTorch user has (main's store took its keys), nor with tpbench's own client and a
// wrong secret. The same client with the job's secret gets in, so the port was reachable.
TEST(NetnsTwoHosts, TheStoreListensOnMasterAddrAndAStrangerCannotWriteKeys) {
  NetnsPair pair;
  TPB_NETNS_OR_SKIP(pair);
  const std::string port = portFor(1), out = tempPath("stranger.json");
  NetnsPair::Node node0, node1;
  ASSERT_NO_FATAL_FAILURE(startLongPoint(pair, port, out, {}, node0, node1));
  // Node 0's processes listen on its address toward node 1 (the store at --master_addr, Gloo's
  // pairs) or on loopback, never on the wildcard address.
  Listeners seen;
  for (int i = 0; i < 20; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(20))) addListeners(node0.pid, seen);
  EXPECT_TRUE(seen.other.count(std::string(NetnsPair::kAddress[0]) + ":" + port)) << "the store was not seen listening";
  for (const std::string& a : seen.other)
    EXPECT_EQ(a.rfind(std::string(NetnsPair::kAddress[0]) + ":", 0), 0u) << "node 0 listened on " << a;
  const pid_t child = fork();
  if (child == 0) {
    const int ns = open(("/var/run/netns/" + pair.nsName(1)).c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) _exit(10);
    const auto p = static_cast<std::uint16_t>(std::stoi(port));
    int code = 0;
    // c10d's client, in a process of its own: it may die of what our server says (its listener
    // thread reads the greeting as a length). Only its key coming back counts.
    const pid_t c10dClient = fork();
    if (c10dClient == 0) {
      c10d::TCPStoreOptions o;
      o.port = p;
      o.isServer = false;
      o.timeout = std::chrono::seconds(3);
      try {
        auto tcp = c10::make_intrusive<c10d::TCPStore>(NetnsPair::kAddress[0], o);
        tcp->set("tpb/stranger", std::vector<std::uint8_t>{'x'});
        if (tcp->get("tpb/stranger") == std::vector<std::uint8_t>{'x'}) _exit(1);
      } catch (const std::exception&) {
      }
      _exit(0);
    }
    int c10dStatus = 0;
    waitpid(c10dClient, &c10dStatus, 0);
    if (WIFEXITED(c10dStatus) && WEXITSTATUS(c10dStatus) == 1) code = 1;
    // Refused for the secret, by the store's answer: an exception of any other kind (no route, a
    // timeout) would say nothing about the secret.
    for (const char* wrong : {"", "not-the-secret"}) {
      try {
        StoreClient c(NetnsPair::kAddress[0], p, wrong, std::chrono::seconds(3));
        code = 2;
      } catch (const std::exception& e) {
        if (std::string(e.what()).find("refused this process: its job secret differs") == std::string::npos) {
          std::fprintf(stderr, "with secret '%s': %s\n", wrong, e.what());
          code = 5;
        }
      }
    }
    try {
      StoreClient c(NetnsPair::kAddress[0], p, NetnsPair::kSecret, std::chrono::seconds(3));
      if (c.check({"tpb/stranger"})) code = 3;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "with the secret: %s\n", e.what());
      code = 4;
    }
    _exit(code);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  const int code = WEXITSTATUS(status);
  EXPECT_NE(code, 10) << "could not enter node 1's namespace";
  EXPECT_NE(code, 1) << "a stranger set a key through c10d's TCPStore client and read it back";
  EXPECT_NE(code, 2) << "a client without the secret was admitted";
  EXPECT_NE(code, 3) << "the stranger's key is in the store";
  EXPECT_NE(code, 4) << "node 0's store was not reachable from node 1's network with the secret";
  EXPECT_NE(code, 5) << "a client without the secret failed for another reason than the store's refusal";
}

}  // namespace
}  // namespace tpb::test
