// report/report.cc — see report.h. Flow: load and merge the inputs, normalise runs and allreduce
// points into small structs (missing or null fields become NaN, only "ok" records are charted),
// build every chart's data + gnuplot script + one-line reading, run gnuplot per chart, then write
// the tables and index.md / index.html.
#include "report/report.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "harness/results.h"

namespace tpb {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ------------------------------------------------------------------------------------------
// Reading records. Readers must ignore unknown fields and treat absent like null
// (results/README.md), so every getter has a fallback instead of throwing.
// ------------------------------------------------------------------------------------------

double numberOr(const json& j, const char* key, double fallback = kNaN) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  const double v = it->get<double>();
  return std::isfinite(v) ? v : fallback;
}

std::string stringOr(const json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

double median(std::vector<double> xs) {
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](double x) { return !std::isfinite(x); }),
           xs.end());
  if (xs.empty()) return kNaN;
  std::sort(xs.begin(), xs.end());
  const std::size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

double meanOf(const std::vector<double>& xs) {
  double s = 0;
  std::size_t n = 0;
  for (double x : xs) {
    if (std::isfinite(x)) s += x, ++n;
  }
  return n ? s / static_cast<double>(n) : kNaN;
}

struct Run {
  json config;
  std::string strategy;
  int n = 0;
  long long batch = 0;
  long long trainSize = 0;
  long long epochsRequested = 0;
  std::string status;
  std::string error;
  std::vector<double> wall, compute, comm, accuracy;  // per completed epoch; NaN where null
  double samplesPerS = kNaN;
  double finalAccuracy = kNaN;
  double scalingEfficiency = kNaN;  // as recorded; NaN when null
  bool ok() const { return status == "ok"; }
  double meanWall() const { return meanOf(wall); }
};

struct ArPoint {
  std::string algo, transport, device, status, error;
  int n = 0;
  long long bytes = 0;
  double medianUs = kNaN, busbw = kNaN;
  bool ok() const { return status == "ok"; }
};

struct Input {
  std::string path;
  json meta;
  std::size_t runs = 0, allreduce = 0;
};

Run parseRun(const json& r) {
  Run run;
  run.config = r.is_object() && r.contains("config") && r["config"].is_object() ? r["config"]
                                                                                : json::object();
  run.strategy = stringOr(run.config, "strategy", "?");
  run.n = static_cast<int>(numberOr(run.config, "n_gpus", 0));
  run.batch = static_cast<long long>(numberOr(run.config, "batch_size", 0));
  run.trainSize = static_cast<long long>(numberOr(run.config, "train_size", 0));
  run.epochsRequested = static_cast<long long>(numberOr(run.config, "epochs", 0));
  run.status = stringOr(r, "status", "?");
  run.error = stringOr(r, "error");
  double samples = 0;
  bool haveSamples = true;
  if (r.is_object() && r.contains("epochs") && r["epochs"].is_array()) {
    for (const auto& e : r["epochs"]) {
      run.wall.push_back(numberOr(e, "wall_s"));
      run.compute.push_back(numberOr(e, "compute_s"));
      run.comm.push_back(numberOr(e, "comm_s"));
      run.accuracy.push_back(numberOr(e, "test_accuracy"));
      const double s = numberOr(e, "samples");
      if (std::isfinite(s)) {
        samples += s;
      } else {
        haveSamples = false;
      }
    }
  }
  const json summary = r.is_object() && r.contains("summary") ? r["summary"] : json::object();
  run.samplesPerS = numberOr(summary, "samples_per_s");
  if (!(run.samplesPerS > 0) && !run.wall.empty()) {
    // Older or hand-written files may lack the summary: derive it as train_runner does.
    double total = 0;
    for (double w : run.wall) total += std::isfinite(w) ? w : 0;
    if (haveSamples && samples > 0 && total > 0) run.samplesPerS = samples / total;
  }
  if (!(run.samplesPerS > 0)) run.samplesPerS = kNaN;
  run.finalAccuracy = numberOr(summary, "final_test_accuracy");
  if (!std::isfinite(run.finalAccuracy) && !run.accuracy.empty())
    run.finalAccuracy = run.accuracy.back();
  run.scalingEfficiency = numberOr(summary, "scaling_efficiency");
  return run;
}

ArPoint parseAllreduce(const json& p) {
  ArPoint a;
  a.algo = stringOr(p, "algo", "?");
  a.transport = stringOr(p, "transport", "?");
  a.device = stringOr(p, "device", "?");
  a.status = stringOr(p, "status", "?");
  a.error = stringOr(p, "error");
  a.n = static_cast<int>(numberOr(p, "n_gpus", 0));
  a.bytes = static_cast<long long>(numberOr(p, "bytes", 0));
  a.medianUs = numberOr(p.is_object() && p.contains("time_us") ? p["time_us"] : json(), "median");
  a.busbw = numberOr(p, "busbw_gbps");
  return a;
}

// ------------------------------------------------------------------------------------------
// Formatting
// ------------------------------------------------------------------------------------------

std::string printfStr(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

// For prose and tables: 3 significant digits, whole numbers from 100 up (no 2.26e+04).
std::string fmtNum(double x) {
  if (!std::isfinite(x)) return "—";
  if (std::fabs(x) >= 100) return printfStr("%.0f", x);
  return printfStr("%.3g", x);
}

// For .dat files: enough digits to redraw faithfully.
std::string fmtDat(double x) { return std::isfinite(x) ? printfStr("%.6g", x) : "NaN"; }

std::string fmtRatio(double x) { return printfStr(x < 1000 ? "%.3g" : "%.0f", x) + "x"; }

std::string fmtPct(double fraction) { return printfStr("%.1f", fraction * 100) + " %"; }

// 4096 -> "4K", 4194304 -> "4M", 1536 -> "1.5K" (binary units, as the CLI's --bytes takes them).
std::string fmtBytes(long long b) {
  const char* units[] = {"", "K", "M", "G", "T"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return printfStr("%.4g", v) + units[u];
}

std::string jsonValueText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "null";
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + jsonValueText(e);
    return s.empty() ? "(none)" : s;
  }
  return v.dump();
}

// A string inside a gnuplot double-quoted string: backslash escapes are interpreted there.
std::string gpQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string htmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A markdown table cell: '|' would end the cell, newlines the row.
std::string mdCell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string csvCell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string joinList(const std::vector<std::string>& xs, const std::string& sep) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : sep) + x;
  return s;
}

// ------------------------------------------------------------------------------------------
// Strategy/algorithm order and colours, so a strategy looks the same in every chart.
// ------------------------------------------------------------------------------------------

const std::vector<std::string>& knownStrategies() {
  static const std::vector<std::string> k = {"single",    "param_server", "ring_all_reduce",
                                             "allreduce", "ddp",          "data_parallel"};
  return k;
}

int strategyRank(const std::string& s) {
  const auto& k = knownStrategies();
  const auto it = std::find(k.begin(), k.end(), s);
  return it == k.end() ? static_cast<int>(k.size()) : static_cast<int>(it - k.begin());
}

bool strategyLess(const std::string& a, const std::string& b) {
  const int ra = strategyRank(a), rb = strategyRank(b);
  return ra != rb ? ra < rb : a < b;
}

const char* const kExtraColors[] = {"#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79"};

std::string strategyColor(const std::string& s) {
  static const std::map<std::string, std::string> c = {
      {"single", "#7f7f7f"},    {"param_server", "#1f77b4"}, {"ring_all_reduce", "#2ca02c"},
      {"allreduce", "#9467bd"}, {"ddp", "#d62728"},          {"data_parallel", "#ff7f0e"}};
  const auto it = c.find(s);
  if (it != c.end()) return it->second;
  return kExtraColors[std::hash<std::string>{}(s) % 5];
}

std::string algoColor(const std::string& a) {
  static const std::map<std::string, std::string> c = {
      {"ring", "#2ca02c"}, {"param_server", "#1f77b4"}, {"library", "#9467bd"}};
  const auto it = c.find(a);
  if (it != c.end()) return it->second;
  return kExtraColors[std::hash<std::string>{}(a) % 5];
}

