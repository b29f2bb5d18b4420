#include "common/fault.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tpb {

void faultPoint(int rank) {
  static const char* spec = std::getenv("TPB_FAULT");
  static long hits = 0;
  if (!spec || !*spec) return;
  const std::string s(spec);
  const auto c1 = s.find(':');
  if (c1 == std::string::npos || std::atoi(s.substr(0, c1).c_str()) != rank) return;
  const auto c2 = s.find(':', c1 + 1);
  const std::string action = s.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  const long at = c2 == std::string::npos ? 1 : std::atol(s.c_str() + c2 + 1);
  if (action == "corrupt") return;  // acts in the verification pass, not here (faultCorrupts)
  if (++hits != at) return;
  std::fprintf(stderr, "TPB_FAULT: rank %d injecting '%s'\n", rank, action.c_str());
  std::fflush(stderr);
  if (action == "hang") {
    for (;;) pause();
  }
  if (action == "exit") std::_Exit(3);
  if (action == "stall") {  // 50 ms off the core, then on as if nothing happened
    usleep(50 * 1000);
    return;
  }
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* name = sigabbrev_np(sig);
    if (name && action == name) {
      // A program error (SEGV, BUS, ILL, FPE, ABRT) goes through the crash report as a real one
      // would (common/crash_report.h); any other signal meets its default action.
      const bool programError = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT;
      if (!programError) std::signal(sig, SIG_DFL);
      raise(sig);
    }
  }
  std::fprintf(stderr, "TPB_FAULT: unknown action '%s'\n", action.c_str());
  std::_Exit(4);
}

bool faultCorrupts(int rank) {
  static const char* spec = std::getenv("TPB_FAULT");
  if (!spec || !*spec) return false;
  const std::string s(spec);
  const auto c1 = s.find(':');
  if (c1 == std::string::npos || std::atoi(s.substr(0, c1).c_str()) != rank) return false;
  return s.compare(c1 + 1, std::string::npos, "corrupt") == 0;
}

}  // namespace tpb
