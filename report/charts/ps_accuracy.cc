// report/charts/ps_accuracy.cc — accuracy per epoch: the from-scratch parameter server against
// DataParallel's algorithm, one line per strategy and N.
//
// The experiment's definition (one of the seed's): it compares two strategies by name,
// "param_server" (drawn solid) and "data_parallel" (dashed). These names are the chart; they
// appear nowhere else in report/. A PyTorch reference of either (its entry's reference_of names
// it: torch_dp for data_parallel) is drawn too, dotted. Labels, "(from scratch)", "(builtin)" or
// "(PyTorch)", come from each series' origin (report/style.h).
#include <algorithm>
#include <cmath>
#include <iterator>

#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

void build(Chart& c, const Inputs& in) {
  const std::vector<Run>& runs = in.runs;
  if (noOkRuns(c, runs)) return;
  // The pair compared (see the top of this file).
  const std::vector<std::string> pair = {"param_server", "data_parallel"};
  const auto inPair = [&](const std::string& name) { return std::find(pair.begin(), pair.end(), name) != pair.end(); };
  // The pair, then the references of its members, in display order.
  std::vector<std::string> drawn = pair;
  for (const Run& r : runs) {
    if (inPair(in.styles.referenceOf(SeriesKind::Strategy, r.strategy)) &&
        std::find(drawn.begin(), drawn.end(), r.strategy) == drawn.end())
      drawn.push_back(r.strategy);
  }
  std::sort(drawn.begin() + static_cast<std::ptrdiff_t>(pair.size()), drawn.end(), [&](const std::string& a, const std::string& b) {
    return in.styles.less(SeriesKind::Strategy, a, b);
  });
  auto relevant = [&](const Run& r) {
    return std::find(drawn.begin(), drawn.end(), r.strategy) != drawn.end() &&
           std::any_of(r.accuracy.begin(), r.accuracy.end(),
                       [](double a) { return std::isfinite(a); });
  };
  const Slice s = sliceOverStrategyAndN(runs, relevant, pair);
  if (const std::string* missing = firstMissing(s, pair)) {
    c.reason = "no ok " + *missing + " run with test accuracy" +
               (s.empty() ? std::string() : " at the settings of the other strategy's runs");
    return;
  }
  c.subtitle = "test accuracy after each epoch, median over repeats; " + describeSlice(s, runs);
  // strategy -> N -> epoch -> accuracies
  std::map<std::string, std::map<int, std::map<int, std::vector<double>>>> acc;
  for (const Run* r : s.runs) {
    for (std::size_t e = 0; e < r->accuracy.size(); ++e) {
      if (std::isfinite(r->accuracy[e]))
        acc[r->strategy][r->n][static_cast<int>(e)].push_back(r->accuracy[e]);
    }
  }
  std::set<int> ns;
  for (const auto& [st, byN] : acc) {
    for (const auto& kv : byN) ns.insert(kv.first);
  }
  std::vector<Series> series;
  std::map<std::string, std::map<int, std::pair<int, double>>> finalAcc;  // strategy, N -> (epoch, acc)
  int maxEpoch = 1;
  for (std::size_t which = 0; which < drawn.size(); ++which) {
    const std::string& name = drawn[which];
    for (const auto& [n, byEpoch] : acc[name]) {
      Series ser;
      ser.title = in.styles.label(SeriesKind::Strategy, name) + " N=" + std::to_string(n);
      ser.color = positionColor(static_cast<std::size_t>(std::distance(ns.begin(), ns.find(n))));
      ser.dash = which == 0 ? 1 : which == 1 ? 2 : 3;
      ser.pointType = which == 0 ? 7 : which == 1 ? 5 : 9;
      for (const auto& [e, xs] : byEpoch) {
        ser.points.push_back(
            {static_cast<double>(e + 1), 100 * median(xs), static_cast<int>(xs.size())});
        finalAcc[name][n] = {e + 1, median(xs)};
        maxEpoch = std::max(maxEpoch, e + 1);
      }
      series.push_back(ser);
    }
  }
  std::vector<std::string> parts;
  double gap = 0;  // percentage points, first minus second of the pair
  int gapAt = 0;
  for (int n : ns) {
    if (!finalAcc[pair[0]].count(n) || !finalAcc[pair[1]].count(n)) continue;
    const auto [ep, pa] = finalAcc[pair[0]][n];
    const auto [ed, da] = finalAcc[pair[1]][n];
    std::string part = "N=" + std::to_string(n) + " " + fmtPct(pa) + " vs " + fmtPct(da);
    if (ep != ed) part += " (epochs " + std::to_string(ep) + " vs " + std::to_string(ed) + ")";
    parts.push_back(part);
    const double d = 100 * (pa - da);
    if (parts.size() == 1 || std::fabs(d) > std::fabs(gap)) gap = d, gapAt = n;
  }
  if (parts.empty()) {
    c.reading = pair[0] + " and " + pair[1] + " ran at no common N in this slice.";
  } else {
    c.reading = "Final test accuracy, " + pair[0] + " vs " + pair[1] + ": " +
                joinList(parts, "; ") + " (largest gap: " + printfStr("%+.1f", gap) +
                " points for " + pair[0] + " at N=" + std::to_string(gapAt) + ").";
  }
  std::set<double> epochs;
  for (int e = 1; e <= maxEpoch; ++e) epochs.insert(e);
  const Axes a = wholeXAxes(epochs, "epoch", "epoch", "test accuracy (%)", "test_accuracy_pct");
  buildLineChart(c, series, a,
                 "set yrange [*:*]\nset xrange [0.8:" + fmtDat(maxEpoch + 0.2) + "]\n");
}

ChartDef chart() { return {10, "ps_accuracy", "Parameter server: from scratch vs builtin", build}; }
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