// Colour by position (e.g. one per N when both strategies share a chart).
std::string indexColor(std::size_t i) {
  static const char* const c[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a",
                                  "#66a61e", "#e6ab02", "#a6761d", "#666666"};
  return c[i % 8];
}

// ------------------------------------------------------------------------------------------
// Slices. A chart varies one or two config fields (strategy, N, batch ...); every other field
// is held fixed. The slice shown is the one with the most distinct chart points (then the most
// runs), and its fixed values are named in the chart's subtitle.
// ------------------------------------------------------------------------------------------

struct Slice {
  json key = json::object();
  std::vector<const Run*> runs;
  int others = 0;  // slices with data for this chart that are not shown
  bool empty() const { return runs.empty(); }
};

// Fields that differ between otherwise equal runs for reasons that are no part of the
// experiment: the repeat counter, the transport a strategy picks by itself, internal limits.
const std::set<std::string>& incidentalFields() {
  static const std::set<std::string> f = {"repeat_index", "transport", "max_steps"};
  return f;
}

json sliceKey(const Run& r, const std::set<std::string>& varying) {
  json k = r.config;
  for (const auto& f : incidentalFields()) k.erase(f);
  for (const auto& f : varying) k.erase(f);
  return k;
}

// `required`: strategies a comparison chart needs; a slice holding all of them wins over one
// with more points but without them.
Slice pickSlice(const std::vector<Run>& runs, const std::set<std::string>& varying,
                const std::function<bool(const Run&)>& relevant,
                const std::function<std::string(const Run&)>& pointId,
                const std::vector<std::string>& required = {}) {
  struct Group {
    json key;
    std::vector<const Run*> runs;
    std::set<std::string> points;
    std::set<std::string> strategies;
  };
  std::map<std::string, Group> groups;  // ordered by the key's text: a deterministic tie-break
  for (const auto& r : runs) {
    if (!r.ok() || !relevant(r)) continue;
    json k = sliceKey(r, varying);
    Group& g = groups[k.dump()];
    g.key = k;
    g.runs.push_back(&r);
    g.points.insert(pointId(r));
    g.strategies.insert(r.strategy);
  }
  auto score = [&](const Group& g) {
    const bool complete = std::all_of(required.begin(), required.end(), [&](const std::string& s) {
      return g.strategies.count(s) > 0;
    });
    return std::make_tuple(complete, g.points.size(), g.runs.size());
  };
  Slice best;
  const Group* bestGroup = nullptr;
  for (const auto& [text, g] : groups) {
    if (!bestGroup || score(g) > score(*bestGroup)) bestGroup = &g;
  }
  if (bestGroup) {
    best.key = bestGroup->key;
    best.runs = bestGroup->runs;
    best.others = static_cast<int>(groups.size()) - 1;
  }
  return best;
}

// "N=2, batch 64/device, 8192 samples/epoch, 3 epochs" plus any other held field that takes
// more than one value across the inputs (a field constant everywhere says nothing).
std::string describeSlice(const Slice& s, const std::vector<Run>& all) {
  std::vector<std::string> parts;
  const json& k = s.key;
  if (k.contains("n_gpus")) parts.push_back("N=" + jsonValueText(k["n_gpus"]));
  if (k.contains("batch_size"))
    parts.push_back("batch " + jsonValueText(k["batch_size"]) + "/device");
  if (k.contains("train_size")) parts.push_back(jsonValueText(k["train_size"]) + " samples/epoch");
  if (k.contains("epochs")) parts.push_back(jsonValueText(k["epochs"]) + " epochs");
  static const std::set<std::string> named = {"n_gpus", "batch_size", "train_size", "epochs"};
  for (const auto& [field, value] : k.items()) {
    if (named.count(field)) continue;
    std::set<std::string> seen;
    for (const auto& r : all) {
      if (r.ok() && r.config.contains(field)) seen.insert(r.config[field].dump());
    }
    if (seen.size() > 1) parts.push_back(field + " " + jsonValueText(value));
  }
  std::string text = joinList(parts, ", ");
  if (s.others > 0)
    text += " (" + std::to_string(s.others) + " other config" + (s.others > 1 ? "s" : "") +
            " not shown)";
  return text;
}

// ------------------------------------------------------------------------------------------
// Charts
// ------------------------------------------------------------------------------------------

struct Point {
  double x = 0, y = 0;
  int samples = 0;  // records the median was taken over
};

struct Series {
  std::string title;
  std::string color;
  int dash = 1;
  int pointType = 7;
  std::vector<Point> points;  // sorted by x
};

struct Axes {
  std::string xlabel, ylabel;
  bool logx = false, logy = false;
  int logxBase = 10;
  std::string xtics;  // gnuplot tic list "(...)" or "" for automatic
  std::string xcol = "x", ycol = "y";
};

struct Chart {
  std::string id, title, subtitle;
  std::string reason;   // why there is nothing to draw; empty when there is
  std::string reading;  // one line computed from the data
  std::string dat, gp;  // file contents
  bool hasData() const { return reason.empty(); }
};

std::string chartHeader(const Chart& c) {
  std::ostringstream os;
  os << "# tpbench report — " << c.id << ": " << c.title << "\n";
  if (!c.subtitle.empty()) os << "# " << c.subtitle << "\n";
  return os.str();
}

