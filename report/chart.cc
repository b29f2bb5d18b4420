// report/chart.cc — see chart.h.
#include "report/chart.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "report/escape.h"
#include "report/format.h"
#include "report/style.h"

namespace tpb::report {

using nlohmann::json;

// ------------------------------------------------------------------------------------------
// Registry
// ------------------------------------------------------------------------------------------

namespace {

// Filled by the registrations during static initialisation; a function-local static so that it
// exists before the first registration runs, whatever the order of the object files.
std::vector<ChartDef>& registry() {
  static std::vector<ChartDef> charts;
  return charts;
}

}  // namespace

bool registerChart(ChartDef (*make)()) {
  registry().push_back(make());
  return true;
}

std::vector<ChartDef> registeredCharts() {
  std::vector<ChartDef> charts = registry();
  std::sort(charts.begin(), charts.end(),
            [](const ChartDef& a, const ChartDef& b) { return a.position < b.position; });
  for (std::size_t i = 1; i < charts.size(); ++i) {
    if (charts[i].position == charts[i - 1].position)
      TPB_THROW(Error, "report: charts '" << charts[i - 1].id << "' and '" << charts[i].id
                                          << "' share position " << charts[i].position);
    for (std::size_t j = 0; j < i; ++j) {
      if (charts[i].id == charts[j].id)
        TPB_THROW(Error, "report: chart id '" << charts[i].id << "' is registered twice");
    }
  }
  return charts;
}

Chart buildChart(const ChartDef& def, const Inputs& in) {
  Chart c;
  c.id = def.id;
  c.title = def.title;
  def.build(c, in);
  return c;
}

// ------------------------------------------------------------------------------------------
// Slices
// ------------------------------------------------------------------------------------------

json sliceKey(const Run& r, const std::set<std::string>& varying) {
  // How a strategy communicates (transport, library) does not split a comparison of strategies.
  static const std::set<std::string> incidental = {"repeat_index", "transport", "max_steps", "library"};
  json k = r.config;
  for (const auto& f : incidental) k.erase(f);
  for (const auto& f : varying) k.erase(f);
  return k;
}

Slice pickSlice(const std::vector<Run>& runs, const std::set<std::string>& varying,
                const RunPredicate& relevant, const std::function<std::string(const Run&)>& pointId,
                const std::vector<std::string>& required) {
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

Slice sliceOverStrategyAndN(const std::vector<Run>& runs, const RunPredicate& relevant,
                            const std::vector<std::string>& required) {
  return pickSlice(runs, {"strategy", "n_gpus"}, relevant,
                   [](const Run& r) { return r.strategy + "|" + std::to_string(r.n); }, required);
}

std::string describeSlice(const Slice& s, const std::vector<Run>& all) {
  std::vector<std::string> parts;
  const json& k = s.key;
  if (k.contains("n_gpus")) parts.push_back("N=" + valueText(k["n_gpus"]));
  if (k.contains("batch_size")) parts.push_back("batch " + valueText(k["batch_size"]) + "/device");
  if (k.contains("train_size")) parts.push_back(valueText(k["train_size"]) + " samples/epoch");
  if (k.contains("epochs")) parts.push_back(valueText(k["epochs"]) + " epochs");
  static const std::set<std::string> named = {"n_gpus", "batch_size", "train_size", "epochs"};
  for (const auto& [field, value] : k.items()) {
    if (named.count(field)) continue;
    std::set<std::string> seen;
    for (const auto& r : all) {
      if (r.ok() && r.config.contains(field)) seen.insert(r.config[field].dump());
    }
    if (seen.size() > 1) parts.push_back(field + " " + valueText(value));
  }
  std::string text = joinList(parts, ", ");
  if (s.others > 0)
    text += " (" + std::to_string(s.others) + " other config" + (s.others > 1 ? "s" : "") +
            " not shown: report --where KEY=VALUE draws another)";
  return text;
}

const std::string* firstMissing(const Slice& s, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (!std::any_of(s.runs.begin(), s.runs.end(),
                     [&](const Run* r) { return r->strategy == name; }))
      return &name;
  }
  return nullptr;
}

bool noOkRuns(Chart& c, const std::vector<Run>& runs) {
  if (std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.ok(); })) return false;
  c.reason = runs.empty() ? "no training runs in the input" : "no training run with status ok";
  return true;
}

