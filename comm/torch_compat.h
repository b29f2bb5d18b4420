// comm/torch_compat.h — the one place where LibTorch 1.13 (Debian, CPU) and 2.x (PyTorch's
// bundled, CUDA) differ for the APIs tpbench uses. Everything else keeps to stable APIs.
#pragma once

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/Work.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace tpb::compat {

// c10d's Work handle (ProcessGroup::Work in old releases, c10d::Work since 1.13).
using Work = c10d::Work;

// The class c10d's ProcessGroupGloo derives from, whose virtual collectives and send/recv
// tpbench calls: ProcessGroup in 1.13, Backend since 2.0.
#if TORCH_VERSION_MAJOR >= 2
using ProcessGroupBase = c10d::Backend;
#else
using ProcessGroupBase = c10d::ProcessGroup;
#endif

// Version string of the LibTorch we were compiled against.
inline const char* torchVersion() { return TORCH_VERSION; }

}  // namespace tpb::compat
