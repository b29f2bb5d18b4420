// report/charts/model_parallel_epoch_time.cc — epoch time vs N of the seed's model-parallel
// experiment: `single` (one device, drawn as a level line), `model_parallel` (one batch at a
// time through N stages) and `pipeline` at each --microbatches M recorded (one line per M).
//
// The experiment's definition compares these three strategies by name; the names appear nowhere
// else in report/. Colours come from each series' style; pipeline's lines share its colour and
// differ by dash.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

const std::string kSingle = "single", kModelParallel = "model_parallel", kPipeline = "pipeline";

// "pipeline M=4" for pipeline runs ("pipeline M=4 1f1b" for another schedule than GPipe's), else
// the strategy.
std::string seriesOf(const Run& r) {
  if (r.strategy != kPipeline) return r.strategy;
  const std::string& schedule = r.settings.schedule;
  return kPipeline + " M=" + std::to_string(r.settings.microbatchesPerStep()) + (schedule == "gpipe" ? "" : " " + schedule);
}

void build(Chart& c, const Inputs& in) {
  const std::vector<Run>& runs = in.runs;
  if (noOkRuns(c, runs)) return;
  auto relevant = [](const Run& r) {
    return (r.strategy == kSingle || r.strategy == kModelParallel || r.strategy == kPipeline) &&
           std::isfinite(r.meanWall());
  };
  const Slice s = pickSlice(
      runs, {"strategy", "n_gpus", "microbatches", "schedule"}, relevant,
      [](const Run& r) { return seriesOf(r) + "@" + std::to_string(r.n); }, {kModelParallel});
  BusyXs busy;
  const auto data = collect(s.runs, seriesOf, [](const Run& r) { return double(r.n); },
                            [](const Run& r) { return r.meanWall(); }, &busy);
  std::set<double> ns;
  for (const auto& [name, byX] : data)
    if (name != kSingle)
      for (const auto& [n, v] : byX) ns.insert(n);
  if (!data.count(kModelParallel) && ns.empty()) {
    c.reason = "no ok model_parallel or pipeline run";
    return;
  }
  c.subtitle = "mean epoch wall time, median over repeats (error bars: min to max); single drawn level at its N=1 time; " +
               describeSlice(s, runs);
  std::vector<Series> series;
  double singleTime = kNaN;
  if (data.count(kSingle)) {
    singleTime = valueAt(medianPoints(data.at(kSingle)), 1);
    if (std::isfinite(singleTime)) {
      Series level;
      level.title = in.styles.label(SeriesKind::Strategy, kSingle) + " at N=1";
      level.color = in.styles.color(SeriesKind::Strategy, kSingle);
      level.dash = 2;
      level.pointType = 0;
      for (double n : ns) level.points.push_back({n, singleTime, 1});
      series.push_back(level);
    }
  }
  std::map<std::string, std::vector<Point>> pts;
  int dash = 1;
  // model_parallel first, then pipeline by M (as numbers: 2 before 16).
  std::vector<std::string> names;
  for (const auto& [name, byX] : data)
    if (name != kSingle) names.push_back(name);
  auto mOf = [](const std::string& n) {
    const auto at = n.find(" M=");
    return at == std::string::npos ? 0L : std::atol(n.c_str() + at + 3);
  };
  std::stable_sort(names.begin(), names.end(),
                   [&](const std::string& a, const std::string& b) { return mOf(a) < mOf(b); });
  for (const std::string& name : names) {
    const auto& byX = data.at(name);
    const bool pipe = name != kModelParallel;
    Series ser = strategySeries(pipe ? kPipeline : name, byX, in.styles, busyXsOf(busy, name));
    ser.title = pipe ? name : in.styles.label(SeriesKind::Strategy, name);
    if (pipe) ser.dash = ++dash;
    pts[name] = ser.points;
    series.push_back(ser);
  }
  // The reading: at the largest N, model_parallel against the fastest pipeline and single.
  const double nMax = *ns.rbegin();
  std::string best;
  double bestT = kNaN;
  for (const auto& [name, p] : pts) {
    const double t = valueAt(p, nMax);
    if (name != kModelParallel && std::isfinite(t) && !(t >= bestT)) bestT = t, best = name;
  }
  std::string reading = "At N=" + intLabel(nMax) + ":";
  const Point* mpAt = pts.count(kModelParallel) ? pointAt(pts[kModelParallel], nMax) : nullptr;
  const double mp = mpAt ? mpAt->y : kNaN;
  if (std::isfinite(mp)) reading += " " + kModelParallel + " " + fmtNum(mp) + " s/epoch";
  if (!best.empty()) {
    reading += std::string(std::isfinite(mp) ? "," : "") + " fastest " + best + " " + fmtNum(bestT) + " s/epoch";
    const bool noise = mpAt && withinNoise(*mpAt, *pointAt(pts[best], nMax));
    // "1.25x slower", never "0.8x faster": the ratio is always the larger time over the smaller.
    if (std::isfinite(mp) && mp > 0 && bestT > 0)
      reading += " (" + (bestT <= mp ? fmtRatio(mp / bestT) + " faster" : fmtRatio(bestT / mp) + " slower") +
                 " than " + kModelParallel + (noise ? ", within noise" : "") + ")";
  }
  if (std::isfinite(singleTime)) reading += "; " + kSingle + " " + fmtNum(singleTime) + " s/epoch on one device";
  c.reading = reading + ".";
  buildLinesOverN(c, series, ns, "epoch time (s)", "epoch_s");
}

ChartDef chart() {
  return {80, "model_parallel_epoch_time", "Model parallel: one batch at a time vs pipelined", build};
}
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
