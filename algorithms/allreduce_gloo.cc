// `gloo` allreduce baseline: c10d ProcessGroupGloo's allreduce (Gloo's ring over TCP pairs), on
// its own process group over the run's rendezvous store (algorithms/gloo_group.h), so it shares
// nothing with tpbench's transports. The CPU's default library (`library` on cpu).
#include "algorithms/gloo_group.h"
#include "core/registry.h"

namespace tpb {

namespace {

class GlooAllreduce final : public Allreduce {
 public:
  GlooAllreduce(CommContext& ctx, float* buf, std::size_t count) : timeout_(ctx.timeout()) {
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
  GlooGroup pg_;
};

AllreduceAlgo glooAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "gloo";
  a.origin = Origin::Library;
  a.description = "Gloo's allreduce through c10d ProcessGroupGloo (TCP, host memory)";
  a.order = 3;
  a.color = "#8c564b";
  a.carrier = glooCarrier;
  a.unsupported = [](Device d) {
    return d == Device::Cpu ? std::string() : std::string("gloo reduces host memory only; use nccl on cuda");
  };
  a.make = [](CommContext& ctx, float* buf, std::size_t count) -> std::unique_ptr<Allreduce> {
    return std::make_unique<GlooAllreduce>(ctx, buf, count);
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(glooAllreduceAlgo);

}  // namespace tpb
