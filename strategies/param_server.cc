// `param_server`, from scratch, over Transport P2P only.
//
// Rank 0 is the server: it holds the authoritative weights and the optimizer. Ranks 1..N-1 are
// workers, each with 1/(N-1) of the data (a DistributedSampler over N-1 replicas). Every step:
//   workers: forward/backward on their batch, send the flat gradient to the server, then
//            receive the new flat weights;
//   server:  add the workers' gradients in rank order (deterministic), divide by N-1, take an
//            SGD step, send the weights to every worker.
// This is synchronous SGD at a global batch of (N-1)*B, so after K steps the weights equal
// `single` trained at batch (N-1)*B. Cost per step: the server moves 2(N-1)*S bytes, so it is
// the bottleneck as N grows. With N = 1 there are no workers and the server trains alone.
// On GPUs the same code runs over the nccl transport: the buffers are device memory, the
// server's sums are the transport's CUDA kernel, and its optimizer step runs on its GPU.
#include <chrono>
#include <memory>

#include "comm/cuda/stream_clock.h"
#include "common/fault.h"
#include "common/trace.h"
#include "core/registry.h"
#include "core/replicated.h"
#include "workload/sampler.h"
#include "workload/train.h"

namespace tpb {

namespace {

using clock_type = std::chrono::steady_clock;

TrainResult trainParamServer(CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
  Transport& t = ctx.transport;
  const int n = t.size(), rank = t.rank();
  if (n == 1) return trainAlone(cfg, onEpoch);
  const torch::Device device = torchDevice(cfg);
  const DataSplit data = loadTrainData(cfg, device);
  Replica rep(cfg, device);
  FlatGrads grads(rep.params);
  float* w = rep.flatParams->data();
  float* g = grads.data();
  const std::size_t count = grads.count(), bytes = count * sizeof(float);
  const int workers = n - 1;
  const bool gpu = cfg.device == Device::Cuda;
  // The server builds the same sampler as worker 1 only to know how many steps an epoch has.
  DistributedSampler sampler(data.train.size(), workers, rank == 0 ? 0 : rank - 1, true, cfg.seed);
  std::vector<std::unique_ptr<Request>> sends;
  EpochLoop loop;
  loop.transport = &t;
  loop.rank = rank;
  loop.rowsPerStep = static_cast<std::size_t>(cfg.batchSize);
  loop.device = device;
  loop.countsSamples = rank != 0;
  loop.synchronize = [&cfg] { synchronize(cfg); };
  loop.saveState = [&rep] { return rep.state(); };  // rank 0's, the server's, is written
  loop.loadState = [&rep](const ModelState& s) { rep.load(s); };
  auto serve = [&](Step&) {
    // Transports order their device work after the kernels already queued (the zeroing here,
    // the optimizer step below), and a wait returns only once the data is there.
    grads.zero();
    for (int src = 1; src < n; ++src) {
      trace::Span span("recv + sum gradients", trace::Category::Comm, "peer", src);
      t.irecvReduce(src, g, count)->wait();
    }
    {
      trace::Span span("optimizer", trace::Category::Optimizer);
      scaleInPlace(grads.flat(), 1.0f / static_cast<float>(workers));
      rep.step(grads.flat());
    }
    trace::Span span("send weights", trace::Category::Comm);
    sends.clear();
    for (int dst = 1; dst < n; ++dst) sends.push_back(t.isend(dst, w, bytes));
    for (auto& q : sends) q->wait();
  };
  // On a GPU a worker's compute is read on the default stream's clock at the epoch's end, as in
  // trainReplicated: the host queues forward and backward and goes on to the send without
  // waiting for them (under --trace it waits, so its spans line up with the GPU's).
  StreamClock clock(gpu && rank != 0 ? gpuOf(device) : -1);
  loop.gpuCompute = &clock;
  auto work = [&](Step& st) {
    const auto c0 = clock_type::now();
    const std::size_t from = clock.mark();
    grads.zero();
    st.lossSum.add_(rep.forwardBackward(data.train, st.indices, st.begin, st.end, 1.0));
    clock.closeSpan(from);
    if (gpu && trace::enabled()) synchronize(cfg);
    const auto c1 = clock_type::now();
    t.send(0, g, bytes);
    const double push = trace::close("send gradients", trace::Category::Comm, c1, "peer", 0);
    const auto c2 = clock_type::now();
    t.recv(0, w, bytes);
    st.stats.computeS += std::chrono::duration<double>(c1 - c0).count();
    st.stats.commS += push + trace::close("recv weights", trace::Category::Comm, c2, "peer", 0);
  };
  TrainResult result = rank == 0 ? runEpochs(cfg, loop, sampler, data, rep.model.get(), serve, onEpoch)
                                 : runEpochs(cfg, loop, sampler, data, rep.model.get(), work, onEpoch);
  result.params = rep.hostParams();
  return result;
}

TrainStrategy paramServerStrategy() {
  TrainStrategy s;
  s.name = "param_server";
  s.origin = Origin::FromScratch;
  s.description =
      "rank 0 serves weights and optimizer, ranks 1..N-1 send gradients (N=1: the server trains alone)";
  s.order = 1;
  s.color = "#1f77b4";
  s.dataRanks = [](int n) { return n > 1 ? n - 1 : 1; };
  s.run = trainParamServer;
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(paramServerStrategy);

}  // namespace tpb
