// Compiled only where LibTorch's include folders hold Gloo's headers (CMakeLists.txt).
#include "comm/gloo/gloo_process_group.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "common/error.h"

namespace tpb {

bool glooInThisBuild() { return true; }

std::string noGlooReason() { return ""; }

GlooGroup makeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, const std::string& host, int rank,
                        int size, std::chrono::milliseconds timeout, const std::string& what) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  try {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
  } catch (const std::exception& e) {
    TPB_THROW(Error, what << " (rank " << rank << " of " << size << ", host " << host
                          << ") failed: " << e.what());
  }
}

}  // namespace tpb
