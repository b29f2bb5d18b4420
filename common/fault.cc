#include "common/fault.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace tpb {

namespace {

// TPB_FAULT's "RANK:ACTION[:AT]" where RANK is `rank`; nullopt when unset or for another rank.
struct FaultSpec {
  std::string action;
  long at = 1;
  bool atGiven = false;
};
std::optional<FaultSpec> faultFor(int rank) {
  static const char* spec = std::getenv("TPB_FAULT");
  if (!spec || !*spec) return std::nullopt;
  const std::string s(spec);
  const auto c1 = s.find(':');
  if (c1 == std::string::npos || std::atoi(s.substr(0, c1).c_str()) != rank) return std::nullopt;
  const auto c2 = s.find(':', c1 + 1);
  FaultSpec f;
  f.action = s.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  f.atGiven = c2 != std::string::npos;
  if (f.atGiven) f.at = std::atol(s.c_str() + c2 + 1);
  return f;
}

}  // namespace

void faultPoint(int rank) {
  static long hits = 0;
  const std::optional<FaultSpec> f = faultFor(rank);
  if (!f) return;
  const std::string& action = f->action;
  if (action == "corrupt") return;  // acts in the verification pass, not here (faultCorrupts)
  if (++hits != f->at) return;
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
  const std::optional<FaultSpec> f = faultFor(rank);
  return f && f->action == "corrupt" && !f->atGiven;
}

}  // namespace tpb
