#include "record/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <optional>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/format_bytes.h"
#include "common/text_escape.h"
#include "record/results.h"
#include "record/stats.h"
#include "record/text_table.h"

namespace tpb {

using nlohmann::json;

bool PointComparison::regression() const {
  return std::any_of(metrics.begin(), metrics.end(), [](const Comparison& c) { return c.regression; });
}

double PointComparison::slowdown() const {
  double worst = NAN;
  for (const auto& c : metrics)
    if (c.kind == "timing" && !(c.slowdown <= worst)) worst = c.slowdown;
  return worst;
}

const Comparison* PointComparison::metric(const std::string& name) const {
  for (const auto& c : metrics)
    if (c.metric == name) return &c;
  return nullptr;
}

bool CompareResult::regressed() const { return regressions() > 0; }

std::size_t CompareResult::regressions() const {
  return static_cast<std::size_t>(
      std::count_if(points.begin(), points.end(), [](const PointComparison& p) { return p.regression(); }));
}

std::string slowerPart(const TimeSplit& s) {
  const double compute = s.computeNew - s.computeBase, comm = s.commNew - s.commBase;
  if (!(std::max(compute, comm) > 0)) return "";
  return comm >= compute ? "communication" : "compute";
}

namespace {

// All the repetitions of one point, with the values of each metric.
struct Point {
  std::string label;
  RunConfig run;             // runs: the config without repeat_index
  CollectiveRecord coll;     // collectives: the key fields (op, algo, transport, device, N, bytes)
  bool isRun = false;
  // Predictions (`tpbench predict --out`): matched by their point (PredictionRecord::label()),
  // whatever they were predicted from; `source` says from what, so a change of it is named.
  bool isPrediction = false;
  std::string source;
  bool sourceVaries = false;
  bool anyOk = false, anyFailed = false;
  // Some ok repeat ran while other processes used cores its ranks needed (its record's
  // machine.busy, harness/machine_load.h): its timings say what the machine did, not the code.
  bool busy = false;
  std::map<std::string, std::vector<double>> timing;    // higher-is-better metrics end in _per_s/_gbps
  std::map<std::string, std::vector<double>> accuracy;  // deterministic metrics
  std::set<std::string> unmeasured;  // accuracy metrics that an ok repeat left null (or NaN)
  std::map<std::string, std::vector<double>> split;     // compute_s, comm_s per epoch: no verdict
  // Collectives: busbw at the slowest and at the fastest timed iteration of any record (the
  // spread over iterations, which a point of one record has without repeats).
  std::map<std::string, std::pair<double, double>> iterSpread;
  // Exact traffic per rank (runs: summed over the epochs), from the first ok repeat that has it;
  // trafficVaries when a later repeat disagrees (the count should never depend on the run).
  std::optional<TrafficRecord> traffic;
  bool trafficVaries = false;
};

// A file's points, indexed by a key that equal points share (matchKey), so matching a point
// compares it with the few points of its key only (files hold up to 200 000 points, and a
// history or a paired gate reads many files; a linear search per record made them quadratic).
struct PointSet {
  std::vector<Point> list;
  std::unordered_map<std::string, std::vector<std::size_t>> byKey;