// Breaks a subtitle into lines of at most `width` characters at spaces: gnuplot does not wrap,
// and a long single line runs off both sides of the canvas.
std::vector<std::string> wrapWords(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string word, line;
  while (in >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

constexpr int kWidthPx = 1100, kHeightPx = 620;

// Shared preamble/epilogue: the same plot goes to PNG, then to SVG by `replot`, so a user who
// restyles the script changes both at once. Title and subtitle are labels in screen
// coordinates, so the subtitle can be smaller and wrapped, with the top margin made to fit.
std::string gpScript(const Chart& c, const std::string& settings, const std::string& plot,
                     const std::string& key = "set key outside right top Left reverse\n") {
  const auto sub = wrapWords(c.subtitle, 150);
  std::ostringstream os;
  os << "# " << c.id << ".gp — tpbench report chart \"" << c.title << "\"\n"
     << "# Data: " << c.id << ".dat. Redraw from this directory: gnuplot " << c.id << ".gp\n"
     << "# (writes " << c.id << ".png and " << c.id << ".svg).\n"
     << "set encoding utf8\n"
     // noenhanced: strategy names contain '_', which enhanced text would turn into subscripts.
     << "set terminal pngcairo noenhanced size " << kWidthPx << "," << kHeightPx
     << " font 'Sans,11'\n"
     << "set output '" << c.id << ".png'\n"
     << "set label 101 " << gpQuote(c.title) << " at screen 0.5, screen "
     << fmtDat(1 - 22.0 / kHeightPx) << " center font ',14'\n";
  for (std::size_t i = 0; i < sub.size(); ++i) {
    os << "set label " << 102 + i << " " << gpQuote(sub[i]) << " at screen 0.5, screen "
       << fmtDat(1 - (46.0 + 17.0 * i) / kHeightPx)
       << " center font ',10' textcolor rgb '#444444'\n";
  }
  os << "set tmargin " << 4 + sub.size() << "\n"
     << "set grid lc rgb '#dddddd'\n"
     << key << settings << plot << "set terminal svg noenhanced size " << kWidthPx << ","
     << kHeightPx << " dynamic font 'Sans,11' background rgb 'white'\n"
     << "set output '" << c.id << ".svg'\n"
     << "replot\n"
     << "set output\n";
  return os.str();
}

std::string axesSettings(const Axes& a) {
  std::ostringstream os;
  os << "set xlabel " << gpQuote(a.xlabel) << "\n"
     << "set ylabel " << gpQuote(a.ylabel) << "\n";
  if (a.logx) os << "set logscale x " << a.logxBase << "\n";
  if (a.logy) os << "set logscale y 10\n";
  if (!a.xtics.empty()) os << "set xtics " << a.xtics << "\n";
  if (!a.logy) os << "set yrange [0:*]\n";
  return os.str();
}

// Line charts keep one gnuplot data block per series (blocks separated by two blank lines,
// selected with `index i`), so a series can be restyled or dropped without touching the others.
void buildLineChart(Chart& c, const std::vector<Series>& series, const Axes& a,
                    const std::string& extraSettings = "") {
  std::ostringstream dat;
  dat << chartHeader(c);
  dat << "# One block per series (gnuplot: index 0, 1, ...); columns: " << a.xcol << " " << a.ycol
      << " records (how many runs/points the median is over)\n";
  std::ostringstream plot;
  plot << "plot ";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    if (i) dat << "\n\n";
    dat << "# [" << i << "] " << s.title << "\n";
    dat << "# " << a.xcol << " " << a.ycol << " records\n";
    for (const auto& p : s.points)
      dat << fmtDat(p.x) << " " << fmtDat(p.y) << " " << p.samples << "\n";
    if (i) plot << ", \\\n     ";
    plot << "'" << c.id << ".dat' index " << i << " using 1:2 with "
         << (s.pointType > 0 ? "linespoints" : "lines") << " title " << gpQuote(s.title)
         << " lc rgb '" << s.color << "' dt " << s.dash << " lw 2";
    if (s.pointType > 0) plot << " pt " << s.pointType << " ps 1.2";
  }
  plot << "\n";
  c.dat = dat.str();
  c.gp = gpScript(c, axesSettings(a) + extraSettings, plot.str());
}

// Explicit tics at the values present: N=1,2,4 or batch 32,64,128 read better than 1.5, 2.5.
std::string ticsAt(const std::set<double>& xs, const std::function<std::string(double)>& label) {
  std::vector<std::string> parts;
  for (double x : xs) parts.push_back(gpQuote(label(x)) + " " + fmtDat(x));
  return "(" + joinList(parts, ", ") + ")";
}

std::string intLabel(double x) { return printfStr("%.0f", x); }

// Median per (series name, x) of a per-run value, over the slice's runs.
std::map<std::string, std::map<double, std::vector<double>>> collect(
    const std::vector<const Run*>& runs, const std::function<std::string(const Run&)>& seriesOf,
    const std::function<double(const Run&)>& xOf, const std::function<double(const Run&)>& yOf) {
  std::map<std::string, std::map<double, std::vector<double>>> out;
  for (const Run* r : runs) {
    const double y = yOf(*r);
    if (!std::isfinite(y)) continue;
    out[seriesOf(*r)][xOf(*r)].push_back(y);
  }
  return out;
}

std::vector<Point> medianPoints(const std::map<double, std::vector<double>>& byX) {
  std::vector<Point> pts;
  for (const auto& [x, ys] : byX) pts.push_back({x, median(ys), static_cast<int>(ys.size())});
  return pts;
}

std::vector<std::string> sortedStrategies(
    const std::map<std::string, std::map<double, std::vector<double>>>& m) {
  std::vector<std::string> names;
  for (const auto& kv : m) names.push_back(kv.first);
  std::sort(names.begin(), names.end(), strategyLess);
  return names;
}

double valueAt(const std::vector<Point>& pts, double x) {
  for (const auto& p : pts) {
    if (p.x == x) return p.y;
  }
  return kNaN;
}

// True (and c.reason set) when `runs` holds no ok run, so there is nothing to chart.
bool noOkRuns(Chart& c, const std::vector<Run>& runs) {
  if (std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.ok(); })) return false;
  c.reason = runs.empty() ? "no training runs in the input" : "no training run with status ok";
  return true;
}

// The slice of `runs` with the most (strategy, N) points where only strategy and n_gpus vary.
Slice sliceOverStrategyAndN(const std::vector<Run>& runs, const std::function<bool(const Run&)>& relevant,
                            const std::vector<std::string>& required = {}) {
  return pickSlice(runs, {"strategy", "n_gpus"}, relevant,
                   [](const Run& r) { return r.strategy + "|" + std::to_string(r.n); }, required);
}

// The first of `names` with no run in `s`; null when all are there.
const std::string* firstMissing(const Slice& s, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (!std::any_of(s.runs.begin(), s.runs.end(), [&](const Run* r) { return r->strategy == name; }))
      return &name;
  }
  return nullptr;
}

// 1. Accuracy per epoch: the from-scratch parameter server against DataParallel's algorithm.
Chart chartPsAccuracy(const std::vector<Run>& runs) {
  Chart c;
  c.id = "ps_accuracy";
  c.title = "Parameter server: from scratch vs builtin";
  if (noOkRuns(c, runs)) return c;
  const std::vector<std::string> pair = {"param_server", "data_parallel"};
  auto relevant = [&](const Run& r) {
    return std::find(pair.begin(), pair.end(), r.strategy) != pair.end() &&
           std::any_of(r.accuracy.begin(), r.accuracy.end(),
                       [](double a) { return std::isfinite(a); });
  };
  const Slice s = sliceOverStrategyAndN(runs, relevant, pair);
  if (const std::string* missing = firstMissing(s, pair)) {
    c.reason = "no ok " + *missing + " run with test accuracy" +
               (s.empty() ? std::string() : " at the settings of the other strategy's runs");
    return c;
  }
  c.subtitle = "test accuracy after each epoch, median over repeats; " + describeSlice(s, runs);
  // strategy -> N -> epoch -> accuracies
  std::map<std::string, std::map<int, std::map<int, std::vector<double>>>> acc;
  for (const Run* r : s.runs) {
    for (std::size_t e = 0; e < r->accuracy.size(); ++e) {
      if (std::isfinite(r->accuracy[e]))
        acc[r->strategy][r->n][static_cast<int>(e)].push_back(r->accuracy[e]);
    }
  }
  std::set<int> ns;
  for (const auto& [st, byN] : acc) {
    for (const auto& kv : byN) ns.insert(kv.first);
  }
  std::vector<Series> series;
  std::map<std::string, std::map<int, std::pair<int, double>>>
      finalAcc;  // strategy, N -> (epoch, acc)
  int maxEpoch = 1;
  for (const auto& name : pair) {
    for (const auto& [n, byEpoch] : acc[name]) {
      Series ser;
      ser.title = name + (name == "param_server" ? " (from scratch)" : " (builtin)") +
                  " N=" + std::to_string(n);
      ser.color = indexColor(static_cast<std::size_t>(std::distance(ns.begin(), ns.find(n))));
      ser.dash = name == "param_server" ? 1 : 2;
      ser.pointType = name == "param_server" ? 7 : 5;
      for (const auto& [e, xs] : byEpoch) {
        ser.points.push_back(
            {static_cast<double>(e + 1), 100 * median(xs), static_cast<int>(xs.size())});
        finalAcc[name][n] = {e + 1, median(xs)};
        maxEpoch = std::max(maxEpoch, e + 1);
      }
      series.push_back(ser);
    }
  }
  std::vector<std::string> parts;
  double gap = 0;  // percentage points, param_server minus data_parallel
  int gapAt = 0;
  for (int n : ns) {
    if (!finalAcc["param_server"].count(n) || !finalAcc["data_parallel"].count(n)) continue;
    const auto [ep, pa] = finalAcc["param_server"][n];
    const auto [ed, da] = finalAcc["data_parallel"][n];
    std::string part = "N=" + std::to_string(n) + " " + fmtPct(pa) + " vs " + fmtPct(da);
    if (ep != ed) part += " (epochs " + std::to_string(ep) + " vs " + std::to_string(ed) + ")";
    parts.push_back(part);
    const double d = 100 * (pa - da);
    if (parts.size() == 1 || std::fabs(d) > std::fabs(gap)) gap = d, gapAt = n;
  }
  if (parts.empty()) {
    c.reading = "param_server and data_parallel ran at no common N in this slice.";
  } else {
    c.reading = "Final test accuracy, param_server vs data_parallel: " + joinList(parts, "; ") +
                " (largest gap: " + printfStr("%+.1f", gap) +
                " points for param_server at N=" + std::to_string(gapAt) + ").";
  }
  Axes a;
  a.xlabel = "epoch";
  a.ylabel = "test accuracy (%)";
  a.xcol = "epoch";
  a.ycol = "test_accuracy_pct";
  std::set<double> epochs;
  for (int e = 1; e <= maxEpoch; ++e) epochs.insert(e);
  a.xtics = ticsAt(epochs, intLabel);
  buildLineChart(c, series, a,
                 "set yrange [*:*]\nset xrange [0.8:" + fmtDat(maxEpoch + 0.2) + "]\n");
  return c;
}

