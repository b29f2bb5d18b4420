// report/charts/throughput_scaling.cc — throughput vs N per strategy against ideal linear scaling.
#include <algorithm>
#include <cmath>

#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

void build(Chart& c, const Inputs& in) {
  const std::vector<Run>& runs = in.runs;
  if (noOkRuns(c, runs)) return;
  auto relevant = [](const Run& r) { return std::isfinite(r.samplesPerS); };
  const Slice s = sliceOverStrategyAndN(runs, relevant);
  BusyXs busy;
  const auto data = collect(
      s.runs, [](const Run& r) { return r.strategy; }, [](const Run& r) { return double(r.n); },
      [](const Run& r) { return r.samplesPerS; }, &busy);
  std::set<double> ns;
  if (!someSeriesHasTwoX(data, ns)) {
    c.reason = "needs one strategy at >= 2 values of N with otherwise equal settings";
    return;
  }
  c.subtitle = "samples/s of all ranks together, median over repeats (error bars: min to max); " +
               describeSlice(s, runs);
  std::vector<Series> series;
  std::map<std::string, std::vector<Point>> pts;
  double base = kNaN;
  std::string baseName;
  for (const auto& name : sortedStrategies(data, in.styles)) {
    series.push_back(strategySeries(name, data.at(name), in.styles, busyXsOf(busy, name)));
    pts[name] = series.back().points;
    // The ideal line starts from the reference loop (origin "reference": no synchronisation)
    // when it ran at N=1, the first in display order when several did ...
    if (!std::isfinite(base) &&
        in.styles.origin(SeriesKind::Strategy, name) == kOriginReference)
      base = valueAt(pts[name], 1), baseName = name;
  }
  // ... else from the fastest strategy at N=1: linear scaling of the best one-rank throughput.
  if (!std::isfinite(base)) {
    for (const auto& [name, p] : pts) {
      const double v = valueAt(p, 1);
      if (std::isfinite(v) && !(v <= base)) base = v, baseName = name;
    }
  }
  if (std::isfinite(base)) {
    Series ideal;
    ideal.title = "ideal: N × " + baseName + " at N=1";
    ideal.color = "#000000";
    ideal.dash = 2;
    ideal.pointType = 0;
    for (double n : ns) ideal.points.push_back({n, n * base, 1});
    series.push_back(ideal);
  }
  // Efficiency at the largest N each strategy reached, against its own N=1 (as the results'
  // summary.scaling_efficiency is defined).
  struct Eff {
    std::string name;
    double n, eff, speedup;
    bool noise;  // the largest N's throughput is within noise of N=1's
  };
  std::vector<Eff> effs;
  for (const auto& [name, p] : pts) {
    const Point* one = pointAt(p, 1);
    if (p.size() < 2 || !one || !(one->y > 0) || p.back().x <= 1) continue;
    effs.push_back({name, p.back().x, p.back().y / (p.back().x * one->y), p.back().y / one->y,
                    withinNoise(p.back(), *one)});
  }
  std::sort(effs.begin(), effs.end(), [](const Eff& a, const Eff& b) { return a.eff > b.eff; });
  auto noise = [](const Eff& e) { return e.noise ? std::string("; within noise of N=1") : std::string(); };
  // Every strategy drawn above N=1 is named: best, those between in order, worst, and any that
  // has no N=1 point to scale from (a reference run only at N >= 2, say).
  std::vector<std::string> unscaled;
  for (const auto& [name, p] : pts) {
    const Point* one = pointAt(p, 1);
    const bool aboveOne = !p.empty() && p.back().x > 1;
    if (aboveOne && (!one || !(one->y > 0))) unscaled.push_back(name);
  }
  if (effs.empty()) {
    c.reading = "No strategy has an N=1 point in this slice, so scaling efficiency is not defined.";
  } else {
    const Eff& hi = effs.front();
    c.reading = "Best scaling: " + hi.name + " reaches " + fmtRatio(hi.speedup) +
                " its N=1 throughput at N=" + intLabel(hi.n) + " (" +
                printfStr("%.0f", 100 * hi.eff) + " % efficiency" + noise(hi) + ")";
    auto brief = [&](const Eff& e) {
      return e.name + " " + fmtRatio(e.speedup) + " at N=" + intLabel(e.n) + " (" + printfStr("%.0f", 100 * e.eff) +
             " %" + noise(e) + ")";
    };
    if (effs.size() > 2) {
      std::vector<std::string> between;
      for (std::size_t i = 1; i + 1 < effs.size(); ++i) between.push_back(brief(effs[i]));
      c.reading += "; then " + joinList(between, ", ");
    }
    if (effs.size() > 1) c.reading += "; worst: " + brief(effs.back());
    if (!unscaled.empty())
      c.reading += "; " + joinList(unscaled, ", ") + (unscaled.size() == 1 ? " has" : " have") +
                   " no N=1 run to scale from";
    c.reading += ".";
  }
  buildLinesOverN(c, series, ns, "throughput (samples/s)", "samples_per_s");
}

ChartDef chart() {
  return {40, "throughput_scaling", "Throughput scaling with the number of ranks", build};
}
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
