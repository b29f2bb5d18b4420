// report/chart.h — what a chart is (Chart, Series, Axes), the pieces every chart is built from
// (slices of the runs, the gnuplot script skeleton, the shared line-chart builders) and the
// chart registry. Each chart is one file, report/charts/<id>.cc, that registers its builder:
//
//   namespace { void build(Chart& c, const Inputs& in) { ... }
//               ChartDef chart() { return {10, "my_chart", "My chart", build}; }
//               TPB_REGISTER_CHART(chart); }
//
// (the registration style of every extension: core/registry.h, comm/transports.h)
//
// and one entry in tests/report_charts_test.cc. The report draws charts in position order.
// A builder either fills c.dat, c.gp, c.subtitle and c.reading, or sets c.reason (why there is
// nothing to draw); the driver writes the files and runs gnuplot.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/input.h"
#include "report/style.h"

namespace tpb::report {

// ------------------------------------------------------------------------------------------
// Charts and their registry
// ------------------------------------------------------------------------------------------

struct Chart {
  std::string id, title, subtitle;
  std::string reason;   // why there is nothing to draw; empty when there is
  std::string reading;  // one line computed from the data
  std::string dat, gp;  // file contents
  bool hasData() const { return reason.empty(); }
};

using ChartBuilder = void (*)(Chart& c, const Inputs& in);

struct ChartDef {
  int position = 0;  // place in the index: charts are built and listed by increasing position
  std::string id;    // file name stem: <id>.png, <id>.svg, <id>.gp, <id>.dat
  std::string title;
  ChartBuilder build = nullptr;
};

// Used by TPB_REGISTER_CHART (below), which adds a chart to the registry before main runs. The
// report library is an OBJECT library, so every chart's object file is linked, registration and all.
bool registerChart(ChartDef (*make)());

// Every registered chart, by position. Throws tpb::Error when two share an id or a position.
std::vector<ChartDef> registeredCharts();

// Runs def's builder on a chart that carries def's id and title.
Chart buildChart(const ChartDef& def, const Inputs& in);

// ------------------------------------------------------------------------------------------
// Slices. A chart varies one or two config fields (strategy, N, batch ...); every other field
// is held fixed. The slice shown is the one with the most distinct chart points (then the most
// runs), and its fixed values are named in the chart's subtitle.
// ------------------------------------------------------------------------------------------

struct Slice {
  nlohmann::json key = nlohmann::json::object();
  std::vector<const Run*> runs;
  int others = 0;  // slices with data for this chart that are not shown
  bool empty() const { return runs.empty(); }
};

using RunPredicate = std::function<bool(const Run&)>;

// r's config without the `varying` fields and those that differ between otherwise equal runs
// for reasons that are no part of the experiment (repeat_index, transport, max_steps).
nlohmann::json sliceKey(const Run& r, const std::set<std::string>& varying);

// Among the ok runs that are `relevant`, the slice with the most distinct pointId values (then
// the most runs). `required`: strategies a comparison chart needs; a slice holding all of them
// wins over one with more points but without them.
Slice pickSlice(const std::vector<Run>& runs, const std::set<std::string>& varying,
                const RunPredicate& relevant, const std::function<std::string(const Run&)>& pointId,
                const std::vector<std::string>& required = {});

// The slice where only strategy and n_gpus vary.
Slice sliceOverStrategyAndN(const std::vector<Run>& runs, const RunPredicate& relevant,
                            const std::vector<std::string>& required = {});

// "N=2, batch 64/device, 8192 samples/epoch, 3 epochs" plus any other held field that takes
// more than one value across the inputs, and how many other slices are not shown.
std::string describeSlice(const Slice& s, const std::vector<Run>& all);

// The first of `names` with no run in `s`; null when all are there.
const std::string* firstMissing(const Slice& s, const std::vector<std::string>& names);

// True (and c.reason set) when `runs` holds no ok run, so there is nothing to chart.
bool noOkRuns(Chart& c, const std::vector<Run>& runs);

// ------------------------------------------------------------------------------------------
// gnuplot scripts and data
// ------------------------------------------------------------------------------------------

struct Point {
  double x = 0, y = 0;
  int samples = 0;  // records the median was taken over
  // The spread around y: the smallest and largest value measured (repeats, or a collective's
  // fastest and slowest timed iteration). lo == hi == y for a single value without spread.
  double lo = 0, hi = 0;
  // Some record behind it ran on a busy machine (its machine.busy): drawn hollow, with a key entry
  // saying so, since its value is the load's as much as the strategy's.
  bool busy = false;
  bool hasSpread() const { return hi > lo; }
};

// Whether a and b differ by no more than their measured spread: their [lo, hi] ranges overlap.
// A reading states such a difference as "within noise" rather than as a ratio of medians.
bool withinNoise(const Point& a, const Point& b);

struct Series {
  std::string title;
  std::string color;
  int dash = 1;
  int pointType = 7;          // 0: a line without points
  std::vector<Point> points;  // sorted by x
};

struct Axes {
  std::string xlabel, ylabel;
  bool logx = false, logy = false;
  int logxBase = 10;
  std::string xtics;  // gnuplot tic list "(...)" or "" for automatic
  std::string xcol = "x", ycol = "y";
};

// The commented header every .dat file starts with.
std::string chartHeader(const Chart& c);

// The whole script around `settings` and `plot`: PNG first, then the same plot to SVG by
// `replot`, title and wrapped subtitle as labels in screen coordinates.
std::string gpScript(const Chart& c, const std::string& settings, const std::string& plot,
                     const std::string& key = "set key outside right top Left reverse\n");

// Line charts keep one gnuplot data block per series (blocks separated by two blank lines,
// selected with `index i`), so a series can be restyled or dropped without touching the others.
// Each row carries the point's spread (lo, hi); a series with some spread is drawn with error
// bars from lo to hi. A busy point (Point::busy, its row's last column 1) is drawn hollow, and the
// key then says what hollow means. Fills c.dat and c.gp.
void buildLineChart(Chart& c, const std::vector<Series>& series, const Axes& a,
                    const std::string& extraSettings = "",
                    const std::string& key = "set key outside right top Left reverse\n");
// One point per message size: the median bus bandwidth of `byBytes`' records, spread from the
// lowest to the highest bus bandwidth any of their timed iterations reached (CollectivePoint::busbwLo, Hi).
std::vector<Point> busbwPoints(const std::map<double, std::vector<const CollectivePoint*>>& byBytes);

// One line of a collective chart: the points of one op, algorithm, transport (where the
// from-scratch algorithms ran over several), device, node count, N, element type and reduction;
// an imported file's points (CollectivePoint::imported) a line of their own per file.
struct CurveKey {
  std::string op, algo, transport, device, gpu, dtype, redop;  // gpu: imported curves only
  long long nodes = 1;
  int n = 0;
  int file = -1;  // the input an imported curve came from; -1 for tpbench's own points
  bool operator<(const CurveKey& o) const;
};

// How the lines of a collective chart are keyed and named, from the points it draws: a legend
// says what tells a line from the others on the same chart ("ring over shm N=4 (cpu)", "nccl-tests
// 16 ranks, 2 nodes"), and the subtitle what they all are.
class CurveNames {
 public:
  // `showOp`: the chart draws several ops, so each title starts with its op. `alwaysN`: own
  // titles say N even where the chart has one.
  CurveNames(const std::vector<const CollectivePoint*>& drawn, const Inputs& in, bool showOp = false,
             bool alwaysN = true);
  CurveKey keyOf(const CollectivePoint& p) const;
  std::string title(const CurveKey& k) const;
  // The title without N (own curves), for a reading that names an algorithm's peak over its Ns.
  std::string algoTitle(const CurveKey& k) const;
  // "tpbench's points: median time over timed iterations ...; device cpu; imported from nccl-tests:
  // x.json (16 ranks, 2 nodes, NVIDIA H100 80GB HBM3): its mean time per iteration".
  std::string subtitle() const;
  bool hasOwn() const { return hasOwn_; }

