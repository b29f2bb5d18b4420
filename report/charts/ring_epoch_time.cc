// report/charts/ring_epoch_time.cc — epoch time vs N: the from-scratch ring against DDP's
// algorithm and the library allreduce.
//
// The experiment's definition (one of the seed's): it compares two strategies by name,
// "ring_all_reduce" and "ddp", and the reading says how they differ, then ranks every strategy
// drawn at the largest N and sets each PyTorch reference beside the strategy it is the reference
// of; a difference inside the measured spread reads "within noise". These names are the chart;
// they appear nowhere else in report/. Every strategy whose origin is "library" is drawn beside
// them, as the library's own allreduce, and so is every PyTorch reference of either (its entry's
// reference_of names it: torch_ddp for ddp); labels ("(from scratch)", "(builtin)", "(library)",
// "(PyTorch)") come from each series' origin (report/style.h).
#include <algorithm>
#include <cmath>
#include <utility>

#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

using PointsByName = std::map<std::string, std::vector<Point>>;

// "1.62x faster" or "1.08x slower" from two epoch times (smaller is faster); "within noise
// (1.08x slower)" where their spreads overlap.
std::string speedPhrase(const Point& a, const Point& b) {
  if (!(a.y > 0) || !(b.y > 0)) return "not comparable";
  const std::string ratio = a.y <= b.y ? fmtRatio(b.y / a.y) + " faster" : fmtRatio(a.y / b.y) + " slower";
  return withinNoise(a, b) ? "within noise (" + ratio + ")" : ratio;
}

// "ring_all_reduce vs ddp per epoch: 1.62x faster at N=4, 1.53x faster at N=3, ...": largest N
// first, where the synchronisation strategies differ most.
std::string pairReading(const PointsByName& pts, const std::string& a, const std::string& b,
                        const std::set<double>& ns) {
  std::vector<std::string> parts;
  for (auto it = ns.rbegin(); it != ns.rend(); ++it) {
    const Point* pa = pointAt(pts.at(a), *it);
    const Point* pb = pointAt(pts.at(b), *it);
    if (pa && pb) parts.push_back(speedPhrase(*pa, *pb) + " at N=" + intLabel(*it));
  }
  if (parts.empty()) return a + " and " + b + " ran at no common N";
  return a + " vs " + b + " per epoch: " + joinList(parts, ", ");
}

// Every strategy drawn, fastest first, at N: where the library allreduce and the PyTorch
// reference stand too; "(within noise)" after one whose time overlaps the fastest's.
std::string rankingAt(const PointsByName& pts, double n) {
  std::vector<std::pair<const Point*, std::string>> at;
  for (const auto& [name, p] : pts) {
    if (const Point* q = pointAt(p, n)) at.emplace_back(q, name);
  }
  std::sort(at.begin(), at.end(), [](const auto& x, const auto& y) { return x.first->y < y.first->y; });
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < at.size(); ++i) {
    const bool tie = i > 0 && withinNoise(*at[i].first, *at[0].first);
    parts.push_back(at[i].second + " " + fmtNum(at[i].first->y) + (tie ? " (within noise)" : ""));
  }
  return "at N=" + intLabel(n) + ", fastest first: " + joinList(parts, ", ") + " s/epoch";
}

// Each PyTorch reference against the strategy rebuilding its algorithm, at N.
std::string referencesAt(const PointsByName& pts, const Styles& styles, double n) {
  std::vector<std::string> parts;
  for (const auto& [name, p] : pts) {
    const std::string of = styles.referenceOf(SeriesKind::Strategy, name);
    const Point* q = pointAt(p, n);
    const Point* r = pts.count(of) ? pointAt(pts.at(of), n) : nullptr;
    if (q && r) parts.push_back(name + " vs " + of + ": " + speedPhrase(*q, *r));
  }
  return joinList(parts, "; ");
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
  c.subtitle = "mean epoch wall time, median over repeats (error bars: min to max); " + describeSlice(s, runs);
  BusyXs busy;
  const auto data = collect(
      s.runs, [](const Run& r) { return r.strategy; }, [](const Run& r) { return double(r.n); },
      [](const Run& r) { return r.meanWall(); }, &busy);
  std::vector<Series> series;
  std::set<double> ns;
  PointsByName pts;
  for (const auto& name : sortedStrategies(data, styles)) {
    Series ser = strategySeries(name, data.at(name), styles, busyXsOf(busy, name));
    for (const auto& p : ser.points) ns.insert(p.x);
    pts[name] = ser.points;
    series.push_back(ser);
  }
  const double nMax = *ns.rbegin();
  std::string reading = pairReading(pts, ring, ddp, ns) + "; " + rankingAt(pts, nMax);
  if (const std::string refs = referencesAt(pts, styles, nMax); !refs.empty()) reading += "; " + refs;
  c.reading = reading + ".";
  buildLinesOverN(c, series, ns, "epoch time (s)", "epoch_s");
}

ChartDef chart() {
  return {20, "ring_epoch_time", "Ring all-reduce: from scratch vs builtin", build};
}
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
