// harness/device_choice.h — turns --device cpu|cuda|auto into a device, or one usage error
// before anything is launched. Shared by every command that launches ranks on a device.
#pragma once

#include <string>

#include "comm/transport.h"

namespace tpb {

// `requested` is the --device value; `ranksPerNode` the most ranks any point puts on this node
// (one GPU each on CUDA: NCCL refuses two ranks of a communicator on one GPU). auto means cuda
// when this build can run collectives on a GPU (CUDA + NCCL) and one is visible, else cpu.
// Throws UsageError naming --device (or --n_gpus, when there are too few GPUs).
Device chooseDevice(const std::string& requested, long long ranksPerNode);

}  // namespace tpb
