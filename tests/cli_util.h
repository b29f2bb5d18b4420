// tests/cli_util.h — runs the tpbench binary as a user would and captures what it says.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/file_util.h"

namespace tpb::test {

struct CliResult {
  int exitCode = -1;  // 128+signal when killed
  std::string out, err;
  double seconds = 0;
};

// Expects `r` to be bad input refused before anything ran: exit 2, one line on stderr naming
// `mustMention`, no progress line ("[1/...") and nothing on stdout.
inline void expectRefusedUpFront(const CliResult& r, const std::string& mustMention) {
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find(mustMention), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find("[1/"), std::string::npos) << "a point was started: " << r.err;
  EXPECT_EQ(r.out, "");
}

// The variable runCli puts in every child's environment (and so in the workers it launches):
// it tells this test process's workers from those of tests running beside it.
inline std::string testTag() { return "TPB_TEST_PROCESS=" + std::to_string(getpid()); }

// Runs `tpbench args...` with extra environment variables. `duringRun` runs on its own thread
// with the child's pid (e.g. to send it a signal) and must return soon after `done` turns true;
// runCli joins it before returning, so it may use the caller's locals. With `ownProcessGroup`
// the child leads a process group of its own (pgid = pid), so kill(-pid, sig) reaches it and
// everything it starts, as a terminal's or a job scheduler's signal would, and not the test.
// `said` tells whether the child has printed a text on stderr so far (a launcher forwards its
// ranks' lines as they come), for a `duringRun` that waits for a rank to reach some point.
class SaidSoFar {
 public:
  bool has(const std::string& text) const {
    std::lock_guard<std::mutex> lock(m_);
    return err_.find(text) != std::string::npos;
  }
  void append(const char* data, std::size_t n) {
    std::lock_guard<std::mutex> lock(m_);
    err_.append(data, n);
  }

 private:
  mutable std::mutex m_;
  std::string err_;
};
using DuringRun = std::function<void(pid_t pid, const std::atomic<bool>& done, const SaidSoFar& said)>;
// A duringRun that sends SIGINT to the command once it has said `text` on stderr (at most 30 s
// in), as Ctrl-C would: for a point interrupted in flight (TPB_FAULT's hang says "injecting 'hang'").
inline DuringRun interruptOnceSaid(const std::string& text) {
  return [text](pid_t pid, const std::atomic<bool>& done, const SaidSoFar& said) {
    for (int i = 0; i < 300 && !done && !said.has(text); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!done) kill(pid, SIGINT);
  };
}
// runCli for any program (`program` is a path): a launcher such as mpirun that starts tpbench.
inline CliResult runProgram(const std::string& program, const std::vector<std::string>& args,
                            const std::vector<std::pair<std::string, std::string>>& env = {},
                            const DuringRun& duringRun = nullptr, bool ownProcessGroup = false) {
  int outPipe[2], errPipe[2];
  if (pipe(outPipe) != 0 || pipe(errPipe) != 0) return {};
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    if (ownProcessGroup) setpgid(0, 0);
    dup2(outPipe[1], 1);
    dup2(errPipe[1], 2);
    // tpbench starts as from a shell, with stdin, stdout and stderr only: no descriptor of this
    // test process (other tests' pipes) reaches it.
    close_range(3, ~0U, 0);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    setenv("TPB_TEST_PROCESS", std::to_string(getppid()).c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  close(outPipe[1]);
  close(errPipe[1]);
  CliResult r;
  std::atomic<bool> done{false};
  std::thread watcher;
  SaidSoFar said;
  if (duringRun) watcher = std::thread([&] { duringRun(pid, done, said); });
  pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  int open = 2;
  char buf[4096];
  while (open > 0) {
    poll(fds, 2, 1000);
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(f.fd, buf, sizeof buf);
      if (n <= 0) {
        close(f.fd);
        f.fd = -1;
        --open;
      } else {
        (f.fd == outPipe[0] ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
        if (f.fd == errPipe[0]) said.append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  done = true;
  if (watcher.joinable()) watcher.join();
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

inline CliResult runCli(const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& env = {},
                        const DuringRun& duringRun = nullptr, bool ownProcessGroup = false) {
  return runProgram(TPB_BINARY, args, env, duringRun, ownProcessGroup);
}

// Pids of live tpbench worker processes started through this test process's runCli (whatever
// their parent is now: an orphaned worker counts), read from /proc.
inline std::vector<int> workerPids() {
  const std::string tag = testTag();
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string proc = "/proc/" + std::string(e->d_name);
    const std::string cmd = readText(proc + "/cmdline");
    if (cmd.find(std::string("tpbench") + '\0' + "worker") == std::string::npos &&
        cmd.find(std::string(TPB_BINARY) + '\0' + "worker") == std::string::npos)
      continue;
    const std::string env = readText(proc + "/environ");
    if (('\0' + env + '\0').find('\0' + tag + '\0') != std::string::npos) pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

// Names under /dev/shm that tpbench's shm transport made.
inline std::vector<std::string> shmSegments() {
  std::vector<std::string> names;
  DIR* d = opendir("/dev/shm");
  if (!d) return names;
  while (dirent* e = readdir(d))
    if (std::string(e->d_name).rfind("tpbench-", 0) == 0) names.push_back(e->d_name);
  closedir(d);
  return names;
}

// Parses a JSON file the CLI wrote (a failed expectation if it is not there).
inline nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

// Bad input for expectAllRefused: arguments, what the one stderr line must mention, extra
// environment variables.
struct BadInput {
  std::vector<std::string> args;
  std::string mustMention;
  std::vector<std::pair<std::string, std::string>> env = {};
};

// Runs `tpbench base... case.args...` for every case and expects it refused up front, with no
// worker started.
inline void expectAllRefused(const std::vector<std::string>& base, const std::vector<BadInput>& cases) {
  for (const auto& c : cases) {
    std::vector<std::string> args = base;
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    SCOPED_TRACE(joined);
    expectRefusedUpFront(runCli(args, c.env), c.mustMention);
    EXPECT_TRUE(workerPids().empty()) << joined << ": launched workers despite bad input";
  }
}

// A loopback TCP port nothing listens on now (free a moment ago: good enough for tests).
inline int freePort() {
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

inline std::string tempPath(const std::string& name) {
  return testing::TempDir() + "tpb_" + std::to_string(getpid()) + "_" + name;
}

}  // namespace tpb::test