  // The point of `key` that `same` accepts, or null.
  template <class Same>
  Point* find(const std::string& key, const Same& same) {
    const auto it = byKey.find(key);
    if (it == byKey.end()) return nullptr;
    for (std::size_t i : it->second)
      if (same(list[i])) return &list[i];
    return nullptr;
  }
  template <class Same>
  const Point* find(const std::string& key, const Same& same) const {
    return const_cast<PointSet*>(this)->find(key, same);
  }
  Point& add(const std::string& key, Point p) {
    byKey[key].push_back(list.size());
    list.push_back(std::move(p));
    return list.back();
  }
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

// The settings table's keys (a run's config as runs[].config writes it), in the table's order.
const std::vector<std::string>& settingKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    TrainSettings probe;
    forEachSetting([&](const SettingInfo& info, const auto&) { k.emplace_back(info.key); }, probe);
    return k;
  }();
  return keys;
}

bool isSettingKey(const std::string& key) {
  return std::find(settingKeys().begin(), settingKeys().end(), key) != settingKeys().end();
}

// A run's label; a setting that --ignore names reads "*" there (and ", ignoring ..." ends it).
std::string runLabel(const RunConfig& c, const std::vector<std::string>& ignore = {}) {
  const auto shown = [&](const char* key, const auto& v) {
    std::ostringstream os;
    if (std::find(ignore.begin(), ignore.end(), key) != ignore.end()) os << "*";
    else os << v;
    return os.str();
  };
  std::ostringstream os;
  os << "run " << shown("strategy", c.strategy) << " N=" << shown("n_gpus", c.nGpus)
     << " batch=" << shown("batch_size", c.batchSize) << " train_size=" << shown("train_size", c.trainSize)
     << " epochs=" << shown("epochs", c.epochs) << " " << c.device;
  if (c.maxSteps >= 0) os << " max_steps=" << shown("max_steps", c.maxSteps);
  if (c.has("library")) os << " library=" << shown("library", c.library);
  if (!ignore.empty()) {
    os << " (ignoring ";
    for (std::size_t i = 0; i < ignore.size(); ++i) os << (i ? ", " : "") << ignore[i];
    os << ")";
  }
  return os.str();
}

// The config with the settings `ignore` names set to their defaults (and absent, for settings a
// record may lack), so that points differing only in them match.
RunConfig ignoring(const RunConfig& c, const std::vector<std::string>& ignore) {
  if (ignore.empty()) return c;
  RunConfig out = c;
  TrainSettings& mine = out;
  const TrainSettings defaults{};
  forEachSetting(
      [&](const SettingInfo& info, auto& field, const auto& fallback) {
        if (std::find(ignore.begin(), ignore.end(), info.key) == ignore.end()) return;
        field = fallback;
        if (info.absent == SettingInfo::Absent::Kept) out.setHas(info.key, false);
      },
      mine, defaults);
  return out;
}

bool sameCollectivePoint(const CollectiveRecord& a, const CollectiveRecord& b) {
  return a.op == b.op && a.algo == b.algo && a.transport == b.transport && a.device == b.device &&
         a.nGpus == b.nGpus && a.bytes == b.bytes && a.isInPlace() == b.isInPlace() && a.root == b.root &&
         a.timingMethod() == b.timingMethod() && a.elementType() == b.elementType() && a.reduction() == b.reduction();
}

// Points are matched by value, among those of the same label.
Point& runPoint(PointSet& points, const RunConfig& key, const std::vector<std::string>& ignore) {
  const std::string label = runLabel(key, ignore);
  if (Point* p = points.find(label, [&](const Point& q) { return q.isRun && q.run == key; })) return *p;
  Point p;
  p.isRun = true;
  p.run = key;
  p.label = label;
  return points.add(label, std::move(p));
}

// What a prediction was predicted from, in a few words (the step's source, the allreduce's).
std::string predictionSource(const PredictionRecord& r) {
  std::ostringstream os;
  if (r.profile.source == "flops")
    os << r.profile.device.value_or("?") << " at " << r.profile.mfu.value_or(0) * 100 << " % of peak";
  else
    os << "measured profile";
  os << ", " << r.allreduce.algo << " " << (r.allreduce.source == "fit" ? "fitted" : r.allreduce.link.value_or("?"));
  if (r.allreduce.interLink) os << "+" << r.allreduce.nicsPerNode.value_or(0) << "x" << *r.allreduce.interLink;
  return os.str();
}

Point& predictionPoint(PointSet& points, const PredictionRecord& rec) {
  const std::string label = rec.label();
  if (Point* p = points.find(label, [](const Point& q) { return q.isPrediction; })) return *p;
  Point p;
  p.isPrediction = true;
  p.label = label;
  p.source = predictionSource(rec);
  return points.add(label, std::move(p));
}

std::string collectiveLabel(const CollectiveRecord& rec) {
  return rec.op + " " + rec.algo + " N=" + std::to_string(rec.nGpus) + " " + formatBytes(rec.bytes) + " " +
            "over " + rec.carriedOver() + (rec.isInPlace() ? "" : " out-of-place") + (rec.root ? " root=" + std::to_string(*rec.root) : "") +
            (rec.dtype ? " " + *rec.dtype : "") + (rec.redop ? " " + *rec.redop : "");
}

// What sameCollectivePoint compares, as one string.
std::string collectiveKey(const CollectiveRecord& r) {
  return "c|" + r.op + "|" + r.algo + "|" + r.transport + "|" + r.device + "|" + std::to_string(r.nGpus) + "|" +
         std::to_string(r.bytes) + "|" + (r.isInPlace() ? "1" : "0") + "|" + (r.root ? std::to_string(*r.root) : "-") +
         "|" + r.timingMethod() + "|" + r.elementType() + "|" + r.reduction();
}

Point& collectivePoint(PointSet& points, const CollectiveRecord& rec) {
  const std::string key = collectiveKey(rec);
  if (Point* p = points.find(key, [&](const Point& q) {
        return !q.isRun && !q.isPrediction && sameCollectivePoint(q.coll, rec);
      }))
    return *p;
  Point p;
  p.coll = rec;
  p.label = collectiveLabel(rec);
  return points.add(key, std::move(p));
}

// The key a point of `like`'s kind is filed under.
std::string matchKey(const Point& like) {
  return like.isRun || like.isPrediction ? like.label : collectiveKey(like.coll);
}

void addAccuracy(Point& p, const char* metric, double v) {
  if (std::isnan(v)) {
    p.unmeasured.insert(metric);
  } else {
    p.accuracy[metric].push_back(v);
  }
}

// The mean over a run's epochs of one of their times, when every epoch recorded it.
void addPerEpoch(std::vector<double>& to, const RunRecord& run, double EpochRecord::*field) {
  double sum = 0;
  for (const auto& e : run.epochs) sum += e.*field;
  if (std::isfinite(sum)) to.push_back(sum / static_cast<double>(run.epochs.size()));
}

PointSet collect(const ResultsFile& f, const std::vector<std::string>& ignore = {}) {
  PointSet points;
  std::map<const Point*, RunConfig> firstOf;  // --ignore: the config each point was first seen with
  for (const auto& run : f.runs()) {
    RunConfig original = run.config;
    original.repeatIndex = 0;
    const RunConfig key = ignoring(original, ignore);
    Point& p = runPoint(points, key, ignore);
    if (!ignore.empty()) {
      const auto [at, first] = firstOf.emplace(&p, original);
      if (!first && at->second != original)
        TPB_THROW(UsageError, "--ignore: " << printableLine(f.path()) << " holds points that differ only in what it "
                                           << "ignores (" << runLabel(at->second) << " and " << runLabel(original)
                                           << "): they would pool as repeats of one");
    }
    if (run.status == "skipped") continue;
    // A run that trained on nothing measured nothing: it counts as failed, whatever it says.
    if (!run.ok() || !run.nothingMeasured().empty()) {
      p.anyFailed = true;
      continue;
    }
    p.anyOk = true;
    p.busy = p.busy || (run.machine && run.machine->busy);
    const RunSummary& s = run.summary;
    if (std::isfinite(s.samplesPerS)) p.timing["samples_per_s"].push_back(s.samplesPerS);
    addPerEpoch(p.timing["epoch_s"], run, &EpochRecord::wallS);
    addPerEpoch(p.split["compute_s"], run, &EpochRecord::computeS);
    addPerEpoch(p.split["comm_s"], run, &EpochRecord::commS);
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
    p.busy = p.busy || (rec.machine && rec.machine->busy);
    if (std::isfinite(rec.busbwGbps)) {
      p.timing["busbw_gbps"].push_back(rec.busbwGbps);
      // busbw is inversely proportional to the time: scale the median's by median/max, median/min.
      if (rec.timeMedianUs > 0 && rec.timeMinUs > 0 && rec.timeMaxUs > 0 && std::isfinite(rec.timeMaxUs)) {
        const double lo = rec.busbwGbps * rec.timeMedianUs / rec.timeMaxUs;
        const double hi = rec.busbwGbps * rec.timeMedianUs / rec.timeMinUs;
        auto [it, fresh] = p.iterSpread.try_emplace("busbw_gbps", lo, hi);
        if (!fresh) it->second = {std::min(it->second.first, lo), std::max(it->second.second, hi)};
      }
    }
    addTraffic(p, rec.traffic);
  }
  // A prediction is a number, not a measurement: one value per record, compared as a time.
  for (const auto& rec : f.predictions()) {
    Point& p = predictionPoint(points, rec);
    p.anyOk = true;
    p.timing["predicted_step_s"].push_back(rec.stepS);
    if (predictionSource(rec) != p.source) p.sourceVaries = true;
  }
  return points;
}

const Point* findPoint(const PointSet& points, const Point& like) {
  return points.find(matchKey(like), [&](const Point& p) {
    if (p.isRun != like.isRun || p.isPrediction != like.isPrediction) return false;
    return p.isPrediction ? p.label == like.label : p.isRun ? p.run == like.run : sameCollectivePoint(p.coll, like.coll);
  });
}

Comparison statusRow(const std::string& label, const std::string& note) {
  Comparison c;
  c.point = label;
  c.metric = c.kind = "status";
  c.regression = true;
  c.note = note;
  return c;
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
  const Summary b = summarize(base), n = summarize(now);
  c.base = b.median;
  c.now = n.median;
  if (!base.empty()) c.baseMin = b.min, c.baseMax = b.max;
  if (!now.empty()) c.newMin = n.min, c.newMax = n.max;
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


// A collective's range over its timed iterations widens the range over its records.
void widen(double& lo, double& hi, const Point& p, const std::string& metric) {
  const auto it = p.iterSpread.find(metric);
  if (it == p.iterSpread.end()) return;
  lo = std::min(lo, it->second.first);
  hi = std::max(hi, it->second.second);
}

// Each round's points, both sides (paired comparisons only).
struct Rounds {
  std::vector<PointSet> base, now;
};

// The median of one round's values of `metric` at point `like` (NaN where it has none).
double roundValue(const PointSet& round, const Point& like, const std::string& metric) {
  const Point* p = findPoint(round, like);
  if (!p) return NAN;
  const auto it = p->timing.find(metric);
  return it == p->timing.end() || it->second.empty() ? NAN : summarize(it->second).median;
}

// The paired verdict: per round NEW's time over BASE's (a rate: BASE's over NEW's); the slowdown
// is their median - 1, and it counts where beyond the threshold and the signed-rank test of
// their logs gives p < alpha over at least minRepeats rounds.
void judgePaired(Comparison& c, const Point& bp, const std::string& metric, const Rounds& r, const CompareOptions& opt) {
  std::vector<double> ratios, logs;
  for (std::size_t i = 0; i < r.base.size(); ++i) {
    const double b = roundValue(r.base[i], bp, metric), n = roundValue(r.now[i], bp, metric);
    if (!(b > 0 && n > 0 && std::isfinite(b) && std::isfinite(n))) continue;
    ratios.push_back(higherIsBetter(metric) ? b / n : n / b);
    logs.push_back(std::log(ratios.back()));
  }
  const std::string pairs = std::to_string(ratios.size()) + " paired rounds";
  if (ratios.empty()) {
    c.note = "no round measured it on both sides";
    c.regression = true;
    return;
  }
  c.slowdown = summarize(ratios).median - 1;
  const bool slower = c.slowdown > opt.threshold;
  if (static_cast<int>(ratios.size()) < opt.minRepeats) {
    c.regression = slower;
    if (slower) c.note = pairs + ", fewer than " + std::to_string(opt.minRepeats) + ": no test";
    return;
  }
  c.p = signedRankGreater(logs).p;
  c.regression = slower && c.p < opt.alpha;
  if (slower && !c.regression) c.note = "slower, but not significant (" + pairs + ")";
}

// Timings regress when slower beyond the threshold and, with enough repeats, significantly so.
void compareTimings(const Point& bp, const Point& np, const CompareOptions& opt, const Rounds* rounds,
                    const std::optional<SgemmScale>& scale, std::vector<Comparison>& rows) {
  for (const auto& [metric, bv] : bp.timing) {
    if (bv.empty()) continue;
    const auto nv = np.timing.find(metric);
    if (nv == np.timing.end() || nv->second.empty()) {
      // BASE measured it, NEW could not (busbw null): a change, not a pass.
      Comparison c = statusRow(bp.label, "null in NEW");
      c.metric = metric;
      c.kind = "timing";
      rows.push_back(c);
      continue;
    }
    Comparison c = measured(bp.label, metric, "timing", bv, nv->second);
    widen(c.baseMin, c.baseMax, bp, metric);
    widen(c.newMin, c.newMax, np, metric);
    c.change = c.base != 0 ? c.now / c.base - 1 : 0;
    // NEW's values as on BASE's machine (--scale_by_sgemm, runs only): what is judged.
    std::vector<double> judged = nv->second;
    if (scale && bp.isRun)
      for (double& v : judged) v = higherIsBetter(metric) ? v * scale->factor() : v / scale->factor();
    const double now = summarize(judged).median;
    if (c.base > 0 && now > 0) c.slowdown = higherIsBetter(metric) ? c.base / now - 1 : now / c.base - 1;
    if (rounds) {
      judgePaired(c, bp, metric, *rounds, opt);
      rows.push_back(c);
      continue;
    }
    const bool slower = c.slowdown > opt.threshold;
    if (c.nBase >= opt.minRepeats && c.nNew >= opt.minRepeats) {
      c.p = mannWhitneyU(bv, judged).p;
      c.regression = slower && c.p < opt.alpha;
      if (slower && !c.regression) c.note = "slower, but not significant";
    } else {
      c.regression = slower;
      if (slower) c.note = "fewer than " + std::to_string(opt.minRepeats) + " repeats: no U test";
    }
    // A busy machine's timings judge nothing (paired rounds above share the machine's mood).
    if ((bp.busy || np.busy) && !opt.allowBusy) {
      c.regression = false;
      c.note = std::string("not judged: the machine was busy beside it in ") +
               (bp.busy && np.busy ? "BASE and NEW" : bp.busy ? "BASE" : "NEW") + " (--allow_busy judges it)";
    }
    rows.push_back(c);
  }
}

// Accuracy and loss are deterministic: any change beyond the tolerance regresses.
void compareAccuracy(const Point& bp, const Point& np, const CompareOptions& opt, std::vector<Comparison>& rows) {
  for (const auto& [metric, bv] : bp.accuracy) {
    // A number in BASE that NEW could not measure (null, NaN) is a change, not a pass.
    if (np.unmeasured.count(metric)) {
      Comparison c = statusRow(bp.label, "null in NEW");
      c.metric = metric;
      c.kind = "accuracy";
      rows.push_back(c);
      continue;
    }
    const auto nv = np.accuracy.find(metric);
    if (nv == np.accuracy.end() || bv.empty() || nv->second.empty()) continue;
    Comparison c = measured(bp.label, metric, "accuracy", bv, nv->second);
    const bool isAccuracy = metric == "final_test_accuracy";
    c.change = isAccuracy ? c.now - c.base : (c.base != 0 ? c.now / c.base - 1 : c.now - c.base);
    c.regression = std::abs(c.change) > opt.accTolerance;
    if (c.regression) c.note = "changed beyond --acc_tolerance";
    rows.push_back(c);
  }
}

std::optional<TimeSplit> timeSplit(const Point& bp, const Point& np) {
  const auto median = [](const Point& p, const char* key, double& out) {
    const auto it = p.split.find(key);
    if (it == p.split.end() || it->second.empty()) return false;
    out = summarize(it->second).median;
    return true;
  };
  TimeSplit s;
  if (median(bp, "compute_s", s.computeBase) && median(np, "compute_s", s.computeNew) &&
      median(bp, "comm_s", s.commBase) && median(np, "comm_s", s.commNew))
    return s;
  return std::nullopt;
}

PointComparison statusPoint(const std::string& label, const std::string& note) {
  PointComparison pc;
  pc.point = label;
  pc.metrics.push_back(statusRow(label, note));
  return pc;
}

PointComparison comparePoint(const Point& bp, const Point& np, const CompareOptions& opt, const Rounds* rounds,
                             const std::optional<SgemmScale>& scale) {
  if (!np.anyOk) return statusPoint(bp.label, np.anyFailed ? "failed in NEW" : "not run in NEW");
  PointComparison pc;
  pc.point = bp.label;
  compareTimings(bp, np, opt, rounds, scale, pc.metrics);
  compareAccuracy(bp, np, opt, pc.metrics);
  compareTraffic(bp, np, pc.metrics);
  if (bp.isRun) pc.split = timeSplit(bp, np);
  if (bp.isPrediction && !pc.metrics.empty()) {
    if (bp.source != np.source) pc.metrics.front().note = "predicted from " + bp.source + " -> " + np.source;
    else if (bp.sourceVaries || np.sourceVaries) pc.metrics.front().note = "predicted from more than one source";
  }
  if (pc.metrics.empty()) {
    // Both sides ran and neither reported a number (a collective with busbw null and no traffic):
    // one row says so, so that every point has a row to print.
    Comparison c = statusRow(bp.label, "nothing measured to compare");
    c.regression = false;
    pc.metrics.push_back(c);
  }
  std::stable_sort(pc.metrics.begin(), pc.metrics.end(),
                   [](const Comparison& a, const Comparison& c) { return a.regression && !c.regression; });
  return pc;
}

std::string differs(const std::string& key, const json& a, const json& b) {
  return key + " differs (" + a.dump() + " vs " + b.dump() + ")";
}

// Two records' configs, key by key in the settings table's order (the JSON compares numbers by
// value, as RunConfig's equality does); a key one of them lacks reads "absent".
std::vector<std::string> runDifferences(const RunConfig& a, const RunConfig& b) {
  std::vector<std::string> keys = {"device", "transport"};
  keys.insert(keys.end(), settingKeys().begin(), settingKeys().end());
  json ja = a.toJson(), jb = b.toJson();
  for (const auto* j : {&ja, &jb})
    for (const auto& item : j->items())
      if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) keys.push_back(item.key());
  std::vector<std::string> out;
  for (const auto& k : keys) {
    if (k == "repeat_index") continue;
    const json x = ja.value(k, json("absent")), y = jb.value(k, json("absent"));
    if (x != y) out.push_back(differs(k, x, y));
  }
  return out;
}

std::vector<std::string> collectiveDifferences(const CollectiveRecord& a, const CollectiveRecord& b) {
  std::vector<std::string> out;
  const auto check = [&](const char* key, const json& x, const json& y) {
    if (x != y) out.push_back(differs(key, x, y));
  };
  const auto root = [](const CollectiveRecord& r) { return r.root ? json(*r.root) : json("absent"); };
  check("op", a.op, b.op);
  check("algo", a.algo, b.algo);
  check("transport", a.transport, b.transport);
  check("device", a.device, b.device);
  check("n_gpus", a.nGpus, b.nGpus);
  check("bytes", a.bytes, b.bytes);
  check("in_place", a.isInPlace(), b.isInPlace());
  check("root", root(a), root(b));
  check("timing", a.timingMethod(), b.timingMethod());
  check("dtype", a.elementType(), b.elementType());
  check("redop", a.reduction(), b.reduction());
  return out;
}

// Why no point matched: the first field that differs between the closest pair of points (the
// fewest fields apart), BASE's value first.
std::string nothingInCommon(const std::vector<Point>& b, const std::vector<Point>& n) {
  // Among the first kNearestOf of each side: a reason, not a search of every pair (40 000 points
  // each side would be 1.6e9 pairs).
  constexpr std::size_t kNearestOf = 256;
  std::vector<std::string> nearest;
  for (std::size_t i = 0; i < b.size() && i < kNearestOf; ++i) {
    const Point& bp = b[i];
    if (!bp.anyOk) continue;
    for (std::size_t j = 0; j < n.size() && j < kNearestOf; ++j) {
      const Point& np = n[j];
      if (np.isRun != bp.isRun || np.isPrediction != bp.isPrediction) continue;
      auto d = bp.isPrediction ? std::vector<std::string>{differs("point", bp.label, np.label)}
               : bp.isRun      ? runDifferences(bp.run, np.run)
                               : collectiveDifferences(bp.coll, np.coll);
      if (nearest.empty() || d.size() < nearest.size()) nearest = std::move(d);
    }
  }
  if (nearest.empty())
    return "NEW holds no point of the kinds BASE measured (training runs, collectives, predictions)";
  std::string why = nearest.front();
  if (nearest.size() > 1) why += " (and " + std::to_string(nearest.size() - 1) + " more fields)";
  // A run's setting that alone keeps them apart: --ignore can match them knowingly.
  const std::string key = why.substr(0, why.find(" differs ("));
  if (nearest.size() == 1 && isSettingKey(key))
    why += "; --ignore " + key + " compares them as one point";
  return why;
}

// The round files of a paired comparison: the *.json names both directories hold, sorted. A
// name in one only is refused, and so is a directory without rounds.
std::vector<std::string> roundNames(const CompareOptions& opt) {
  const std::vector<std::string> b = jsonFilesIn(opt.basePath, "--paired BASE"), n = jsonFilesIn(opt.newPath, "--paired NEW");
  const std::set<std::string> bs(b.begin(), b.end()), ns(n.begin(), n.end());
  for (const auto& x : b)
    if (!ns.count(x)) TPB_THROW(UsageError, "--paired: round '" << printableLine(x) << "' is in BASE but not in NEW");
  for (const auto& x : n)
    if (!bs.count(x)) TPB_THROW(UsageError, "--paired: round '" << printableLine(x) << "' is in NEW but not in BASE");
  if (b.empty()) TPB_THROW(UsageError, "--paired: no round (*.json) in " << printableLine(opt.basePath));
  return b;
}

// Every round of one side as one file (runs and collectives appended in round order), and each
// round's points into `each`.
ResultsFile mergedRounds(const std::string& dir, const std::vector<std::string>& names,
                         std::vector<PointSet>& each) {
  std::optional<ResultsFile> merged;
  for (const auto& name : names) {
    ResultsFile f = ResultsFile::load((std::filesystem::path(dir) / name).string());
    each.push_back(collect(f));
    if (!merged) {
      merged = std::move(f);
      continue;
    }
    for (auto& run : f.runs()) merged->addRun(std::move(run));
    for (auto& rec : f.collectives()) merged->addCollective(std::move(rec));
    for (auto& rec : f.predictions()) merged->addPrediction(std::move(rec));
  }
  return std::move(*merged);
}

}  // namespace