// ------------------------------------------------------------------------------------------
// gnuplot scripts and data
// ------------------------------------------------------------------------------------------

namespace {

constexpr int kWidthPx = 1100, kHeightPx = 620;

// Breaks a subtitle into lines of at most `width` characters at white space (line breaks
// included): gnuplot does not wrap, and a long single line runs off both sides of the canvas.
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

double lowEnd(const Point& p) { return p.hasSpread() ? p.lo : p.y; }
double highEnd(const Point& p) { return p.hasSpread() ? p.hi : p.y; }

// The columns and style of a series' plot: error bars (columns 4 and 5) where it has spread.
std::string styleOf(const Series& s) {
  const bool bars = std::any_of(s.points.begin(), s.points.end(), [](const Point& p) { return p.hasSpread(); });
  if (bars) return "1:2:4:5 with yerrorlines";
  return std::string("1:2 with ") + (s.pointType > 0 ? "linespoints" : "lines");
}

std::string axesSettings(const Axes& a) {
  std::ostringstream os;
  os << "set xlabel " << gnuplotString(a.xlabel) << "\n"
     << "set ylabel " << gnuplotString(a.ylabel) << "\n";
  if (a.logx) os << "set logscale x " << a.logxBase << "\n";
  if (a.logy) os << "set logscale y 10\n";
  if (!a.xtics.empty()) os << "set xtics " << a.xtics << "\n";
  if (!a.logy) os << "set yrange [0:*]\n";
  return os.str();
}

}  // namespace

std::string chartHeader(const Chart& c) {
  std::ostringstream os;
  os << "# tpbench report — " << c.id << ": " << gnuplotComment(c.title) << "\n";
  if (!c.subtitle.empty()) os << "# " << gnuplotComment(c.subtitle) << "\n";
  return os.str();
}

