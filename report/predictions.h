// report/predictions.h — the step model's predictions (`tpbench predict --out`) beside the runs
// that measured the same points: which run a prediction is of, its measured step, and the table
// the index shows. The charts of report/charts/step_model*.cc draw from the same matches.
#pragma once

#include <string>
#include <vector>

#include "report/input.h"
#include "report/page.h"

namespace tpb::report {

// A prediction and, where the inputs hold ok runs of its point (strategy, workload, hidden for
// an MLP, batch, N, bucket for ddp, micro-batches for a pipeline of balanced stages; on the CPU
// where the profile was measured on it), their measured step: per run the median over its
// epochs after the first (all of them where it ran one) of wall time per optimizer step of one
// rank (the epoch's steps over its data ranks), then the median over the runs with their
// min and max. NaN where nothing matched.
struct PredictedPoint {
  const PredictionRecord* prediction = nullptr;
  double measuredS = kNaN, measuredMinS = kNaN, measuredMaxS = kNaN;
  int runs = 0;
  bool busy = false;  // some run behind measuredS was on a busy machine (Run::busy)
  bool measured() const { return runs > 0; }
  // (predicted - measured) / measured; NaN when not measured.
  double error() const;
};

std::vector<PredictedPoint> matchPredictions(const std::vector<PredictionRecord>& predictions,
                                             const std::vector<Run>& runs);

// One run's step as above: NaN where it has no epoch with both a wall time and a step count.
double measuredStepS(const Run& r);

// "measured here beside 1 replica" / "from FLOPs on h100 at 30 % of peak", and the allreduce's
// source ("library fitted on N=2,3" / "nvlink4 + 8x ib_ndr per node").
std::string profileSource(const PredictionRecord& p);
std::string allreduceSource(const PredictionRecord& p);

// A row per prediction: the point, what it was predicted from, step, communication, exposed,
// efficiency, and the measured step with the error where a run matched.
Table predictionTable(const std::vector<PredictedPoint>& points);

}  // namespace tpb::report