// Phrase for "a is Rx faster/slower than b" from two times (smaller is faster).
std::string speedPhrase(double ta, double tb) {
  if (!(ta > 0) || !(tb > 0)) return "not comparable";
  if (ta <= tb) return fmtRatio(tb / ta) + " faster";
  return fmtRatio(ta / tb) + " slower";
}

// 2. Epoch time vs N: the from-scratch ring against DDP's algorithm and the library allreduce.
Chart chartRingEpochTime(const std::vector<Run>& runs) {
  Chart c;
  c.id = "ring_epoch_time";
  c.title = "Ring all-reduce: from scratch vs builtin";
  if (noOkRuns(c, runs)) return c;
  const std::vector<std::string> group = {"ring_all_reduce", "ddp", "allreduce"};
  auto relevant = [&](const Run& r) {
    return std::find(group.begin(), group.end(), r.strategy) != group.end() &&
           std::isfinite(r.meanWall());
  };
  const std::vector<std::string> required = {"ring_all_reduce", "ddp"};
  const Slice s = sliceOverStrategyAndN(runs, relevant, required);
  if (const std::string* missing = firstMissing(s, required)) {
    c.reason = "no ok " + *missing + " run" + (s.empty() ? std::string() : " at the settings of the other runs");
    return c;
  }
  c.subtitle = "mean epoch wall time, median over repeats; " + describeSlice(s, runs);
  const auto data = collect(
      s.runs, [](const Run& r) { return r.strategy; }, [](const Run& r) { return double(r.n); },
      [](const Run& r) { return r.meanWall(); });
  std::vector<Series> series;
  std::set<double> ns;
  std::map<std::string, std::vector<Point>> pts;
  for (const auto& name : sortedStrategies(data)) {
    Series ser;
    ser.title = name + (name == "ring_all_reduce" ? " (from scratch)"
                        : name == "ddp"           ? " (builtin)"
                                                  : " (library)");
    ser.color = strategyColor(name);
    ser.points = medianPoints(data.at(name));
    for (const auto& p : ser.points) ns.insert(p.x);
    pts[name] = ser.points;
    series.push_back(ser);
  }
  // Largest N first: that is where the synchronisation strategies differ most.
  std::vector<std::string> parts;
  for (auto it = ns.rbegin(); it != ns.rend(); ++it) {
    const double ring = valueAt(pts["ring_all_reduce"], *it), ddp = valueAt(pts["ddp"], *it);
    if (std::isfinite(ring) && std::isfinite(ddp))
      parts.push_back(speedPhrase(ring, ddp) + (parts.empty() ? " per epoch than ddp" : "") +
                      " at N=" + intLabel(*it));
  }
  std::string reading;
  if (parts.empty()) {
    reading = "ring_all_reduce and ddp ran at no common N";
  } else {
    reading = "ring_all_reduce is " + parts[0];
    if (parts.size() > 1)
      reading +=
          " (" + joinList(std::vector<std::string>(parts.begin() + 1, parts.end()), ", ") + ")";
  }
  // The fastest of the group at the largest N, to say where the library allreduce stands too.
  const double nMax = *ns.rbegin();
  std::string fastest;
  double best = kNaN;
  for (const auto& [name, p] : pts) {
    const double t = valueAt(p, nMax);
    if (std::isfinite(t) && !(t >= best)) best = t, fastest = name;
  }
  if (!fastest.empty())
    reading +=
        "; fastest at N=" + intLabel(nMax) + ": " + fastest + " (" + fmtNum(best) + " s/epoch)";
  c.reading = reading + ".";
  Axes a;
  a.xlabel = "ranks N";
  a.ylabel = "epoch time (s)";
  a.xcol = "n_gpus";
  a.ycol = "epoch_s";
  a.xtics = ticsAt(ns, intLabel);
  buildLineChart(c, series, a, "set offsets graph 0.05, graph 0.05, 0, 0\n");
  return c;
}

// Per strategy, the growth of a value between the smallest and the largest x it has.
struct Growth {
  std::string strategy;
  double x0, x1, ratio;
};

std::vector<Growth> growthPerStrategy(const std::map<std::string, std::vector<Point>>& pts) {
  std::vector<Growth> g;
  for (const auto& [name, p] : pts) {
    if (p.size() < 2 || !(p.front().y > 0)) continue;
    g.push_back({name, p.front().x, p.back().x, p.back().y / p.front().y});
  }
  std::sort(g.begin(), g.end(), [](const Growth& a, const Growth& b) { return a.ratio < b.ratio; });
  return g;
}

// "3.90x (ring_all_reduce) to 4.10x (ddp)" or one value when all agree or only one exists.
std::string growthRange(const std::vector<Growth>& g) {
  if (g.size() == 1) return fmtRatio(g[0].ratio) + " for " + g[0].strategy;
  return fmtRatio(g.front().ratio) + " (" + g.front().strategy + ") to " +
         fmtRatio(g.back().ratio) + " (" + g.back().strategy + ")";
}

// Logarithmic axes once the values span a decade: the small end stays readable.
bool spansDecade(const std::set<double>& xs) {
  return !xs.empty() && *xs.begin() > 0 && *xs.rbegin() / *xs.begin() >= 10;
}

// 3. Epoch time vs training-set size, one line per strategy.
// One line per strategy: a per-run value against one numeric setting (train_size, batch_size),
// over the slice of runs with the most such points. Both "scaling with X" charts share it.
struct StrategyLines {
  Slice slice;
  std::set<double> xs;
  std::vector<Series> series;
  std::map<std::string, std::vector<Point>> points;
};

// Fills `out` and returns true when some strategy has runs at >= 2 values of the setting;
// otherwise sets c.reason ("needs runs at >= 2 <what> ...; found <values>") and returns false.
bool strategyLines(Chart& c, const std::vector<Run>& runs, const std::set<std::string>& varying,
                   const std::string& what, const std::function<long long(const Run&)>& setting,
                   const std::function<double(const Run&)>& value, StrategyLines& out) {
  if (noOkRuns(c, runs)) return false;
  auto relevant = [&](const Run& r) { return setting(r) > 0 && std::isfinite(value(r)); };
  out.slice = pickSlice(runs, varying, relevant,
                        [&](const Run& r) { return r.strategy + "|" + std::to_string(setting(r)); });
  const auto data = collect(
      out.slice.runs, [](const Run& r) { return r.strategy; },
      [&](const Run& r) { return double(setting(r)); }, value);
  bool twoForOne = false;
  for (const auto& [name, byX] : data) {
    for (const auto& kv : byX) out.xs.insert(kv.first);
    twoForOne = twoForOne || byX.size() >= 2;
  }
  if (!twoForOne) {
    std::set<long long> all;
    for (const auto& r : runs) {
      if (r.ok()) all.insert(setting(r));
    }
    std::vector<std::string> vals;
    for (long long v : all) vals.push_back(std::to_string(v));
    c.reason = "needs runs at >= 2 " + what + " with otherwise equal settings; found " +
               (vals.empty() ? std::string("none") : joinList(vals, ", "));
    return false;
  }
  for (const auto& name : sortedStrategies(data)) {
    Series ser;
    ser.title = name;
    ser.color = strategyColor(name);
    ser.points = medianPoints(data.at(name));
    out.points[name] = ser.points;
    out.series.push_back(ser);
  }
  return true;
}

