// `data_parallel` (also `param_server_builtin`): torch.nn.DataParallel's algorithm in one
// process. N replicas of the model (CPU: threads; GPU: one per device, cuda:0..N-1, each driven
// by its own host thread) each take 1/N of a global batch of N*B samples, run forward and
// backward in parallel, their gradients are reduced onto replica 0, replica 0 takes the
// optimizer step, and its weights are copied back out to the other replicas (on GPUs: device
// to device copies, as DataParallel's reduce_add and broadcast). Replica i's loss is scaled by its share of the global batch, so
// the reduced gradient is exactly the gradient of the global batch's mean loss.
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/cuda/gpu_trace.h"
#include "comm/reduce.h"
#include "common/error.h"
#include "common/fault.h"
#include "common/trace.h"
#include "core/registry.h"
#include "workload/sampler.h"
#include "workload/train.h"

namespace tpb {

namespace {

using clock_type = std::chrono::steady_clock;

TrainResult trainDataParallel(CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
  TPB_CHECK(ctx.size() == 1, "data_parallel runs in one process");
  const int n = cfg.nGpus;
  const bool gpu = cfg.device == Device::Cuda;
  // The input lives where replica 0 is (DataParallel's output device); each replica's share of
  // the batch is gathered there and copied to its own device (the scatter).
  const torch::Device home = torchDevice(cfg, 0);
  const DataSplit data = loadTrainData(cfg, home);
  std::vector<std::unique_ptr<Replica>> reps;
  std::vector<std::unique_ptr<FlatGrads>> grads;
  for (int i = 0; i < n; ++i) {
    reps.push_back(std::make_unique<Replica>(cfg, torchDevice(cfg, i)));
    grads.push_back(std::make_unique<FlatGrads>(reps.back()->params));
  }
  const std::size_t count = grads[0]->count();
  torch::Tensor inbox;  // GPU: replica i's gradients copied onto replica 0's device
  if (gpu && n > 1) inbox = torch::empty_like(grads[0]->flat());
  DistributedSampler sampler(data.train.size(), 1, 0, /*shuffle=*/true, cfg.seed);
  const std::size_t batch = static_cast<std::size_t>(cfg.batchSize);
  std::vector<double> losses(n);
  std::vector<std::exception_ptr> errors(n);
  EpochLoop loop;
  loop.rowsPerStep = batch * static_cast<std::size_t>(n);  // the global batch
  loop.device = home;
  loop.synchronize = [&] {
    for (int i = 0; i < n; ++i) synchronize(cfg, i);
  };
  loop.saveState = [&] { return reps[0]->state(); };  // replica 0 holds the optimizer
  loop.loadState = [&](const ModelState& s) {
    for (auto& r : reps) r->load(s);
  };
  TrainResult result = runEpochs(cfg, loop, sampler, data, reps[0]->model.get(), [&](Step& st) {
    const double total = static_cast<double>(st.end - st.begin);
    // Scatter + parallel forward/backward. Reading each replica's loss waits for its device,
    // so the compute phase ends when every replica's backward has run.
    const auto c0 = clock_type::now();
    auto replicaStep = [&](int i) {
      const std::size_t lo = std::min(st.begin + i * batch, st.end), hi = std::min(lo + batch, st.end);
      losses[i] = 0;
      try {
        grads[i]->zero();
        if (lo == hi) return;
        const double share = static_cast<double>(hi - lo) / total;
        losses[i] = reps[i]->forwardBackward(data.train, st.indices, lo, hi, share).item<double>() * share;
      } catch (...) {
        errors[i] = std::current_exception();
      }
    };
    // Replicas 1..N-1 on their own threads, replica 0 on this one (as DataParallel's
    // parallel_apply keeps the caller busy too). The trace's GPU track draws replica 0's work.
    std::vector<std::thread> threads;
    for (int i = 1; i < n; ++i)
      threads.emplace_back([&replicaStep, i] {
        const trace::NoGpuSpansOnThisThread quiet;
        replicaStep(i);
      });
    replicaStep(0);
    for (auto& th : threads) th.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    const auto c1 = clock_type::now();
    // Reduce onto replica 0 (in replica order: deterministic).
    if (gpu) {
      torch::NoGradGuard noGrad;
      torch::Tensor g0 = grads[0]->flat();
      for (int i = 1; i < n; ++i) {
        inbox.copy_(grads[i]->flat());  // device to device (peer access where the GPUs have it)
        g0.add_(inbox);
      }
      synchronize(cfg, 0);
    } else {
      float* g0 = grads[0]->data();
      for (int i = 1; i < n; ++i) reduceSum(g0, grads[i]->data(), count);
    }
    const auto c2 = clock_type::now();
    reps[0]->step(grads[0]->flat());
    synchronize(cfg, 0);
    const auto c3 = clock_type::now();
    // Copy the new weights out to the other replicas.
    if (gpu) {
      torch::NoGradGuard noGrad;
      for (int i = 1; i < n; ++i) reps[i]->flatParams->flat().copy_(reps[0]->flatParams->flat());
      for (int i = 1; i < n; ++i) synchronize(cfg, i);
    } else {
      for (int i = 1; i < n; ++i)
        std::memcpy(reps[i]->flatParams->data(), reps[0]->flatParams->data(), count * sizeof(float));
    }
    const auto c4 = clock_type::now();
    double loss = 0;
    for (int i = 0; i < n; ++i) loss += losses[i];
    st.lossSum.add_(loss);
    st.stats.computeS += std::chrono::duration<double>((c1 - c0) + (c3 - c2)).count();
    st.stats.commS += std::chrono::duration<double>((c2 - c1) + (c4 - c3)).count();
    if (trace::enabled()) {
      // One host thread drives the replicas: its phases, with replica 0's own forward and
      // backward (run on this thread) inside the first.
      trace::record("replicas forward + backward", trace::Category::Compute, trace::toNs(c0), trace::toNs(c1));
      trace::record("reduce to replica 0", trace::Category::Comm, trace::toNs(c1), trace::toNs(c2));
      trace::record("optimizer", trace::Category::Optimizer, trace::toNs(c2), trace::toNs(c3));
      trace::record("copy weights out", trace::Category::Comm, trace::toNs(c3), trace::toNs(c4));
    }
  }, onEpoch);
  result.params = reps[0]->hostParams();
  return result;
}

TrainStrategy dataParallelStrategy() {
  TrainStrategy s;
  s.name = "data_parallel";
  s.aliases = {"param_server_builtin"};
  s.origin = Origin::BuiltinEquivalent;
  s.description =
      "DataParallel's algorithm in one process: N replicas (threads; GPUs cuda:0..N-1), scatter N*B, reduce grads to replica 0, copy weights out";
  s.order = 5;
  s.color = "#ff7f0e";
  // On GPUs replica i runs on cuda:i of this one process (the launcher checks there are N).
  s.processes = [](int) { return 1; };
  s.run = trainDataParallel;
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(dataParallelStrategy);

}  // namespace tpb
