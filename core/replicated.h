// core/replicated.h — the two building blocks that several strategies share on top of
// workload/'s replicated loop.
#pragma once

#include "core/allreduce.h"
#include "workload/train.h"

namespace tpb {

// The replicated loop with the flat gradient buffer summed by the allreduce `make` builds (on
// the first step, when the buffer exists; it never moves, so the allreduce is reused).
TrainResult trainWithAllreduce(CommContext& ctx, const TrainConfig& cfg, const AllreduceFactory& make,
                               const EpochCallback& onEpoch);
// The replicated loop on one rank with nothing to synchronise: `single`'s loop.
TrainResult trainAlone(const TrainConfig& cfg, const EpochCallback& onEpoch);

}  // namespace tpb
