// report/charts/collective_busbw.cc — bus bandwidth vs message size of the collectives other than
// allreduce (allreduce_busbw.cc draws that one): tpbench's own points at the largest N measured on
// each device, and every imported file's (nccl-tests, rccl-tests) at the rank counts it has; one
// line per op and algorithm, the colour the algorithm's, the dash the op's. Out-of-place points
// where an op has them (every op does), so the ops are compared on the same footing.
#include <algorithm>
#include <tuple>

#include "common/bus_factor.h"
#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

bool charted(const CollectivePoint& p) { return p.op != "allreduce" && p.ok() && p.n > 1 && p.busbw > 0 && p.bytes > 0; }

// Whose points these are: tpbench's own on a device, or an imported file's.
std::string ownerOf(const CollectivePoint& p) {
  return p.imported ? "file " + std::to_string(p.file) : "own " + p.device;
}

void build(Chart& c, const Inputs& in) {
  std::map<std::string, int> largestN;                   // owner -> its own largest N
  std::set<std::pair<std::string, std::string>> outOfPlace;  // (owner, op) with out-of-place points
  for (const auto& p : in.points) {
    if (!charted(p)) continue;
    if (!p.imported) largestN[ownerOf(p)] = std::max(largestN[ownerOf(p)], p.n);
    if (!p.inPlace) outOfPlace.insert({ownerOf(p), p.op});
  }
  std::vector<const CollectivePoint*> drawn;
  for (const auto& p : in.points) {
    if (!charted(p) || p.inPlace == (outOfPlace.count({ownerOf(p), p.op}) > 0)) continue;
    if (!p.imported && p.n != largestN[ownerOf(p)]) continue;
    drawn.push_back(&p);
  }
  if (drawn.empty()) {
    c.reason = "no ok record of a collective other than allreduce with N >= 2 and a bus bandwidth";
    return;
  }
  const CurveNames names(drawn, in, /*showOp=*/true, /*alwaysN=*/false);
  std::map<CurveKey, std::map<double, std::vector<const CollectivePoint*>>> data;
  std::set<double> sizes, bws;
  std::vector<std::string> opOrder;
  std::set<int> ownNs;
  for (const CollectivePoint* p : drawn) {
    data[names.keyOf(*p)][double(p->bytes)].push_back(p);
    sizes.insert(double(p->bytes));
    bws.insert(p->busbw);
    if (!p->imported) ownNs.insert(p->n);
    if (std::find(opOrder.begin(), opOrder.end(), p->op) == opOrder.end()) opOrder.push_back(p->op);
  }
  std::vector<Series> series;
  std::vector<std::string> parts;
  for (const auto& [key, byBytes] : data) {
    Series s;
    s.title = names.title(key);
    s.color = in.styles.color(SeriesKind::Algorithm, key.algo);
    const auto opIndex = static_cast<int>(std::find(opOrder.begin(), opOrder.end(), key.op) - opOrder.begin());
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
  std::string ns;
  for (int n : ownNs) ns += (ns.empty() ? "N=" : ", ") + std::to_string(n);
  c.subtitle = (ownNs.empty() ? "" : "tpbench's at the largest N of each device (" + ns + "); ") + names.subtitle() +
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
