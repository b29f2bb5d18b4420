// report/tables.cc — see tables.h.
#include "report/tables.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "record/collective_summary.h"
#include "record/reference_busbw.h"
#include "report/chart.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {

using nlohmann::json;

namespace {

std::string statusText(const std::string& status, const std::string& error, int count) {
  std::string s = status;
  if (count > 1) s = std::to_string(count) + " " + s;
  if (!error.empty()) s += ": " + error;
  return s;
}

// "low–high" of the finite values, or "—" when there are fewer than two or no spread: the spread
// a median in the same row is taken over.
std::string spreadText(const std::vector<double>& lows, const std::vector<double>& highs) {
  double lo = kNaN, hi = kNaN;
  for (double x : lows) {
    if (std::isfinite(x) && !(x >= lo)) lo = x;
  }
  for (double x : highs) {
    if (std::isfinite(x) && !(x <= hi)) hi = x;
  }
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo)) return "—";
  return fmtNum(lo) + "–" + fmtNum(hi);
}

}  // namespace

Table runsTable(const std::vector<Run>& runs, const Styles& styles) {
  struct Group {
    const Run* first = nullptr;
    std::vector<const Run*> runs;
  };
  std::map<std::string, Group> groups;
  std::vector<std::string> order;
  for (const auto& r : runs) {
    json k = r.config;
    k.erase("repeat_index");
    const std::string key = k.dump() + "|" + r.status;
    auto& g = groups[key];
    if (!g.first) g.first = &r, order.push_back(key);
    g.runs.push_back(&r);
  }
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    const Run& x = *groups[a].first;
    const Run& y = *groups[b].first;
    if (x.strategy != y.strategy) return styles.less(SeriesKind::Strategy, x.strategy, y.strategy);
    return std::make_tuple(x.n, x.batch, x.trainSize, x.epochsRequested, x.status) <
           std::make_tuple(y.n, y.batch, y.trainSize, y.epochsRequested, y.status);
  });
  auto baseline = [&](const Run& r) {
    json k = sliceKey(r, {"n_gpus"});
    std::vector<double> v;
    for (const auto& o : runs) {
      if (o.ok() && o.n == 1 && o.strategy == r.strategy && sliceKey(o, {"n_gpus"}) == k)
        v.push_back(o.samplesPerS);
    }
    return median(v);
  };
  Table t;
  t.header = {"strategy", "N", "batch", "train_size", "epochs", "samples/s", "samples/s min–max",
              "final accuracy", "scaling eff.", "status"};
  for (const auto& key : order) {
    const Group& g = groups[key];
    const Run& r = *g.first;
    std::vector<double> sps, acc, eff;
    for (const Run* x : g.runs) {
      sps.push_back(x->samplesPerS);
      acc.push_back(x->finalAccuracy);
      double e = x->scalingEfficiency;
      if (!std::isfinite(e) && x->ok() && x->n > 0) {
        const double b = baseline(*x);
        if (b > 0) e = x->samplesPerS / (x->n * b);
      }
      eff.push_back(e);
    }
    const double a = median(acc), e = median(eff);
    t.rows.push_back({r.strategy, std::to_string(r.n), std::to_string(r.batch),
                      std::to_string(r.trainSize), std::to_string(r.epochsRequested),
                      fmtNum(median(sps)), spreadText(sps, sps), std::isfinite(a) ? fmtPct(a) : "—",
                      std::isfinite(e) ? printfStr("%.0f", 100 * e) + " %" : "—",
                      statusText(r.status, r.error, static_cast<int>(g.runs.size()))});
  }
  return t;
}

