#include "record/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/format_bytes.h"
#include "common/text_escape.h"
#include "record/results.h"
#include "record/stats.h"

namespace tpb {

using nlohmann::json;

bool CompareResult::regressed() const {
  return std::any_of(rows.begin(), rows.end(), [](const Comparison& c) { return c.regression; });
}

namespace {

// All the repetitions of one point, with the values of each metric.
struct Point {
  std::string label;
  RunConfig run;             // runs: the config without repeat_index
  CollectiveRecord coll;     // collectives: the key fields (op, algo, transport, device, N, bytes)
  bool isRun = false;
  bool anyOk = false, anyFailed = false;
  std::map<std::string, std::vector<double>> timing;    // higher-is-better metrics end in _per_s/_gbps
  std::map<std::string, std::vector<double>> accuracy;  // deterministic metrics
  std::set<std::string> unmeasured;  // accuracy metrics that an ok repeat left null (or NaN)
  // Exact traffic per rank (runs: summed over the epochs), from the first ok repeat that has it;
  // trafficVaries when a later repeat disagrees (the count should never depend on the run).
  std::optional<TrafficRecord> traffic;
  bool trafficVaries = false;
};

void addTraffic(Point& p, const std::optional<TrafficRecord>& t) {
  if (!t) return;
  if (!p.traffic) p.traffic = t;
  else if (*p.traffic != *t) p.trafficVaries = true;
}

// A run's traffic: the sum of its epochs', when every epoch recorded it.
std::optional<TrafficRecord> runTraffic(const RunRecord& run) {
  std::optional<TrafficRecord> sum;
  for (const auto& e : run.epochs) {
    if (!e.traffic || (sum && sum->ranks() != e.traffic->ranks())) return std::nullopt;
    if (sum) *sum += *e.traffic;
    else sum = e.traffic;
  }
  return sum;
}

std::string runLabel(const RunConfig& c) {
  std::ostringstream os;
  os << "run " << c.strategy << " N=" << c.nGpus << " batch=" << c.batchSize << " train_size=" << c.trainSize
     << " epochs=" << c.epochs << " " << c.device;
  if (c.maxSteps >= 0) os << " max_steps=" << c.maxSteps;
  if (c.has("library")) os << " library=" << c.library;
  return os.str();
}

bool sameCollectivePoint(const CollectiveRecord& a, const CollectiveRecord& b) {
  return a.op == b.op && a.algo == b.algo && a.transport == b.transport && a.device == b.device &&
         a.nGpus == b.nGpus && a.bytes == b.bytes && a.isInPlace() == b.isInPlace() && a.root == b.root;
}

// Points are matched by value (a linear search: files hold hundreds of points, not millions).
Point& runPoint(std::vector<Point>& points, const RunConfig& key) {
  for (auto& p : points)
    if (p.isRun && p.run == key) return p;
  Point p;
  p.isRun = true;
  p.run = key;
  p.label = runLabel(key);
  points.push_back(std::move(p));
  return points.back();
}

Point& collectivePoint(std::vector<Point>& points, const CollectiveRecord& rec) {
  for (auto& p : points)
    if (!p.isRun && sameCollectivePoint(p.coll, rec)) return p;
  Point p;
  p.coll = rec;
  p.label = rec.op + " " + rec.algo + " N=" + std::to_string(rec.nGpus) + " " + formatBytes(rec.bytes) + " " +
            rec.transport + (rec.isInPlace() ? "" : " out-of-place") + (rec.root ? " root=" + std::to_string(*rec.root) : "");
  points.push_back(std::move(p));
  return points.back();
}

void addAccuracy(Point& p, const char* metric, double v) {
  if (std::isnan(v)) {
    p.unmeasured.insert(metric);
  } else {
    p.accuracy[metric].push_back(v);
  }
}

std::vector<Point> collect(const ResultsFile& f) {
  std::vector<Point> points;
  for (const auto& run : f.runs()) {
    RunConfig key = run.config;
    key.repeatIndex = 0;
    Point& p = runPoint(points, key);
    if (run.status == "skipped") continue;
    // A run that trained on nothing measured nothing: it counts as failed, whatever it says.
    if (!run.ok() || !run.nothingMeasured().empty()) {
      p.anyFailed = true;
      continue;
    }
    p.anyOk = true;
    const RunSummary& s = run.summary;
    if (std::isfinite(s.samplesPerS)) p.timing["samples_per_s"].push_back(s.samplesPerS);
    double wall = 0;
    for (const auto& e : run.epochs) wall += e.wallS;
    if (std::isfinite(wall)) p.timing["epoch_s"].push_back(wall / static_cast<double>(run.epochs.size()));
    addAccuracy(p, "final_test_accuracy", s.finalTestAccuracy);
    addAccuracy(p, "final_train_loss", s.finalTrainLoss);
    addTraffic(p, runTraffic(run));
  }
  for (const auto& rec : f.collectives()) {
    Point& p = collectivePoint(points, rec);
    if (!rec.ok()) {
      p.anyFailed = true;
      continue;
    }
    p.anyOk = true;
    if (std::isfinite(rec.busbwGbps)) p.timing["busbw_gbps"].push_back(rec.busbwGbps);
    addTraffic(p, rec.traffic);
  }
  return points;
}

const Point* findPoint(const std::vector<Point>& points, const Point& like) {
  for (const auto& p : points) {
    if (p.isRun != like.isRun) continue;
    if (p.isRun ? p.run == like.run : sameCollectivePoint(p.coll, like.coll)) return &p;
  }
  return nullptr;
}

Comparison statusRow(const std::string& label, const std::string& note) {
  return {label, "status", "status", 0, 0, 0, 0, 0, 0, -1, true, note};
}

bool higherIsBetter(const std::string& metric) {
  return metric == "samples_per_s" || metric == "busbw_gbps";
}

// A row for `metric` of point `label`, measured on both sides: medians and sample counts; the
// verdict is the caller's.
Comparison measured(const std::string& label, const std::string& metric, const char* kind,
                    const std::vector<double>& base, const std::vector<double>& now) {
  Comparison c;
  c.point = label;
  c.metric = metric;
  c.kind = kind;
  c.base = summarize(base).median;
  c.now = summarize(now).median;
  c.nBase = static_cast<int>(base.size());
  c.nNew = static_cast<int>(now.size());
  return c;
}

std::uint64_t total(const std::vector<std::uint64_t>& v) {
  std::uint64_t t = 0;
  for (auto x : v) t += x;
  return t;
}

// Exact traffic: any change is a regression, whatever the timing noise (the half of the gate
// that cannot flake). One row per count that changed, naming the first rank that differs; one
// "traffic" row when all four are equal.
void compareTraffic(const Point& bp, const Point& np, std::vector<Comparison>& rows) {
  if (!bp.traffic) return;
  auto row = [&](const std::string& metric, double base, double now, bool regression, const std::string& note) {
    Comparison c;
    c.point = bp.label;
    c.metric = metric;
    c.kind = "exact";
    c.base = base;
    c.now = now;
    c.change = base != 0 ? now / base - 1 : now - base;
    c.nBase = c.nNew = 1;
    c.regression = regression;
    c.note = note;
    rows.push_back(c);
  };
  if (!np.traffic) return row("traffic", 0, 0, true, "not recorded in NEW");
  if (np.trafficVaries) return row("traffic", 0, 0, true, "differs between repeats in NEW");
  const TrafficRecord &b = *bp.traffic, &n = *np.traffic;
  if (b.ranks() != n.ranks())
    return row("traffic", b.ranks(), n.ranks(), true, "recorded for a different number of ranks");
  const std::pair<const char*, std::vector<std::uint64_t> TrafficRecord::*> counts[] = {
      {"bytes_sent", &TrafficRecord::bytesSent}, {"bytes_recv", &TrafficRecord::bytesRecv},
      {"msgs_sent", &TrafficRecord::msgsSent}, {"msgs_recv", &TrafficRecord::msgsRecv}};
  bool changed = false;
  for (const auto& [name, field] : counts) {
    const auto &bv = b.*field, &nv = n.*field;
    if (bv == nv) continue;
    changed = true;
    std::size_t r = 0;
    while (bv[r] == nv[r]) ++r;
    row(std::string("traffic.") + name, static_cast<double>(total(bv)), static_cast<double>(total(nv)), true,
        "exact count changed (rank " + std::to_string(r) + ": " + std::to_string(bv[r]) + " -> " +
            std::to_string(nv[r]) + ")");
  }
  if (!changed)
    row("traffic", static_cast<double>(total(b.bytesSent)), static_cast<double>(total(n.bytesSent)), false, "");
}

}  // namespace

CompareResult compareResults(const CompareOptions& opt) {
  if (!(opt.threshold >= 0)) TPB_THROW(UsageError, "--threshold: must be >= 0, got " << opt.threshold);
  if (!(opt.alpha > 0 && opt.alpha < 1)) TPB_THROW(UsageError, "--alpha: must be in (0, 1), got " << opt.alpha);
  if (!(opt.accTolerance >= 0)) TPB_THROW(UsageError, "--acc-tolerance: must be >= 0, got " << opt.accTolerance);
  const auto b = collect(ResultsFile::load(opt.basePath)), n = collect(ResultsFile::load(opt.newPath));

  CompareResult out;
  std::size_t measuredInNew = 0;
  for (const Point& bp : b) {
    if (!bp.anyOk) continue;  // nothing to hold NEW to
    const Point* found = findPoint(n, bp);
    if (!found) {
      out.rows.push_back(statusRow(bp.label, "missing in NEW"));
      continue;
    }
    const Point& np = *found;
    ++out.matched;
    if (!np.anyOk) {
      out.rows.push_back(statusRow(bp.label, np.anyFailed ? "failed in NEW" : "not run in NEW"));
      continue;
    }
    ++measuredInNew;
    for (const auto& [metric, bv] : bp.timing) {
      const auto nv = np.timing.find(metric);
      if (nv == np.timing.end() || bv.empty() || nv->second.empty()) continue;
      Comparison c = measured(bp.label, metric, "timing", bv, nv->second);
      c.change = c.base != 0 ? c.now / c.base - 1 : 0;
      if (c.base > 0 && c.now > 0) c.slowdown = higherIsBetter(metric) ? c.base / c.now - 1 : c.now / c.base - 1;
      const bool slower = c.slowdown > opt.threshold;
      if (c.nBase >= opt.minRepeats && c.nNew >= opt.minRepeats) {
        c.p = mannWhitneyU(bv, nv->second).p;
        c.regression = slower && c.p < opt.alpha;
        if (slower && !c.regression) c.note = "slower, but not significant";
      } else {
        c.regression = slower;
        if (slower) c.note = "fewer than " + std::to_string(opt.minRepeats) + " repeats: no U test";
      }
      out.rows.push_back(c);
    }
    for (const auto& [metric, bv] : bp.accuracy) {
      // A number in BASE that NEW could not measure (null, NaN) is a change, not a pass.
      if (np.unmeasured.count(metric)) {
        Comparison c = statusRow(bp.label, "null in NEW");
        c.metric = metric;
        c.kind = "accuracy";
        out.rows.push_back(c);
        continue;
      }
      const auto nv = np.accuracy.find(metric);
      if (nv == np.accuracy.end() || bv.empty() || nv->second.empty()) continue;
      Comparison c = measured(bp.label, metric, "accuracy", bv, nv->second);
      const bool isAccuracy = metric == "final_test_accuracy";
      c.change = isAccuracy ? c.now - c.base : (c.base != 0 ? c.now / c.base - 1 : c.now - c.base);
      c.regression = std::abs(c.change) > opt.accTolerance;
      if (c.regression) c.note = "changed beyond --acc-tolerance";
      out.rows.push_back(c);
    }
    compareTraffic(bp, np, out.rows);
  }
  if (out.matched == 0)
    TPB_THROW(UsageError, "nothing in common: no point of " << opt.basePath << " appears in " << opt.newPath
                                                            << " (compare matches runs by their whole config)");
  // Every matched point failed in NEW: the rows above say so; this row makes sure that a NEW
  // file which measured nothing can never pass, whatever else the rows hold.
  if (measuredInNew == 0) out.rows.push_back(statusRow("(all points)", "nothing measured in NEW"));
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const Comparison& a, const Comparison& c) { return a.regression && !c.regression; });
  return out;
}

