// common/crash_report: a process dying of a fatal signal prints its stack and then names the
// signal last, and still dies of that signal.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/crash_report.h"

namespace tpb {
namespace {

// Every test process reports a crash with its stack too (gtest_main has no hook before the
// tests run; a GPU test that died of SIGSEGV once said nothing more).
const bool kCrashReportInstalled = (installCrashReport(), true);

struct Death {
  int signal = 0;  // the signal the child died of, 0 when it exited
  std::string err;
};

// Forks a child that installs the report, optionally marks main as returned, and raises `sig`.
Death dieOf(int sig, bool afterMain) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    installCrashReport();
    if (afterMain) markMainReturned();
    raise(sig);
    _exit(0);
  }
  close(fds[1]);
  Death d;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) d.err.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  d.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return d;
}

std::string lastLine(const std::string& s) {
  const std::string body = s.substr(0, s.find_last_not_of('\n') + 1);
  return body.substr(body.find_last_of('\n') + 1);
}

TEST(CrashReport, AFatalSignalPrintsTheStackThenNamesTheSignalAndStillKills) {
  const Death d = dieOf(SIGSEGV, false);
  EXPECT_EQ(d.signal, SIGSEGV) << d.err;
  EXPECT_NE(d.err.find("stack at a fatal signal:\n"), std::string::npos) << d.err;
  std::size_t frames = 0;
  for (std::size_t at = d.err.find("[0x"); at != std::string::npos; at = d.err.find("[0x", at + 1)) ++frames;
  EXPECT_GE(frames, 3u) << "the handler, raise and this test's frames: " << d.err;
  EXPECT_NE(lastLine(d.err).find("): fatal signal 11 (SIGSEGV)"), std::string::npos) << d.err;
  EXPECT_EQ(lastLine(d.err).find("after main returned"), std::string::npos) << d.err;
}

TEST(CrashReport, AFaultAfterMainReturnedSaysSo) {
  const Death d = dieOf(SIGABRT, true);
  EXPECT_EQ(d.signal, SIGABRT) << d.err;
  EXPECT_NE(lastLine(d.err).find("fatal signal 6 (SIGABRT) after main returned"), std::string::npos) << d.err;
}

}  // namespace
}  // namespace tpb
