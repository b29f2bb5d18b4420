// strategies/child_process.h — runs one child program (a Python interpreter with a script) from
// inside a rank and waits for it, the way the launcher runs ranks (harness/launch.h), but
// from below the harness: it dies with its rank (PR_SET_PDEATHSIG), starts with stdin, stdout
// and stderr only plus one report pipe at file descriptor 3, and never outlives the call.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace tpb {

struct ChildRun {
  std::vector<std::string> argv;  // argv[0] is the program's path (not searched on PATH)
  std::vector<std::string> env;   // "KEY=value" set on top of (replacing) this process's environment
  // Each line the child writes to file descriptor 3, without its newline. Throwing from here
  // kills the child (SIGKILL), reaps it and passes the exception on.
  std::function<void(const std::string& line)> onReport;
  // Forward the child's stderr, line by line, to this process's stderr (else only remembered).
  bool forwardStderr = true;
  // Kill the child (SIGKILL) when it runs longer; zero: no limit.
  std::chrono::milliseconds limit{0};
};

struct ChildExit {
  int exitCode = -1;  // when it exited
  int signal = 0;     // when a signal killed it
  bool timedOut = false;
  std::string lastError;  // the last non-empty line it wrote to stderr
  bool ok() const { return signal == 0 && exitCode == 0 && !timedOut; }
  // "exited with code 1: <last line>", "was killed by signal 9 (SIGKILL)", "timed out after N s".
  std::string describe() const;
};

// Starts run.argv and returns when it has exited and both of its pipes are closed. Throws
// tpb::Error when it cannot be started (the program is missing or not executable).
ChildExit runChild(const ChildRun& run);

}  // namespace tpb
