// report/charts/step_projection.cc — the step model's projections: scaling efficiency (one rank's
// step alone over the predicted step at N) against N, one line per workload, strategy, bucket
// cap and what the step and the allreduce were taken from (measured here, or a GPU preset over
// link presets). Where a run measured a point, the table beside it in the index says the error.
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "report/chart.h"
#include "report/format.h"
#include "report/predictions.h"

namespace tpb::report {
namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"};

// What a line is: everything but N (a measured profile's companions follow N).
std::string lineOf(const PredictionRecord& p) {
  std::string s = p.workload + " " + p.strategy;
  if (p.bucketMb) s += " " + fmtNum(*p.bucketMb) + " MiB";
  s += ": " + (p.profile.source == "flops"
                   ? *p.profile.device + " at " + fmtPct(p.profile.mfu.value_or(NAN)) + " of peak"
                   : std::string("this CPU"));
  return s + ", " + allreduceSource(p);
}

void build(Chart& c, const Inputs& in) {
  std::map<std::string, std::map<double, std::vector<double>>> lines;
  std::set<double> ns;
  for (const PredictionRecord& p : in.predictions) {
    lines[lineOf(p)][p.nGpus].push_back(100 * p.efficiency);
    ns.insert(p.nGpus);
  }
  std::vector<Series> series;
  std::string reading;
  for (const auto& [name, byN] : lines) {
    if (byN.size() < 2) continue;
    Series s;
    s.title = name;
    s.color = kColors[series.size() % (sizeof kColors / sizeof *kColors)];
    s.points = medianPoints(byN);
    series.push_back(s);
    const Point& last = s.points.back();
    if (series.size() <= 3)
      reading += (reading.empty() ? "" : " ") + name + ": " + fmtNum(last.y) + " % at N=" + intLabel(last.x) + ".";
  }
  if (series.empty()) {
    c.reason = "needs predictions at two or more N (tpbench predict --n_gpus 8,16,64 --out FILE)";
    return;
  }
  if (series.size() > 3) reading += " (and " + std::to_string(series.size() - 3) + " more lines)";
  c.subtitle = "predicted scaling efficiency of weak scaling (each rank keeps its batch): one rank's step alone over "
               "the step at N, from tpbench predict; nothing here was measured at these N unless the step model "
               "table says so";
  c.reading = reading;
  Axes a = wholeXAxes(ns, "ranks N", "n_gpus", "scaling efficiency (%)", "efficiency_pct");
  if (spansDecade(ns)) {
    a.logx = true;
    a.logxBase = 2;
  }
  // The lines' names are long (what each was predicted from): the key goes under the plot.
  buildLineChart(c, series, a, "set offsets graph 0.03, graph 0.03, 0, 0\nset yrange [*:101]\n",
                 "set key below Left reverse\n");
}

ChartDef chart() { return {94, "step_projection", "Step model: scaling efficiency projected over N", build}; }
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
