#include "record/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_escape.h"
#include "record/compare.h"
#include "record/results.h"
#include "record/text_table.h"

namespace tpb {

using nlohmann::json;

std::size_t History::changes() const {
  std::size_t n = 0;
  for (const auto& s : series) n += s.changes.size();
  return n;
}

const std::vector<std::string>& historyMetrics() {
  static const std::vector<std::string> kMetrics = {"samples_per_s", "epoch_s", "busbw_gbps", "final_test_accuracy",
                                                    "final_train_loss"};
  return kMetrics;
}

History readHistory(const HistoryOptions& opt) {
  for (const auto& m : opt.metrics)
    if (std::find(historyMetrics().begin(), historyMetrics().end(), m) == historyMetrics().end())
      TPB_THROW(UsageError, "--metric: unknown metric '" << printableLine(m)
                                                         << "' (samples_per_s, epoch_s, busbw_gbps, final_test_accuracy, final_train_loss)");
  if (opt.metrics.empty()) TPB_THROW(UsageError, "--metric: no metric to follow");
  const auto& cp = opt.changePoints;
  if (!(cp.alpha > 0 && cp.alpha < 1)) TPB_THROW(UsageError, "--alpha: must be in (0, 1), got " << cp.alpha);
  if (cp.permutations < 1 || cp.permutations > 100000)
    TPB_THROW(UsageError, "--permutations: must be in 1..100000, got " << cp.permutations);
  if (cp.minSize < 2 || cp.minSize > 1000) TPB_THROW(UsageError, "--min_size: must be in 2..1000, got " << cp.minSize);
  if (!(cp.exponent > 0 && cp.exponent < 2)) TPB_THROW(UsageError, "--exponent: must be in (0, 2), got " << cp.exponent);

  History h;
  h.files = jsonFilesIn(opt.dir, "history DIR");
  if (h.files.empty()) TPB_THROW(UsageError, "history DIR: no results file (*.json) in '" << printableLine(opt.dir) << "'");
  if (h.files.size() > kMaxHistoryFiles)
    TPB_THROW(UsageError, "history DIR: " << h.files.size() << " results files in '" << printableLine(opt.dir)
                                          << "'; history reads at most " << kMaxHistoryFiles
                                          << " (the change-point search holds three tables of files x files numbers): "
                                             "give it a directory of the last "
                                          << kMaxHistoryFiles);
  // Series in the order their point and metric first appear.
  std::map<std::pair<std::string, std::string>, std::size_t> where;
  for (std::size_t f = 0; f < h.files.size(); ++f) {
    const ResultsFile file = ResultsFile::load((std::filesystem::path(opt.dir) / h.files[f]).string());
    for (const PointMedians& p : pointMedians(file)) {
      for (const auto& metric : opt.metrics) {
        const auto v = p.metrics.find(metric);
        if (v == p.metrics.end() || !std::isfinite(v->second)) continue;
        auto [it, fresh] = where.try_emplace({p.point, metric}, h.series.size());
        if (fresh) h.series.push_back({p.point, metric, {}, {}, {}});
        HistorySeries& s = h.series[it->second];
        // Two records matched as one point within a file are its repeats: pointMedians already
        // took their median, so a file adds one value per series.
        s.files.push_back(f);
        s.values.push_back(v->second);
      }
    }
  }
  for (auto& s : h.series) s.changes = eDivisive(s.values, cp);
  std::stable_sort(h.series.begin(), h.series.end(),
                   [](const HistorySeries& a, const HistorySeries& b) { return a.changes.size() > b.changes.size(); });
  return h;
}

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string changeText(const History& h, const HistorySeries& s, const ChangePoint& c) {
  char pct[48];
  std::snprintf(pct, sizeof pct, "%+.1f %%", c.before != 0 ? (c.after / c.before - 1) * 100 : 0.0);
  char p[32];
  std::snprintf(p, sizeof p, "%.3g", c.p);
  return "at " + h.files[s.files[c.index]] + ": " + number(c.before) + " -> " + number(c.after) + " (" + pct + ", p " + p + ")";
}

std::string changesCell(const History& h, const HistorySeries& s) {
  if (s.changes.empty()) return "none";
  std::string out;
  for (const auto& c : s.changes) out += (out.empty() ? "" : "; ") + changeText(h, s, c);
  return out;
}

std::string settings(const History& h, const HistoryOptions& opt) {
  std::ostringstream os;
  os << h.files.size() << " files, " << h.series.size() << " series, " << h.changes() << " change points (E-Divisive means, alpha "
     << opt.changePoints.alpha << ", " << opt.changePoints.permutations << " permutations, at least "
     << opt.changePoints.minSize << " files a side, exponent " << opt.changePoints.exponent << ")";
  return os.str();
}

std::string formatJson(const History& h, const HistoryOptions& opt) {
  json series = json::array();
  for (const auto& s : h.series) {
    json names = json::array(), changes = json::array();
    for (auto f : s.files) names.push_back(h.files[f]);
    for (const auto& c : s.changes)
      changes.push_back({{"file", h.files[s.files[c.index]]}, {"index", c.index}, {"before", c.before},
                         {"after", c.after}, {"q", c.q}, {"p", c.p}});
    series.push_back({{"point", s.point}, {"metric", s.metric}, {"files", names}, {"values", s.values},
                      {"change_points", changes}});
  }
  const auto& cp = opt.changePoints;
  json doc = {{"schema", "tpbench.history/1"},
              {"dir", opt.dir},
              {"files", h.files},
              {"method", {{"name", "e-divisive means"}, {"alpha", cp.alpha}, {"permutations", cp.permutations},
                          {"min_size", cp.minSize}, {"exponent", cp.exponent}, {"seed", cp.seed}}},
              {"series", series}};
  return doc.dump(2, ' ', true, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string formatHistory(const History& h, const HistoryOptions& opt, const std::string& format) {
  if (format == "json") return formatJson(h, opt);
  const std::vector<std::string> head = {"point", "metric", "files", "change points"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : h.series)
    rows.push_back({s.point, s.metric, std::to_string(s.values.size()), changesCell(h, s)});
  std::ostringstream os;
  if (format == "markdown") {
    os << "### tpbench history: " << settings(h, opt) << "\n\n" << markdownTable(head, rows);
    return os.str();
  }
  if (format != "text") TPB_THROW(UsageError, "--format: unknown format '" << printableLine(format) << "' (text, markdown or json)");
  os << textTable(head, std::move(rows));
  os << "\n" << settings(h, opt) << "\n";
  return os.str();
}

}  // namespace tpb
