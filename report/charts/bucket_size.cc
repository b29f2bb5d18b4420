// report/charts/bucket_size.cc — step time and exposed communication against the gradient bucket
// size (--bucket_mb), one pair of lines per strategy whose runs differ in it (ddp, torch_ddp).
#include <cmath>
#include <limits>

#include "report/chart.h"
#include "report/format.h"

namespace tpb::report {
namespace {

double bucketOf(const Run& r) { return r.settings.bucketMb; }

void build(Chart& c, const Inputs& in) {
  if (noOkRuns(c, in.runs)) return;
  // The slice where strategy and bucket size vary, among runs whose strategy was run at two or
  // more bucket sizes somewhere (the others are recorded at one size and shaped by none).
  std::map<std::string, std::set<double>> sizes;
  for (const Run& r : in.runs)
    if (r.ok()) sizes[r.strategy].insert(bucketOf(r));
  const Slice s = pickSlice(
      in.runs, {"strategy", "bucket_mb"},
      [&](const Run& r) { return sizes[r.strategy].size() >= 2 && std::isfinite(r.perStepS(r.wall)); },
      [](const Run& r) { return r.strategy + "@" + fmtDat(bucketOf(r)); });
  if (s.empty()) {
    c.reason = "needs runs of ddp or torch_ddp at two or more --bucket_mb sizes (a sweep's --bucket_mb 1,5,25)";
    return;
  }
  const auto stepMs = [](const Run& r) { return 1e3 * r.perStepS(r.wall); };
  const auto commMs = [](const Run& r) { return 1e3 * r.perStepS(r.comm); };
  BusyXs busy;
  const SeriesData step = collect(s.runs, [](const Run& r) { return r.strategy; }, bucketOf, stepMs, &busy);
  const SeriesData comm = collect(s.runs, [](const Run& r) { return r.strategy; }, bucketOf, commMs);
  std::set<double> xs;
  if (!someSeriesHasTwoX(step, xs)) {
    c.reason = "needs one strategy at two or more --bucket_mb sizes in one slice of the runs";
    return;
  }
  std::vector<Series> series;
  std::string reading;
  for (const std::string& name : sortedStrategies(step, in.styles)) {
    Series total = strategySeries(name, step.at(name), in.styles, busyXsOf(busy, name));
    total.title += ": step";
    series.push_back(total);
    if (comm.count(name)) {
      Series exposed = strategySeries(name, comm.at(name), in.styles, busyXsOf(busy, name));
      exposed.title += ": exposed comm";
      exposed.dash = 2;
      exposed.pointType = 6;
      series.push_back(exposed);
    }
    // The best and worst bucket by median step time, and how far apart they are.
    const Point* best = nullptr;
    const Point* worst = nullptr;
    for (const Point& p : total.points) {
      if (!best || p.y < best->y) best = &p;
      if (!worst || p.y > worst->y) worst = &p;
    }
    if (best && worst && best != worst) {
      reading += (reading.empty() ? "" : " ") + name + ": best at " + fmtNum(best->x) + " MiB (" + fmtNum(best->y) +
                 " ms/step), worst at " + fmtNum(worst->x) + " MiB, " + fmtRatio(worst->y / best->y) + " slower" +
                 (withinNoise(*best, *worst) ? " (within noise)" : "") + ".";
    }
  }
  c.subtitle = "milliseconds per optimizer step, median over repeats (error bars: min to max); dashed: the part "
               "the step waited on communication; " +
               describeSlice(s, in.runs);
  c.reading = reading;
  Axes a;
  a.xlabel = "gradient bucket size (MiB, --bucket_mb)";
  a.ylabel = "time per step (ms)";
  a.xcol = "bucket_mb";
  a.ycol = "ms_per_step";
  a.logx = spansDecade(xs);
  a.xtics = ticsAt(xs, [](double x) { return fmtNum(x); });
  buildLineChart(c, series, a, "set offsets graph 0.05, graph 0.05, 0, 0\nset yrange [0:*]\n");
}

ChartDef chart() { return {75, "bucket_size", "Gradient bucket size: step time and exposed communication", build}; }
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
