// `ring_all_reduce`, from scratch: every rank computes gradients on its shard straight into one
// flat buffer, the from-scratch ring allreduce (algorithms/allreduce_ring.cc) sums that buffer
// over the ranks, every rank divides by N and steps its own optimizer. Parameters stay equal
// on all ranks because they start equal (same seed) and see the same averaged gradient. On GPUs
// the buffer is device memory and the ring runs over the nccl transport (ncclSend/ncclRecv and
// the transport's CUDA sum kernel).
#include "core/registry.h"
#include "core/replicated.h"

namespace tpb {

namespace {

TrainStrategy ringAllReduceStrategy() {
  TrainStrategy s;
  s.name = "ring_all_reduce";
  s.origin = Origin::FromScratch;
  s.description = "flat gradient buffer averaged by the from-scratch ring allreduce over Transport P2P";
  s.order = 2;
  s.color = "#2ca02c";
  s.slowsRanks = true;
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainWithAllreduce(ctx, cfg, findAllreduce("--algos", "ring").make, onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(ringAllReduceStrategy);

}  // namespace tpb
