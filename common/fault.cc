#include "common/fault.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace tpb {

namespace {

// TPB_FAULT's "RANK:ACTION[:AT]" where RANK is `rank`; nullopt when unset, malformed (the
// launcher refuses that before any rank starts: checkFaultSpec) or for another rank.
struct FaultSpec {
  int rank = -1;
  std::string action;
  long at = 1;
  bool atGiven = false;
};

bool digitsOnly(const std::string& s, std::size_t maxLen) {
  return !s.empty() && s.size() <= maxLen && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<FaultSpec> parseFault(const std::string& s, std::string* why) {
  const auto fail = [&](const char* what) {
    if (why) *why = what;
    return std::nullopt;
  };
  const auto c1 = s.find(':');
  if (c1 == std::string::npos) return fail("expected RANK:ACTION[:AT]");
  const std::string rank = s.substr(0, c1);
  if (!digitsOnly(rank, 6)) return fail("RANK must be a rank number");
  const auto c2 = s.find(':', c1 + 1);
  FaultSpec f;
  f.rank = std::atoi(rank.c_str());
  f.action = s.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  f.atGiven = c2 != std::string::npos;
  if (f.atGiven) {
    const std::string at = s.substr(c2 + 1);
    if (!digitsOnly(at, 9) || std::atol(at.c_str()) < 1) return fail("AT must be a count from 1");
    f.at = std::atol(at.c_str());
  }
  bool known = f.action == "hang" || f.action == "exit" || f.action == "stall" || f.action == "corrupt";
  for (int sig = 1; sig < NSIG && !known; ++sig) {
    const char* name = sigabbrev_np(sig);
    known = name && f.action == name;
  }
  if (!known) return fail("ACTION must be a signal name (KILL, SEGV, ...), exit, hang, stall or corrupt");
  return f;
}

std::optional<FaultSpec> faultFor(int rank) {
  static const char* spec = std::getenv("TPB_FAULT");
  if (!spec || !*spec) return std::nullopt;
  const auto f = parseFault(spec, nullptr);
  if (!f || f->rank != rank) return std::nullopt;
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

std::string checkFaultSpec() {
  const char* spec = std::getenv("TPB_FAULT");
  if (!spec || !*spec) return "";
  std::string why;
  if (!parseFault(spec, &why)) return why;
  return "";
}

bool faultCorrupts(int rank) {
  const std::optional<FaultSpec> f = faultFor(rank);
  return f && f->action == "corrupt" && !f->atGiven;
}

}  // namespace tpb
