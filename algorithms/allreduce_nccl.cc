// `nccl` allreduce baseline: ncclAllReduce, in place on device memory, on the communicator and
// stream of the run's nccl transport. A second NCCL communicator would cost another set of GPU
// buffers and connections for nothing, and the from-scratch algorithms it is compared with run
// on that same communicator. The GPU's default library (`library` on cuda). Compiled, and
// registered, only where NCCL is.
#ifdef TPB_HAVE_NCCL

#include "comm/nccl/nccl_transport.h"
#include "core/registry.h"

namespace tpb {

namespace {

// run() returns once the sum is in buf (the transport waits for the collective's event under its
// timeout), like every other Allreduce; start() only queues it.
class NcclAllreduce final : public Allreduce {
 public:
  NcclAllreduce(CommContext& ctx, float* buf, std::size_t count)
      : nccl_(ncclTransportOf(ctx.transport, "nccl allreduce")), buf_(buf), count_(count) {}

  void run() override { start()->wait(); }
  bool queuesOnDevice() const override { return true; }
  std::unique_ptr<Request> start() override {
    if (count_ == 0) return std::make_unique<DoneRequest>();
    return nccl_.startCollective("ncclAllReduce", [this](ncclComm_t comm, cudaStream_t stream) {
      return ncclAllReduce(buf_, buf_, count_, ncclFloat, ncclSum, comm, stream);
    });
  }

 private:
  NcclTransport& nccl_;
  float* buf_;
  std::size_t count_;
};

AllreduceAlgo ncclAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "nccl";
  a.origin = Origin::Library;
  a.description = "ncclAllReduce on the nccl transport's communicator and stream (GPU memory)";
  a.order = 5;
  a.color = "#17becf";
  a.unsupported = [](Device d) {
    return d == Device::Cuda ? std::string() : std::string("nccl reduces GPU memory only; use --device cuda");
  };
  a.make = [](CommContext& ctx, float* buf, std::size_t count) -> std::unique_ptr<Allreduce> {
    return std::make_unique<NcclAllreduce>(ctx, buf, count);
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(ncclAllreduceAlgo);

}  // namespace tpb

#endif  // TPB_HAVE_NCCL
