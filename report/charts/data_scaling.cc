// report/charts/data_scaling.cc — epoch time vs training-set size, one line per strategy.
#include "report/chart.h"
#include "report/format.h"

namespace tpb::report {
namespace {

void build(Chart& c, const Inputs& in) {
  StrategyLines l;
  if (!strategyLines(c, in, {"strategy", "train_size", "test_size"}, "train_size values",
                     [](const Run& r) { return r.trainSize; },
                     [](const Run& r) { return r.meanWall(); }, l))
    return;
  c.subtitle = "mean epoch wall time, median over repeats (error bars: min to max); " + describeSlice(l.slice, in.runs);
  const auto g = growthPerStrategy(l.points);
  const double x0 = *l.xs.begin(), x1 = *l.xs.rbegin();
  c.reading = intLabel(x1) + " vs " + intLabel(x0) + " samples (" + fmtRatio(x1 / x0) +
              " the data): epoch time grows " + growthRange(g) + ".";
  Axes a = wholeXAxes(l.xs, "training samples per epoch", "train_size", "epoch time (s)",
                      "epoch_s");
  a.logx = a.logy = spansDecade(l.xs);
  buildLineChart(c, l.series, a, "set offsets graph 0.03, graph 0.03, 0, 0\n");
}

ChartDef chart() { return {30, "data_scaling", "Scaling with training data size", build}; }
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
