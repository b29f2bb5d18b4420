// comm/torch_compat.h — the one place where LibTorch 1.13 (Debian, CPU) and 2.x (PyTorch's
// bundled, CUDA) differ for the APIs tpbench uses. Everything else keeps to stable APIs.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/version.h>

namespace tpb::compat {

// c10d's Work handle (ProcessGroup::Work in old releases, c10d::Work since 1.13).
using Work = c10d::Work;

// Version string of the LibTorch we were compiled against.
inline const char* torchVersion() { return TORCH_VERSION; }

}  // namespace tpb::compat