std::string gpScript(const Chart& c, const std::string& settings, const std::string& plot,
                     const std::string& key) {
  const auto sub = wrapWords(c.subtitle, 150);
  std::ostringstream os;
  os << "# " << c.id << ".gp — tpbench report chart \"" << gnuplotComment(c.title) << "\"\n"
     << "# Data: " << c.id << ".dat. Redraw from this directory: gnuplot " << c.id << ".gp\n"
     << "# (writes " << c.id << ".png and " << c.id << ".svg).\n"
     << "set encoding utf8\n"
     // noenhanced: strategy names contain '_', which enhanced text would turn into subscripts.
     << "set terminal pngcairo noenhanced size " << kWidthPx << "," << kHeightPx
     << " font 'Sans,11'\n"
     << "set output '" << c.id << ".png'\n"
     << "set label 101 " << gnuplotString(c.title) << " at screen 0.5, screen "
     << fmtDat(1 - 22.0 / kHeightPx) << " center font ',14'\n";
  for (std::size_t i = 0; i < sub.size(); ++i) {
    os << "set label " << 102 + i << " " << gnuplotString(sub[i]) << " at screen 0.5, screen "
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

void buildLineChart(Chart& c, const std::vector<Series>& series, const Axes& a,
                    const std::string& extraSettings, const std::string& key) {
  std::ostringstream dat;
  dat << chartHeader(c);
  dat << "# One block per series (gnuplot: index 0, 1, ...); columns: " << a.xcol << " " << a.ycol
      << " records (how many runs/points the median is over) lo hi (the spread: error bars) busy (1: some"
         " record behind the point ran on a busy machine; drawn hollow)\n";
  std::ostringstream plot;
  plot << "plot ";
  bool anyBusy = false;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    if (i) dat << "\n\n";
    dat << "# [" << i << "] " << gnuplotComment(s.title) << "\n";
    dat << "# " << a.xcol << " " << a.ycol << " records lo hi busy\n";
    for (const auto& p : s.points)
      dat << fmtDat(p.x) << " " << fmtDat(p.y) << " " << p.samples << " " << fmtDat(lowEnd(p)) << " "
          << fmtDat(highEnd(p)) << " " << (p.busy ? 1 : 0) << "\n";
    if (i) plot << ", \\\n     ";
    plot << "'" << c.id << ".dat' index " << i << " using " << styleOf(s) << " title "
         << gnuplotString(s.title) << " lc rgb " << gnuplotColor(s.color) << " dt " << s.dash << " lw 2";
    if (s.pointType > 0) plot << " pt " << s.pointType << " ps 1.2";
    if (std::none_of(s.points.begin(), s.points.end(), [](const Point& p) { return p.busy; })) continue;
    anyBusy = true;
    plot << hollowPoints("'" + c.id + ".dat' index " + std::to_string(i) + " using 1:($6 > 0 ? $2 : 1/0)",
                         s.pointType, s.color, 1.2);
  }
  if (anyBusy) plot << kBusyKeyEntry;
  plot << "\n";
  c.dat = dat.str();
  c.gp = gpScript(c, axesSettings(a) + extraSettings, plot.str(), key);
}

const char* const kBusyKeyEntry =
    ", \\\n     NaN with points pt 6 ps 1.2 lc rgb '#444444' title 'hollow: the machine was busy'";

std::string hollowPoints(const std::string& rows, int pointType, const std::string& color, double size) {
  // The filled marker painted white, then its outline in the series' colour.
  const int filled = pointType >= 5 && pointType % 2 == 1 ? pointType : 7;
  const std::string ps = fmtDat(size);
  return ", \\\n     " + rows + " with points pt " + std::to_string(filled) + " ps " + ps +
         " lc rgb '#ffffff' notitle, \\\n     " + rows + " with points pt " + std::to_string(filled - 1) + " ps " +
         ps + " lc rgb " + gnuplotColor(color) + " lw 2 notitle";
}

std::string ticsAt(const std::set<double>& xs, const std::function<std::string(double)>& label) {
  std::vector<std::string> parts;
  for (double x : xs) parts.push_back(gnuplotString(label(x)) + " " + fmtDat(x));
  return "(" + joinList(parts, ", ") + ")";
}

Axes wholeXAxes(const std::set<double>& xs, const std::string& xlabel, const std::string& xcol,
                const std::string& ylabel, const std::string& ycol) {
  Axes a;
  a.xlabel = xlabel;
  a.ylabel = ylabel;
  a.xcol = xcol;
  a.ycol = ycol;
  a.xtics = ticsAt(xs, intLabel);
  return a;
}

void buildLinesOverN(Chart& c, const std::vector<Series>& series, const std::set<double>& ns,
                     const std::string& ylabel, const std::string& ycol) {
  buildLineChart(c, series, wholeXAxes(ns, "ranks N", "n_gpus", ylabel, ycol),
                 "set offsets graph 0.05, graph 0.05, 0, 0\n");
}

bool spansDecade(const std::set<double>& xs) {
  return !xs.empty() && *xs.begin() > 0 && *xs.rbegin() / *xs.begin() >= 10;
}

// ------------------------------------------------------------------------------------------
// Per-strategy data
// ------------------------------------------------------------------------------------------

SeriesData collect(const std::vector<const Run*>& runs,
                   const std::function<std::string(const Run&)>& seriesOf,
                   const std::function<double(const Run&)>& xOf,
                   const std::function<double(const Run&)>& yOf, BusyXs* busy) {
  SeriesData out;
  for (const Run* r : runs) {
    const double y = yOf(*r);
    if (!std::isfinite(y)) continue;
    const std::string name = seriesOf(*r);
    const double x = xOf(*r);
    out[name][x].push_back(y);
    if (busy && r->busy) (*busy)[name].insert(x);
  }
  return out;
}

const std::set<double>& busyXsOf(const BusyXs& busy, const std::string& series) {
  static const std::set<double> none;
  const auto it = busy.find(series);
  return it == busy.end() ? none : it->second;
}

std::vector<Point> medianPoints(const std::map<double, std::vector<double>>& byX, const std::set<double>& busyXs) {
  std::vector<Point> pts;
  for (const auto& [x, ys] : byX) {
    Point p{x, median(ys), static_cast<int>(ys.size())};
    const auto [lo, hi] = std::minmax_element(ys.begin(), ys.end());
    p.lo = ys.empty() ? p.y : *lo;
    p.hi = ys.empty() ? p.y : *hi;
    p.busy = busyXs.count(x) > 0;
    pts.push_back(p);
  }
  return pts;
}

const Point* pointAt(const std::vector<Point>& pts, double x) {
  for (const auto& p : pts) {
    if (p.x == x) return &p;
  }
  return nullptr;
}

bool withinNoise(const Point& a, const Point& b) {
  return std::max(lowEnd(a), lowEnd(b)) <= std::min(highEnd(a), highEnd(b));
}

std::vector<std::string> sortedStrategies(const SeriesData& data, const Styles& styles) {
  std::vector<std::string> names;
  for (const auto& kv : data) names.push_back(kv.first);
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return styles.less(SeriesKind::Strategy, a, b);
  });
  return names;
}