 private:
  std::string baseTitle(const CurveKey& k, bool withN) const;
  const Inputs& in_;
  bool showOp_, alwaysN_, hasOwn_ = false, nameTransport_ = false, nameDevice_ = false, nameGpu_ = false;
  std::set<std::string> devices_, ownTransports_;
  std::set<int> ownNs_;
  std::map<int, std::set<std::string>> importedWhere_;  // file -> "16 ranks, 2 nodes, GPU" of its curves
  std::map<int, std::string> importedTool_;            // file -> "nccl-tests" or "rccl-tests"
  std::set<std::string> ambiguous_;           // imported titles that two files share
};

// The sizes a log-scale size axis labels: all of them up to kMaxSizeTics, else at most that many,
// evenly spread on the log scale (nccl-tests' 8 B..16 GB in steps of 2 is 32 sizes, whose labels
// would run into each other).
inline constexpr std::size_t kMaxSizeTics = 12;
std::set<double> sizeTics(const std::set<double>& sizes);

// A bus-bandwidth line chart against message size (log2 x, log y when the values span a decade),
// as the collective charts draw it.
void buildBusbwChart(Chart& c, const std::vector<Series>& series, const std::set<double>& sizes,
                     const std::set<double>& bws, const std::string& xlabel);

// Plot elements, each led by a comma and a continued line, that redraw the rows `rows` selects
// ("'f.dat' index 2 using 1:($6 > 0 ? $2 : 1/0)") hollow: gnuplot's filled marker of `pointType`
// (a filled circle where it has none) painted white, then its outline in `color`.
std::string hollowPoints(const std::string& rows, int pointType, const std::string& color, double size);
// The key entry, led the same way, that says what a hollow point means: added once where some are.
extern const char* const kBusyKeyEntry;

// Axes from columns xcol and ycol, with tics at `xs` labelled as whole numbers.
Axes wholeXAxes(const std::set<double>& xs, const std::string& xlabel, const std::string& xcol,
                const std::string& ylabel, const std::string& ycol);

// A line chart against the number of ranks N, with tics at the Ns present.
void buildLinesOverN(Chart& c, const std::vector<Series>& series, const std::set<double>& ns,
                     const std::string& ylabel, const std::string& ycol);

// Explicit tics at the values present: N=1,2,4 or batch 32,64,128 read better than 1.5, 2.5.
std::string ticsAt(const std::set<double>& xs, const std::function<std::string(double)>& label);

// Logarithmic axes once the values span a decade: the small end stays readable.
bool spansDecade(const std::set<double>& xs);

// ------------------------------------------------------------------------------------------
// Per-strategy data
// ------------------------------------------------------------------------------------------

// series name -> x -> values
using SeriesData = std::map<std::string, std::map<double, std::vector<double>>>;
// series name -> the xs where some run that gave a value was busy (Run::busy)
using BusyXs = std::map<std::string, std::set<double>>;

// A per-run value (skipped where NaN) by series name and x, over `runs`; where `busy` is given, the
// xs of each series that a busy run contributed to.
SeriesData collect(const std::vector<const Run*>& runs,
                   const std::function<std::string(const Run&)>& seriesOf,
                   const std::function<double(const Run&)>& xOf,
                   const std::function<double(const Run&)>& yOf, BusyXs* busy = nullptr);

// The busy xs of one series of `busy` (empty when it has none).
const std::set<double>& busyXsOf(const BusyXs& busy, const std::string& series);

// One point per x: the median of its values, with their min and max as its spread; busy at the
// xs in `busyXs`.
std::vector<Point> medianPoints(const std::map<double, std::vector<double>>& byX,
                                const std::set<double>& busyXs = {});

// The point at x, or null.
const Point* pointAt(const std::vector<Point>& pts, double x);

// The strategies of `data` in display order.
std::vector<std::string> sortedStrategies(const SeriesData& data, const Styles& styles);

// A strategy's line: its label (name and origin, Styles::label), its colour, the medians of its
// values with their spread, busy at the xs in `busyXs`.
Series strategySeries(const std::string& name, const std::map<double, std::vector<double>>& byX,
                      const Styles& styles, const std::set<double>& busyXs = {});

// Adds every x of `data` to `xs`; true when some series has >= 2 of them.
bool someSeriesHasTwoX(const SeriesData& data, std::set<double>& xs);

// y at x, or NaN.
double valueAt(const std::vector<Point>& pts, double x);

// Per strategy, the growth of a value between the smallest and the largest x it has.
struct Growth {
  std::string strategy;
  double x0, x1, ratio;
  bool noise = false;  // the two ends are within noise of each other (withinNoise)
};
std::vector<Growth> growthPerStrategy(const std::map<std::string, std::vector<Point>>& pts);

// "3.90x (ring_all_reduce) to 4.10x (ddp)", or one value when only one exists; a growth within
// noise says so ("1.02x (ddp, within noise)").
std::string growthRange(const std::vector<Growth>& g);

// One line per strategy: a per-run value against one numeric setting (train_size, batch_size),
// over the slice of runs with the most such points. Both "scaling with X" charts use it.
struct StrategyLines {
  Slice slice;
  std::set<double> xs;
  std::vector<Series> series;
  std::map<std::string, std::vector<Point>> points;
};

// Fills `out` and returns true when some strategy has runs at >= 2 values of the setting;
// otherwise sets c.reason ("needs runs at >= 2 <what> ...; found <values>") and returns false.
bool strategyLines(Chart& c, const Inputs& in, const std::set<std::string>& varying,
                   const std::string& what, const std::function<long long(const Run&)>& setting,
                   const std::function<double(const Run&)>& value, StrategyLines& out);

}  // namespace tpb::report

#define TPB_CHART_CONCAT2(a, b) a##b
#define TPB_CHART_CONCAT(a, b) TPB_CHART_CONCAT2(a, b)
#define TPB_REGISTER_CHART(fn) \
  static const bool TPB_CHART_CONCAT(tpbRegisteredChart_, __LINE__) = ::tpb::report::registerChart(fn)
