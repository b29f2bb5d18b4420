#include "harness/device_choice.h"

#include <algorithm>
#include <climits>

#include "comm/cuda/devices.h"
#include "common/error.h"

namespace tpb {

bool gpusSuffice(long long ranksPerNode, int visibleGpus, bool ownGpuPerRank) {
  if (ranksPerNode <= visibleGpus) return true;
  // Is there a GPU for the node's last local rank, placed as that rank places itself?
  const long long lastLocal = std::min<long long>(ranksPerNode, INT_MAX) - 1;
  return ownGpuPerRank && rankCudaDevice(static_cast<int>(lastLocal), visibleGpus) >= 0;
}

Device chooseDevice(const std::string& requested, long long ranksPerNode, bool ownGpuPerRank) {
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
  if (!gpusSuffice(ranksPerNode, gpus, ownGpuPerRank))
    TPB_THROW(UsageError, "--n_gpus " << ranksPerNode << " with --device " << requested << ": only " << gpus
                                      << " GPU" << (gpus == 1 ? " is" : "s are")
                                      << " visible, and every rank (every data_parallel replica) needs its "
                                         "own GPU; use fewer, or --device cpu");
  return Device::Cuda;
}

}  // namespace tpb