Chart chartDataScaling(const std::vector<Run>& runs) {
  Chart c;
  c.id = "data_scaling";
  c.title = "Scaling with training data size";
  StrategyLines l;
  if (!strategyLines(c, runs, {"strategy", "train_size", "test_size"}, "train_size values",
                     [](const Run& r) { return static_cast<long long>(r.trainSize); },
                     [](const Run& r) { return r.meanWall(); }, l))
    return c;
  c.subtitle = "mean epoch wall time, median over repeats; " + describeSlice(l.slice, runs);
  const auto g = growthPerStrategy(l.points);
  const double x0 = *l.xs.begin(), x1 = *l.xs.rbegin();
  c.reading = intLabel(x1) + " vs " + intLabel(x0) + " samples (" + fmtRatio(x1 / x0) +
              " the data): epoch time grows " + growthRange(g) + ".";
  Axes a;
  a.xlabel = "training samples per epoch";
  a.ylabel = "epoch time (s)";
  a.xcol = "train_size";
  a.ycol = "epoch_s";
  a.logx = a.logy = spansDecade(l.xs);
  a.xtics = ticsAt(l.xs, intLabel);
  buildLineChart(c, l.series, a, "set offsets graph 0.03, graph 0.03, 0, 0\n");
  return c;
}

// 4. Throughput vs N per strategy against ideal linear scaling.
Chart chartThroughputScaling(const std::vector<Run>& runs) {
  Chart c;
  c.id = "throughput_scaling";
  c.title = "Throughput scaling with the number of ranks";
  if (noOkRuns(c, runs)) return c;
  auto relevant = [](const Run& r) { return std::isfinite(r.samplesPerS); };
  const Slice s = sliceOverStrategyAndN(runs, relevant);
  const auto data = collect(
      s.runs, [](const Run& r) { return r.strategy; }, [](const Run& r) { return double(r.n); },
      [](const Run& r) { return r.samplesPerS; });
  std::set<double> ns;
  bool twoForOne = false;
  for (const auto& [name, byX] : data) {
    for (const auto& kv : byX) ns.insert(kv.first);
    twoForOne = twoForOne || byX.size() >= 2;
  }
  if (!twoForOne) {
    c.reason = "needs one strategy at >= 2 values of N with otherwise equal settings";
    return c;
  }
  c.subtitle = "samples/s of all ranks together, median over repeats; " + describeSlice(s, runs);
  std::vector<Series> series;
  std::map<std::string, std::vector<Point>> pts;
  for (const auto& name : sortedStrategies(data)) {
    Series ser;
    ser.title = name;
    ser.color = strategyColor(name);
    ser.points = medianPoints(data.at(name));
    pts[name] = ser.points;
    series.push_back(ser);
  }
  // The ideal line starts from the single-device reference when there is one, else from the
  // fastest strategy at N=1: linear scaling of the best one-rank throughput.
  double base = pts.count("single") ? valueAt(pts["single"], 1) : kNaN;
  std::string baseName = "single";
  if (!std::isfinite(base)) {
    for (const auto& [name, p] : pts) {
      const double v = valueAt(p, 1);
      if (std::isfinite(v) && !(v <= base)) base = v, baseName = name;
    }
  }
  if (std::isfinite(base)) {
    Series ideal;
    ideal.title = "ideal: N × " + baseName + " at N=1";
    ideal.color = "#000000";
    ideal.dash = 2;
    ideal.pointType = 0;
    for (double n : ns) ideal.points.push_back({n, n * base, 1});
    series.push_back(ideal);
  }
  // Efficiency at the largest N each strategy reached, against its own N=1 (as the results'
  // summary.scaling_efficiency is defined).
  struct Eff {
    std::string name;
    double n, eff, speedup;
  };
  std::vector<Eff> effs;
  for (const auto& [name, p] : pts) {
    const double one = valueAt(p, 1);
    if (p.size() < 2 || !(one > 0) || p.back().x <= 1) continue;
    effs.push_back({name, p.back().x, p.back().y / (p.back().x * one), p.back().y / one});
  }
  std::sort(effs.begin(), effs.end(), [](const Eff& a, const Eff& b) { return a.eff > b.eff; });
  if (effs.empty()) {
    c.reading = "No strategy has an N=1 point in this slice, so scaling efficiency is not defined.";
  } else {
    const Eff& hi = effs.front();
    c.reading = "Best scaling: " + hi.name + " reaches " + fmtRatio(hi.speedup) +
                " its N=1 throughput at N=" + intLabel(hi.n) + " (" +
                printfStr("%.0f", 100 * hi.eff) + " % efficiency)";
    if (effs.size() > 1) {
      const Eff& lo = effs.back();
      c.reading += "; worst: " + lo.name + " " + fmtRatio(lo.speedup) + " at N=" + intLabel(lo.n) +
                   " (" + printfStr("%.0f", 100 * lo.eff) + " %)";
    }
    c.reading += ".";
  }
  Axes a;
  a.xlabel = "ranks N";
  a.ylabel = "throughput (samples/s)";
  a.xcol = "n_gpus";
  a.ycol = "samples_per_s";
  a.xtics = ticsAt(ns, intLabel);
  buildLineChart(c, series, a, "set offsets graph 0.05, graph 0.05, 0, 0\n");
  return c;
}

// 5. Compute vs communication per epoch, stacked bars grouped by strategy.
Chart chartTimeBreakdown(const std::vector<Run>& runs) {
  Chart c;
  c.id = "time_breakdown";
  c.title = "Where does the time go";
  if (noOkRuns(c, runs)) return c;
  auto relevant = [](const Run& r) {
    return std::isfinite(r.meanWall()) &&
           (std::isfinite(meanOf(r.compute)) || std::isfinite(meanOf(r.comm)));
  };
  const Slice s = sliceOverStrategyAndN(runs, relevant);
  if (s.empty()) {
    c.reason = "no ok run records compute_s/comm_s per epoch";
    return c;
  }
  c.subtitle =
      "seconds per epoch (mean over epochs, median over repeats); other = wall - compute - "
      "communication; " +
      describeSlice(s, runs);
  struct Bar {
    int n;
    double compute, comm, other, wall;
  };
  std::map<std::string, std::map<int, std::vector<const Run*>>> byStrategy;
  for (const Run* r : s.runs) byStrategy[r->strategy][r->n].push_back(r);
  std::vector<std::string> names;
  for (const auto& kv : byStrategy) names.push_back(kv.first);
  std::sort(names.begin(), names.end(), strategyLess);
  std::map<std::string, std::vector<Bar>> bars;
  for (const auto& name : names) {
    for (const auto& [n, rs] : byStrategy[name]) {
      std::vector<double> cs, ms, ws;
      for (const Run* r : rs) {
        cs.push_back(meanOf(r->compute));
        ms.push_back(meanOf(r->comm));
        ws.push_back(r->meanWall());
      }
      Bar b{n, median(cs), median(ms), 0, median(ws)};
      if (!std::isfinite(b.compute)) b.compute = 0;
      if (!std::isfinite(b.comm)) b.comm = 0;
      b.other = std::max(0.0, b.wall - b.compute - b.comm);
      bars[name].push_back(b);
    }
  }
  std::ostringstream dat;
  dat << chartHeader(c)
      << "# One block per strategy (gnuplot: index 0, 1, ...); columns: label compute_s comm_s "
         "other_s wall_s\n";
  std::ostringstream plot;
  plot << "plot ";
  // Explicit group positions: gnuplot's automatic placement after a one-bar group (single has
  // only N=1) lets the next group overlap it.
  int at = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) at += static_cast<int>(bars[names[i - 1]].size()) + 1;
    if (i) dat << "\n\n";
    dat << "# [" << i << "] " << names[i] << "\n# label compute_s comm_s other_s wall_s\n";
    for (const Bar& b : bars[names[i]])
      dat << "N=" << b.n << " " << fmtDat(b.compute) << " " << fmtDat(b.comm) << " "
          << fmtDat(b.other) << " " << fmtDat(b.wall) << "\n";
    // newhistogram ... lt 1 restarts the colours, so compute/communication/other keep theirs in
    // every group; only the first group puts them in the key.
    const bool first = i == 0;
    if (i) plot << ", \\\n     ";
    plot << "newhistogram " << gpQuote(names[i]) << " lt 1 at " << at << ", '" << c.id
         << ".dat' index " << i << " using 2:xtic(1) " << (first ? "title 'compute'" : "notitle")
         << " lc rgb '#4c72b0', \\\n"
         << "     '' index " << i << " using 3 " << (first ? "title 'communication'" : "notitle")
         << " lc rgb '#dd8452', \\\n"
         << "     '' index " << i << " using 4 " << (first ? "title 'other'" : "notitle")
         << " lc rgb '#c7c7c7'";
  }
  plot << "\n";
  c.dat = dat.str();
  std::ostringstream settings;
  settings << "set ylabel 'seconds per epoch (s)'\n"
           << "set xlabel 'ranks N, grouped by strategy' offset 0,-1.2\n"
           << "set style data histograms\n"
           << "set style histogram rowstacked title offset 0,0.6\n"
           << "set style fill solid 0.9 border rgb '#555555'\n"
           << "set boxwidth 0.75\n"
           << "set yrange [0:*]\n"
           << "set grid noxtics ytics\n"
           << "set bmargin 6\n";
  c.gp = gpScript(c, settings.str(), plot.str());
  // Reading: the communication share at the largest N, most and least.
  int nMax = 0;
  for (const auto& [name, bs] : bars) {
    for (const Bar& b : bs) nMax = std::max(nMax, b.n);
  }
  std::vector<std::pair<double, std::string>> shares;
  for (const auto& [name, bs] : bars) {
    for (const Bar& b : bs) {
      if (b.n == nMax && b.wall > 0) shares.push_back({b.comm / b.wall, name});
    }
  }
  std::sort(shares.begin(), shares.end());
  if (shares.empty()) {
    c.reading = "No epoch wall time to split.";
  } else if (shares.size() == 1) {
    c.reading = "At N=" + std::to_string(nMax) + " communication takes " + fmtPct(shares[0].first) +
                " of " + shares[0].second + "'s epoch.";
  } else {
    c.reading = "At N=" + std::to_string(nMax) + " communication takes " +
                fmtPct(shares.back().first) + " of " + shares.back().second + "'s epoch and " +
                fmtPct(shares.front().first) + " of " + shares.front().second + "'s.";
  }
  return c;
}

