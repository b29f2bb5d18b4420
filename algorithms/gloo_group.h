// algorithms/gloo_group.h — one c10d ProcessGroupGloo per run, shared by every library-backed
// baseline of that run (building one connects every pair of ranks, so it is done once).
#pragma once

#include "comm/gloo/gloo_process_group.h"
#include "core/comm_context.h"
#include "core/entry.h"

namespace tpb {

GlooGroup glooGroup(CommContext& ctx);

// What carries a library baseline's data that runs Gloo on the CPU and NCCL on the run's nccl
// transport on GPUs (core/entry.h): Gloo's TCP pairs on the CPU, the run's transport elsewhere.
inline std::string glooCarrier(Device d) { return d == Device::Cpu ? kCarrierGlooTcp : ""; }

// Waits for a c10d work item, turning a timeout or failure into tpb errors naming `what`.
void waitWork(const c10::intrusive_ptr<c10d::Work>& work, std::chrono::milliseconds timeout,
              const char* what);

}  // namespace tpb
