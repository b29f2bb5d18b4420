// core/registry.h — the tables of what this build can run. Each algorithm or strategy is one
// file (algorithms/<op>_<algo>.cc, strategies/<name>.cc) that ends with one registration line:
//
//   TPB_REGISTER_ALLREDUCE(ringAllreduceAlgo);   // a function returning the AllreduceAlgo
//   TPB_REGISTER_STRATEGY(ddpStrategy);          // a function returning the TrainStrategy
//   TPB_REGISTER_COLLECTIVE(ringAllgatherAlgo);  // a function returning the CollectiveAlgo
//
// Nothing dispatches on names: the launcher, `tpbench list`, the results (origin, order,
// colour), the cost model (each algorithm's formula) and the parametrised tests (exact sums,
// exact traffic) all read these tables. The libraries holding the entries
// are linked whole (CMakeLists.txt), so no registration is dropped by the linker.
#pragma once

#include <string>
#include <vector>

#include "core/allreduce.h"
#include "core/collective.h"
#include "core/train_strategy.h"

namespace tpb {

// In display order (EntryInfo::order, then name).
const std::vector<AllreduceAlgo>& allreduceAlgos();
// Throws UsageError naming `flag` and the valid names.
const AllreduceAlgo& findAllreduce(const std::string& flag, const std::string& name);
std::vector<std::string> allreduceNames();

// Every collective algorithm of every op, in op order then display order. Op "allreduce" lists
// the allreduce algorithms above, adapted (out of place: the input is copied to the output, then
// reduced there in place).
const std::vector<CollectiveAlgo>& collectiveAlgos();
// Throws UsageError naming `flag` and the algorithms of `op`.
const CollectiveAlgo& findCollective(const std::string& flag, const std::string& op, const std::string& name);
std::vector<std::string> collectiveNames(const std::string& op);

const std::vector<TrainStrategy>& trainStrategies();
// Accepts names and aliases; throws UsageError naming `flag` and the valid names.
const TrainStrategy& findStrategy(const std::string& flag, const std::string& name);
std::vector<std::string> strategyNames();

// Used by the registration macros; throws at start-up when a name is registered twice.
bool registerAllreduce(AllreduceAlgo (*make)());
bool registerStrategy(TrainStrategy (*make)());
bool registerCollective(CollectiveAlgo (*make)());

}  // namespace tpb

#define TPB_REGISTRY_CONCAT2(a, b) a##b
#define TPB_REGISTRY_CONCAT(a, b) TPB_REGISTRY_CONCAT2(a, b)
#define TPB_REGISTER_ALLREDUCE(fn) \
  static const bool TPB_REGISTRY_CONCAT(tpbRegisteredAllreduce_, __LINE__) = ::tpb::registerAllreduce(fn)
#define TPB_REGISTER_COLLECTIVE(fn) \
  static const bool TPB_REGISTRY_CONCAT(tpbRegisteredCollective_, __LINE__) = ::tpb::registerCollective(fn)
#define TPB_REGISTER_STRATEGY(fn) \
  static const bool TPB_REGISTRY_CONCAT(tpbRegisteredStrategy_, __LINE__) = ::tpb::registerStrategy(fn)
