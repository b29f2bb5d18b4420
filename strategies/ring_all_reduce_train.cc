// `ring_all_reduce`, from scratch: every rank computes gradients on its shard straight into one
// flat buffer, the from-scratch ring allreduce (strategies/ring_allreduce.cc) sums that buffer
// over the ranks, every rank divides by N and steps its own optimizer. Parameters stay equal
// on all ranks because they start equal (same seed) and see the same averaged gradient. On GPUs
// the buffer is device memory and the ring runs over the nccl transport (ncclSend/ncclRecv and
// the transport's CUDA sum kernel).
#include <memory>

#include "strategies/ring_allreduce.h"
#include "strategies/train_strategy.h"

namespace tpb {

TrainStrategy ringAllReduceStrategy() {
  TrainStrategy s;
  s.name = "ring_all_reduce";
  s.origin = "from scratch";
  s.description = "flat gradient buffer averaged by the from-scratch ring allreduce over Transport P2P";
  s.processes = [](int n) { return n; };
  s.unsupported = [](Device, int) { return std::string(); };
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainWithAllreduce(ctx, cfg, ringAllreduceAlgo().make, onEpoch);
  };
  return s;
}

TrainResult trainWithAllreduce(CommContext& ctx, const TrainConfig& cfg, const AllreduceFactory& make,
                               const EpochCallback& onEpoch) {
  std::unique_ptr<Allreduce> built;
  FlatGradSync sync(ctx.size(), [&](float* buf, std::size_t count) {
    if (!built) built = make(ctx, buf, count);
    built->run();
  });
  return trainReplicated(&ctx.transport, cfg, sync, onEpoch);
}

}  // namespace tpb