Table collectiveTable(const std::vector<CollectivePoint>& points, const Styles& styles) {
  // Other collectives than the in-place allreduce name their op and placement in the algo
  // column ("broadcast tree", "ring (out of place)"), and another element type or reduction than
  // float32 sum its own ("allreduce nccl-tests bfloat16"): one table holds every collective record.
  auto label = [](const CollectivePoint& p) {
    return (p.op == "allreduce" ? p.algo : p.op + " " + p.algo) + (p.dtype == "float32" ? "" : " " + p.dtype) +
           (p.redop == "sum" ? "" : " " + p.redop) + (p.inPlace ? "" : " (out of place)");
  };
  // An imported file's points stay apart from everyone else's (its where names its cluster).
  std::map<std::tuple<std::string, int, std::string, std::string, std::string, std::string, long long, int, long long,
                      std::string>,
           std::vector<const CollectivePoint*>>
      groups;
  for (const auto& p : points)
    groups[{p.op == "allreduce" ? "" : p.op, styles.order(SeriesKind::Algorithm, p.algo), label(p), p.carrier,
            p.device, p.imported ? std::to_string(p.file) + "|" + p.gpu : "", p.nodes, p.n, p.bytes, p.status}]
        .push_back(&p);
  Table t;
  t.header = {"algo", "carried over", "device", "N", "bytes", "median µs", "min–max µs", "busbw GB/s", "status"};
  for (const auto& [k, ps] : groups) {
    std::vector<double> us, lo, hi, bw;
    for (const CollectivePoint* p : ps) {
      us.push_back(p->medianUs), bw.push_back(p->busbw);
      lo.push_back(p->minUs), hi.push_back(p->maxUs);
    }
    const CollectivePoint& p = *ps.front();
    std::string device = p.device;
    if (p.imported && !p.gpu.empty()) device += ", " + p.gpu;
    if (p.nodes > 1) device += ", " + std::to_string(p.nodes) + " nodes";
    t.rows.push_back({label(p), p.carrier, device, std::to_string(p.n),
                      fmtBytes(p.bytes) + " (" + std::to_string(p.bytes) + ")", fmtNum(median(us)),
                      spreadText(lo, hi), fmtNum(median(bw)),
                      statusText(p.status, p.error, static_cast<int>(ps.size()))});
  }
  return t;
}

Table stragglerTable(const std::vector<Run>& runs, const std::vector<CollectivePoint>& points) {
  Table t;
  t.header = {"kind", "point", "straggler"};
  for (const auto& r : runs)
    if (!r.straggler.empty())
      t.rows.push_back({"training run", r.strategy + " N=" + std::to_string(r.n) + " batch " + std::to_string(r.batch) +
                                            " train_size " + std::to_string(r.trainSize),
                        r.straggler});
  for (const auto& p : points)
    if (!p.straggler.empty())
      t.rows.push_back({"collective", p.op + " " + p.algo + " N=" + std::to_string(p.n) + " " + fmtBytes(p.bytes) +
                                          (p.inPlace ? "" : " out of place"),
                        p.straggler});
  return t;
}

Table verdictTable(const Inputs& in) {
  std::vector<CurvePoint> curve;
  for (const auto& p : in.points) {
    if (!p.ok() || p.op != "allreduce" || p.device != "cuda") continue;
    CurvePoint c;
    // A curve per algorithm of tpbench's own, per imported file and GPU.
    c.series = in.styles.label(SeriesKind::Algorithm, p.algo);
    if (p.imported && p.file < in.files.size()) {
      const std::string& path = in.files[p.file].path;
      c.series += " (" + path.substr(path.find_last_of('/') + 1) + ")";
    }
    c.facts.device = p.device;
    c.facts.gpu = p.gpu;
    c.facts.ranks = p.n;
    c.facts.nodes = p.nodes;
    c.facts.nicsPerNode = p.nicsPerNode;
    c.facts.nic = p.nic;
    // tpbench's own ring is a ring; its library point is NCCL's own choice.
    c.facts.algorithm = p.imported ? p.ncclAlgo : (p.algo == "ring" ? "ring" : "");
    c.facts.dtype = p.dtype;
    c.facts.redop = p.redop;
    c.bytes = static_cast<std::uint64_t>(p.bytes);
    c.busbwGbps = p.busbw;
    curve.push_back(std::move(c));
  }
  Table t;
  t.header = {"curve", "N", "nodes", "GPU", "plateau and verdict"};
  for (const auto& v : curveVerdicts(curve)) {
    t.rows.push_back({v.series + (v.facts.dtype == "float32" ? "" : " " + v.facts.dtype),
                      std::to_string(v.facts.ranks), std::to_string(v.facts.nodes), v.facts.gpu, curveVerdictText(v)});
  }
  return t;
}

