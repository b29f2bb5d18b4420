// `torch_dp`: PyTorch's own torch.nn.DataParallel, run by scripts/torch_ddp.py in one Python
// process that drives N GPUs (cuda:0..N-1, global batches of N*B rows split over the replicas),
// on the same model, initial weights, data and sample order as every other strategy: the
// measured reference for `data_parallel`, tpbench's rebuild of its algorithm. GPUs only:
// DataParallel on the CPU runs the module unreplicated, so CPU points are skipped with that
// reason. How it runs: strategies/torch_reference.cc.
#include "strategies/torch_reference.h"
#include "core/registry.h"

namespace tpb {

namespace {

TrainStrategy torchDpStrategy() {
  TrainStrategy s;
  s.name = "torch_dp";
  s.origin = Origin::PyTorchReference;
  s.referenceOf = "data_parallel";
  s.description =
      "PyTorch's own DataParallel (scripts/torch_ddp.py, one Python process, replicas on cuda:0..N-1) "
      "on the same weights, data and order: the measured reference for data_parallel";
  s.order = 21;
  s.color = "#393b79";
  s.processes = [](int) { return 1; };  // like data_parallel: one process drives the N GPUs
  s.unsupported = [](Device d, int n) { return torchUnsupported(TorchWrapper::DataParallel, d, n); };
  s.unsupportedConfig = torchUnsupportedConfig;
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainWithTorch(TorchWrapper::DataParallel, ctx, cfg, onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(torchDpStrategy);

}  // namespace tpb
