// `allreduce` training baseline: the same flat gradient buffer as ring_all_reduce, averaged by
// a library's allreduce instead of the from-scratch ring: --library gloo, mpi or nccl (the
// allreduce algorithms of algorithms/), by default the device's (`library`: gloo on cpu, nccl on
// cuda).
#include "core/registry.h"
#include "core/replicated.h"

namespace tpb {

namespace {

TrainStrategy allreduceStrategy() {
  TrainStrategy s;
  s.name = "allreduce";
  s.origin = Origin::Library;
  s.description = "flat gradient buffer averaged by a library allreduce: --library gloo|mpi|nccl (default: "
                  "c10d Gloo on CPU, ncclAllReduce on GPU)";
  s.order = 3;
  s.color = "#9467bd";
  s.slowsRanks = true;
  s.takesLibrary = true;
  s.unsupported = [](Device d, int) { return findAllreduce("--strategy", "library").unsupported(d); };
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    const std::string library = cfg.library.empty() ? "library" : cfg.library;
    return trainWithAllreduce(ctx, cfg, findAllreduce("--library", library).make, onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(allreduceStrategy);

}  // namespace tpb
