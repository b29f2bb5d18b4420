// comm/gloo/gloo_process_group.h — c10d's ProcessGroupGloo, made in gloo_process_group.cc and
// used everywhere else through c10d's common process-group interface, so that one file alone
// needs Gloo's own headers. A LibTorch that ships none (PyTorch's wheels) builds without Gloo:
// the gloo transport and allreduce are then not compiled (not in `tpbench list`), and what
// still needs Gloo on the CPU (ddp's buckets, the library collectives) refuses before launch
// with noGlooReason().
#pragma once

#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/torch_compat.h"

namespace tpb {

using GlooGroup = c10::intrusive_ptr<compat::ProcessGroupBase>;

// Whether this build has Gloo (its LibTorch's include folders hold Gloo's headers).
bool glooInThisBuild();

// Why a CPU path that needs Gloo is refused in a build without it ("" in one with it).
std::string noGlooReason();

// A Gloo process group of `size` ranks meeting through `store`, its TCP device bound to `host`.
// Collective; throws tpb::Error naming `what` when the group cannot be set up.
GlooGroup makeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, const std::string& host, int rank,
                        int size, std::chrono::milliseconds timeout, const std::string& what);

}  // namespace tpb
