#include "report/predictions.h"

#include <algorithm>
#include <cmath>

#include "report/format.h"

namespace tpb::report {

double PredictedPoint::error() const {
  return measured() && measuredS > 0 ? (prediction->stepS - measuredS) / measuredS : kNaN;
}

double measuredStepS(const Run& r) { return r.perStepS(r.wall); }

namespace {

bool isOf(const PredictionRecord& p, const Run& r) {
  if (!r.ok() || r.strategy != p.strategy || r.n != p.nGpus || r.batch != p.batchSize) return false;
  if (r.settings.workload != p.workload) return false;
  if (p.workload == "mlp" && r.settings.hidden != p.hidden) return false;
  if (p.bucketMb && std::abs(r.settings.bucketMb - *p.bucketMb) > 1e-9 * *p.bucketMb) return false;
  // A pipeline's: its micro-batches, and stages balanced as the model assumes (no --split).
  if (p.microbatches && (r.settings.microbatches != *p.microbatches || !r.settings.split.empty())) return false;
  // A profile measured on this CPU is of CPU runs; one from a GPU preset is of none measured here.
  return p.profile.source == "measured" && r.settings.device == "cpu";
}

}  // namespace

std::vector<PredictedPoint> matchPredictions(const std::vector<PredictionRecord>& predictions,
                                             const std::vector<Run>& runs) {
  std::vector<PredictedPoint> out;
  for (const PredictionRecord& p : predictions) {
    PredictedPoint pt;
    pt.prediction = &p;
    std::vector<double> steps;
    for (const Run& r : runs)
      if (isOf(p, r)) {
        const double s = measuredStepS(r);
        if (std::isfinite(s)) steps.push_back(s), pt.busy = pt.busy || r.busy;
      }
    if (!steps.empty()) {
      pt.runs = static_cast<int>(steps.size());
      pt.measuredS = median(steps);
      pt.measuredMinS = *std::min_element(steps.begin(), steps.end());
      pt.measuredMaxS = *std::max_element(steps.begin(), steps.end());
    }
    out.push_back(pt);
  }
  return out;
}

std::string profileSource(const PredictionRecord& p) {
  const PredictionProfile& f = p.profile;
  if (f.source == "flops")
    return "from FLOPs on " + f.device.value_or("?") + " at " + fmtPct(f.mfu.value_or(kNaN)) + " of peak";
  const int c = f.companions.value_or(0);
  return "measured here" + (c > 0 ? " beside " + std::to_string(c) + (c == 1 ? " replica" : " replicas") : std::string(" alone"));
}

std::string allreduceSource(const PredictionRecord& p) {
  const PredictionAllreduce& a = p.allreduce;
  if (a.source == "none") return "none (activations' transfers left out)";
  if (a.source == "fit") {
    std::vector<std::string> ns;
    for (int n : a.fittedOn.value_or(std::vector<int>{})) ns.push_back(std::to_string(n));
    return a.algo + " fitted on N=" + joinList(ns, ",");
  }
  std::string s = a.link.value_or("?");
  if (a.interLink)
    s += " in nodes of " + std::to_string(a.gpusPerNode.value_or(0)) + ", " + std::to_string(a.nicsPerNode.value_or(0)) +
         "x " + *a.interLink + " per node";
  return s;
}

Table predictionTable(const std::vector<PredictedPoint>& points) {
  Table t;
  t.header = {"point", "compute", "allreduce", "step ms", "comm ms", "exposed ms", "efficiency", "best bucket",
              "measured ms", "runs", "error"};
  for (const PredictedPoint& pt : points) {
    const PredictionRecord& p = *pt.prediction;
    t.rows.push_back({p.label(), profileSource(p), allreduceSource(p), fmtNum(1e3 * p.stepS), fmtNum(1e3 * p.commS),
                      fmtNum(1e3 * p.exposedS), fmtPct(p.efficiency), p.bestBucket ? "best" : "",
                      pt.measured() ? fmtNum(1e3 * pt.measuredS) +
                                          (pt.measuredMaxS > pt.measuredMinS
                                               ? " (" + fmtNum(1e3 * pt.measuredMinS) + "–" + fmtNum(1e3 * pt.measuredMaxS) + ")"
                                               : "")
                                    : "—",
                      pt.measured() ? std::to_string(pt.runs) : "0",
                      pt.measured() ? printfStr("%+.1f %%", 100 * pt.error()) : "—"});
  }
  return t;
}

}  // namespace tpb::report
