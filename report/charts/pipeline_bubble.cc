// report/charts/pipeline_bubble.cc — the pipeline bubble against the number of micro-batches M:
// the measured fraction (each stage's idle time over its wall time, averaged over stages and
// epochs) beside GPipe's (S-1)/(M+S-1), one pair of lines per stage count S = N.
//
// Data-driven: every run that recorded bubble_fraction is drawn; M is the run's microbatches
// (absent: one batch at a time, M = 1). The formula assumes every stage's forward and backward
// cost the same and communication costs nothing, so the gap between the lines is the imbalance
// of the stages plus the time spent moving activations.
#include <cmath>

#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

double microbatchesOf(const Run& r) { return r.settings.microbatchesPerStep(); }

void build(Chart& c, const Inputs& in) {
  const std::vector<Run>& runs = in.runs;
  if (noOkRuns(c, runs)) return;
  auto relevant = [](const Run& r) { return std::isfinite(meanOf(r.bubble)); };
  const Slice s = pickSlice(runs, {"strategy", "n_gpus", "microbatches", "schedule"}, relevant, [](const Run& r) {
    return std::to_string(r.n) + "/" + r.settings.schedule + "/" + std::to_string(microbatchesOf(r));
  });
  if (s.empty()) {
    c.reason = "no run recorded a bubble fraction (model_parallel, pipeline)";
    return;
  }
  auto lineOf = [](const Run& r) { return "N=" + std::to_string(r.n) + " " + r.settings.schedule; };
  BusyXs busy;
  const auto measured =
      collect(s.runs, lineOf, microbatchesOf, [](const Run& r) { return meanOf(r.bubble); }, &busy);
  const auto formula = collect(
      s.runs, [](const Run& r) { return "N=" + std::to_string(r.n); }, microbatchesOf,
      [](const Run& r) { return meanOf(r.bubbleFormula); });
  std::set<double> ms;
  if (!someSeriesHasTwoX(measured, ms)) {
    c.reason = "needs bubble fractions at >= 2 micro-batch counts with otherwise equal settings";
    return;
  }
  c.subtitle = "idle / wall time per stage, averaged over stages and epochs, median over repeats (error bars: min to "
               "max); dashed: GPipe's "
               "(S-1)/(M+S-1); " + describeSlice(s, runs);
  std::vector<Series> series;
  std::size_t i = 0;
  std::map<std::string, std::size_t> colorOfN;
  for (const auto& [name, byX] : formula) {
    colorOfN[name] = i;
    Series f;
    f.title = "(S-1)/(M+S-1), " + name;
    f.color = positionColor(i++);
    f.dash = 2;
    f.pointType = 0;
    f.points = medianPoints(byX);
    series.push_back(f);
  }
  // The reading follows the line with the most values of M (the first such in name order): a
  // lone point, such as model_parallel's at N=1, says nothing about how M shrinks the bubble.
  std::string reading;
  std::size_t readingPoints = 0;
  for (const auto& [name, byX] : measured) {
    Series m;
    m.title = "measured, " + name;
    m.color = positionColor(colorOfN[name.substr(0, name.find(' '))]);
    m.points = medianPoints(byX, busyXsOf(busy, name));
    series.push_back(m);
    if (m.points.size() > readingPoints) {
      readingPoints = m.points.size();
      const Point& hi = m.points.back();
      const double f = valueAt(medianPoints(formula.at(name.substr(0, name.find(' ')))), hi.x);
      reading = name + ", M=" + intLabel(hi.x) + ": measured " + fmtPct(hi.y) + " idle against the formula's " +
                fmtPct(f) + "; at M=" + intLabel(m.points.front().x) + ": " + fmtPct(m.points.front().y) + ".";
    }
  }
  c.reading = reading;
  Axes a = wholeXAxes(ms, "micro-batches per step (M)", "microbatches", "bubble fraction", "bubble");
  a.logx = spansDecade(ms) || *ms.rbegin() / *ms.begin() >= 4;
  a.logxBase = 2;
  // Room either side, so that the outermost M keeps its tic label on the log axis.
  buildLineChart(c, series, a, "set yrange [0:1]\nset offsets graph 0.04, graph 0.04, 0, 0\n");
}

ChartDef chart() {
  return {90, "pipeline_bubble", "Pipeline bubble: measured vs GPipe's formula", build};
}
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
