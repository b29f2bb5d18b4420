// report/charts/time_breakdown.cc — compute vs communication per epoch, stacked bars grouped by
// strategy, one bar per N; an error bar on each stack spans the epoch wall time's min to max
// over the repeats.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/chart.h"
#include "report/escape.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

struct Bar {
  int n;
  double compute, comm, other, wall;
  double wallLo, wallHi;  // the spread of the wall time: min and max over the repeats
};

// strategy -> its bars by N, in display order of the strategies.
std::vector<std::pair<std::string, std::vector<Bar>>> barsOf(const Slice& s, const Styles& styles) {
  std::map<std::string, std::map<int, std::vector<const Run*>>> byStrategy;
  for (const Run* r : s.runs) byStrategy[r->strategy][r->n].push_back(r);
  std::vector<std::pair<std::string, std::vector<Bar>>> out;
  for (const auto& [name, byN] : byStrategy) {
    std::vector<Bar> bars;
    for (const auto& [n, rs] : byN) {
      std::vector<double> cs, ms, ws;
      for (const Run* r : rs) {
        cs.push_back(meanOf(r->compute));
        ms.push_back(meanOf(r->comm));
        ws.push_back(r->meanWall());
      }
      const auto [lo, hi] = std::minmax_element(ws.begin(), ws.end());
      Bar b{n, median(cs), median(ms), 0, median(ws), *lo, *hi};
      if (!std::isfinite(b.compute)) b.compute = 0;
      if (!std::isfinite(b.comm)) b.comm = 0;
      b.other = std::max(0.0, b.wall - b.compute - b.comm);
      bars.push_back(b);
    }
    out.emplace_back(name, bars);
  }
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    return styles.less(SeriesKind::Strategy, a.first, b.first);
  });
  return out;
}

// The communication share at the largest N of every strategy drawn there, most first.
std::string readingOf(const std::vector<std::pair<std::string, std::vector<Bar>>>& bars) {
  int nMax = 0;
  for (const auto& [name, bs] : bars) {
    for (const Bar& b : bs) nMax = std::max(nMax, b.n);
  }
  std::vector<std::pair<double, std::string>> shares;
  for (const auto& [name, bs] : bars) {
    for (const Bar& b : bs) {
      if (b.n == nMax && b.wall > 0) shares.push_back({b.comm / b.wall, name});
    }
  }
  std::sort(shares.rbegin(), shares.rend());
  if (shares.empty()) return "No epoch wall time to split.";
  const std::string at = "At N=" + std::to_string(nMax) + " communication takes ";
  if (shares.size() == 1)
    return at + fmtPct(shares[0].first) + " of " + shares[0].second + "'s epoch.";
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < shares.size(); ++i)
    parts.push_back(fmtPct(shares[i].first) + " of " + shares[i].second + (i ? "'s" : "'s epoch"));
  const std::string last = parts.back();
  parts.pop_back();
  return at + joinList(parts, ", ") + " and " + last + ".";
}

void build(Chart& c, const Inputs& in) {
  const std::vector<Run>& runs = in.runs;
  if (noOkRuns(c, runs)) return;
  auto relevant = [](const Run& r) {
    return std::isfinite(r.meanWall()) &&
           (std::isfinite(meanOf(r.compute)) || std::isfinite(meanOf(r.comm)));
  };
  const Slice s = sliceOverStrategyAndN(runs, relevant);
  if (s.empty()) {
    c.reason = "no ok run records compute_s/comm_s per epoch";
    return;
  }
  c.subtitle =
      "seconds per epoch (mean over epochs, median over repeats; error bars: the wall time's min to max over "
      "repeats); other = wall - compute - communication; " +
      describeSlice(s, runs);
  const auto bars = barsOf(s, in.styles);
  std::ostringstream dat;
  dat << chartHeader(c)
      << "# One block per strategy (gnuplot: index 0, 1, ...); columns: label compute_s comm_s "
         "other_s wall_s wall_min_s wall_max_s (the error bar: min and max over the repeats)\n";
  std::ostringstream plot;
  plot << "plot ";
  // Explicit group positions: gnuplot's automatic placement after a one-bar group (single has
  // only N=1) lets the next group overlap it.
  int at = 0;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& [name, bs] = bars[i];
    if (i) at += static_cast<int>(bars[i - 1].second.size()) + 1;
    if (i) dat << "\n\n";
    dat << "# [" << i << "] " << gnuplotComment(name)
        << "\n# label compute_s comm_s other_s wall_s wall_min_s wall_max_s\n";
    for (const Bar& b : bs)
      dat << "N=" << b.n << " " << fmtDat(b.compute) << " " << fmtDat(b.comm) << " "
          << fmtDat(b.other) << " " << fmtDat(b.wall) << " " << fmtDat(b.wallLo) << " " << fmtDat(b.wallHi) << "\n";
    // newhistogram ... lt 1 restarts the colours, so compute/communication/other keep theirs in
    // every group; only the first group puts them in the key.
    const bool first = i == 0;
    if (i) plot << ", \\\n     ";
    plot << "newhistogram " << gnuplotString(name) << " lt 1 at " << at << ", '" << c.id
         << ".dat' index " << i << " using 2:xtic(1) " << (first ? "title 'compute'" : "notitle")
         << " lc rgb '#4c72b0', \\\n"
         << "     '' index " << i << " using 3 " << (first ? "title 'communication'" : "notitle")
         << " lc rgb '#dd8452', \\\n"
         << "     '' index " << i << " using 4 " << (first ? "title 'other'" : "notitle")
         << " lc rgb '#c7c7c7'";
  }
  // The spread on top of each stack: bar j of group i stands at x = at_i + j. Groups whose
  // repeats all took the same time (or ran once) draw no bars.
  bool keyed = false;
  at = 0;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    if (i) at += static_cast<int>(bars[i - 1].second.size()) + 1;
    const auto& bs = bars[i].second;
    if (std::none_of(bs.begin(), bs.end(), [](const Bar& b) { return b.wallHi > b.wallLo; })) continue;
    plot << ", \\\n     '" << c.id << ".dat' index " << i << " using ($0+" << at << "):5:6:7 "
         << (keyed ? "notitle" : "title 'wall min-max'")
         << " with yerrorbars lc rgb '#222222' lw 1.5 pt 7 ps 0.4";
    keyed = true;
  }
  plot << "\n";
  c.dat = dat.str();
  const std::string settings =
      "set ylabel 'seconds per epoch (s)'\n"
      "set xlabel 'ranks N, grouped by strategy' offset 0,-1.2\n"
      "set style data histograms\n"
      "set style histogram rowstacked title offset 0,0.6\n"
      "set style fill solid 0.9 border rgb '#555555'\n"
      "set boxwidth 0.75\n"
      "set yrange [0:*]\n"
      "set grid noxtics ytics\n"
      "set bmargin 6\n";
  c.gp = gpScript(c, settings, plot.str());
  c.reading = readingOf(bars);
}

ChartDef chart() { return {50, "time_breakdown", "Where does the time go", build}; }
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
