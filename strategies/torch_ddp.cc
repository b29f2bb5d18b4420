// `torch_ddp`: PyTorch's own torch.nn.parallel.DistributedDataParallel, run by
// scripts/torch_ddp.py in one Python process per rank (Gloo on the CPU, NCCL on GPUs), on the
// same model, initial weights, data, sample order, batch, epochs, lr, momentum and bucket size
// (--bucket_mb as DDP's bucket_cap_mb) as every other strategy: the measured reference for `ddp`,
// tpbench's rebuild of its algorithm. How it runs: strategies/torch_reference.cc. Where Python
// cannot import torch, its points are skipped with the reason.
#include "strategies/torch_reference.h"
#include "core/registry.h"

namespace tpb {

namespace {

TrainStrategy torchDdpStrategy() {
  TrainStrategy s;
  s.name = "torch_ddp";
  s.bucketed = true;
  s.origin = Origin::PyTorchReference;
  s.referenceOf = "ddp";
  s.description =
      "PyTorch's own DistributedDataParallel (scripts/torch_ddp.py, one Python process per rank; Gloo on CPU, NCCL on GPU) "
      "on the same weights, data and order: the measured reference for ddp";
  s.order = 20;
  s.color = "#17becf";
  // Its Python processes make their own process group: Gloo on the CPU, NCCL on GPUs.
  s.carrier = [](Device d) { return std::string(d == Device::Cpu ? kCarrierGlooTcp : kCarrierNccl); };
  s.unsupported = [](Device d, int n) { return torchUnsupported(TorchWrapper::Ddp, d, n); };
  s.unsupportedConfig = torchUnsupportedConfig;
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainWithTorch(TorchWrapper::Ddp, ctx, cfg, onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(torchDdpStrategy);

}  // namespace tpb