// 6. Allreduce bus bandwidth vs message size, one line per algorithm and N.
Chart chartAllreduceBusbw(const std::vector<ArPoint>& points) {
  Chart c;
  c.id = "allreduce_busbw";
  c.title = "Allreduce bus bandwidth vs message size";
  // busbw is 0 by definition at N=1, which a bandwidth chart cannot show (nor a log axis).
  std::map<std::string, int> devices;
  for (const auto& p : points) {
    if (p.ok() && p.n > 1 && p.busbw > 0 && p.bytes > 0) ++devices[p.device];
  }
  if (devices.empty()) {
    c.reason = points.empty() ? "no allreduce records in the input"
                              : "no ok allreduce record with N >= 2 and a bus bandwidth";
    return c;
  }
  std::string device = devices.begin()->first;
  for (const auto& [d, count] : devices) {
    if (count > devices[device]) device = d;
  }
  std::set<std::string> transports;
  for (const auto& p : points) {
    if (p.ok() && p.device == device && p.algo != "library") transports.insert(p.transport);
  }
  const bool nameTransport = transports.size() > 1;
  struct Key {
    std::string algo, transport;
    int n;
    bool operator<(const Key& o) const {
      return std::tie(algo, transport, n) < std::tie(o.algo, o.transport, o.n);
    }
  };
  std::map<Key, std::map<double, std::vector<double>>> data;
  std::set<double> sizes, bws;
  std::set<int> ns;
  for (const auto& p : points) {
    if (!p.ok() || p.device != device || p.n < 2 || !(p.busbw > 0) || p.bytes <= 0) continue;
    data[{p.algo, nameTransport && p.algo != "library" ? p.transport : "", p.n}][double(p.bytes)]
        .push_back(p.busbw);
    sizes.insert(double(p.bytes));
    bws.insert(p.busbw);
    ns.insert(p.n);
  }
  c.subtitle =
      "median time over timed iterations, busbw = algbw × 2(N-1)/N; device " + device +
      (transports.size() == 1 ? ", from-scratch algorithms over " + *transports.begin() : "") +
      (devices.size() > 1 ? " (" + std::to_string(devices.size() - 1) + " other device not shown)"
                          : "");
  std::vector<Key> keys;
  for (const auto& kv : data) keys.push_back(kv.first);
  // ring, param_server, library first (from scratch before the baseline), then N.
  auto algoRank = [](const std::string& a) {
    return a == "ring" ? 0 : a == "param_server" ? 1 : a == "library" ? 2 : 3;
  };
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    return std::make_tuple(algoRank(a.algo), a.algo, a.transport, a.n) <
           std::make_tuple(algoRank(b.algo), b.algo, b.transport, b.n);
  });
  std::vector<Series> series;
  struct Peak {
    double bw = 0, bytes = 0;
    int n = 0;
  };
  std::map<std::string, Peak> peaks;
  std::vector<std::string> algoOrder;
  for (const Key& k : keys) {
    Series ser;
    ser.title =
        k.algo + (k.transport.empty() ? "" : " over " + k.transport) + " N=" + std::to_string(k.n);
    ser.color = algoColor(k.algo);
    const auto nIndex = static_cast<int>(std::distance(ns.begin(), ns.find(k.n)));
    ser.dash = 1 + nIndex;
    static const int kPoints[] = {7, 5, 9, 11, 13, 15};
    ser.pointType = kPoints[nIndex % 6];
    ser.points = medianPoints(data[k]);
    const std::string name = k.algo + (k.transport.empty() ? "" : " over " + k.transport);
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
  Axes a;
  a.xlabel = "message size per rank (bytes)";
  a.ylabel = "bus bandwidth (GB/s)";
  a.xcol = "bytes";
  a.ycol = "busbw_gbps";
  a.logx = true;
  a.logxBase = 2;
  a.logy = spansDecade(bws);
  a.xtics = ticsAt(sizes, [](double b) { return fmtBytes(static_cast<long long>(b)); });
  std::string extra = "set offsets graph 0.02, graph 0.02, 0, 0\n";
  if (a.logy) extra += "set format y '%g'\n";
  buildLineChart(c, series, a, extra);
  return c;
}

// 7. Throughput vs per-device batch size, one line per strategy.
Chart chartBatchThroughput(const std::vector<Run>& runs) {
  Chart c;
  c.id = "batch_throughput";
  c.title = "Effect of batch size on throughput";
  StrategyLines l;
  if (!strategyLines(c, runs, {"strategy", "batch_size"}, "batch sizes",
                     [](const Run& r) { return static_cast<long long>(r.batch); },
                     [](const Run& r) { return r.samplesPerS; }, l))
    return c;
  c.subtitle = "samples/s of all ranks together, median over repeats; " + describeSlice(l.slice, runs);
  const auto g = growthPerStrategy(l.points);
  c.reading = "Batch " + intLabel(*l.xs.begin()) + " -> " + intLabel(*l.xs.rbegin()) +
              " per device: throughput changes " + growthRange(g) + ".";
  Axes a;
  a.xlabel = "batch size per device";
  a.ylabel = "throughput (samples/s)";
  a.xcol = "batch_size";
  a.ycol = "samples_per_s";
  // Batch sizes usually double: a base-2 axis spaces them evenly.
  a.logx = *l.xs.rbegin() / *l.xs.begin() >= 4;
  a.logxBase = 2;
  a.xtics = ticsAt(l.xs, intLabel);
  buildLineChart(c, l.series, a, "set offsets graph 0.05, graph 0.05, 0, 0\n");
  return c;
}

// ------------------------------------------------------------------------------------------
// gnuplot
// ------------------------------------------------------------------------------------------

// The path gnuplot would be executed from, or "" when there is none: a name with '/' is used as
// given, a bare name is searched in PATH (what execvp would do, decided before forking).
std::string resolveBinary(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

// gnuplot echoes the failing command and a caret before its message; the message line is the
// one naming the script ("x.gp" line 12: ...). Fall back to the first non-blank line.
std::string firstErrorLine(const std::string& err) {
  std::istringstream in(err);
  std::string line, first;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t^");
    if (b == std::string::npos) continue;
    const std::string trimmed = line.substr(b);
    if (first.empty()) first = trimmed;
    if (trimmed[0] == '"' && trimmed.find("\" line ") != std::string::npos) return trimmed;
  }
  return first;
}

