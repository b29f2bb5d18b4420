// common/fault.h — deliberate failures for testing the failure paths (launcher, sweeps).
//
// TPB_FAULT="RANK:ACTION[:AT]" makes rank RANK perform ACTION the AT-th time (default 1st) it
// reaches a fault point (one per timed allreduce iteration, one per training step). ACTION is
// a signal name (KILL, SEGV, ABRT, TERM, ...), "exit" (exit code 3), "hang" (sleep forever,
// to exercise --timeout) or "stall" (sleep 50 ms once, then go on: a rank that lost its core).
// "corrupt" is not a fault point's: rank RANK adds 1 to the first element of its result before a
// collective's verification pass reads it (faultCorrupts), so that the pass is seen to count a
// wrong element. Unset in normal use; checked at negligible cost.
#pragma once

#include <string>

namespace tpb {

void faultPoint(int rank);

// Why TPB_FAULT is malformed ("" when it is unset or well formed): the launcher refuses a
// malformed one before any rank starts (a rank ignores it), so that "abc:KILL" never reads as
// rank 0 the way atoi read it.
std::string checkFaultSpec();

// Whether TPB_FAULT asks `rank` to corrupt its verified result ("RANK:corrupt").
bool faultCorrupts(int rank);

}  // namespace tpb
