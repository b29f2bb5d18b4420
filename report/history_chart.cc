#include "report/history_chart.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "report/escape.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {

Chart historyChart(const History& h) {
  Chart c;
  c.id = "history";
  c.title = "History: each series against its first level";
  constexpr std::size_t kMaxSeries = 8;
  std::vector<Series> series;
  std::set<double> marks;
  std::size_t shown = 0;
  for (const auto& s : h.series) {
    if (series.size() == kMaxSeries || s.values.empty()) continue;
    const std::size_t firstEnd = s.changes.empty() ? s.values.size() : s.changes.front().index;
    double first = 0;
    for (std::size_t i = 0; i < firstEnd; ++i) first += s.values[i];
    first /= static_cast<double>(firstEnd);
    if (!(first != 0)) continue;
    Series ser;
    ser.title = s.point + " " + s.metric;
    ser.color = positionColor(series.size());
    ser.pointType = 7;
    for (std::size_t i = 0; i < s.values.size(); ++i) {
      Point p;
      p.x = static_cast<double>(s.files[i] + 1);
      p.y = p.lo = p.hi = 100.0 * s.values[i] / first;
      p.samples = 1;
      ser.points.push_back(p);
    }
    for (const auto& cp : s.changes) marks.insert(static_cast<double>(s.files[cp.index] + 1));
    shown += !s.changes.empty();
    series.push_back(std::move(ser));
  }
  if (series.empty()) {
    c.reason = "no series has a value";
    return c;
  }
  c.subtitle = std::to_string(h.files.size()) + " results files in name order; " + std::to_string(series.size()) +
               " of " + std::to_string(h.series.size()) + " series (" + std::to_string(shown) +
               " with change points); dashed lines: change points (E-Divisive means)";
  c.reading = std::to_string(h.changes()) + " change points in " + std::to_string(h.series.size()) + " series.";
  Axes a;
  a.xlabel = "results file (name order)";
  a.ylabel = "% of the series' first level";
  a.xcol = "file";
  a.ycol = "percent";
  std::ostringstream extra;
  for (double x : marks)
    extra << "set arrow from " << fmtDat(x - 0.5) << ", graph 0 to " << fmtDat(x - 0.5)
          << ", graph 1 nohead dt 2 lw 1 lc rgb " << gnuplotColor("#808080") << "\n";
  buildLineChart(c, series, a, extra.str());
  return c;
}

}  // namespace tpb::report
