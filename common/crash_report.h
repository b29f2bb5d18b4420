// common/crash_report.h — what a tpbench process says when it dies of a fatal signal (SIGSEGV,
// SIGBUS, SIGILL, SIGFPE, SIGABRT), on stderr: the stack as glibc's backtrace() sees it, then
// one line naming the pid, the signal and whether main had returned (then the fault is in a
// static destructor or an exit handler, often a library's); last, so that a launcher quoting a
// rank's last line quotes it. The signal is then raised again with its default action, so the
// exit status and a core dump are what they would have been.
#pragma once

namespace tpb {

// Installs the handlers (on an alternate stack, so that a stack overflow is reported too).
// Called first thing in main; later calls change nothing.
void installCrashReport();

// Tells the handler that main has returned: a fault from here on is at exit.
void markMainReturned();

}  // namespace tpb
