// `allreduce` training baseline: the same flat gradient buffer as ring_all_reduce, averaged by
// the library's allreduce (baselines/library_allreduce.cc) instead of the from-scratch ring.
#include "core/registry.h"
#include "core/replicated.h"

namespace tpb {

namespace {

TrainStrategy allreduceStrategy() {
  TrainStrategy s;
  s.name = "allreduce";
  s.origin = Origin::Library;
  s.description = "flat gradient buffer averaged by the library allreduce (c10d Gloo on CPU, ncclAllReduce on GPU)";
  s.order = 3;
  s.color = "#9467bd";
  s.unsupported = [](Device d, int) { return findAllreduce("--strategy", "library").unsupported(d); };
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainWithAllreduce(ctx, cfg, findAllreduce("--strategy", "library").make, onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(allreduceStrategy);

}  // namespace tpb