Series strategySeries(const std::string& name, const std::map<double, std::vector<double>>& byX,
                      const Styles& styles, const std::set<double>& busyXs) {
  Series s;
  s.title = styles.label(SeriesKind::Strategy, name);  // "torch_ddp (PyTorch)": what drew it
  s.color = styles.color(SeriesKind::Strategy, name);
  s.points = medianPoints(byX, busyXs);
  return s;
}

bool someSeriesHasTwoX(const SeriesData& data, std::set<double>& xs) {
  bool two = false;
  for (const auto& [name, byX] : data) {
    for (const auto& kv : byX) xs.insert(kv.first);
    two = two || byX.size() >= 2;
  }
  return two;
}

double valueAt(const std::vector<Point>& pts, double x) {
  const Point* p = pointAt(pts, x);
  return p ? p->y : kNaN;
}

std::vector<Growth> growthPerStrategy(const std::map<std::string, std::vector<Point>>& pts) {
  std::vector<Growth> g;
  for (const auto& [name, p] : pts) {
    if (p.size() < 2 || !(p.front().y > 0)) continue;
    g.push_back({name, p.front().x, p.back().x, p.back().y / p.front().y, withinNoise(p.front(), p.back())});
  }
  std::sort(g.begin(), g.end(), [](const Growth& a, const Growth& b) { return a.ratio < b.ratio; });
  return g;
}

std::string growthRange(const std::vector<Growth>& g) {
  auto noise = [](const Growth& x) { return x.noise ? std::string(", within noise") : std::string(); };
  if (g.size() == 1) return fmtRatio(g[0].ratio) + " for " + g[0].strategy + noise(g[0]);
  return fmtRatio(g.front().ratio) + " (" + g.front().strategy + noise(g.front()) + ") to " +
         fmtRatio(g.back().ratio) + " (" + g.back().strategy + noise(g.back()) + ")";
}

