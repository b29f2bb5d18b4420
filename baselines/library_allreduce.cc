// Library allreduce baseline: the collective that c10d itself provides — ProcessGroupGloo's
// allreduce on CPU (ncclAllReduce on GPU arrives with the NCCL backend). It uses its own
// process group over the same rendezvous store, so it shares nothing with tpbench's transports.
#include "baselines/gloo_group.h"
#include "common/error.h"
#include "strategies/allreduce.h"
#include "strategies/train_strategy.h"

namespace tpb {

namespace {

class GlooLibraryAllreduce final : public Allreduce {
 public:
  GlooLibraryAllreduce(CommContext& ctx, float* buf, std::size_t count) : timeout_(ctx.timeout()) {
    tensors_.push_back(at::from_blob(buf, {static_cast<int64_t>(count)},
                                     at::TensorOptions().dtype(at::kFloat)));
    if (ctx.size() > 1 && count > 0) pg_ = glooGroup(ctx);
  }

  void run() override {
    if (pg_) waitWork(pg_->allreduce(tensors_), timeout_, "gloo allreduce");
  }

 private:
  std::chrono::milliseconds timeout_;
  std::vector<at::Tensor> tensors_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

std::unique_ptr<Allreduce> makeLibrary(CommContext& ctx, float* buf, std::size_t count) {
  return std::make_unique<GlooLibraryAllreduce>(ctx, buf, count);
}

}  // namespace

AllreduceAlgo libraryAllreduceAlgo() {
  return {"library", "library",
          "the library's own allreduce: c10d ProcessGroupGloo on CPU (NCCL on GPU: not in this build yet)",
          [](Device d) {
            return d == Device::Cpu ? std::string() : std::string("ncclAllReduce is not built yet");
          },
          makeLibrary};
}

// `allreduce` training baseline: the same flat gradient buffer as ring_all_reduce, averaged by
// the library's allreduce instead of the from-scratch ring.
TrainStrategy allreduceStrategy() {
  TrainStrategy s;
  s.name = "allreduce";
  s.origin = "library";
  s.description = "flat gradient buffer averaged by the library allreduce (c10d Gloo on CPU)";
  s.processes = [](int n) { return n; };
  s.unsupported = [](Device d, int) {
    return d == Device::Cpu ? std::string() : std::string("ncclAllReduce is not built yet");
  };
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    std::unique_ptr<Allreduce> ar;
    FlatGradSync sync(ctx.size(), [&](float* buf, std::size_t count) {
      if (!ar) ar = makeLibrary(ctx, buf, count);
      ar->run();
    });
    return trainReplicated(&ctx.transport, cfg, sync, onEpoch);
  };
  return s;
}

}  // namespace tpb
