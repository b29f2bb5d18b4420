#include "harness/device_choice.h"

#include "comm/cuda/devices.h"
#include "common/error.h"

namespace tpb {

Device chooseDevice(const std::string& requested, long long ranksPerNode) {
  if (requested != "cpu" && requested != "cuda" && requested != "auto")
    TPB_THROW(UsageError, "--device: '" << requested << "' is not one of cpu, cuda, auto");
  if (requested == "cpu") return Device::Cpu;
  // Ask the driver only when a GPU could matter: the query costs a driver initialisation.
  const int gpus = ncclCompiled() ? visibleCudaDevices() : 0;
  if (requested == "auto" && gpus == 0) return Device::Cpu;

  if (!cudaCompiled())
    TPB_THROW(UsageError, "--device cuda: " << cudaUnavailableReason() << "; use --device cpu");
  if (!ncclCompiled())
    TPB_THROW(UsageError, "--device cuda: this build has CUDA but no NCCL (configure found no "
                          "nccl.h/libnccl; set NCCL_HOME), so nothing can run on a GPU; use --device cpu");
  if (gpus == 0)
    TPB_THROW(UsageError, "--device cuda: no CUDA GPU is visible (" << cudaUnavailableReason()
                                                                    << "); use --device cpu or auto");
  if (ranksPerNode > gpus)
    TPB_THROW(UsageError, "--n_gpus " << ranksPerNode << " with --device " << requested << ": only " << gpus
                                      << " GPU" << (gpus == 1 ? " is" : "s are")
                                      << " visible, and every rank (every data_parallel replica) needs its "
                                         "own GPU; use fewer, or --device cpu");
  return Device::Cuda;
}

}  // namespace tpb
