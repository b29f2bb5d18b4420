// The launcher's processes, files and signals: SIGTERM and SIGHUP end a sweep like Ctrl-C (to the
// launcher alone, or to its whole process group as a terminal or a job scheduler sends them), and
// no descriptor the launcher or a rank holds is inherited by what they start.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_util.h"

namespace tpb {
namespace {

using nlohmann::json;
using test::readJson;
using test::runCli;

// The number of runs `path` holds, or -1 while it is missing or being replaced.
int savedRuns(const std::string& path) {
  std::ifstream in(path);
  if (!in.good()) return -1;
  try {
    return static_cast<int>(json::parse(in).at("runs").size());
  } catch (...) {
    return -1;
  }
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename());
  return names;
}

struct SignalCase {
  int signal;
  bool toGroup;
};
void PrintTo(const SignalCase& c, std::ostream* os) {
  *os << "SIG" << sigabbrev_np(c.signal) << (c.toGroup ? " to the process group" : " to the launcher");
}

class LauncherSignals : public testing::TestWithParam<SignalCase> {};

// A sweep of two points: N=1 finishes, N=2 hangs (rank 1 sleeps at its 3rd step), and the signal
// comes once the first point is saved. The sweep must end as interrupted (130) with the first
// point in a valid file, the ranks stopped and its scratch directory gone.
TEST_P(LauncherSignals, EndTheSweepAsInterrupted) {
  const SignalCase c = GetParam();
  const std::string out = test::tempPath("sig" + std::to_string(c.signal) + (c.toGroup ? "g" : "") + ".json");
  const std::string tmp = test::tempPath("sigtmp" + std::to_string(c.signal) + (c.toGroup ? "g" : ""));
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  std::atomic<bool> sent{false};
  const auto r = runCli(
      {"sweep", "--strategies", "ring_all_reduce", "--n_gpus", "1,2", "--batch_size", "32", "--epochs", "2",
       "--train_size", "2048", "--timeout", "120", "--out", out},
      {{"TPB_FAULT", "1:hang:3"}, {"TMPDIR", tmp}},
      [&](pid_t pid, const std::atomic<bool>& done, const test::SaidSoFar&) {
        for (int i = 0; i < 600 && !done && !sent; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          if (savedRuns(out) != 1 || test::workerPids().size() < 2) continue;
          std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the hung point
          sent = kill(c.toGroup ? -pid : pid, c.signal) == 0;
        }
      },
      c.toGroup);
  ASSERT_TRUE(sent) << "never reached the second point: " << r.err;
  EXPECT_EQ(r.exitCode, 130) << r.err;
  EXPECT_LT(r.seconds, 60);
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  const json doc = readJson(out);
  EXPECT_EQ(doc.at("schema"), "tpbench.results/2");
  ASSERT_GE(doc.at("runs").size(), 1u);
  EXPECT_EQ(doc.at("runs")[0].at("status"), "ok") << doc.at("runs")[0].dump();
  EXPECT_EQ(doc.at("runs")[0].at("config").at("n_gpus"), 1);
  EXPECT_TRUE(test::workerPids().empty()) << "ranks outlived the interrupted launcher";
  EXPECT_TRUE(entries(tmp).empty()) << "left in TMPDIR: " << entries(tmp).front();
  std::filesystem::remove_all(tmp);
  std::remove(out.c_str());
}

INSTANTIATE_TEST_SUITE_P(, LauncherSignals,
                         testing::Values(SignalCase{SIGTERM, false}, SignalCase{SIGHUP, false},
                                         SignalCase{SIGTERM, true}, SignalCase{SIGHUP, true}),
                         [](const testing::TestParamInfo<SignalCase>& i) {
                           return std::string(i.param.signal == SIGTERM ? "Term" : "Hup") +
                                  (i.param.toGroup ? "ToGroup" : "ToLauncher");
                         });

// Descriptors of `pid` (3 and up) whose flags lack O_CLOEXEC, with what they point to.
std::vector<std::string> inheritable(pid_t pid) {
  std::vector<std::string> leaks;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc + "/fdinfo", ec)) {
    const std::string fd = e.path().filename();
    if (std::stoi(fd) < 3) continue;
    const std::string info = test::readText(e.path());
    const auto at = info.find("flags:");
    if (at == std::string::npos) continue;
    const unsigned long flags = std::stoul(info.substr(at + 6), nullptr, 8);
    if (flags & 02000000) continue;  // O_CLOEXEC
    std::error_code lec;
    leaks.push_back(fd + " -> " + std::filesystem::read_symlink(proc + "/fd/" + fd, lec).string());
  }
  return leaks;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// While a launch is running — the launcher holding the results lock, the store and the ranks'
// pipes; the ranks their store client, transport and files — every descriptor either of them has
// open is close-on-exec, so nothing leaks into the ranks or into what a rank starts.
TEST(LauncherDescriptors, EveryDescriptorIsCloseOnExec) {
  for (const std::string transport : {"shm", "gloo"}) {
    SCOPED_TRACE(transport);
    const std::string out = test::tempPath("fds.json");
    std::vector<std::string> launcherLeaks, workerLeaks;
    int looked = 0;
    const auto r = runCli(
        {"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K", "--iters", "5", "--timeout", "60",
         "--transport", transport, "--out", out, "--overwrite"},
        {{"TPB_FAULT", "1:hang:3"}},
        [&](pid_t pid, const std::atomic<bool>& done, const test::SaidSoFar& said) {
          // Look once rank 1 hangs at its 3rd iteration: both ranks are past their transport's
          // setup then (it marks what its library opened afterwards). A fixed wait after the
          // ranks appeared could look at a rank still inside that setup on a loaded machine.
          for (int i = 0; i < 600 && !done; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            if (!said.has("rank 1 injecting 'hang'")) continue;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0 into its wait
            launcherLeaks = inheritable(pid);
            for (int w : test::workerPids()) {
              for (const auto& l : inheritable(w)) workerLeaks.push_back("worker " + std::to_string(w) + ": " + l);
              ++looked;
            }
            kill(pid, SIGINT);
            return;
          }
        });
    EXPECT_EQ(r.exitCode, 130) << r.err;
    EXPECT_GE(looked, 2) << "never saw both ranks";
    EXPECT_TRUE(launcherLeaks.empty()) << "launcher: " << join(launcherLeaks);
    EXPECT_TRUE(workerLeaks.empty()) << join(workerLeaks);
    std::remove(out.c_str());
  }
}

}  // namespace
}  // namespace tpb
