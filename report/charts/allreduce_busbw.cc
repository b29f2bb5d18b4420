// report/charts/allreduce_busbw.cc — allreduce bus bandwidth vs message size, one line per
// algorithm (and transport, when the from-scratch ones ran over several), N and device; points
// imported from nccl-tests or rccl-tests drawn beside them, one line per imported file and rank
// count, named by where they ran ("nccl-tests 16 ranks, 2 nodes").
#include <algorithm>
#include <iterator>
#include <tuple>

#include "common/bus_factor.h"
#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

// busbw is 0 by definition at N=1, which a bandwidth chart cannot show (nor a log axis). This
// chart is the in-place allreduce's; report/charts/collective_busbw.cc draws the other ops.
bool charted(const CollectivePoint& p) {
  return p.op == "allreduce" && p.inPlace && p.ok() && p.n > 1 && p.busbw > 0 && p.bytes > 0;
}

void build(Chart& c, const Inputs& in) {
  const std::vector<CollectivePoint>& points = in.points;
  const Styles& styles = in.styles;
  std::vector<const CollectivePoint*> drawn;
  for (const auto& p : points)
    if (charted(p)) drawn.push_back(&p);
  if (drawn.empty()) {
    c.reason = points.empty() ? "no allreduce records in the input"
                              : "no ok allreduce record with N >= 2 and a bus bandwidth";
    return;
  }
  const CurveNames names(drawn, in);
  std::map<CurveKey, std::map<double, std::vector<const CollectivePoint*>>> data;
  std::set<double> sizes, bws;
  std::set<int> ns;
  for (const CollectivePoint* p : drawn) {
    data[names.keyOf(*p)][double(p->bytes)].push_back(p);
    sizes.insert(double(p->bytes));
    bws.insert(p->busbw);
    ns.insert(p->n);
  }
  c.subtitle = "busbw = algbw × " + std::string(busFactorKindOf("allreduce").formula) + "; " + names.subtitle();
  std::vector<CurveKey> keys;
  for (const auto& kv : data) keys.push_back(kv.first);
  // Algorithms in display order (from scratch before the library, imported last), then the rest.
  std::sort(keys.begin(), keys.end(), [&](const CurveKey& a, const CurveKey& b) {
    return std::make_tuple(styles.order(SeriesKind::Algorithm, a.algo), a) <
           std::make_tuple(styles.order(SeriesKind::Algorithm, b.algo), b);
  });
  std::vector<Series> series;
  struct Peak {
    double bw = 0, bytes = 0;
    int n = 0;
  };
  std::map<std::string, Peak> peaks;
  std::vector<std::string> order;
  for (const CurveKey& k : keys) {
    Series ser;
    ser.title = names.title(k);
    ser.color = styles.color(SeriesKind::Algorithm, k.algo);
    const auto nIndex = static_cast<int>(std::distance(ns.begin(), ns.find(k.n)));
    ser.dash = 1 + nIndex;
    static const int kPoints[] = {7, 5, 9, 11, 13, 15};
    ser.pointType = kPoints[(nIndex + (k.file >= 0 ? k.file + 1 : 0)) % 6];
    ser.points = busbwPoints(data[k]);
    // The reading names an algorithm's peak over its Ns; an imported curve's its own.
    const std::string name = k.file >= 0 ? ser.title : names.algoTitle(k);
    if (!peaks.count(name)) order.push_back(name);
    for (const auto& p : ser.points)
      if (p.y > peaks[name].bw) peaks[name] = {p.y, p.x, k.n};
    series.push_back(ser);
  }
  std::vector<std::string> parts;
  for (const auto& name : order) {
    const Peak& p = peaks[name];
    parts.push_back(name + " busbw peaks at " + fmtNum(p.bw) + " GB/s at " +
                    fmtBytes(static_cast<long long>(p.bytes)) + ", N=" + std::to_string(p.n));
  }
  c.reading = joinList(parts, "; ") + ".";
  buildBusbwChart(c, series, sizes, bws, "message size per rank (bytes)");
}

ChartDef chart() {
  return {60, "allreduce_busbw", "Allreduce bus bandwidth vs message size", build};
}
TPB_REGISTER_CHART(chart);

}  // namespace
}  // namespace tpb::report
