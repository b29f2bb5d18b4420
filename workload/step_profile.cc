#include "workload/step_profile.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "workload/sampler.h"
#include "workload/train.h"

namespace tpb {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

MeasuredStep measureStep(const TrainConfig& cfg, int warmup, int steps) {
  if (cfg.device != Device::Cpu) TPB_THROW(UsageError, "step profile: the CPU only (--device cpu)");
  if (steps < 1 || warmup < 0) TPB_THROW(UsageError, "step profile: steps must be at least 1, warm-up at least 0");
  const torch::Device device(torch::kCPU);
  const DataSplit data = loadTrainData(cfg, device);
  Replica rep(cfg, device);
  const std::size_t n = rep.params.size(), rows = data.train.size();
  if (rows == 0) TPB_THROW(UsageError, "step profile: no training samples");
  const std::size_t batch = std::min<std::size_t>(static_cast<std::size_t>(cfg.batchSize), rows);

  MeasuredStep out;
  out.names = rep.model->parameterNames();
  TPB_CHECK(out.names.size() == n, "step profile: " << out.names.size() << " names for " << n << " parameters");
  for (const auto& p : rep.params) out.bytes.push_back(static_cast<double>(p.numel()) * p.element_size());

  // Each parameter's hook stamps the moment its gradient is ready (DDP's hooks run there too).
  std::vector<clock_type::time_point> ready(n);
  for (std::size_t i = 0; i < n; ++i)
    rep.params[i].register_hook([&ready, i](torch::Tensor g) {
      ready[i] = clock_type::now();
      return g;
    });
  torch::Tensor flatGrad = torch::zeros_like(rep.flatParams->flat());
  const std::vector<std::int64_t> order = shuffledOrder(rows, cfg.seed, 0);
  std::vector<double> fwd, bwd, opt, whole;
  std::vector<std::vector<double>> readyS(n);
  std::size_t begin = 0;
  for (int s = 0; s < warmup + steps; ++s) {
    if (begin + batch > rows) begin = 0;
    for (auto& p : rep.params) p.mutable_grad() = torch::Tensor();
    std::fill(ready.begin(), ready.end(), clock_type::time_point{});
    const auto t0 = clock_type::now();
    const Batch b = gatherBatch(data.train, order, begin, begin + batch);
    torch::Tensor loss = rep.model->loss(rep.model->forward(b.images), b.labels);
    const auto t1 = clock_type::now();
    loss.backward();
    const auto t2 = clock_type::now();
    for (std::size_t i = 0; i < n; ++i)
      TPB_CHECK(ready[i] >= t1, "step profile: parameter " << out.names[i] << " got no gradient");
    // The gradients into the flat buffer the optimizer reads (what a strategy's GradSync fills).
    std::size_t offset = 0;
    for (auto& p : rep.params) {
      const auto k = p.numel();
      flatGrad.narrow(0, static_cast<std::int64_t>(offset), k).copy_(p.grad().reshape({-1}));
      offset += static_cast<std::size_t>(k);
    }
    const auto t3 = clock_type::now();
    rep.step(flatGrad);
    const auto t4 = clock_type::now();
    begin += batch;
    if (s < warmup) continue;
    fwd.push_back(seconds(t0, t1));
    bwd.push_back(seconds(t1, t2));
    opt.push_back(seconds(t3, t4));
    whole.push_back(seconds(t0, t2) + seconds(t3, t4));
    for (std::size_t i = 0; i < n; ++i) readyS[i].push_back(seconds(t1, ready[i]));
  }
  out.steps = steps;
  out.forwardS = medianOf(fwd);
  out.backwardS = medianOf(bwd);
  out.optimizerS = medianOf(opt);
  out.stepMinS = *std::min_element(whole.begin(), whole.end());
  out.stepMaxS = *std::max_element(whole.begin(), whole.end());
  for (std::size_t i = 0; i < n; ++i) out.gradReadyS.push_back(std::min(medianOf(readyS[i]), out.backwardS));
  return out;
}

}  // namespace tpb
