// record/stragglers.h — which rank held a training run back: from each epoch's per-rank compute
// seconds (runs[].epochs[].ranks), the rank whose compute exceeds the median of the other
// computing ranks by kStragglerRatio or more, in most of the run's epochs. A rank that computes
// nothing (a parameter server) is never one; one rank, or files without per-rank times, name no one.
#pragma once

#include <optional>

#include "record/records.h"

namespace tpb {

// 1.2: above the spread of compute seconds between equal ranks on a busy two-core machine (within
// 10 % over an epoch), below a rank slowed by half (its compute 1.5x the others').
inline constexpr double kStragglerRatio = 1.2;

struct Straggler {
  int rank = 0;
  int epochs = 0;       // epochs in which it was the straggler
  int ofEpochs = 0;     // epochs with per-rank times
  double ratio = 0;     // its compute over the others' median, median over those epochs
};

std::optional<Straggler> stragglerOf(const RunRecord& run);

}  // namespace tpb
