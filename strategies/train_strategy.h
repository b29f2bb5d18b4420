// strategies/train_strategy.h — the interface of a training strategy and the entries that
// register one. From-scratch strategies live in strategies/, library-backed ones in
// baselines/; harness/registry.cc lists them all.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "strategies/allreduce.h"
#include "workload/train.h"

namespace tpb {

struct TrainStrategy {
  std::string name;
  std::vector<std::string> aliases;  // other accepted names (the seed's)
  std::string origin;                // "from scratch", "library" or "reference"
  std::string description;
  // OS processes to launch for n devices (n, or 1 for single-process strategies).
  std::function<int(int n)> processes;
  // Empty when the strategy can run with n devices on `device`, else the reason (recorded as a
  // skip by sweeps, a usage error by `run`).
  std::function<std::string(Device device, int n)> unsupported;
  // Runs the whole training on this rank. ctx is the world of `processes(n)` ranks. Rank 0
  // returns the epochs and calls onEpoch; every rank returns its final parameters.
  std::function<TrainResult(CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch)> run;
};

// The replicated loop with the flat gradient buffer summed by the allreduce `make` builds (on
// the first step, when the buffer exists; it never moves, so the allreduce is reused).
TrainResult trainWithAllreduce(CommContext& ctx, const TrainConfig& cfg, const AllreduceFactory& make,
                               const EpochCallback& onEpoch);
// The replicated loop on one rank with nothing to synchronise: `single`'s loop.
TrainResult trainAlone(const TrainConfig& cfg, const EpochCallback& onEpoch);

TrainStrategy singleStrategy();
TrainStrategy ringAllReduceStrategy();
TrainStrategy paramServerStrategy();
TrainStrategy allreduceStrategy();
TrainStrategy ddpStrategy();
TrainStrategy dataParallelStrategy();

}  // namespace tpb
