// report/charts/step_model.cc — the step model checked: each prediction of `tpbench predict
// --out` whose point a run in the inputs measured, predicted step time against measured, one
// colour per workload and one mark per strategy, on the line where they agree and the band of
// ±15 % around it (the error the model is meant to stay within on this machine).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "report/chart.h"
#include "report/escape.h"
#include "report/format.h"
#include "report/predictions.h"

namespace tpb::report {
namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};

// A mark per strategy (ddp's bucket caps share it), so the colour says the workload.
int markOf(const std::string& strategy) { return strategy == "ddp" ? 7 : strategy == "ring_all_reduce" ? 5 : 9; }

void build(Chart& c, const Inputs& in) {
  if (in.predictions.empty()) {
    c.reason = "needs predictions (tpbench predict --out) and the runs that measured them";
    return;
  }
  const std::vector<PredictedPoint> points = matchPredictions(in.predictions, in.runs);
  // (workload, strategy) -> its points.
  std::map<std::pair<std::string, std::string>, std::vector<const PredictedPoint*>> groups;
  std::vector<double> errors;
  double lo = INFINITY, hi = 0;
  for (const PredictedPoint& p : points) {
    if (!p.measured()) continue;
    groups[{p.prediction->workload, p.prediction->strategy}].push_back(&p);
    errors.push_back(std::abs(p.error()));
    lo = std::min({lo, p.prediction->stepS, p.measuredMinS});
    hi = std::max({hi, p.prediction->stepS, p.measuredMaxS});
  }
  if (groups.empty()) {
    c.reason = "needs runs of the points predicted (tpbench sweep with the same workload, strategy, batch, N and "
               "bucket on the CPU)";
    return;
  }
  std::map<std::string, std::string> colorOf;
  for (const auto& [key, pts] : groups)
    if (!colorOf.count(key.first)) colorOf[key.first] = kColors[colorOf.size() % (sizeof kColors / sizeof *kColors)];
  std::ostringstream dat, plot;
  dat << chartHeader(c);
  dat << "# One block per workload and strategy (gnuplot: index 0, 1, ...); columns: measured_ms predicted_ms "
         "measured_min_ms measured_max_ms n_gpus bucket_mb (NaN: none) busy (1: some run measured on a busy "
         "machine; drawn hollow)\n";
  plot << "plot x title 'predicted = measured' lc rgb '#555555' dt 1 lw 1, \\\n"
       << "     1.15*x title '±15 %' lc rgb '#aaaaaa' dt 2 lw 1, \\\n"
       << "     0.85*x notitle lc rgb '#aaaaaa' dt 2 lw 1";
  std::size_t i = 0;
  bool anyBusy = false;
  for (const auto& [key, pts] : groups) {
    if (i) dat << "\n\n";
    const std::string title = key.first + ", " + key.second;
    dat << "# [" << i << "] " << gnuplotComment(title) << "\n";
    for (const PredictedPoint* p : pts)
      dat << fmtDat(1e3 * p->measuredS) << " " << fmtDat(1e3 * p->prediction->stepS) << " "
          << fmtDat(1e3 * p->measuredMinS) << " " << fmtDat(1e3 * p->measuredMaxS) << " " << p->prediction->nGpus << " "
          << fmtDat(p->prediction->bucketMb.value_or(NAN)) << " " << (p->busy ? 1 : 0) << "\n";
    plot << ", \\\n     '" << c.id << ".dat' index " << i << " using 1:2:3:4 with xerrorbars title "
         << gnuplotString(title) << " lc rgb " << gnuplotColor(colorOf[key.first]) << " pt " << markOf(key.second)
         << " ps 1.4 lw 1.5";
    if (std::any_of(pts.begin(), pts.end(), [](const PredictedPoint* p) { return p->busy; })) {
      anyBusy = true;
      plot << hollowPoints("'" + c.id + ".dat' index " + std::to_string(i) + " using 1:($7 > 0 ? $2 : 1/0)",
                           markOf(key.second), colorOf[key.first], 1.4);
    }
    ++i;
  }
  if (anyBusy) plot << kBusyKeyEntry;
  plot << "\n";
  std::vector<double> sorted = errors;
  const double med = median(sorted);
  std::size_t within = 0;
  for (double e : errors) within += e <= 0.15;
  c.subtitle = "milliseconds per optimizer step: the model's prediction (y) against the runs' median wall time per "
               "step after the first epoch (x; bars: min to max over repeats); marks: ddp (circle), ring_all_reduce "
               "(square), others (triangle)";
  c.reading = "median |error| " + printfStr("%.1f %%", 100 * med) + " over " + std::to_string(errors.size()) +
              " points; " + std::to_string(within) + " within ±15 %.";
  const bool logAxes = hi / lo >= 10;
  std::ostringstream settings;
  settings << "set xlabel 'measured step (ms)'\nset ylabel 'predicted step (ms)'\n";
  const double from = logAxes ? lo / 1.3 : 0, to = hi * 1.2;
  if (logAxes) settings << "set logscale xy 10\n";
  settings << "set xrange [" << fmtDat(1e3 * from) << ":" << fmtDat(1e3 * to) << "]\nset yrange [" << fmtDat(1e3 * from)
           << ":" << fmtDat(1e3 * to) << "]\nset size square\n";
  c.dat = dat.str();
  // The series' names are long (a workload's whole spelling): the key goes under the plot.
  c.gp = gpScript(c, settings.str(), plot.str(), "set key below Left reverse\n");
}

ChartDef chart() { return {92, "step_model", "Step model: predicted against measured step time", build}; }
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
