#include "common/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <vector>

namespace tpb {

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
std::atomic<bool> mainReturned{false};

// Only async-signal-safe calls below (write, backtrace once its library is loaded, raise).
void say(const char* s) { (void)!write(STDERR_FILENO, s, std::strlen(s)); }

void sayNumber(long v) {
  char buf[24];
  int i = sizeof buf;
  buf[--i] = '\0';
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && i > 0);
  say(buf + i);
}

void sayWho() {
  say("tpbench (pid ");
  sayNumber(static_cast<long>(getpid()));
  say("): ");
}

// The stack first, the line naming the signal last: a launcher quotes a rank's last line.
void onFatalSignal(int sig) {
  sayWho();
  say("stack at a fatal signal:\n");
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  sayWho();
  say("fatal signal ");
  sayNumber(sig);
  say(" (SIG");
  say(sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
  say(mainReturned.load() ? ") after main returned (in a static destructor or an exit handler)\n" : ")\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void installCrashReport() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc's unwinder now: the handler must not allocate
  static std::vector<char> altStack(64 * 1024);
  stack_t ss{};
  ss.ss_sp = altStack.data();
  ss.ss_size = altStack.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = onFatalSignal;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : kFatalSignals) sigaction(sig, &sa, nullptr);
}

void markMainReturned() { mainReturned.store(true); }

}  // namespace tpb
