// strategies/torch_reference.h — PyTorch's own DistributedDataParallel and DataParallel, run by
// scripts/torch_ddp.py, as the measured references `torch_ddp` and `torch_dp` (one file each in
// strategies/ registers them). What is shared lives here: finding Python, torch and the script,
// handing the script tpbench's data, weights and sample order, and turning what it reports into
// the epochs and final weights every strategy returns. How ranks start: torch_reference.cc.
#pragma once

#include <string>

#include "core/train_strategy.h"

namespace tpb {

// Which of PyTorch's wrappers the script runs.
enum class TorchWrapper {
  Ddp,           // torch.nn.parallel.DistributedDataParallel: one process per rank
  DataParallel,  // torch.nn.DataParallel: one process, replicas on cuda:0..n-1
};

// The interpreter: $TPB_PYTHON, else /usr/bin/python3 (Debian's, with python3-torch).
std::string torchPython();
// The script: $TPB_TORCH_SCRIPT, else scripts/torch_ddp.py beside the build directory of this
// binary, else in the source tree this binary was built from; "" when none exists.
std::string torchScript();

// TrainStrategy::unsupported: "" when this machine's Python can run `wrapper` with n devices on
// `device`, else why not (Python, torch or the script missing; no Gloo, NCCL or CUDA; too few
// GPUs; DataParallel on the CPU). Python is asked once per process (it takes a second or two).
std::string torchUnsupported(TorchWrapper wrapper, Device device, int n);
// "" unless cfg asks for checkpoints (--save_dir, --resume_from): PyTorch's script trains on its
// own and writes none of tpbench's, so such points are refused (run) or skipped (sweep).
std::string torchUnsupportedConfig(const TrainConfig& cfg);

// TrainStrategy::run: this rank's share of the script's run (see torch_reference.cc).
TrainResult trainWithTorch(TorchWrapper wrapper, CommContext& ctx, const TrainConfig& cfg,
                           const EpochCallback& onEpoch);

}  // namespace tpb