namespace {

Table glanceTable(const SummaryTable& s) {
  Table t;
  t.header = {"N", "size", "fastest", "its busbw GB/s"};
  for (const auto& c : s.columns) t.header.push_back(c + " (× time)");
  for (const auto& r : s.rows) {
    std::vector<Cell> row = {std::to_string(r.n), fmtBytes(static_cast<long long>(r.bytes)),
                             winnerText(s, r) + (r.withinNoise && !r.busy ? " (within noise)" : ""),
                             fmtNum(r.cells[r.winner]->busbwGbps)};
    for (std::size_t c = 0; c < s.columns.size(); ++c) row.push_back(ratioText(r, c));
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace

std::vector<GlanceTable> glanceTables(const std::vector<CollectivePoint>& points, const Styles& styles) {
  std::vector<const CollectivePoint*> sorted;
  // Measured side by side on one machine: imported points ran elsewhere, at another time.
  for (const auto& p : points)
    if (p.ok() && !p.imported) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(), [&](const CollectivePoint* a, const CollectivePoint* b) {
    return styles.less(SeriesKind::Algorithm, a->algo, b->algo);
  });
  std::vector<CollectiveTiming> timings;
  for (const CollectivePoint* p : sorted)
    timings.push_back({p->op, p->algo, p->carrier, p->device, p->inPlace, p->n, static_cast<std::uint64_t>(p->bytes),
                       p->medianUs, p->minUs, p->maxUs, p->busbw, p->busy});
  std::vector<GlanceTable> out;
  for (const SummaryTable& s : summaryTables(timings))
    if (s.columns.size() > 1)
      out.push_back({s.op + " (" + s.device + ", " + (s.inPlace ? "in place" : "out of place") + ")", glanceTable(s)});
  return out;
}

namespace {

// HTA's overlap per rank: each rank's for up to 8, else the median and the two extremes.
std::string perRankOverlapText(const Overlap& o) {
  std::vector<const Overlap::Rank*> ranks;
  for (const auto& r : o.ranks)
    if (r.commUs > 0) ranks.push_back(&r);
  if (ranks.empty()) return std::string(kNotApplicable) + ": no communication traced";
  std::string text;
  if (ranks.size() <= 8) {
    for (const auto* r : ranks) text += (text.empty() ? "r" : ", r") + std::to_string(r->rank) + " " + fmtPct(r->fraction());
    return text;
  }
  const auto [lowest, highest] = std::minmax_element(
      ranks.begin(), ranks.end(), [](const auto* a, const auto* b) { return a->fraction() < b->fraction(); });
  const auto* lo = *lowest;
  const auto* hi = *highest;
  std::vector<double> fractions;
  for (const auto* r : ranks) fractions.push_back(r->fraction());
  return "median " + fmtPct(median(fractions)) + "; lowest r" + std::to_string(lo->rank) + " " + fmtPct(lo->fraction()) +
         ", highest r" + std::to_string(hi->rank) + " " + fmtPct(hi->fraction());
}

}  // namespace

Table overlapTable(const std::vector<TracedRun>& traces, const std::vector<Overlap>& overlaps) {
  Table t;
  t.header = {"traced run", "file", "steps", "measured on", "comm in flight beside compute, ms/step",
              "of it hidden behind compute", "host in comm or waiting, ms/step", "async spans/step",
              "HTA overlap per rank"};
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const TracedRun& r = traces[i];
    const Overlap& o = overlaps.at(i);
    const bool async = o.asyncUs > 0;
    // A share of nothing is no share: "n/a" and why, never "nan %" or a made-up 0 %.
    const std::string hidden = o.noHiddenFraction().empty() ? fmtPct(o.hiddenFraction())
                                                             : std::string(kNotApplicable) + ": " + o.noHiddenFraction();
    t.rows.push_back({r.label, r.file, std::to_string(o.steps), o.gpu ? "GPU streams" : "host threads",
                      async ? fmtNum(o.asyncUs / 1e3) : "0", hidden, fmtNum(o.exposedUs / 1e3),
                      fmtNum(o.asyncPerStep), perRankOverlapText(o)});
  }
  return t;
}

std::string overlapLine(const std::string& label, const Overlap& o) {
  return label + ": " + fmtNum(o.asyncUs / 1e3) + " ms/step of communication ran beside the computation (" +
         (o.gpu ? "GPU streams" : "host threads") + "), " + fmtNum(o.hiddenUs / 1e3) + " ms (" +
         fmtPct(o.hiddenFraction()) + ") of it hidden behind forward and backward; the host waited " +
         fmtNum(o.exposedUs / 1e3) + " ms/step for communication";
}

Table metaTable(const std::vector<std::pair<std::string, std::string>>& meta) {
  Table t;
  t.header = {"field", "value"};
  for (const auto& [k, v] : meta) t.rows.push_back({k, v});
  return t;
}

}  // namespace tpb::report
