#include "algorithms/gloo_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/store_c10d.h"
#include "common/error.h"

namespace tpb {

GlooGroup glooGroup(CommContext& ctx) {
  auto& slot = ctx.shared["gloo_group"];
  if (!slot) {
    auto store = c10::make_intrusive<c10d::PrefixStore>("library/" + ctx.runId + "/", nativeStore(ctx.store));
    slot = std::make_shared<GlooGroup>(
        makeGlooGroup(store, ctx.host, ctx.rank(), ctx.size(), ctx.timeout(), "c10d ProcessGroupGloo setup"));
  }
  return *std::static_pointer_cast<GlooGroup>(slot);
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
