#include "core/replicated.h"

#include <memory>

namespace tpb {

TrainResult trainWithAllreduce(CommContext& ctx, const TrainConfig& cfg, const AllreduceFactory& make,
                               const EpochCallback& onEpoch) {
  std::unique_ptr<Allreduce> built;
  FlatGradSync sync(ctx.size(), [&](float* buf, std::size_t count) {
    if (!built) built = make(ctx, buf, count);
    built->run();
  });
  return trainReplicated(&ctx.transport, cfg, sync, onEpoch);
}

TrainResult trainAlone(const TrainConfig& cfg, const EpochCallback& onEpoch) {
  FlatGradSync sync(1, nullptr);
  return trainReplicated(nullptr, cfg, sync, onEpoch);
}

}  // namespace tpb