std::vector<PointMedians> pointMedians(const ResultsFile& f) {
  std::vector<PointMedians> out;
  for (const Point& p : collect(f).list) {
    if (!p.anyOk) continue;
    PointMedians m;
    m.point = p.label;
    for (const auto* values : {&p.timing, &p.accuracy})
      for (const auto& [metric, v] : *values)
        if (!v.empty()) m.metrics[metric] = summarize(v).median;
    out.push_back(std::move(m));
  }
  return out;
}

CompareResult compareResults(const CompareOptions& opt) {
  if (!(opt.threshold >= 0)) TPB_THROW(UsageError, "--threshold: must be >= 0, got " << opt.threshold);
  if (!(opt.alpha > 0 && opt.alpha < 1)) TPB_THROW(UsageError, "--alpha: must be in (0, 1), got " << opt.alpha);
  if (!(opt.accTolerance >= 0)) TPB_THROW(UsageError, "--acc_tolerance: must be >= 0, got " << opt.accTolerance);
  if (opt.paired && opt.scaleBySgemm)
    TPB_THROW(UsageError, "--scale_by_sgemm: not with --paired (the rounds ran side by side on one machine)");
  if (!opt.ignore.empty()) {
    if (opt.paired) TPB_THROW(UsageError, "--ignore: not with --paired (its rounds run one suite on both sides)");
    for (const std::string& k : opt.ignore)
      if (!isSettingKey(k)) {
        std::string all;
        for (const std::string& key : settingKeys()) all += (all.empty() ? "" : ", ") + key;
        TPB_THROW(UsageError, "--ignore: '" << printableLine(k).substr(0, 64)
                                            << "' is not a setting of a run's config (one of: " << all << ")");
      }
  }
  Rounds rounds;
  PointSet b, n;
  CompareResult out;
  if (opt.paired) {
    const std::vector<std::string> names = roundNames(opt);
    b = collect(mergedRounds(opt.basePath, names, rounds.base));
    n = collect(mergedRounds(opt.newPath, names, rounds.now));
  } else {
    const ResultsFile base = ResultsFile::load(opt.basePath), now = ResultsFile::load(opt.newPath);
    if (opt.scaleBySgemm) {
      for (const auto* f : {&base, &now})
        if (!f->meta().sgemmGflops)
          TPB_THROW(UsageError, "--scale_by_sgemm: " << (f == &base ? opt.basePath : opt.newPath)
                                                     << " has no meta.sgemm_gflops (files written before "
                                                        "2026-12-02 lack it: record that one again)");
      out.scale = SgemmScale{*base.meta().sgemmGflops, *now.meta().sgemmGflops};
      // A machine kSgemmScaleMax times slower or faster than another of one kind is no machine
      // the gate runs on, and a file claiming one (sgemm_gflops is the file's word) would excuse
      // any slowdown: refused, not judged.
      const double f = out.scale->factor();
      if (!(f >= 1 / kSgemmScaleMax && f <= kSgemmScaleMax))
        TPB_THROW(UsageError, "--scale_by_sgemm: meta.sgemm_gflops " << out.scale->newGflops << " in " << opt.newPath
                                                                     << " against " << out.scale->baseGflops << " in "
                                                                     << opt.basePath << " is a machine "
                                                                     << (f > 1 ? f : 1 / f) << "x " << (f > 1 ? "slower" : "faster")
                                                                     << "; the scaling is taken up to "
                                                                     << kSgemmScaleMax << "x only");
    }
    b = collect(base, opt.ignore);
    n = collect(now, opt.ignore);
  }
  if (std::none_of(b.list.begin(), b.list.end(), [](const Point& p) { return p.anyOk; }))
    TPB_THROW(UsageError, "nothing to compare: no point of " << opt.basePath << " measured anything");

  std::size_t measuredInNew = 0;
  for (const Point& bp : b.list) {
    if (!bp.anyOk) continue;  // nothing to hold NEW to
    const Point* np = findPoint(n, bp);
    if (!np) {
      out.points.push_back(statusPoint(bp.label, "missing in NEW"));
      continue;
    }
    ++out.matched;
    measuredInNew += np->anyOk;
    out.points.push_back(comparePoint(bp, *np, opt, opt.paired ? &rounds : nullptr, out.scale));
  }
  if (out.matched == 0)
    TPB_THROW(UsageError, "no point in common between " << opt.basePath << " and " << opt.newPath << ": "
                                                        << nothingInCommon(b.list, n.list));
  out.rounds = rounds.base.size();
  // Every matched point failed in NEW: the rows above say so; this row makes sure that a NEW
  // file which measured nothing can never pass, whatever else the rows hold.
  if (measuredInNew == 0) out.points.push_back(statusPoint("(all points)", "nothing measured in NEW"));
  std::stable_sort(out.points.begin(), out.points.end(), [](const PointComparison& a, const PointComparison& c) {
    return a.regression() && !c.regression();
  });
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

// Plain numbers: integers as integers, others to 4 significant digits, no exponent from 100 up.
std::string plain(double v) {
  if (std::isfinite(v) && (v == std::floor(v) || std::abs(v) >= 100) && std::abs(v) < 1e15) return fmt("%.0f", v);
  return fmt("%.4g", v);
}

// A byte count with K/M/G (powers of 1024) and 4 significant digits: 171445000 -> "163.5M".
std::string bytesText(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (std::abs(v) >= 1024 && u < 4) v /= 1024, ++u;
  return (u == 0 ? plain(v) : fmt("%.4g", v)) + units[u];
}

// "a -> b", or "a" alone when both print the same.
std::string fromTo(const std::string& a, const std::string& b) { return a == b ? a : a + " -> " + b; }

std::string percent(double change) { return fmt("%+.1f %%", change * 100); }

// A median with its min-max spread beside it, "20000 (19500-20400)", or alone where the values
// behind it print the same (one repeat, identical repeats).
std::string withSpread(double median, double lo, double hi) {
  const std::string m = plain(median);
  if (!(lo <= hi)) return m;
  const std::string a = plain(lo), b = plain(hi);
  return a == b ? m : m + " (" + a + "-" + b + ")";
}

std::string metricCell(const PointComparison& pc, const char* metric, const char* unit = "") {
  const Comparison* c = pc.metric(metric);
  if (!c || c->kind == "status") return "-";
  return fromTo(withSpread(c->base, c->baseMin, c->baseMax), withSpread(c->now, c->newMin, c->newMax)) + unit;
}

// Traffic: the bytes sent, or the first count that changed, or why it could not be compared.
std::string trafficCell(const PointComparison& pc) {
  for (const auto& c : pc.metrics) {
    if (c.metric.rfind("traffic", 0) != 0) continue;
    if (!c.note.empty() && c.metric == "traffic") return "not compared";
    const bool bytes = c.metric.find("bytes") != std::string::npos || c.metric == "traffic";
    const std::string name = c.metric == "traffic" ? "" : c.metric.substr(8) + " ";
    return name + (bytes ? fromTo(bytesText(c.base), bytesText(c.now)) : fromTo(plain(c.base), plain(c.now)));
  }
  return "-";
}

std::string splitCell(const PointComparison& pc) {
  if (!pc.split) return "-";
  const TimeSplit& s = *pc.split;
  const auto part = [](double base, double now) {
    return base > 0 ? percent(now / base - 1) : fromTo(plain(base), plain(now));
  };
  return "compute " + part(s.computeBase, s.computeNew) + ", comm " + part(s.commBase, s.commNew);
}

// The metrics' notes, each once, and which part of the time grew when the point is slower.
std::string noteCell(const PointComparison& pc, const CompareOptions& opt) {
  std::vector<std::string> notes;
  if (pc.split && pc.slowdown() > opt.threshold && !slowerPart(*pc.split).empty())
    notes.push_back(slowerPart(*pc.split) + " got slower");
  for (const auto& c : pc.metrics)
    if (!c.note.empty() && std::find(notes.begin(), notes.end(), c.note) == notes.end()) notes.push_back(c.note);
  std::string out;
  for (const auto& n : notes) out += (out.empty() ? "" : "; ") + n;
  return out;
}

std::string pCell(const PointComparison& pc) {
  double p = -1;
  for (const auto& c : pc.metrics)
    if (c.p >= 0) p = std::max(p, c.p);
  return p < 0 ? "-" : fmt("%.3g", p);
}

const std::vector<std::string> kHead = {"verdict",  "point", "slower by", "time/epoch", "throughput", "compute/comm",
                                        "accuracy", "loss",  "traffic",   "p",          "n",          "note"};

std::vector<std::string> cells(const PointComparison& pc, const CompareOptions& opt) {
  const Comparison& first = pc.metrics.front();
  const bool run = pc.metric("samples_per_s") || pc.metric("epoch_s");
  const std::string rate = run ? metricCell(pc, "samples_per_s", "/s") : metricCell(pc, "busbw_gbps", " GB/s");
  const bool predicted = pc.metric("predicted_step_s") != nullptr;
  return {pc.regression() ? "REGRESSION" : "ok",
          pc.point,
          std::isnan(pc.slowdown()) ? "-" : percent(pc.slowdown()),
          predicted ? metricCell(pc, "predicted_step_s", " s/step") : metricCell(pc, "epoch_s", " s"),
          rate,
          splitCell(pc),
          metricCell(pc, "final_test_accuracy"),
          metricCell(pc, "final_train_loss"),
          trafficCell(pc),
          pCell(pc),
          first.kind == "status" ? "-" : std::to_string(first.nBase) + "/" + std::to_string(first.nNew),
          noteCell(pc, opt)};
}

json rowJson(const Comparison& c) {
  const auto number = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return {{"metric", c.metric}, {"kind", c.kind}, {"base", c.base}, {"new", c.now},
          {"base_min", number(c.baseMin)}, {"base_max", number(c.baseMax)}, {"new_min", number(c.newMin)},
          {"new_max", number(c.newMax)}, {"change", c.change},
          {"slowdown", c.slowdown}, {"n_base", c.nBase}, {"n_new", c.nNew},
          {"p", c.p < 0 ? json(nullptr) : json(c.p)}, {"regression", c.regression}, {"note", c.note}};
}

json pointJson(const PointComparison& pc) {
  json metrics = json::array();
  for (const auto& c : pc.metrics) metrics.push_back(rowJson(c));
  json j = {{"point", pc.point}, {"regression", pc.regression()}, {"metrics", metrics}};
  if (pc.split)
    j["split"] = {{"compute_s", {{"base", pc.split->computeBase}, {"new", pc.split->computeNew}}},
                  {"comm_s", {{"base", pc.split->commBase}, {"new", pc.split->commNew}}},
                  {"slower", slowerPart(*pc.split)}};
  return j;
}

std::string formatJson(const CompareResult& r, const CompareOptions& opt) {
  json points = json::array();
  for (const auto& pc : r.points) points.push_back(pointJson(pc));
  json doc = {{"base", opt.basePath}, {"new", opt.newPath}, {"threshold", opt.threshold},
              {"alpha", opt.alpha}, {"acc_tolerance", opt.accTolerance}, {"matched_points", r.matched},
              {"paired_rounds", opt.paired ? json(r.rounds) : json(nullptr)},
              {"sgemm_scale", r.scale ? json{{"base_gflops", r.scale->baseGflops},
                                             {"new_gflops", r.scale->newGflops},
                                             {"factor", r.scale->factor()}}
                                      : json(nullptr)},
              {"regressions", r.regressions()}, {"points", points}};
  // ASCII only: names from the files reach the terminal as \u escapes, never as controls.
  return doc.dump(2, ' ', true, json::error_handler_t::replace) + "\n";
}

std::string settingsLine(const CompareResult& r, const CompareOptions& opt) {
  std::ostringstream os;
  os << "threshold " << opt.threshold * 100 << " %, alpha " << opt.alpha << ", acc_tolerance " << opt.accTolerance;
  if (opt.paired) os << ", paired over " << r.rounds << " round files (signed-rank test)";
  if (r.scale)
    os << "; runs judged at BASE's machine speed: sgemm " << plain(r.scale->baseGflops) << " GFLOP/s in BASE, "
       << plain(r.scale->newGflops) << " in NEW, so NEW's run times / " << fmt("%.3g", r.scale->factor())
       << " (medians shown as measured)";
  return os.str();
}

std::string formatMarkdown(const CompareResult& r, const CompareOptions& opt) {
  std::ostringstream os;
  const std::size_t regressions = r.regressions();
  os << "### tpbench compare: "
     << (regressions ? std::to_string(regressions) + " point(s) regressed" : "no regression") << "\n\n"
     << r.matched << " points matched; " << settingsLine(r, opt) << ".\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& pc : r.points) rows.push_back(cells(pc, opt));
  os << markdownTable(kHead, rows);
  return os.str();
}

std::string formatText(const CompareResult& r, const CompareOptions& opt) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& pc : r.points) rows.push_back(cells(pc, opt));
  std::ostringstream os;
  os << textTable(kHead, std::move(rows)) << "\n"
     << r.matched << " points matched, " << r.regressions() << " regressed (" << settingsLine(r, opt) << ")\n";
  return os.str();
}
}  // namespace

std::string formatComparison(const CompareResult& r, const CompareOptions& opt, const std::string& format) {
  if (format == "json") return formatJson(r, opt);
  if (format == "markdown") return formatMarkdown(r, opt);
  if (format != "text") TPB_THROW(UsageError, "--format: unknown format '" << format << "' (text, markdown or json)");
  return formatText(r, opt);
}

}  // namespace tpb
