#include "workload/step_profile.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

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

namespace {

double meanOf(const std::vector<double>& xs) {
  double sum = 0;
  for (double x : xs) sum += x;
  return xs.empty() ? 0 : sum / static_cast<double>(xs.size());
}

// One replica's step loop over its own data: what the measured rank runs, and what each
// companion (another rank on the same machine) runs beside it.
class StepLoop {
 public:
  StepLoop(const StepLoop&) = delete;
  StepLoop& operator=(const StepLoop&) = delete;
  explicit StepLoop(const TrainConfig& cfg)
      : data_(loadTrainData(cfg, torch::Device(torch::kCPU))), rep_(cfg, torch::Device(torch::kCPU)) {
    rows_ = data_.train.size();
    if (rows_ == 0) TPB_THROW(UsageError, "step profile: no training samples");
    batch_ = std::min<std::size_t>(static_cast<std::size_t>(cfg.batchSize), rows_);
    order_ = shuffledOrder(rows_, cfg.seed, 0);
    flatGrad_ = torch::zeros_like(rep_.flatParams->flat());
    // Each parameter's hook stamps the moment its gradient is ready (DDP's hooks run there too).
    ready_.resize(rep_.params.size());
    for (std::size_t i = 0; i < rep_.params.size(); ++i)
      rep_.params[i].register_hook([this, i](torch::Tensor g) {
        ready_[i] = clock_type::now();
        return g;
      });
  }
  Replica& replica() { return rep_; }

  struct Times {
    clock_type::time_point start, forwardDone, backwardDone, optimizerStart, done;
  };
  // One step; `ready()` then holds each gradient's moment.
  Times step() {
    if (begin_ + batch_ > rows_) begin_ = 0;
    for (auto& p : rep_.params) p.mutable_grad() = torch::Tensor();
    std::fill(ready_.begin(), ready_.end(), clock_type::time_point{});
    Times t;
    t.start = clock_type::now();
    const Batch b = gatherBatch(data_.train, order_, begin_, begin_ + batch_);
    torch::Tensor loss = rep_.model->loss(rep_.model->forward(b.images), b.labels);
    t.forwardDone = clock_type::now();
    loss.backward();
    t.backwardDone = clock_type::now();
    // The gradients into the flat buffer the optimizer reads (what a strategy's GradSync fills).
    std::size_t offset = 0;
    for (std::size_t i = 0; i < rep_.params.size(); ++i) {
      const torch::Tensor& p = rep_.params[i];
      TPB_CHECK(ready_[i] >= t.forwardDone && p.grad().defined(), "step profile: a parameter got no gradient");
      const auto k = p.numel();
      flatGrad_.narrow(0, static_cast<std::int64_t>(offset), k).copy_(p.grad().reshape({-1}));
      offset += static_cast<std::size_t>(k);
    }
    t.optimizerStart = clock_type::now();
    rep_.step(flatGrad_);
    t.done = clock_type::now();
    begin_ += batch_;
    return t;
  }
  const std::vector<clock_type::time_point>& ready() const { return ready_; }

 private:
  DataSplit data_;
  Replica rep_;
  std::size_t rows_ = 0, batch_ = 0, begin_ = 0;
  std::vector<std::int64_t> order_;
  torch::Tensor flatGrad_;
  std::vector<clock_type::time_point> ready_;
};

}  // namespace

MeasuredStep measureStep(const TrainConfig& cfg, int warmup, int steps, int companions) {
  if (cfg.device != Device::Cpu) TPB_THROW(UsageError, "step profile: the CPU only (--device cpu)");
  if (steps < 1 || warmup < 0) TPB_THROW(UsageError, "step profile: steps must be at least 1, warm-up at least 0");
  if (companions < 0 || companions > kMaxCompanions)
    TPB_THROW(UsageError, "step profile: 0 to " << kMaxCompanions << " companions");
  StepLoop loop(cfg);
  Replica& rep = loop.replica();
  const std::size_t n = rep.params.size();
  MeasuredStep out;
  out.companions = companions;
  out.names = rep.model->parameterNames();
  TPB_CHECK(out.names.size() == n, "step profile: " << out.names.size() << " names for " << n << " parameters");
  for (const auto& p : rep.params) out.bytes.push_back(static_cast<double>(p.numel()) * p.element_size());

  // The companions: each its own replica and data on its own thread, stepping until the
  // measurement is done (a thread that fails stops and its error is thrown after the join).
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> failed(static_cast<std::size_t>(companions));
  const auto stopAll = [&] {
    stop = true;
    for (auto& t : threads) t.join();
  };
  for (int c = 0; c < companions; ++c)
    threads.emplace_back([&, c] {
      try {
        StepLoop other(cfg);
        ++started;
        while (!stop) other.step();
      } catch (...) {
        failed[static_cast<std::size_t>(c)] = std::current_exception();
        ++started;
      }
    });
  std::vector<double> fwd, bwd, opt, whole;
  std::vector<std::vector<double>> readyS(n);
  try {
    // The warm-up starts once every companion is stepping.
    while (started < companions) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Timed: at least `steps`, and at least kMinTimedS, so that the mean covers many of the
    // scheduler's time slices where ranks outnumber cores.
    const auto timedFrom = clock_type::now();
    for (int s = 0;; ++s) {
      const StepLoop::Times t = loop.step();
      if (s < warmup) continue;
      fwd.push_back(seconds(t.start, t.forwardDone));
      bwd.push_back(seconds(t.forwardDone, t.backwardDone));
      opt.push_back(seconds(t.optimizerStart, t.done));
      whole.push_back(seconds(t.start, t.backwardDone) + seconds(t.optimizerStart, t.done));
      for (std::size_t i = 0; i < n; ++i) readyS[i].push_back(seconds(t.forwardDone, loop.ready()[i]));
      if (static_cast<int>(whole.size()) >= steps && seconds(timedFrom, clock_type::now()) >= kMinTimedS) break;
    }
  } catch (...) {
    stopAll();
    throw;
  }
  stopAll();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
  out.steps = static_cast<int>(whole.size());
  out.forwardS = meanOf(fwd);
  out.backwardS = meanOf(bwd);
  out.optimizerS = meanOf(opt);
  out.stepMinS = *std::min_element(whole.begin(), whole.end());
  out.stepMaxS = *std::max_element(whole.begin(), whole.end());
  for (std::size_t i = 0; i < n; ++i) out.gradReadyS.push_back(std::min(meanOf(readyS[i]), out.backwardS));
  return out;
}

}  // namespace tpb
