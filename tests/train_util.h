// tests/train_util.h — what training tests share: running a strategy on a world of threads (shm
// on the CPU, nccl on GPUs with rank r on cuda:r) and comparing parameter vectors.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/registry.h"
#include "tests/thread_world.h"

namespace tpb::test {

// A short, deterministic training: 6 steps with momentum (so the velocity buffer is exercised)
// and no evaluation.
inline TrainConfig smallTrainConfig(const std::string& strategy, int n, int batch,
                                    Device device = Device::Cpu) {
  TrainConfig c;
  c.strategy = strategy;
  c.nGpus = n;
  c.batchSize = batch;
  c.epochs = 1;
  c.trainSize = 4096;
  c.maxSteps = 6;
  c.evaluate = false;
  c.lr = 0.05;
  c.momentum = 0.5;
  c.seed = 7;
  c.bucketMb = 0.25;  // several buckets (4 for the default MLP) where a strategy buckets
  c.device = device;
  // A strategy that splits the model over the devices needs a layer per device: the MLP gets
  // more 512-wide hidden layers where it has fewer (the reference trains the same model).
  const TrainStrategy& s = findStrategy("--strategy", strategy);
  while (s.splitsModel && static_cast<int>(c.model().hidden.size()) + 1 < n) c.hidden += ",512";
  return c;
}

// Every registered strategy that synchronises, i.e. all but the reference loop.
inline std::vector<std::string> synchronisingStrategies() {
  std::vector<std::string> names;
  for (const auto& s : trainStrategies())
    if (!s.reference) names.push_back(s.name);
  return names;
}

// The reference loop every strategy is compared with.
inline const TrainStrategy& referenceStrategy() {
  for (const auto& s : trainStrategies())
    if (s.reference) return s;
  throw std::logic_error("no reference strategy is registered");
}

// The reference run that `strategy` on n devices at `batch` per device must match: one device
// at the global batch, dataRanks(n) x batch.
inline TrainConfig referenceConfigFor(const std::string& strategy, int n, int batch,
                                      Device device = Device::Cpu) {
  const int dataRanks = findStrategy("--strategy", strategy).dataRanks(n);
  TrainConfig c = smallTrainConfig(referenceStrategy().name, 1, batch * dataRanks, device);
  c.hidden = smallTrainConfig(strategy, n, batch, device).hidden;
  return c;
}

// Runs cfg.strategy on its own world (as many ranks as the strategy has processes) and returns
// every rank's final parameters, over `transport` (default: shm on the CPU, nccl on CUDA). On
// CUDA rank r trains on cuda:r, as LOCAL_RANK r would.
inline std::vector<std::vector<float>> trainAll(const TrainConfig& cfg, std::string transport = "") {
  const TrainStrategy& s = findStrategy("--strategy", cfg.strategy);
  const int procs = s.processes(cfg.nGpus);
  std::vector<std::vector<float>> params(procs);
  const bool gpu = cfg.device == Device::Cuda;
  if (transport.empty()) transport = gpu ? "nccl" : "shm";
  runThreads(
      transport, procs,
      [&](CommContext& ctx) {
        TrainConfig mine = cfg;
        mine.deviceIndex = gpu ? ctx.rank() : 0;
        params[ctx.rank()] = s.run(ctx, mine, nullptr).params;
      },
      std::chrono::seconds(120), cfg.device);
  return params;
}

// max |a-b| / (|b| + 1e-3) over all elements: relative, with a floor for weights near zero.
inline double maxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (std::abs(double(b[i])) + 1e-3));
  return worst;
}

}  // namespace tpb::test
