// harness/registry.h — the tables of what this build can run. Adding an algorithm is one file
// in strategies/ or baselines/ plus one line in registry.cc; nothing dispatches on names.
#pragma once

#include <string>
#include <vector>

#include "strategies/allreduce.h"
#include "strategies/train_strategy.h"

namespace tpb {

const std::vector<AllreduceAlgo>& allreduceAlgos();
// Throws UsageError naming `flag` and the valid names.
const AllreduceAlgo& findAllreduce(const std::string& flag, const std::string& name);
std::vector<std::string> allreduceNames();

const std::vector<TrainStrategy>& trainStrategies();
// Accepts names and aliases; throws UsageError naming `flag` and the valid names.
const TrainStrategy& findStrategy(const std::string& flag, const std::string& name);
std::vector<std::string> strategyNames();

}  // namespace tpb
