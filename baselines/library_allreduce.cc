// Library allreduce baseline: the collective that c10d itself provides — ProcessGroupGloo's
// allreduce on CPU (ncclAllReduce on GPU arrives with the NCCL backend). It builds its own
// process group over the same rendezvous store, so it shares nothing with tpbench's transports.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/store_c10d.h"
#include "comm/torch_compat.h"
#include "common/error.h"
#include "strategies/allreduce.h"

namespace tpb {

namespace {

class GlooLibraryAllreduce final : public Allreduce {
 public:
  GlooLibraryAllreduce(CommContext& ctx, float* buf, std::size_t count) : timeout_(ctx.timeout()) {
    tensors_.push_back(at::from_blob(buf, {static_cast<int64_t>(count)},
                                     at::TensorOptions().dtype(at::kFloat)));
    if (ctx.size() == 1 || count == 0) return;
    // One process group per run, shared by every instance (one per message size).
    auto& slot = ctx.shared["library/gloo"];
    if (!slot) {
      auto opts = c10d::ProcessGroupGloo::Options::create(ctx.timeout());
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(ctx.host));
      auto store = c10::make_intrusive<c10d::PrefixStore>("library/" + ctx.runId + "/",
                                                          nativeStore(ctx.store));
      slot = std::make_shared<c10::intrusive_ptr<c10d::ProcessGroupGloo>>(
          c10::make_intrusive<c10d::ProcessGroupGloo>(store, ctx.rank(), ctx.size(), opts));
    }
    pg_ = *std::static_pointer_cast<c10::intrusive_ptr<c10d::ProcessGroupGloo>>(slot);
  }

  void run() override {
    if (!pg_) return;
    auto work = pg_->allreduce(tensors_);
    if (!work->wait(timeout_)) TPB_THROW(TimeoutError, "gloo allreduce timed out");
  }

 private:
  std::chrono::milliseconds timeout_;
  std::vector<at::Tensor> tensors_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

}  // namespace

AllreduceAlgo libraryAllreduceAlgo() {
  return {"library", "library",
          "the library's own allreduce: c10d ProcessGroupGloo on CPU (NCCL on GPU: not in this build yet)",
          [](Device d) {
            return d == Device::Cpu ? std::string() : std::string("ncclAllReduce is not built yet");
          },
          [](CommContext& ctx, float* buf, std::size_t count) -> std::unique_ptr<Allreduce> {
            return std::make_unique<GlooLibraryAllreduce>(ctx, buf, count);
          }};
}

}  // namespace tpb
