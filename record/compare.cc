#include "harness/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "common/error.h"
#include "harness/range.h"
#include "harness/results.h"
#include "harness/stats.h"

namespace tpb {

using nlohmann::json;

bool CompareResult::regressed() const {
  return std::any_of(rows.begin(), rows.end(), [](const Comparison& c) { return c.regression; });
}

namespace {

// All the repetitions of one point, with the values of each metric.
struct Point {
  std::string label;
  bool anyOk = false, anyFailed = false;
  std::map<std::string, std::vector<double>> timing;    // higher-is-better metrics end in _per_s/_gbps
  std::map<std::string, std::vector<double>> accuracy;  // deterministic metrics
};

std::string runLabel(const json& c) {
  std::ostringstream os;
  os << "run " << c.value("strategy", "?") << " N=" << c.value("n_gpus", 0) << " batch=" << c.value("batch_size", 0)
     << " train_size=" << c.value("train_size", 0) << " epochs=" << c.value("epochs", 0);
  if (c.contains("device")) os << " " << c.at("device").get<std::string>();
  return os.str();
}

std::map<std::string, Point> collect(const json& doc) {
  std::map<std::string, Point> points;
  for (const auto& run : doc.value("runs", json::array())) {
    json key = run.at("config");
    key.erase("repeat_index");
    Point& p = points["run:" + key.dump()];
    p.label = runLabel(key);
    if (run.value("status", "") == "skipped") continue;
    if (run.value("status", "") != "ok") {
      p.anyFailed = true;
      continue;
    }
    p.anyOk = true;
    const json& s = run.at("summary");
    const json& epochs = run.value("epochs", json::array());
    if (s.contains("samples_per_s") && s.at("samples_per_s").is_number())
      p.timing["samples_per_s"].push_back(s.at("samples_per_s"));
    if (!epochs.empty()) {
      double wall = 0;
      for (const auto& e : epochs) wall += e.at("wall_s").get<double>();
      p.timing["epoch_s"].push_back(wall / epochs.size());
    }
    if (s.contains("final_test_accuracy") && s.at("final_test_accuracy").is_number())
      p.accuracy["final_test_accuracy"].push_back(s.at("final_test_accuracy"));
    if (s.contains("final_train_loss") && s.at("final_train_loss").is_number())
      p.accuracy["final_train_loss"].push_back(s.at("final_train_loss"));
  }
  for (const auto& rec : doc.value("allreduce", json::array())) {
    json key = {{"algo", rec.value("algo", "")},     {"transport", rec.value("transport", "")},
                {"device", rec.value("device", "")}, {"n_gpus", rec.value("n_gpus", 0)},
                {"bytes", rec.value("bytes", 0)}};
    Point& p = points["allreduce:" + key.dump()];
    p.label = "allreduce " + key.at("algo").get<std::string>() + " N=" + std::to_string(key.at("n_gpus").get<int>()) +
              " " + formatBytes(key.at("bytes").get<std::size_t>()) + " " + key.at("transport").get<std::string>();
    if (rec.value("status", "") != "ok") {
      p.anyFailed = true;
      continue;
    }
    p.anyOk = true;
    p.timing["busbw_gbps"].push_back(rec.at("busbw_gbps"));
  }
  return points;
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

}  // namespace

CompareResult compareResults(const CompareOptions& opt) {
  if (!(opt.threshold >= 0)) TPB_THROW(UsageError, "--threshold: must be >= 0, got " << opt.threshold);
  if (!(opt.alpha > 0 && opt.alpha < 1)) TPB_THROW(UsageError, "--alpha: must be in (0, 1), got " << opt.alpha);
  if (!(opt.accTolerance >= 0)) TPB_THROW(UsageError, "--acc-tolerance: must be >= 0, got " << opt.accTolerance);
  const ResultsFile base = ResultsFile::load(opt.basePath);
  const ResultsFile now = ResultsFile::load(opt.newPath);
  const auto b = collect(base.doc()), n = collect(now.doc());

  CompareResult out;
  for (const auto& [key, bp] : b) {
    if (!bp.anyOk) continue;  // nothing to hold NEW to
    const auto it = n.find(key);
    if (it == n.end()) {
      out.rows.push_back({bp.label, "status", "status", 0, 0, 0, 0, 0, 0, -1, true, "missing in NEW"});
      continue;
    }
    const Point& np = it->second;
    ++out.matched;
    if (!np.anyOk) {
      out.rows.push_back({bp.label, "status", "status", 0, 0, 0, 0, 0, 0, -1, true,
                          np.anyFailed ? "failed in NEW" : "not run in NEW"});
      continue;
    }
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
      const auto nv = np.accuracy.find(metric);
      if (nv == np.accuracy.end() || bv.empty() || nv->second.empty()) continue;
      Comparison c = measured(bp.label, metric, "accuracy", bv, nv->second);
      const bool isAccuracy = metric == "final_test_accuracy";
      c.change = isAccuracy ? c.now - c.base : (c.base != 0 ? c.now / c.base - 1 : c.now - c.base);
      c.regression = std::abs(c.change) > opt.accTolerance;
      if (c.regression) c.note = "changed beyond --acc-tolerance";
      out.rows.push_back(c);
    }
  }
  if (out.matched == 0)
    TPB_THROW(UsageError, "nothing in common: no point of " << opt.basePath << " appears in " << opt.newPath
                                                            << " (compare matches runs by their whole config)");
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const Comparison& a, const Comparison& c) { return a.regression && !c.regression; });
  return out;
}

namespace {
std::string fmt(const char* f, double v) {
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
    return doc.dump(2) + "\n";
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
      for (const auto& x : cells(c)) os << " " << x << " |";
      os << "\n";
    }
    return os.str();
  }
  if (format != "text") TPB_THROW(UsageError, "--format: unknown format '" << format << "' (text, markdown or json)");
  std::vector<std::vector<std::string>> table{head};
  for (const auto& c : r.rows) table.push_back(cells(c));
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
