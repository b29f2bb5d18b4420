// algorithms/gloo_group.h — one c10d ProcessGroupGloo per run, shared by every library-backed
// baseline of that run (building one connects every pair of ranks, so it is done once).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "core/comm_context.h"

namespace tpb {

c10::intrusive_ptr<c10d::ProcessGroupGloo> glooGroup(CommContext& ctx);

// Waits for a c10d work item, turning a timeout or failure into tpb errors naming `what`.
void waitWork(const c10::intrusive_ptr<c10d::Work>& work, std::chrono::milliseconds timeout,
              const char* what);

}  // namespace tpb
