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

}  // namespace tpb::model
