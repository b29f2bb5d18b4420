// report/charts/ring_epoch_time.cc — epoch time vs N: the from-scratch ring against DDP's
// algorithm and the library allreduce.
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
  const std::vector<std::string> group = {"ring_all_reduce", "ddp", "allreduce"};
  auto relevant = [&](const Run& r) {
    return std::find(group.begin(), group.end(), r.strategy) != group.end() &&
           std::isfinite(r.meanWall());
  };
  // The two compared in the reading: the from-scratch ring and the builtin one.
  const std::string& ring = group[0];
  const std::string& ddp = group[1];
  const std::vector<std::string> required = {ring, ddp};
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
  for (const auto& name : sortedStrategies(data)) {
    Series ser = strategySeries(name, data.at(name));
    ser.title = labelWithOrigin(SeriesKind::Strategy, name);
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

const ChartRegistrar kChart(20, "ring_epoch_time", "Ring all-reduce: from scratch vs builtin",
                            build);

}  // namespace
}  // namespace tpb::report
