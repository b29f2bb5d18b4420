// harness/device_choice.h — turns --device cpu|cuda|auto into a device, or one usage error
// before anything is launched. Shared by every command that launches ranks on a device.
#pragma once

#include <string>

#include "comm/transport.h"

namespace tpb {

// `requested` is the --device value; `ranksPerNode` the most GPUs any point needs on this node
// (one per rank: NCCL refuses two ranks of a communicator on one GPU; data_parallel needs one per
// replica). auto means cuda when this build can run collectives on a GPU (CUDA + NCCL) and one
// is visible, else cpu. Throws UsageError naming --device, or --n_gpus when fewer GPUs are
// visible than a point needs (for auto too: it does not quietly fall back to the CPU then).
// `ownGpuPerRank`: see gpusSuffice.
Device chooseDevice(const std::string& requested, long long ranksPerNode, bool ownGpuPerRank = false);

// Whether `visibleGpus` GPUs seen by this process are enough for `ranksPerNode` ranks, one GPU
// each. ownGpuPerRank: this process is one rank of a job that torchrun, srun or mpirun started,
// and drives one GPU only; such a launcher may show each rank its own GPU alone (srun
// --gpus-per-task=1), which the rank then drives as cuda:0 (rankCudaDevice), so one visible GPU
// is enough however many ranks share the node. tpbench's own launcher shows every rank the same
// GPUs: there each rank needs one of them.
bool gpusSuffice(long long ranksPerNode, int visibleGpus, bool ownGpuPerRank);

}  // namespace tpb
