// tests/netns_util.h — two "hosts" on one machine: two network namespaces joined by a veth pair,
// node 0 at 10.77.0.1 and node 1 at 10.77.0.2 (addresses that exist only inside them), and
// tpbench started inside either, as `tpbench ... --node_rank N` would be on a real host. Each
// node also gets a UTS namespace of its own with host name tpb-node<N>, so host names in
// failures and results meta tell the nodes apart.
//
// Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's `ip`; where the namespaces cannot
// be made, skipReason() says why and the tests skip. The destructor kills whatever it started
// (its whole process group) and deletes both namespaces, which takes the veth pair with them,
// also when a test fails half-way.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli_util.h"

namespace tpb::test {

class NetnsPair {
 public:
  static constexpr const char* kAddress[2] = {"10.77.0.1", "10.77.0.2"};
  static constexpr const char* kSecret = "netns-test-job-secret";

  // A node's tpbench, running.
  struct Node {
    pid_t pid = -1;
    std::string outPath, errPath;
    std::chrono::steady_clock::time_point start;
  };

  NetnsPair() {
    const std::string id = std::to_string(getpid());
    ns_[0] = "tpb" + id + "n0";
    ns_[1] = "tpb" + id + "n1";
    veth_[0] = "tpv" + id + "a";
    veth_[1] = "tpv" + id + "b";
    const std::string &veth0 = veth_[0], &veth1 = veth_[1];
    if (geteuid() != 0) {
      skip_ = "network namespaces need root (this test runs as uid " + std::to_string(geteuid()) + ")";
      return;
    }
    const std::vector<std::string> steps = {
        "ip netns add " + ns_[0],
        "ip netns add " + ns_[1],
        "ip link add " + veth0 + " netns " + ns_[0] + " type veth peer name " + veth1 + " netns " + ns_[1],
        "ip -n " + ns_[0] + " addr add " + kAddress[0] + "/24 dev " + veth0,
        "ip -n " + ns_[1] + " addr add " + kAddress[1] + "/24 dev " + veth1,
        "ip -n " + ns_[0] + " link set " + veth0 + " up",
        "ip -n " + ns_[1] + " link set " + veth1 + " up",
        "ip -n " + ns_[0] + " link set lo up",
        "ip -n " + ns_[1] + " link set lo up",
    };
    for (const auto& step : steps) {
      made_ = true;
      const std::string cmd = step + " 2>&1";
      if (std::system(cmd.c_str()) != 0) {
        skip_ = "cannot make network namespaces here: `" + step + "` failed";
        return;
      }
    }
  }

  ~NetnsPair() {
    for (const Node& n : started_) {
      if (n.pid <= 0) continue;
      kill(-n.pid, SIGKILL);
      waitpid(n.pid, nullptr, 0);
    }
    if (!made_) return;
    for (const auto& ns : ns_) {
      const std::string cmd = "ip netns del " + ns + " >/dev/null 2>&1";
      (void)!std::system(cmd.c_str());
    }
  }
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  const std::string& skipReason() const { return skip_; }
  const std::string& nsName(int node) const { return ns_[node]; }

  // Takes node `node`'s end of the link down: from then on nothing passes either way, and
  // nothing tells either side (no reset, no closed socket), as when a cable is pulled.
  void cut(int node) {
    const std::string cmd = "ip -n " + ns_[node] + " link set " + veth_[node] + " down 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  // Starts `tpbench args...` (or `program args...`, e.g. torchrun) as node `node`, in its own
  // process group, output to files.
  Node start(int node, const std::vector<std::string>& args, const std::string& program = TPB_BINARY) {
    Node n;
    // Unique in the test process: a later test must never read an earlier one's output.
    static int launches = 0;
    n.outPath = tempPath("node" + std::to_string(node) + "_" + std::to_string(launches++) + ".out");
    n.errPath = n.outPath.substr(0, n.outPath.size() - 4) + ".err";
    const std::string hostname = "tpb-node" + std::to_string(node);
    std::vector<std::string> argv = {"ip", "netns", "exec", ns_[node], "unshare", "--uts", "sh", "-c",
                                     "hostname " + hostname + " && exec \"$0\" \"$@\"", program};
    argv.insert(argv.end(), args.begin(), args.end());
    n.start = std::chrono::steady_clock::now();
    n.pid = fork();
    if (n.pid == 0) {
      setpgid(0, 0);
      const int out = open(n.outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int err = open(n.errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, 1);
      dup2(err, 2);
      close_range(3, ~0U, 0);
      // Tells this test's workers from those of tests running beside it (workerPids()).
      setenv("TPB_TEST_PROCESS", std::to_string(getppid()).c_str(), 1);
      setenv("OPENBLAS_NUM_THREADS", "1", 1);
      // Both hosts' launchers hold the job's secret, as every node of a several-host run must.
      setenv("TPB_JOB_SECRET", kSecret, 1);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execvp("ip", cargv.data());
      _exit(127);
    }
    started_.push_back(n);
    return n;
  }

  // Waits for `n` to end and returns what it printed.
  CliResult wait(const Node& n) { return *waitUpTo(n, std::chrono::hours(24)); }

  // The same, giving up after `limit` (nullopt: still running; the destructor ends it).
  std::optional<CliResult> waitUpTo(const Node& n, std::chrono::milliseconds limit) {
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (waitpid(n.pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      usleep(20000);
    }
    for (auto& s : started_)
      if (s.pid == n.pid) s.pid = -1;
    CliResult r;
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - n.start).count();
    r.out = readText(n.outPath);
    r.err = readText(n.errPath);
    return r;
  }

 private:
  std::string ns_[2], veth_[2];
  std::string skip_;
  bool made_ = false;
  std::vector<Node> started_;
};

}  // namespace tpb::test
