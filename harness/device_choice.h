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
Device chooseDevice(const std::string& requested, long long ranksPerNode);

}  // namespace tpb