bool strategyLines(Chart& c, const Inputs& in, const std::set<std::string>& varying,
                   const std::string& what, const std::function<long long(const Run&)>& setting,
                   const std::function<double(const Run&)>& value, StrategyLines& out) {
  const std::vector<Run>& runs = in.runs;
  if (noOkRuns(c, runs)) return false;
  auto relevant = [&](const Run& r) { return setting(r) > 0 && std::isfinite(value(r)); };
  out.slice = pickSlice(runs, varying, relevant, [&](const Run& r) {
    return r.strategy + "|" + std::to_string(setting(r));
  });
  BusyXs busy;
  const auto data = collect(
      out.slice.runs, [](const Run& r) { return r.strategy; },
      [&](const Run& r) { return double(setting(r)); }, value, &busy);
  if (!someSeriesHasTwoX(data, out.xs)) {
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
  for (const auto& name : sortedStrategies(data, in.styles)) {
    out.series.push_back(strategySeries(name, data.at(name), in.styles, busyXsOf(busy, name)));
    out.points[name] = out.series.back().points;
  }
  return true;
}

bool CurveKey::operator<(const CurveKey& o) const {
  return std::tie(file, op, algo, transport, device, gpu, nodes, n, dtype, redop) <
         std::tie(o.file, o.op, o.algo, o.transport, o.device, o.gpu, o.nodes, o.n, o.dtype, o.redop);
}

namespace {

std::string baseName(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// " bfloat16", " max": what a curve of another type or reduction than tpbench's own adds.
std::string typeText(const CurveKey& k) {
  return (k.dtype == "float32" ? "" : " " + k.dtype) + (k.redop == "sum" ? "" : " " + k.redop);
}

}  // namespace

CurveNames::CurveNames(const std::vector<const CollectivePoint*>& drawn, const Inputs& in, bool showOp, bool alwaysN)
    : in_(in), showOp_(showOp), alwaysN_(alwaysN) {
  std::set<std::string> importedGpus;
  for (const CollectivePoint* p : drawn) {
    devices_.insert(p->device);
    if (p->imported) {
      importedGpus.insert(p->gpu);
      importedWhere_[static_cast<int>(p->file)].insert(p->whereText());
      importedTool_[static_cast<int>(p->file)] = p->algo;
      continue;
    }
    hasOwn_ = true;
    ownNs_.insert(p->n);
    // A library's transport is its own business; the other algorithms name theirs.
    if (in.styles.origin(SeriesKind::Algorithm, p->algo) != kOriginLibrary) ownTransports_.insert(p->transport);
  }
  nameTransport_ = ownTransports_.size() > 1;
  nameDevice_ = devices_.size() > 1;
  nameGpu_ = importedGpus.size() > 1;
  // Two imported files whose curves would read alike are told apart by their file's name.
  std::map<std::string, std::set<int>> filesOf;
  for (const CollectivePoint* p : drawn)
    if (p->imported) filesOf[baseTitle(keyOf(*p), true)].insert(static_cast<int>(p->file));
  for (const auto& [title, files] : filesOf)
    if (files.size() > 1) ambiguous_.insert(title);
}

CurveKey CurveNames::keyOf(const CollectivePoint& p) const {
  CurveKey k;
  k.op = p.op;
  k.algo = p.algo;
  k.device = p.device;
  k.nodes = p.nodes;
  k.n = p.n;
  k.dtype = p.dtype;
  k.redop = p.redop;
  if (p.imported) {
    k.file = static_cast<int>(p.file);
    k.gpu = p.gpu;
  } else if (nameTransport_ && in_.styles.origin(SeriesKind::Algorithm, p.algo) != kOriginLibrary) {
    k.transport = p.transport;
  }
  return k;
}

std::string CurveNames::baseTitle(const CurveKey& k, bool withN) const {
  std::string t = showOp_ ? k.op + " " + k.algo : k.algo;
  if (k.file >= 0) {
    t += " " + std::to_string(k.n) + (k.n == 1 ? " rank" : " ranks");
    if (k.nodes > 1) t += ", " + std::to_string(k.nodes) + " nodes";
    if (nameGpu_ && !k.gpu.empty()) t += ", " + k.gpu;
  } else {
    if (!k.transport.empty()) t += " over " + k.transport;
    if (withN && (alwaysN_ || ownNs_.size() > 1)) t += " N=" + std::to_string(k.n);
    if (k.nodes > 1) t += " on " + std::to_string(k.nodes) + " nodes";
  }
  if (nameDevice_) t += " (" + k.device + ")";
  return t + typeText(k);
}

std::string CurveNames::title(const CurveKey& k) const {
  std::string t = baseTitle(k, true);
  if (k.file >= 0 && ambiguous_.count(t) && static_cast<std::size_t>(k.file) < in_.files.size())
    t += " (" + baseName(in_.files[static_cast<std::size_t>(k.file)].path) + ")";
  return t;
}

std::string CurveNames::algoTitle(const CurveKey& k) const { return baseTitle(k, false); }

std::string CurveNames::subtitle() const {
  std::vector<std::string> parts;
  if (hasOwn_) {
    std::string own = "tpbench's points: median time over timed iterations (error bars: slowest to fastest iteration)";
    if (ownTransports_.size() == 1) own += ", algorithms other than the libraries over " + *ownTransports_.begin();
    parts.push_back(own);
  }
  parts.push_back((devices_.size() > 1 ? "devices " : "device ") + joinList({devices_.begin(), devices_.end()}, ", "));
  std::vector<std::string> files;
  for (const auto& [file, wheres] : importedWhere_) {
    const std::string path = static_cast<std::size_t>(file) < in_.files.size() ? baseName(in_.files[file].path) : "?";
    files.push_back(importedTool_.at(file) + " in " + path + " (" + joinList({wheres.begin(), wheres.end()}, "; ") + ")");
  }
  if (!files.empty()) parts.push_back("imported, at the log's mean time per iteration: " + joinList(files, ", "));
  return joinList(parts, "; ");
}

std::vector<Point> busbwPoints(const std::map<double, std::vector<const CollectivePoint*>>& byBytes) {
  std::vector<Point> pts;
  for (const auto& [bytes, ps] : byBytes) {
    std::vector<double> bw, lo, hi;
    for (const CollectivePoint* p : ps) bw.push_back(p->busbw), lo.push_back(p->busbwLo()), hi.push_back(p->busbwHi());
    Point pt = medianPoints({{bytes, bw}}).front();
    pt.busy = std::any_of(ps.begin(), ps.end(), [](const CollectivePoint* p) { return p->busy; });
    const double l = *std::min_element(lo.begin(), lo.end()), h = *std::max_element(hi.begin(), hi.end());
    if (std::isfinite(l) && std::isfinite(h)) pt.lo = std::min(pt.lo, l), pt.hi = std::max(pt.hi, h);
    pts.push_back(pt);
  }
  return pts;
}

std::set<double> sizeTics(const std::set<double>& sizes) {
  if (sizes.size() <= kMaxSizeTics) return sizes;
  // Evenly spaced on the log axis: a size is labelled once it is far enough from the last.
  const double step = std::log2(*sizes.rbegin() / *sizes.begin()) / double(kMaxSizeTics - 1);
  std::set<double> tics;
  double last = 0;
  for (double x : sizes)
    if (tics.empty() || std::log2(x / last) >= step * 0.999) tics.insert(x), last = x;
  return tics;
}

void buildBusbwChart(Chart& c, const std::vector<Series>& series, const std::set<double>& sizes,
                     const std::set<double>& bws, const std::string& xlabel) {
  Axes a;
  a.xlabel = xlabel;
  a.ylabel = "bus bandwidth (GB/s)";
  a.xcol = "bytes";
  a.ycol = "busbw_gbps";
  a.logx = true;
  a.logxBase = 2;
  a.logy = spansDecade(bws);
  a.xtics = ticsAt(sizeTics(sizes), [](double b) { return fmtBytes(static_cast<long long>(b)); });
  std::string extra = "set offsets graph 0.02, graph 0.02, 0, 0\n";
  if (a.logy) extra += "set format y '%g'\n";
  buildLineChart(c, series, a, extra);
}

}  // namespace tpb::report
