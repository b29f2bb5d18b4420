// record/stragglers.h — which rank held a training run, or a collective point, back: from each
// epoch's per-rank compute (runs[].epochs[].ranks: each rank's median step compute on its CPU
// clock where the record has it, else on the wall clock, else its epoch sum), the rank whose
// compute exceeds the median of the other computing ranks by kStragglerRatio or more, in most of
// the run's epochs. The median step is what a deliberately slowed rank moves and a rank that lost
// its core for a few steps does not; the CPU clock is what a slower rank moves and a rank that
// shared its core in most steps (more ranks than cores) does not: that one is told apart as a
// core wait (coreWaitOf). A rank that computes nothing (a parameter server) is never one; one
// rank, or files without per-rank times, name no one.
#pragma once

#include <optional>
#include <string>

#include "record/records.h"

namespace tpb {

// 1.2: above the spread of compute seconds between equal ranks on a busy two-core machine (within
// 10 % over an epoch), below a rank slowed by half (its compute 1.5x the others').
inline constexpr double kStragglerRatio = 1.2;

struct Straggler {
  int rank = 0;
  bool perStep = false;  // judged by each rank's median step compute (else by the epochs' sums)
  bool onCpuClock = false;  // that median on each rank's CPU clock (else on the wall clock)
  int epochs = 0;       // epochs in which it was the straggler
  int ofEpochs = 0;     // epochs with per-rank times
  double ratio = 0;     // its compute over the others' median, median over those epochs
};

std::optional<Straggler> stragglerOf(const RunRecord& run);
// "rank 1 (compute 1.52x the others' median in 3 of 3 epochs)": what the console and report say.
std::string stragglerText(const Straggler& s);

// Where the record has CPU clock medians and they name no straggler, the rank the wall clock's
// medians would have named: its steps took longer because it waited for a core, not because it
// computed more. None elsewhere.
std::optional<Straggler> coreWaitOf(const RunRecord& run);
// "rank 2 waited for a core (median step compute 1.31x the others' on the wall clock in 2 of 3
// epochs, not on its CPU clock)".
std::string coreWaitText(const Straggler& s);

// A collective point's straggler, from its per-rank times (records.h: CollectiveRanks): the rank
// that was the slowest in more than half of the timed iterations, with a median kStragglerRatio
// or more over the median of the other ranks' medians. None for one rank, without per-rank times,
// or where the slowest rank changes from call to call (no rank holds the others back); none
// either where the ranks play different parts (ranksHaveOneRole), which makes one of them the
// slowest every time without holding anyone back.
struct CollectiveStraggler {
  int rank = 0;
  long long slowestIn = 0;  // iterations it was the slowest in
  int iters = 0;
  double ratio = 0;         // its median over the others' median of medians
};
// Every rank does the same work in each call: allreduce, allgather, reduce_scatter and alltoall,
// except a parameter server's allreduce. Not so for the rooted ops, sendrecv's ping-pong (the
// even rank times a round trip, its partner half of one) and param_server (rank 0 reduces).
bool ranksHaveOneRole(const CollectiveRecord& c);
std::optional<CollectiveStraggler> stragglerOf(const CollectiveRecord& c);
// "rank 1 slowest in 18 of 20 iterations, median 1.6x the others'".
std::string stragglerText(const CollectiveStraggler& s);

}  // namespace tpb
