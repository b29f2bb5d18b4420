// report/charts/collective_busbw.cc — bus bandwidth vs message size of the collectives other than
// allreduce (allreduce_busbw.cc draws that one), at the largest N measured: one line per op and
// algorithm, the colour the algorithm's, the dash the op's. Out-of-place points where an op has
// them (every op does), so the ops are compared on the same footing.
#include <algorithm>
#include <tuple>

#include "common/bus_factor.h"
#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

bool charted(const CollectivePoint& p) { return p.op != "allreduce" && p.ok() && p.n > 1 && p.busbw > 0 && p.bytes > 0; }

void build(Chart& c, const Inputs& in) {
  std::map<std::string, int> devices;
  for (const auto& p : in.points)
    if (charted(p)) ++devices[p.device];
  if (devices.empty()) {
    c.reason = "no ok record of a collective other than allreduce with N >= 2 and a bus bandwidth";
    return;
  }
  std::string device = devices.begin()->first;
  for (const auto& [d, count] : devices)
    if (count > devices[device]) device = d;
  int n = 0;
  std::set<std::string> outOfPlaceOps;
  for (const auto& p : in.points)
    if (charted(p) && p.device == device) {
      n = std::max(n, p.n);
      if (!p.inPlace) outOfPlaceOps.insert(p.op);
    }
  // (op, algo) -> bytes -> busbw values
  std::map<std::pair<std::string, std::string>, std::map<double, std::vector<const CollectivePoint*>>> data;
  std::set<double> sizes, bws;
  std::vector<std::string> opOrder;
  for (const auto& p : in.points) {
    if (!charted(p) || p.device != device || p.n != n || p.inPlace == (outOfPlaceOps.count(p.op) > 0)) continue;
    data[{p.op, p.algo}][double(p.bytes)].push_back(&p);
    sizes.insert(double(p.bytes));
    bws.insert(p.busbw);
    if (std::find(opOrder.begin(), opOrder.end(), p.op) == opOrder.end()) opOrder.push_back(p.op);
  }
  std::vector<Series> series;
  std::vector<std::string> parts;
  for (const auto& [key, byBytes] : data) {
    Series s;
    s.title = key.first + " " + key.second;
    s.color = in.styles.color(SeriesKind::Algorithm, key.second);
    const auto opIndex = static_cast<int>(std::find(opOrder.begin(), opOrder.end(), key.first) - opOrder.begin());
    s.dash = 1 + opIndex;
    static const int kPoints[] = {7, 5, 9, 11, 13, 15};
    s.pointType = kPoints[opIndex % 6];
    s.points = busbwPoints(byBytes);
    double best = 0, at = 0;
    for (const auto& pt : s.points)
      if (pt.y > best) best = pt.y, at = pt.x;
    parts.push_back(s.title + " peaks at " + fmtNum(best) + " GB/s at " + fmtBytes(static_cast<long long>(at)));
    series.push_back(s);
  }
  c.subtitle = "N=" + std::to_string(n) + ", device " + device + ", error bars from the slowest to the fastest iteration" +
               "; busbw = algbw × the op's factor (" + busFactorText(opOrder) + ")";
  c.reading = joinList(parts, "; ") + ".";
  buildBusbwChart(c, series, sizes, bws, "message size (bytes, nccl-tests' convention per op)");
}

ChartDef chart() {
  return {65, "collective_busbw", "Bus bandwidth of the other collectives vs message size", build};
}
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