// Runs `bin script` in `dir`. Returns "" on success, else a one-line reason.
std::string runGnuplot(const std::string& bin, const std::string& dir, const std::string& script) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> argv = {const_cast<char*>(bin.c_str()), const_cast<char*>(script.c_str()),
                             nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return std::string("fork: ") + std::strerror(err);
  }
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    // stdin at EOF: a stray `pause` in a restyled script cannot wait for a key.
    if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(devnull, 1) < 0 || ::dup2(fds[1], 2) < 0 ||
        ::chdir(dir.c_str()) != 0)
      ::_exit(126);
    ::execv(argv[0], argv.data());
    const char msg[] = "cannot execute gnuplot\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string err;
  char buf[4096];
  // A hung gnuplot must not hang the report: give each chart two minutes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool killed = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (err.size() < (1 << 20)) err.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) return "gnuplot took longer than 120 s and was stopped";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::string line = firstErrorLine(err);
  if (line.empty()) {
    line = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                             : "killed by signal " + std::to_string(WTERMSIG(status));
  }
  return "gnuplot failed: " + line;
}

// ------------------------------------------------------------------------------------------
// Files
// ------------------------------------------------------------------------------------------

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) TPB_THROW(Error, "report: cannot write '" << path.string() << "'");
}

void prepareOutDir(const std::string& outDir) {
  if (outDir.empty()) TPB_THROW(UsageError, "report: no output directory given (-o DIR)");
  std::error_code ec;
  const fs::path dir(outDir);
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    TPB_THROW(UsageError,
              "report: cannot write '" << outDir << "': it exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec)
    TPB_THROW(UsageError, "report: cannot create directory '" << outDir << "': " << ec.message());
  // Permission bits do not say it all (read-only mounts; root ignores them): try a file.
  const fs::path probe = dir / (".tpbench-write-test." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    TPB_THROW(UsageError, "report: cannot write in '" << outDir << "': " << std::strerror(err));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// ------------------------------------------------------------------------------------------
// Tables
// ------------------------------------------------------------------------------------------

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

std::string statusText(const std::string& status, const std::string& error, int count) {
  std::string s = status;
  if (count > 1) s = std::to_string(count) + " " + s;
  if (!error.empty()) s += ": " + error;
  return s;
}

// One row per configuration (repeats merged: median of their values) and status.
Table runsTable(const std::vector<Run>& runs) {
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
    if (x.strategy != y.strategy) return strategyLess(x.strategy, y.strategy);
    return std::make_tuple(x.n, x.batch, x.trainSize, x.epochsRequested, x.status) <
           std::make_tuple(y.n, y.batch, y.trainSize, y.epochsRequested, y.status);
  });
  // Scaling efficiency when a record lacks it: against the same config's N=1 median in the
  // merged data (the N=1 point may come from another file).
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
  t.header = {"strategy", "N",         "batch",          "train_size",
              "epochs",   "samples/s", "final accuracy", "scaling eff.",
              "status"};
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
                      fmtNum(median(sps)), std::isfinite(a) ? fmtPct(a) : "—",
                      std::isfinite(e) ? printfStr("%.0f", 100 * e) + " %" : "—",
                      statusText(r.status, r.error, static_cast<int>(g.runs.size()))});
  }
  return t;
}

Table allreduceTable(const std::vector<ArPoint>& points) {
  std::map<std::tuple<int, std::string, std::string, std::string, int, long long, std::string>,
           std::vector<const ArPoint*>>
      groups;
  auto algoRank = [](const std::string& a) {
    return a == "ring" ? 0 : a == "param_server" ? 1 : a == "library" ? 2 : 3;
  };
  for (const auto& p : points)
    groups[{algoRank(p.algo), p.algo, p.transport, p.device, p.n, p.bytes, p.status}].push_back(&p);
  Table t;
  t.header = {"algo", "transport", "device", "N", "bytes", "median µs", "busbw GB/s", "status"};
  for (const auto& [k, ps] : groups) {
    std::vector<double> us, bw;
    for (const ArPoint* p : ps) us.push_back(p->medianUs), bw.push_back(p->busbw);
    const ArPoint& p = *ps.front();
    t.rows.push_back({p.algo, p.transport, p.device, std::to_string(p.n),
                      fmtBytes(p.bytes) + " (" + std::to_string(p.bytes) + ")", fmtNum(median(us)),
                      fmtNum(median(bw)),
                      statusText(p.status, p.error, static_cast<int>(ps.size()))});
  }
  return t;
}

std::string tableMarkdown(const Table& t) {
  if (t.rows.empty()) return "(none)\n";
  std::ostringstream os;
  os << "|";
  for (const auto& h : t.header) os << " " << mdCell(h) << " |";
  os << "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i) os << "---|";
  os << "\n";
  for (const auto& row : t.rows) {
    os << "|";
    for (const auto& cell : row) os << " " << mdCell(cell) << " |";
    os << "\n";
  }
  return os.str();
}

std::string tableHtml(const Table& t) {
  if (t.rows.empty()) return "<p>(none)</p>\n";
  std::ostringstream os;
  os << "<table>\n<tr>";
  for (const auto& h : t.header) os << "<th>" << htmlEscape(h) << "</th>";
  os << "</tr>\n";
  for (const auto& row : t.rows) {
    os << "<tr>";
    for (const auto& cell : row) os << "<td>" << htmlEscape(cell) << "</td>";
    os << "</tr>\n";
  }
  os << "</table>\n";
  return os.str();
}

std::string tableCsv(const Table& t) {
  std::ostringstream os;
  std::vector<std::string> cells;
  for (const auto& h : t.header) cells.push_back(csvCell(h));
  os << joinList(cells, ",") << "\n";
  for (const auto& row : t.rows) {
    cells.clear();
    for (const auto& c : row) cells.push_back(csvCell(c));
    os << joinList(cells, ",") << "\n";
  }
  return os.str();
}

Table metaTable(const json& meta) {
  Table t;
  t.header = {"field", "value"};
  if (meta.is_object()) {
    for (const auto& [k, v] : meta.items()) t.rows.push_back({k, jsonValueText(v)});
  }
  return t;
}

// ------------------------------------------------------------------------------------------
// Index pages
// ------------------------------------------------------------------------------------------

struct Outcome {
  const Chart* chart;
  bool drawn;
  std::string reason;  // why not drawn
  bool filesWritten;   // .dat/.gp exist
};

std::string inputsLine(const std::vector<Input>& inputs) {
  std::vector<std::string> parts;
  for (const auto& in : inputs)
    parts.push_back("`" + in.path + "` (" + std::to_string(in.runs) + " runs, " +
                    std::to_string(in.allreduce) + " allreduce points)");
  return joinList(parts, ", ");
}

std::string indexMarkdown(const std::vector<Input>& inputs, const std::vector<Outcome>& outs,
                          const Table& runs, const Table& ar) {
  std::ostringstream os;
  os << "# tpbench report\n\n"
     << "From " << inputs.size() << " results file" << (inputs.size() > 1 ? "s" : "") << ": "
     << inputsLine(inputs)
     << ". Only records with status `ok` are charted; repeats are combined by their median.\n\n"
     << "## Charts\n\n| chart | id | status | reading |\n|---|---|---|---|\n";
  for (const auto& o : outs) {
    os << "| " << mdCell(o.chart->title) << " | `" << o.chart->id << "` | "
       << (o.drawn ? "drawn" : "skipped: " + mdCell(o.reason)) << " | " << mdCell(o.chart->reading)
       << " |\n";
  }
  for (const auto& o : outs) {
    const Chart& c = *o.chart;
    os << "\n### " << c.title << " (`" << c.id << "`)\n\n";
    if (!c.subtitle.empty()) os << "*" << c.subtitle << "*\n\n";
    if (o.drawn) os << "![" << c.title << "](" << c.id << ".png)\n\n";
    if (!c.reading.empty()) os << "**Reading:** " << c.reading << "\n\n";
    if (!o.drawn) os << "**Not drawn:** " << o.reason << "\n\n";
    if (o.filesWritten) {
      os << "Files: ";
      if (o.drawn) os << "[PNG](" << c.id << ".png) · [SVG](" << c.id << ".svg) · ";
      os << "[data](" << c.id << ".dat) · [gnuplot script](" << c.id << ".gp)\n";
    }
  }
  os << "\n## Training runs\n\nOne row per configuration and status; repeats merged by median "
        "(also in [runs.csv](runs.csv)). Scaling efficiency = samples/s ÷ (N × the same "
        "strategy's samples/s at N=1).\n\n"
     << tableMarkdown(runs)
     << "\n## Allreduce\n\nMedian over repeated points (also in "
        "[allreduce.csv](allreduce.csv)).\n\n"
     << tableMarkdown(ar) << "\n## Inputs\n";
  for (const auto& in : inputs)
    os << "\n### `" << in.path << "`\n\n" << tableMarkdown(metaTable(in.meta));
  return os.str();
}

