#include "cost_model/step_model.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace tpb::model {

namespace {

bool nonNegative(double x) { return std::isfinite(x) && x >= 0; }

}  // namespace

double StepProfile::gradientBytes() const {
  double total = 0;
  for (const ParamTiming& q : params) total += q.bytes;
  return total;
}

void checkProfile(const StepProfile& p) {
  const std::pair<const char*, double> times[] = {
      {"forward_s", p.forwardS}, {"backward_s", p.backwardS}, {"optimizer_s", p.optimizerS}};
  for (const auto& [name, s] : times)
    if (!nonNegative(s)) TPB_THROW(UsageError, "step profile: " << name << " must be a finite number >= 0, got " << s);
  if (p.params.empty()) TPB_THROW(UsageError, "step profile: params: no parameters (nothing to synchronise)");
  for (std::size_t i = 0; i < p.params.size(); ++i) {
    const ParamTiming& q = p.params[i];
    if (!nonNegative(q.bytes))
      TPB_THROW(UsageError, "step profile: params[" << i << "].bytes must be a finite number >= 0, got " << q.bytes);
    if (!nonNegative(q.gradReadyS) || q.gradReadyS > p.backwardS)
      TPB_THROW(UsageError, "step profile: params[" << i << "].grad_ready_s must be in [0, backward_s = " << p.backwardS
                                                     << "], got " << q.gradReadyS);
  }
}

AllreduceTime alphaBetaTime(const CostFormula& f, double alphaUs, double betaUsPerByte) {
  TPB_CHECK(f.at != nullptr, "alphaBetaTime: a formula without a cost");
  const auto at = f.at;
  return [at, alphaUs, betaUsPerByte](double bytes, int n) {
    const Cost c = at(n);
    return (c.steps * alphaUs + c.bytesFactor * bytes * betaUsPerByte) * 1e-6;
  };
}

StepPrediction predictStep(const StepProfile& p, const StepPlan& plan, const AllreduceTime& allreduce) {
  checkProfile(p);
  if (plan.n < 1) TPB_THROW(UsageError, "step model: N must be at least 1, got " << plan.n);
  StepPrediction out;
  out.computeS = p.computeS();
  double commEnd = 0;  // from backward's start
  if (plan.n > 1) {
    if (plan.sync == Sync::AfterBackward) {
      BucketSpan all{0, p.params.size(), p.gradientBytes(), p.backwardS, p.backwardS, 0};
      all.endS = all.startS + allreduce(all.bytes, plan.n);
      out.allreduces.push_back(all);
    } else {
      if (!(std::isfinite(plan.capBytes) && plan.capBytes > 0))
        TPB_THROW(UsageError, "step model: the bucket cap must be a positive size, got " << plan.capBytes);
      std::vector<double> bytes;
      for (const ParamTiming& q : p.params) bytes.push_back(q.bytes);
      std::size_t end = p.params.size();
      double channelFree = 0;
      for (const std::size_t first : ddpBucketFirsts(bytes, plan.capBytes, plan.firstBucketBytes)) {
        BucketSpan b;
        b.firstParam = first;
        b.params = end - first;
        for (std::size_t i = first; i < end; ++i) {
          b.bytes += p.params[i].bytes;
          b.readyS = std::max(b.readyS, p.params[i].gradReadyS);
        }
        b.startS = std::max(b.readyS, channelFree);
        b.endS = b.startS + allreduce(b.bytes, plan.n);
        channelFree = b.endS;
        out.allreduces.push_back(b);
        end = first;
      }
    }
    for (const BucketSpan& b : out.allreduces) {
      const double t = b.endS - b.startS;
      if (!nonNegative(t)) TPB_THROW(UsageError, "step model: an allreduce of " << b.bytes << " bytes took " << t << " s");
      out.commS += t;
      commEnd = std::max(commEnd, b.endS);
    }
  }
  out.stepS = p.forwardS + std::max(p.backwardS, commEnd) + p.optimizerS;
  out.exposedCommS = out.stepS - out.computeS;
  out.scalingEfficiency = out.stepS > 0 ? out.computeS / out.stepS : 1;
  return out;
}

