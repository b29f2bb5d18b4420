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
  // The reading compares the two at the same data ranks, hence the same global batch: the
  // parameter server's rank 0 serves and trains nothing (docs/strategies.md), so its N = k + 1
  // matches data_parallel's N = k. At the same N it has one data rank fewer, which the reading
  // says as the documented difference it is, not as a gap between the algorithms.
  std::map<std::string, std::map<int, int>> ranksAt;  // strategy -> N -> data ranks
  for (const Run* r : s.runs) ranksAt[r->strategy][r->n] = r->dataRanks;
  std::map<int, std::pair<int, int>> byRanks;  // data ranks -> (param_server's N, data_parallel's N)
  for (const auto& [n, fa] : finalAcc[pair[0]]) byRanks[ranksAt[pair[0]][n]].first = n;
  for (const auto& [n, fa] : finalAcc[pair[1]]) byRanks[ranksAt[pair[1]][n]].second = n;
  std::vector<std::string> parts;
  double diff = 0;  // percentage points, first minus second of the pair, the largest in size
  for (const auto& [ranks, ns2] : byRanks) {
    const auto [np, nd] = ns2;
    if (np == 0 || nd == 0) continue;
    const auto [ep, pa] = finalAcc[pair[0]][np];
    const auto [ed, da] = finalAcc[pair[1]][nd];
    std::string part = std::to_string(ranks) + (ranks == 1 ? " data rank" : " data ranks") + " (N=" + std::to_string(np) +
                       " vs N=" + std::to_string(nd) + ") " + fmtPct(pa) + " vs " + fmtPct(da);
    if (ep != ed) part += " (epochs " + std::to_string(ep) + " vs " + std::to_string(ed) + ")";
    parts.push_back(part);
    const double d = 100 * (pa - da);
    if (parts.size() == 1 || std::fabs(d) > std::fabs(diff)) diff = d;
  }
  // The same N, where the data ranks differ: one line for the largest N both ran.
  std::string sameN;
  for (auto it = ns.rbegin(); it != ns.rend() && sameN.empty(); ++it) {
    const int n = *it;
    if (!finalAcc[pair[0]].count(n) || !finalAcc[pair[1]].count(n)) continue;
    if (ranksAt[pair[0]][n] == ranksAt[pair[1]][n]) break;
    sameN = " At the same N the parameter server trains on one data rank fewer (its rank 0 serves), so on a "
            "smaller global batch: N=" + std::to_string(n) + " " + fmtPct(finalAcc[pair[0]][n].second) + " vs " +
            fmtPct(finalAcc[pair[1]][n].second) + ".";
  }
  if (parts.empty()) {
    c.reading = pair[0] + " and " + pair[1] + " ran at no common number of data ranks in this slice.";
  } else {
    c.reading = "Final test accuracy, " + pair[0] + " vs " + pair[1] + " at the same data ranks (the same global "
                "batch): " + joinList(parts, "; ") + "; largest difference " + printfStr("%+.1f", diff) +
                " points." + sameN;
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
