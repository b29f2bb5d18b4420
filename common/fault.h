// common/fault.h — deliberate failures for testing the failure paths (launcher, sweeps).
//
// TPB_FAULT="RANK:ACTION[:AT]" makes rank RANK perform ACTION the AT-th time (default 1st) it
// reaches a fault point (one per timed allreduce iteration, one per training step). ACTION is
// a signal name (KILL, SEGV, ABRT, TERM, ...), "exit" (exit code 3), "hang" (sleep forever,
// to exercise --timeout) or "stall" (sleep 50 ms once, then go on: a rank that lost its core).
// Unset in normal use; checked at negligible cost.
#pragma once

namespace tpb {

void faultPoint(int rank);

}  // namespace tpb