const std::vector<DevicePreset>& devicePresets() {
  // Dense BF16/FP16 tensor-core peaks and HBM bandwidths of the SXM parts, from NVIDIA's
  // datasheets (sparsity doubles the tensor figures there; not used here).
  static const std::vector<DevicePreset> presets = {
      {"v100", "NVIDIA V100 SXM2", 125, 900, "NVIDIA V100 datasheet: 125 TFLOPS tensor, 900 GB/s HBM2"},
      {"a100", "NVIDIA A100 SXM 80GB", 312, 2039, "NVIDIA A100 datasheet: 312 TFLOPS BF16, 2039 GB/s HBM2e"},
      {"h100", "NVIDIA H100 SXM5", 989, 3350, "NVIDIA H100 datasheet: 989 TFLOPS BF16 dense, 3.35 TB/s HBM3"},
      {"h200", "NVIDIA H200 SXM", 989, 4800, "NVIDIA H200 datasheet: 989 TFLOPS BF16 dense, 4.8 TB/s HBM3e"},
      {"b200", "NVIDIA B200 (HGX)", 2250, 8000, "NVIDIA HGX B200 datasheet: 2.25 PFLOPS BF16 dense, 8 TB/s HBM3e"},
  };
  return presets;
}

std::string deviceNames() {
  std::string names;
  for (const auto& d : devicePresets()) names += (names.empty() ? "" : ", ") + d.name;
  return names;
}

const DevicePreset& findDevice(const std::string& name) {
  for (const auto& d : devicePresets())
    if (d.name == name) return d;
  TPB_THROW(UsageError, "--gpu: unknown device '" << name << "' (choose from " << deviceNames() << ")");
}

StepProfile profileFromFlops(const std::vector<BlockCost>& blocks, int batch, const DevicePreset& device, double mfu) {
  if (!(mfu > 0 && mfu <= 1)) TPB_THROW(UsageError, "--mfu: must be in (0, 1], got " << mfu);
  if (batch < 1) TPB_THROW(UsageError, "--batch_size: must be at least 1, got " << batch);
  if (blocks.empty()) TPB_THROW(UsageError, "step model: a network without blocks");
  const double flopsPerS = device.peakTflops * 1e12 * mfu;
  StepProfile p;
  std::vector<double> backward;
  for (const BlockCost& b : blocks) {
    const double forward = b.forwardFlopsPerSample * batch / flopsPerS;
    p.forwardS += forward;
    backward.push_back(2 * forward);
    p.backwardS += 2 * forward;
  }
  double done = 0;  // backward runs from the last block to the first
  std::vector<double> ready(blocks.size());
  for (std::size_t i = blocks.size(); i-- > 0;) {
    done += backward[i];
    ready[i] = std::min(done, p.backwardS);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) p.params.push_back({blocks[i].name, blocks[i].gradientBytes, ready[i]});
  p.optimizerS = 5 * p.gradientBytes() / (device.memoryGBps * 1e9);
  return p;
}

BucketChoice bestBucket(const StepProfile& p, int n, const std::vector<double>& capsBytes,
                        const AllreduceTime& allreduce) {
  if (capsBytes.empty()) TPB_THROW(UsageError, "step model: no bucket sizes to choose from");
  std::vector<double> caps = capsBytes;
  std::sort(caps.begin(), caps.end());
  BucketChoice best;
  bool have = false;
  for (const double cap : caps) {
    StepPrediction s = predictStep(p, StepPlan{n, Sync::Bucketed, cap}, allreduce);
    if (!have || s.stepS < best.prediction.stepS) {
      best = BucketChoice{cap, std::move(s)};
      have = true;
    }
  }
  return best;
}

PipelinePrediction predictPipeline(const StepProfile& micro, const std::vector<double>& shares, int microbatches) {
  checkProfile(micro);
  if (microbatches < 1) TPB_THROW(UsageError, "step model: a pipeline needs at least one micro-batch");
  if (shares.empty()) TPB_THROW(UsageError, "step model: a pipeline needs at least one stage");
  double sum = 0;
  for (double s : shares) {
    if (!(s >= 0 && std::isfinite(s))) TPB_THROW(UsageError, "step model: a stage's share must be a finite fraction >= 0");
    sum += s;
  }
  if (std::abs(sum - 1) > 1e-6) TPB_THROW(UsageError, "step model: the stages' shares sum to " << sum << ", not 1");
  const double slowest = *std::max_element(shares.begin(), shares.end());
  const double perMicro = micro.forwardS + micro.backwardS;
  const int stages = static_cast<int>(shares.size());
  PipelinePrediction p;
  // Identical micro-batches through stages in a row: the first crosses every stage, the other
  // M - 1 follow one slowest stage apart (forward, then backward the same way back).
  p.stepS = (1 + (microbatches - 1) * slowest) * perMicro + slowest * micro.optimizerS;
  p.busyS = slowest * (microbatches * perMicro + micro.optimizerS);
  double idle = 0;
  for (double s : shares) idle += p.stepS > 0 ? 1 - s * (microbatches * perMicro + micro.optimizerS) / p.stepS : 0;
  p.bubble = idle / stages;
  return p;
}

}  // namespace tpb::model
