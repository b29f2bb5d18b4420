// Library allreduce baseline: the vendor collective each device is normally synchronised with.
// On CPU that is c10d ProcessGroupGloo's allreduce, on its own process group over the same
// rendezvous store, so it shares nothing with tpbench's transports. On GPU it is ncclAllReduce
// on the communicator and stream of the run's nccl transport: building a second NCCL
// communicator would cost another GPU context's worth of buffers and connections for nothing,
// and the from-scratch algorithms it is compared with run on that same communicator.
#include "baselines/gloo_group.h"
#include "common/error.h"
#include "core/registry.h"

#ifdef TPB_HAVE_NCCL
#include "comm/nccl/nccl_transport.h"
#endif

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

#ifdef TPB_HAVE_NCCL
// In place on device memory; run() returns once the sum is in buf (the transport waits for the
// collective's event under its timeout), like every other Allreduce.
class NcclLibraryAllreduce final : public Allreduce {
 public:
  NcclLibraryAllreduce(CommContext& ctx, float* buf, std::size_t count)
      : nccl_(ncclTransportOf(ctx.transport, "library allreduce")), buf_(buf), count_(count) {}

  void run() override {
    if (count_ == 0) return;
    nccl_.runCollective("ncclAllReduce", [this](ncclComm_t comm, cudaStream_t stream) {
      return ncclAllReduce(buf_, buf_, count_, ncclFloat, ncclSum, comm, stream);
    });
  }

 private:
  NcclTransport& nccl_;
  float* buf_;
  std::size_t count_;
};
#endif

std::unique_ptr<Allreduce> makeLibrary(CommContext& ctx, float* buf, std::size_t count) {
#ifdef TPB_HAVE_NCCL
  if (ctx.device() == Device::Cuda) return std::make_unique<NcclLibraryAllreduce>(ctx, buf, count);
#endif
  TPB_CHECK(ctx.device() == Device::Cpu, "library allreduce: no GPU backend in this build");
  return std::make_unique<GlooLibraryAllreduce>(ctx, buf, count);
}

// Empty when the library allreduce can run on `d` in this build.
std::string libraryUnsupported(Device d) {
  if (d == Device::Cpu) return {};
#ifdef TPB_HAVE_NCCL
  return {};
#else
  return "this build has no NCCL (ncclAllReduce)";
#endif
}

AllreduceAlgo libraryAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "library";
  a.origin = Origin::Library;
  a.description = "the library's own allreduce: c10d ProcessGroupGloo on CPU, ncclAllReduce on GPU";
  a.order = 2;
  a.color = "#9467bd";
  a.unsupported = libraryUnsupported;
  a.make = makeLibrary;
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(libraryAllreduceAlgo);

}  // namespace tpb
