// `single`: the plain one-device training loop, the reference every strategy is checked
// against (same seed, same sample order, global batch).
#include "core/registry.h"
#include "core/replicated.h"

namespace tpb {

namespace {

TrainStrategy singleStrategy() {
  TrainStrategy s;
  s.name = "single";
  s.origin = Origin::Reference;
  s.description = "one device, no synchronisation: the reference loop";
  s.order = 0;
  s.color = "#7f7f7f";
  s.reference = true;
  s.processes = [](int) { return 1; };
  s.dataRanks = [](int) { return 1; };
  s.unsupported = [](Device, int n) {
    return n == 1 ? std::string() : std::string("single trains on one device (n_gpus 1 only)");
  };
  s.run = [](CommContext&, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainAlone(cfg, onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(singleStrategy);

}  // namespace tpb
