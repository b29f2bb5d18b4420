// `single`: the plain one-device training loop, the reference every strategy is checked
// against (same seed, same sample order, global batch).
#include "strategies/train_strategy.h"

namespace tpb {

TrainStrategy singleStrategy() {
  TrainStrategy s;
  s.name = "single";
  s.origin = "reference";
  s.description = "one device, no synchronisation: the reference loop";
  s.processes = [](int) { return 1; };
  s.unsupported = [](Device, int n) {
    return n == 1 ? std::string() : std::string("single trains on one device (n_gpus 1 only)");
  };
  s.run = [](CommContext&, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainAlone(cfg, onEpoch);
  };
  return s;
}

TrainResult trainAlone(const TrainConfig& cfg, const EpochCallback& onEpoch) {
  FlatGradSync sync(1, nullptr);
  return trainReplicated(nullptr, cfg, sync, onEpoch);
}

}  // namespace tpb
