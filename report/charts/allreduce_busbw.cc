// report/charts/allreduce_busbw.cc — allreduce bus bandwidth vs message size, one line per
// algorithm (and transport, when the from-scratch ones ran over several) and N.
#include <algorithm>
#include <iterator>
#include <tuple>

#include "common/bus_factor.h"
#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {
namespace {

struct Key {
  std::string algo, transport;
  int n;
  bool operator<(const Key& o) const {
    return std::tie(algo, transport, n) < std::tie(o.algo, o.transport, o.n);
  }
};


// busbw is 0 by definition at N=1, which a bandwidth chart cannot show (nor a log axis). This
// chart is the in-place allreduce's; report/charts/collective_busbw.cc draws the other ops.
bool charted(const CollectivePoint& p) {
  return p.op == "allreduce" && p.inPlace && p.ok() && p.n > 1 && p.busbw > 0 && p.bytes > 0;
}

void build(Chart& c, const Inputs& in) {
  const std::vector<CollectivePoint>& points = in.points;
  const Styles& styles = in.styles;
  // A library's transport is its own business; the other algorithms name theirs.
  auto namesTransport = [&](const std::string& algo) {
    return styles.origin(SeriesKind::Algorithm, algo) != kOriginLibrary;
  };
  std::map<std::string, int> devices;
  for (const auto& p : points) {
    if (charted(p)) ++devices[p.device];
  }
  if (devices.empty()) {
    c.reason = points.empty() ? "no allreduce records in the input"
                              : "no ok allreduce record with N >= 2 and a bus bandwidth";
    return;
  }
  std::string device = devices.begin()->first;
  for (const auto& [d, count] : devices) {
    if (count > devices[device]) device = d;
  }
  std::set<std::string> transports;
  for (const auto& p : points) {
    if (p.ok() && p.op == "allreduce" && p.device == device && namesTransport(p.algo)) transports.insert(p.transport);
  }
  const bool nameTransport = transports.size() > 1;
  std::map<Key, std::map<double, std::vector<const CollectivePoint*>>> data;
  std::set<double> sizes, bws;
  std::set<int> ns;
  for (const auto& p : points) {
    if (!charted(p) || p.device != device) continue;
    data[{p.algo, nameTransport && namesTransport(p.algo) ? p.transport : "", p.n}]
        [double(p.bytes)]
            .push_back(&p);
    sizes.insert(double(p.bytes));
    bws.insert(p.busbw);
    ns.insert(p.n);
  }
  c.subtitle =
      "median time over timed iterations (error bars: slowest to fastest iteration), busbw = algbw × " +
      std::string(busFactorKindOf("allreduce").formula) + "; device " + device +
      (transports.size() == 1 ? ", from-scratch algorithms over " + *transports.begin() : "") +
      (devices.size() > 1 ? " (" + std::to_string(devices.size() - 1) + " other device not shown)"
                          : "");
  std::vector<Key> keys;
  for (const auto& kv : data) keys.push_back(kv.first);
  // Algorithms in display order (from scratch before the library), then transport, then N.
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    return std::make_tuple(styles.order(SeriesKind::Algorithm, a.algo), a.algo, a.transport, a.n) <
           std::make_tuple(styles.order(SeriesKind::Algorithm, b.algo), b.algo, b.transport, b.n);
  });
  std::vector<Series> series;
  struct Peak {
    double bw = 0, bytes = 0;
    int n = 0;
  };
  std::map<std::string, Peak> peaks;
  std::vector<std::string> algoOrder;
  for (const Key& k : keys) {
    const std::string name = k.algo + (k.transport.empty() ? "" : " over " + k.transport);
    Series ser;
    ser.title = name + " N=" + std::to_string(k.n);
    ser.color = styles.color(SeriesKind::Algorithm, k.algo);
    const auto nIndex = static_cast<int>(std::distance(ns.begin(), ns.find(k.n)));
    ser.dash = 1 + nIndex;
    static const int kPoints[] = {7, 5, 9, 11, 13, 15};
    ser.pointType = kPoints[nIndex % 6];
    ser.points = busbwPoints(data[k]);
    if (!peaks.count(name)) algoOrder.push_back(name);
    for (const auto& p : ser.points) {
      if (p.y > peaks[name].bw) peaks[name] = {p.y, p.x, k.n};
    }
    series.push_back(ser);
  }
  std::vector<std::string> parts;
  for (const auto& name : algoOrder) {
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