namespace {
// A number of the table; "n/a" where it is not finite (a change against a base of ~0), never
// "inf" or "nan".
std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::vector<std::string> cells(const Comparison& c) {
  const bool status = c.kind == "status";
  const bool acc = c.metric == "final_test_accuracy";
  return {c.regression ? "REGRESSION" : "ok",
          c.point,
          c.metric,
          status ? "-" : fmt("%.6g", c.base),
          status ? "-" : fmt("%.6g", c.now),
          status ? "-" : (acc ? fmt("%+.4f", c.change) : fmt("%+.2f%%", c.change * 100)),
          c.p < 0 ? "-" : fmt("%.3g", c.p),
          std::to_string(c.nBase) + "/" + std::to_string(c.nNew),
          c.note};
}
}  // namespace

std::string formatComparison(const CompareResult& r, const CompareOptions& opt, const std::string& format) {
  std::ostringstream os;
  const std::vector<std::string> head = {"verdict", "point", "metric", "base", "new", "change", "p", "n", "note"};
  std::size_t regressions = 0;
  for (const auto& c : r.rows) regressions += c.regression;
  if (format == "json") {
    json rows = json::array();
    for (const auto& c : r.rows)
      rows.push_back({{"point", c.point}, {"metric", c.metric}, {"kind", c.kind}, {"base", c.base},
                      {"new", c.now}, {"change", c.change}, {"slowdown", c.slowdown}, {"n_base", c.nBase},
                      {"n_new", c.nNew}, {"p", c.p < 0 ? json(nullptr) : json(c.p)},
                      {"regression", c.regression}, {"note", c.note}});
    json doc = {{"base", opt.basePath}, {"new", opt.newPath}, {"threshold", opt.threshold},
                {"alpha", opt.alpha}, {"acc_tolerance", opt.accTolerance}, {"matched_points", r.matched},
                {"regressions", regressions}, {"rows", rows}};
    // ASCII only: names from the files reach the terminal as \u escapes, never as controls.
    return doc.dump(2, ' ', true, json::error_handler_t::replace) + "\n";
  }
  if (format == "markdown") {
    os << "### tpbench compare: " << (regressions ? std::to_string(regressions) + " regression(s)" : "no regression")
       << "\n\n" << r.matched << " points matched; threshold " << opt.threshold * 100 << " %, alpha " << opt.alpha
       << ", acc-tolerance " << opt.accTolerance << ".\n\n|";
    for (const auto& h : head) os << " " << h << " |";
    os << "\n|";
    for (std::size_t i = 0; i < head.size(); ++i) os << "---|";
    os << "\n";
    for (const auto& c : r.rows) {
      os << "|";
      // Names and notes come from the files: each cell stays one cell of plain text.
      for (const auto& x : cells(c)) os << " " << markdownText(x) << " |";
      os << "\n";
    }
    return os.str();
  }
  if (format != "text") TPB_THROW(UsageError, "--format: unknown format '" << format << "' (text, markdown or json)");
  std::vector<std::vector<std::string>> table{head};
  for (const auto& c : r.rows) {
    std::vector<std::string> row = cells(c);
    for (auto& x : row) x = printable(x);  // names from the files reach the terminal
    table.push_back(std::move(row));
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& row : table)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : table) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      os << row[i];
      if (i + 1 < row.size()) os << std::string(width[i] - row[i].size() + 2, ' ');
    }
    os << "\n";
  }
  os << "\n" << r.matched << " points matched, " << regressions << " regression(s) (threshold "
     << opt.threshold * 100 << " %, alpha " << opt.alpha << ", acc-tolerance " << opt.accTolerance << ")\n";
  return os.str();
}

}  // namespace tpb
