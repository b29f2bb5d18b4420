#include "algorithms/gloo_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/store_c10d.h"
#include "common/error.h"

namespace tpb {

c10::intrusive_ptr<c10d::ProcessGroupGloo> glooGroup(CommContext& ctx) {
  using Group = c10::intrusive_ptr<c10d::ProcessGroupGloo>;
  auto& slot = ctx.shared["gloo_group"];
  if (!slot) {
    auto opts = c10d::ProcessGroupGloo::Options::create(ctx.timeout());
    try {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(ctx.host));
      auto store = c10::make_intrusive<c10d::PrefixStore>("library/" + ctx.runId + "/",
                                                          nativeStore(ctx.store));
      slot = std::make_shared<Group>(
          c10::make_intrusive<c10d::ProcessGroupGloo>(store, ctx.rank(), ctx.size(), opts));
    } catch (const std::exception& e) {
      TPB_THROW(Error, "c10d ProcessGroupGloo setup failed (rank " << ctx.rank() << " of "
                                                                   << ctx.size() << "): " << e.what());
    }
  }
  return *std::static_pointer_cast<Group>(slot);
}

void waitWork(const c10::intrusive_ptr<c10d::Work>& work, std::chrono::milliseconds timeout,
              const char* what) {
  bool ok = false;
  try {
    ok = work->wait(timeout);
  } catch (const std::exception& e) {
    TPB_THROW(Error, what << " failed: " << e.what());
  }
  if (!ok) TPB_THROW(TimeoutError, what << " timed out after " << timeout.count() << " ms");
}

}  // namespace tpb