std::string indexHtml(const std::vector<Input>& inputs, const std::vector<Outcome>& outs,
                      const Table& runs, const Table& ar) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tpbench "
        "report</title>\n"
     << "<style>\n"
     << "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\n"
     << "table{border-collapse:collapse;margin:1em 0;font-size:90%}\n"
     << "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\n"
     << "th{background:#f3f3f3}\nimg{max-width:100%;border:1px solid #eee}\n"
     << ".skipped{color:#a33}\n.sub{color:#555;font-style:italic}\ncode{background:#f6f6f6}\n"
     << "</style>\n</head>\n<body>\n<h1>tpbench report</h1>\n<p>From " << inputs.size()
     << " results file" << (inputs.size() > 1 ? "s" : "") << ": ";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    os << (i ? ", " : "") << "<code>" << htmlEscape(inputs[i].path) << "</code> (" << inputs[i].runs
       << " runs, " << inputs[i].allreduce << " allreduce points)";
  }
  os << ". Only records with status <code>ok</code> are charted; repeats are combined by their "
        "median.</p>\n"
     << "<h2>Charts</h2>\n<table>\n<tr><th>chart</th><th>id</th><th>status</th><th>reading</th></"
        "tr>\n";
  for (const auto& o : outs) {
    os << "<tr><td><a href=\"#" << o.chart->id << "\">" << htmlEscape(o.chart->title)
       << "</a></td><td><code>" << o.chart->id << "</code></td><td"
       << (o.drawn ? ">drawn" : " class=\"skipped\">skipped: " + htmlEscape(o.reason))
       << "</td><td>" << htmlEscape(o.chart->reading) << "</td></tr>\n";
  }
  os << "</table>\n";
  for (const auto& o : outs) {
    const Chart& c = *o.chart;
    os << "<h3 id=\"" << c.id << "\">" << htmlEscape(c.title) << " (<code>" << c.id
       << "</code>)</h3>\n";
    if (!c.subtitle.empty()) os << "<p class=\"sub\">" << htmlEscape(c.subtitle) << "</p>\n";
    // Relative references: the page opens from disk next to its images.
    if (o.drawn)
      os << "<p><a href=\"" << c.id << ".svg\"><img src=\"" << c.id << ".png\" alt=\""
         << htmlEscape(c.title) << "\"></a></p>\n";
    if (!c.reading.empty()) os << "<p><b>Reading:</b> " << htmlEscape(c.reading) << "</p>\n";
    if (!o.drawn)
      os << "<p class=\"skipped\"><b>Not drawn:</b> " << htmlEscape(o.reason) << "</p>\n";
    if (o.filesWritten) {
      os << "<p>Files: ";
      if (o.drawn)
        os << "<a href=\"" << c.id << ".png\">PNG</a> · <a href=\"" << c.id << ".svg\">SVG</a> · ";
      os << "<a href=\"" << c.id << ".dat\">data</a> · <a href=\"" << c.id
         << ".gp\">gnuplot script</a></p>\n";
    }
  }
  os << "<h2>Training runs</h2>\n<p>One row per configuration and status; repeats merged by median "
        "(also in "
        "<a href=\"runs.csv\">runs.csv</a>). Scaling efficiency = samples/s ÷ (N × the same "
        "strategy's "
        "samples/s at N=1).</p>\n"
     << tableHtml(runs) << "<h2>Allreduce</h2>\n<p>Median over repeated points (also in "
     << "<a href=\"allreduce.csv\">allreduce.csv</a>).</p>\n"
     << tableHtml(ar) << "<h2>Inputs</h2>\n";
  for (const auto& in : inputs)
    os << "<h3><code>" << htmlEscape(in.path) << "</code></h3>\n" << tableHtml(metaTable(in.meta));
  os << "</body>\n</html>\n";
  return os.str();
}

}  // namespace

ReportSummary writeReport(const ReportOptions& opt) {
  if (opt.inputs.empty()) TPB_THROW(UsageError, "report: no results file given");
  // Load every input before touching the output directory: a bad input leaves nothing behind.
  std::vector<Input> inputs;
  std::vector<Run> runs;
  std::vector<ArPoint> points;
  for (const auto& path : opt.inputs) {
    const ResultsFile f = ResultsFile::load(path);
    const json& doc = f.doc();
    Input in;
    in.path = path;
    in.meta = doc.value("meta", json::object());
    for (const auto& r : doc.at("runs")) {
      if (!r.is_object())
        TPB_THROW(UsageError,
                  "'" << path << "': runs[] holds a " << r.type_name() << ", not an object");
      runs.push_back(parseRun(r));
    }
    for (const auto& p : doc.at("allreduce")) {
      if (!p.is_object())
        TPB_THROW(UsageError,
                  "'" << path << "': allreduce[] holds a " << p.type_name() << ", not an object");
      points.push_back(parseAllreduce(p));
    }
    in.runs = doc.at("runs").size();
    in.allreduce = doc.at("allreduce").size();
    inputs.push_back(std::move(in));
  }
  prepareOutDir(opt.outDir);
  const fs::path dir(opt.outDir);

  std::vector<Chart> charts;
  charts.push_back(chartPsAccuracy(runs));
  charts.push_back(chartRingEpochTime(runs));
  charts.push_back(chartDataScaling(runs));
  charts.push_back(chartThroughputScaling(runs));
  charts.push_back(chartTimeBreakdown(runs));
  charts.push_back(chartAllreduceBusbw(points));
  charts.push_back(chartBatchThroughput(runs));

  const std::string gnuplot = resolveBinary(opt.gnuplot);
  const std::string noGnuplot = opt.gnuplot.empty() ? "gnuplot disabled" : "gnuplot not found";
  ReportSummary summary;
  std::vector<Outcome> outcomes;
  for (const Chart& c : charts) {
    // Files of an earlier report in the same directory would contradict this one.
    for (const char* ext : {".png", ".svg", ".gp", ".dat"}) {
      std::error_code ec;
      fs::remove(dir / (c.id + ext), ec);
    }
    Outcome o{&c, false, c.reason, false};
    if (c.hasData()) {
      writeText(dir / (c.id + ".dat"), c.dat);
      writeText(dir / (c.id + ".gp"), c.gp);
      o.filesWritten = true;
      if (gnuplot.empty()) {
        o.reason = noGnuplot;
      } else {
        o.reason = runGnuplot(gnuplot, dir.string(), c.id + ".gp");
        if (o.reason.empty()) {
          for (const char* ext : {".png", ".svg"}) {
            std::error_code ec;
            const auto size = fs::file_size(dir / (c.id + ext), ec);
            if (ec || size == 0) {
              o.reason = std::string("gnuplot wrote no ") + c.id + ext;
              break;
            }
          }
        }
      }
      o.drawn = o.reason.empty();
    }
    if (o.drawn) {
      summary.drawn.push_back(c.id);
    } else {
      summary.skipped.emplace_back(c.id, o.reason);
    }
    outcomes.push_back(o);
  }

  const Table runTable = runsTable(runs);
  const Table arTable = allreduceTable(points);
  writeText(dir / "runs.csv", tableCsv(runTable));
  writeText(dir / "allreduce.csv", tableCsv(arTable));
  writeText(dir / "index.md", indexMarkdown(inputs, outcomes, runTable, arTable));
  writeText(dir / "index.html", indexHtml(inputs, outcomes, runTable, arTable));
  return summary;
}

}  // namespace tpb
