// `data_parallel` (also `param_server_builtin`): torch.nn.DataParallel's algorithm in one
// process. N replicas of the model (here: CPU threads; on GPUs: one per device) each take 1/N
// of a global batch of N*B samples, run forward and backward in parallel, their gradients are
// reduced onto replica 0, replica 0 takes the optimizer step, and its weights are copied back
// out to the other replicas. Replica i's loss is scaled by its share of the global batch, so
// the reduced gradient is exactly the gradient of the global batch's mean loss.
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/reduce.h"
#include "common/error.h"
#include "common/fault.h"
#include "strategies/train_strategy.h"
#include "workload/sampler.h"

namespace tpb {

namespace {

using clock_type = std::chrono::steady_clock;

TrainResult trainDataParallel(CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
  TPB_CHECK(ctx.size() == 1, "data_parallel runs in one process");
  const int n = cfg.nGpus;
  const DataSplit data = loadTrainData(cfg);
  std::vector<std::unique_ptr<Replica>> reps;
  std::vector<std::unique_ptr<FlatGrads>> grads;
  for (int i = 0; i < n; ++i) {
    reps.push_back(std::make_unique<Replica>(cfg, data));
    grads.push_back(std::make_unique<FlatGrads>(reps.back()->params));
  }
  const std::size_t count = grads[0]->count();
  DistributedSampler sampler(data.train.size(), 1, 0, /*shuffle=*/true, cfg.seed);
  const std::size_t batch = static_cast<std::size_t>(cfg.batchSize);
  const std::size_t global = batch * static_cast<std::size_t>(n);
  TrainResult result;
  long totalSteps = 0;
  std::vector<double> losses(n);
  std::vector<std::exception_ptr> errors(n);
  for (int epoch = 0; epoch < cfg.epochs; ++epoch) {
    sampler.setEpoch(static_cast<std::uint64_t>(epoch));
    const std::vector<std::int64_t> idx = sampler.indices();
    EpochStats s;
    s.epoch = epoch + 1;
    double lossSum = 0;
    const auto t0 = clock_type::now();
    for (std::size_t begin = 0; begin < idx.size(); begin += global) {
      if (cfg.maxSteps >= 0 && totalSteps >= cfg.maxSteps) break;
      const std::size_t end = std::min(begin + global, idx.size());
      const double total = static_cast<double>(end - begin);
      // Scatter + parallel forward/backward.
      const auto c0 = clock_type::now();
      auto replicaStep = [&](int i) {
        const std::size_t lo = std::min(begin + i * batch, end), hi = std::min(lo + batch, end);
        losses[i] = 0;
        grads[i]->zero();
        if (lo == hi) return;
        try {
          const double share = static_cast<double>(hi - lo) / total;
          losses[i] = reps[i]->forwardBackward(data.train, idx, lo, hi, share) * share;
        } catch (...) {
          errors[i] = std::current_exception();
        }
      };
      // Replicas 1..N-1 on their own threads, replica 0 on this one (as DataParallel's
      // parallel_apply keeps the caller busy too).
      std::vector<std::thread> threads;
      for (int i = 1; i < n; ++i) threads.emplace_back(replicaStep, i);
      replicaStep(0);
      for (auto& th : threads) th.join();
      for (auto& e : errors)
        if (e) std::rethrow_exception(e);
      const auto c1 = clock_type::now();
      // Reduce onto replica 0 (in replica order: deterministic).
      float* g0 = grads[0]->data();
      for (int i = 1; i < n; ++i) reduceSum(g0, grads[i]->data(), count);
      const auto c2 = clock_type::now();
      reps[0]->sgd.step(reps[0]->flatParams->data(), g0);
      const auto c3 = clock_type::now();
      // Copy the new weights out to the other replicas.
      for (int i = 1; i < n; ++i)
        std::memcpy(reps[i]->flatParams->data(), reps[0]->flatParams->data(), count * sizeof(float));
      const auto c4 = clock_type::now();
      for (int i = 0; i < n; ++i) lossSum += losses[i];
      s.computeS += std::chrono::duration<double>((c1 - c0) + (c3 - c2)).count();
      s.commS += std::chrono::duration<double>((c2 - c1) + (c4 - c3)).count();
      s.samples += end - begin;
      ++s.steps;
      ++totalSteps;
      faultPoint(0);
    }
    s.wallS = std::chrono::duration<double>(clock_type::now() - t0).count();
    s.trainLoss = lossSum;
    closeEpoch(nullptr, s, reps[0]->model, data, cfg, onEpoch, result);
    if (cfg.maxSteps >= 0 && totalSteps >= cfg.maxSteps) break;
  }
  const float* p = reps[0]->flatParams->data();
  result.params.assign(p, p + count);
  return result;
}

}  // namespace

TrainStrategy dataParallelStrategy() {
  TrainStrategy s;
  s.name = "data_parallel";
  s.aliases = {"param_server_builtin"};
  s.origin = "builtin-equivalent";
  s.description =
      "DataParallel's algorithm in one process: N replicas (threads), scatter N*B, reduce grads to replica 0, copy weights out";
  s.processes = [](int) { return 1; };
  s.unsupported = [](Device d, int) {
    return d == Device::Cpu ? std::string() : std::string("multi-GPU DataParallel is not built yet");
  };
  s.run = trainDataParallel;
  return s;
}

}  // namespace tpb
