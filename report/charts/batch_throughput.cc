// report/charts/batch_throughput.cc — throughput vs per-device batch size, one line per strategy.
#include "report/chart.h"
#include "report/format.h"

namespace tpb::report {
namespace {

void build(Chart& c, const Inputs& in) {
  StrategyLines l;
  if (!strategyLines(c, in, {"strategy", "batch_size"}, "batch sizes",
                     [](const Run& r) { return r.batch; },
                     [](const Run& r) { return r.samplesPerS; }, l))
    return;
  c.subtitle =
      "samples/s of all ranks together, median over repeats (error bars: min to max); " + describeSlice(l.slice, in.runs);
  const auto g = growthPerStrategy(l.points);
  c.reading = "Batch " + intLabel(*l.xs.begin()) + " -> " + intLabel(*l.xs.rbegin()) +
              " per device: throughput changes " + growthRange(g) + ".";
  Axes a = wholeXAxes(l.xs, "batch size per device", "batch_size", "throughput (samples/s)",
                      "samples_per_s");
  // Batch sizes usually double: a base-2 axis spaces them evenly.
  a.logx = *l.xs.rbegin() / *l.xs.begin() >= 4;
  a.logxBase = 2;
  buildLineChart(c, l.series, a, "set offsets graph 0.05, graph 0.05, 0, 0\n");
}

ChartDef chart() { return {70, "batch_throughput", "Effect of batch size on throughput", build}; }
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
