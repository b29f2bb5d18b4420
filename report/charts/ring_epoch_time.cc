// report/charts/ring_epoch_time.cc — epoch time vs N: the from-scratch ring against DDP's
// algorithm and the library allreduce.
//
// The experiment's definition (one of the seed's): it compares two strategies by name,
// "ring_all_reduce" and "ddp", and the reading says how they differ. These names are the chart;
// they appear nowhere else in report/. Every strategy whose origin is "library" is drawn beside
// them, as the library's own allreduce, and so is every PyTorch reference of either (its entry's
// reference_of names it: torch_ddp for ddp); labels ("(from scratch)", "(builtin)", "(library)",
// "(PyTorch)") come from each series' origin (report/style.h).
#include <algorithm>
#include <cmath>

#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

// "a is Rx faster/slower than b" from two times (smaller is faster).
std::string speedPhrase(double ta, double tb) {
  if (!(ta > 0) || !(tb > 0)) return "not comparable";
  if (ta <= tb) return fmtRatio(tb / ta) + " faster";
  return fmtRatio(ta / tb) + " slower";
}

void build(Chart& c, const Inputs& in) {
  const std::vector<Run>& runs = in.runs;
  if (noOkRuns(c, runs)) return;
  // The two compared (see the top of this file).
  const std::string ring = "ring_all_reduce";
  const std::string ddp = "ddp";
  const std::vector<std::string> required = {ring, ddp};
  const Styles& styles = in.styles;
  auto relevant = [&](const Run& r) {
    const std::string refOf = styles.referenceOf(SeriesKind::Strategy, r.strategy);
    const bool inGroup = r.strategy == ring || r.strategy == ddp || refOf == ring || refOf == ddp ||
                         styles.origin(SeriesKind::Strategy, r.strategy) == kOriginLibrary;
    return inGroup && std::isfinite(r.meanWall());
  };
  const Slice s = sliceOverStrategyAndN(runs, relevant, required);
  if (const std::string* missing = firstMissing(s, required)) {
    c.reason = "no ok " + *missing + " run" +
               (s.empty() ? std::string() : " at the settings of the other runs");
    return;
  }
  c.subtitle = "mean epoch wall time, median over repeats; " + describeSlice(s, runs);
  const auto data = collect(
      s.runs, [](const Run& r) { return r.strategy; }, [](const Run& r) { return double(r.n); },
      [](const Run& r) { return r.meanWall(); });
  std::vector<Series> series;
  std::set<double> ns;
  std::map<std::string, std::vector<Point>> pts;
  for (const auto& name : sortedStrategies(data, styles)) {
    Series ser = strategySeries(name, data.at(name), styles);
    ser.title = styles.label(SeriesKind::Strategy, name);
    for (const auto& p : ser.points) ns.insert(p.x);
    pts[name] = ser.points;
    series.push_back(ser);
  }
  // Largest N first: that is where the synchronisation strategies differ most.
  std::vector<std::string> parts;
  for (auto it = ns.rbegin(); it != ns.rend(); ++it) {
    const double tRing = valueAt(pts[ring], *it), tDdp = valueAt(pts[ddp], *it);
    if (std::isfinite(tRing) && std::isfinite(tDdp))
      parts.push_back(speedPhrase(tRing, tDdp) + (parts.empty() ? " per epoch than " + ddp : "") +
                      " at N=" + intLabel(*it));
  }
  std::string reading;
  if (parts.empty()) {
    reading = ring + " and " + ddp + " ran at no common N";
  } else {
    reading = ring + " is " + parts[0];
    if (parts.size() > 1)
      reading +=
          " (" + joinList(std::vector<std::string>(parts.begin() + 1, parts.end()), ", ") + ")";
  }
  // The fastest of the group at the largest N, to say where the library allreduce stands too.
  const double nMax = *ns.rbegin();
  std::string fastest;
  double best = kNaN;
  for (const auto& [name, p] : pts) {
    const double t = valueAt(p, nMax);
    if (std::isfinite(t) && !(t >= best)) best = t, fastest = name;
  }
  if (!fastest.empty())
    reading +=
        "; fastest at N=" + intLabel(nMax) + ": " + fastest + " (" + fmtNum(best) + " s/epoch)";
  c.reading = reading + ".";
  buildLinesOverN(c, series, ns, "epoch time (s)", "epoch_s");
}

ChartDef chart() {
  return {20, "ring_epoch_time", "Ring all-reduce: from scratch vs builtin", build};
}
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
