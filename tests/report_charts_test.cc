// Tests for the chart registry (report/chart.h): every registered chart has an entry here saying
// what it does with tests/fixtures/report_small.json (drawn, or skipped with which reason), so a
// new chart without an entry fails; the registry keeps the index order; and the registrars
// survive linking into both this test binary and tpbench.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include "report/chart.h"
#include "report/predictions.h"
#include "report/report.h"
#include "tests/cli_util.h"
#include "tests/file_util.h"
#include "tests/report_util.h"

namespace tpb::report {
namespace {

namespace fs = std::filesystem;
using test::readText;

const std::string& kFixture = test::kReportFixture;
using test::gnuplotAvailable;

// Every chart, in the index order the report has always had, with what it does with the
// fixture: "" = drawn, else the reason it is skipped. A new chart needs its line here.
const std::vector<std::pair<std::string, std::string>> kCharts = {
    {"ps_accuracy", ""},        {"ring_epoch_time", ""}, {"data_scaling", ""},
    {"throughput_scaling", ""}, {"time_breakdown", ""},  {"allreduce_busbw", ""},
    {"collective_busbw", ""},
    {"batch_throughput", ""},
    {"bucket_size", ""},
    {"model_parallel_epoch_time", ""},
    {"pipeline_bubble", ""},
    {"step_model", ""},
    {"step_projection", ""},
    {"timeline", ""},
};

std::vector<std::string> expectedIds() {
  std::vector<std::string> ids;
  for (const auto& [id, outcome] : kCharts) ids.push_back(id);
  return ids;
}

std::vector<std::string> registeredIds() {
  std::vector<std::string> ids;
  for (const auto& def : registeredCharts()) ids.push_back(def.id);
  return ids;
}

// In this binary: each chart of kCharts is registered, in that order, and no other.
TEST(ReportChartRegistry, HasEveryChartInIndexOrder) { EXPECT_EQ(registeredIds(), expectedIds()); }

// In tpbench, linked from the same objects: its report lists the same charts (a static
// registrar dropped by the linker would leave its chart out of both lists).
TEST(ReportChartRegistry, TpbenchHasEveryChartInIndexOrder) {
  const fs::path dir = test::makeTempDir("tpb_report_cli");
  ASSERT_FALSE(dir.empty());
  const test::CliResult r =
      test::runCli({"report", kFixture, "-o", (dir / "out").string(), "--gnuplot", ""});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> listed;
  std::istringstream out(r.out);
  std::string line;
  const std::string prefix = "skipped: ";
  while (std::getline(out, line)) {
    if (line.rfind(prefix, 0) == 0)
      listed.push_back(line.substr(prefix.size(), line.find(':', prefix.size()) - prefix.size()));
  }
  EXPECT_EQ(listed, expectedIds()) << r.out;
  fs::remove_all(dir);
}

// One report of the fixture, drawn once for every chart's test.
class ReportChart : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::makeTempDir("tpb_report_charts");
    ASSERT_FALSE(dir_.empty());
    ReportOptions opt;
    opt.inputs = {kFixture};
    opt.traces = {test::kTraceFixture};
    opt.outDir = (dir_ / "report").string();
    summary_ = writeReport(opt);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static fs::path out() { return dir_ / "report"; }
  static inline fs::path dir_;
  static inline ReportSummary summary_;
};

TEST_P(ReportChart, DrawnOrSkippedAsItsEntrySays) {
  const std::string id = GetParam();
  const auto entry = std::find_if(kCharts.begin(), kCharts.end(),
                                  [&](const auto& e) { return e.first == id; });
  ASSERT_NE(entry, kCharts.end())
      << "chart '" << id << "' has no entry in kCharts (tests/report_charts_test.cc)";
  const std::string& expectedReason = entry->second;
  const std::string md = readText(out() / "index.md");
  const std::string html = readText(out() / "index.html");
  EXPECT_NE(md.find("(`" + id + "`)"), std::string::npos) << "listed in index.md";
  EXPECT_NE(html.find("<h3 id=\"" + id + "\">"), std::string::npos) << "listed in index.html";
  std::map<std::string, std::string> skipped(summary_.skipped.begin(), summary_.skipped.end());
  if (!expectedReason.empty()) {
    EXPECT_EQ(skipped[id], expectedReason);
    return;
  }
  if (!gnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed: '" << id << "' not drawn";
  EXPECT_EQ(skipped.count(id), 0u) << skipped[id];
  EXPECT_NE(std::find(summary_.drawn.begin(), summary_.drawn.end(), id), summary_.drawn.end());
  for (const char* ext : {".png", ".svg", ".gp", ".dat"})
    EXPECT_GT(fs::file_size(out() / (id + ext)), 0u) << ext;
  EXPECT_NE(md.find("](" + id + ".png)"), std::string::npos);
  EXPECT_NE(html.find("src=\"" + id + ".png\""), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(ReportRegistered, ReportChart, ::testing::ValuesIn(registeredIds()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// ------------------------------------------------------------------------------------------
// Spread and readings, on hand-made runs: error bars where repeats differ, "within noise" where
// a stated difference is inside the measured spread, every strategy drawn in the reading.
// ------------------------------------------------------------------------------------------

EntryRecord entryOf(int order, const std::string& color, const std::string& origin,
                    const std::string& referenceOf = "") {
  EntryRecord e;
  e.order = order;
  e.color = color;
  e.origin = origin;
  if (!referenceOf.empty()) e.referenceOf = referenceOf;
  return e;
}

// ring, ddp and torch_ddp as their records style them (torch_ddp in the near-identical red that
// older files carry for it).
Inputs stylesOfThree() {
  Inputs in;
  in.styles.add(SeriesKind::Strategy, "ring_all_reduce", entryOf(3, "#2ca02c", "from scratch"));
  in.styles.add(SeriesKind::Strategy, "ddp", entryOf(5, "#d62728", "builtin-equivalent"));
  in.styles.add(SeriesKind::Strategy, "torch_ddp", entryOf(20, "#a50f15", kOriginPyTorch, "ddp"));
  return in;
}

// One ok run per epoch time in `walls` (its repeats), a third of each epoch communicating.
void addRuns(Inputs& in, const std::string& strategy, int n, const std::vector<double>& walls) {
  for (std::size_t i = 0; i < walls.size(); ++i) {
    Run r;
    r.strategy = strategy;
    r.n = n;
    r.batch = 64;
    r.trainSize = 1024;
    r.epochsRequested = 1;
    r.status = "ok";
    r.config = {{"strategy", strategy}, {"n_gpus", n},         {"batch_size", 64},
                {"train_size", 1024},   {"epochs", 1},          {"repeat_index", static_cast<int>(i)}};
    r.wall = {walls[i]};
    r.compute = {walls[i] * 0.6};
    r.comm = {walls[i] / 3};
    r.samplesPerS = 1024 / walls[i];
    in.runs.push_back(r);
  }
}

Chart chartOf(const std::string& id, const Inputs& in) {
  for (const auto& def : registeredCharts()) {
    if (def.id == id) return buildChart(def, in);
  }
  ADD_FAILURE() << "no chart " << id;
  return {};
}

// ring and ddp overlap at N=2 and are far apart at N=1; torch_ddp runs at N=2 only.
Inputs ringDdpTorch() {
  Inputs in = stylesOfThree();
  addRuns(in, "ring_all_reduce", 1, {1.0, 1.01, 1.02});
  addRuns(in, "ddp", 1, {2.0, 2.1, 2.2});
  addRuns(in, "ring_all_reduce", 2, {1.0, 1.1, 1.2});
  addRuns(in, "ddp", 2, {1.15, 1.2, 1.3});
  addRuns(in, "torch_ddp", 2, {1.5, 1.6, 1.7});
  return in;
}

TEST(ReportReadings, RingReadingSaysWithinNoiseAndCoversTheReference) {
  const Chart c = chartOf("ring_epoch_time", ringDdpTorch());
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.reading.find("ring_all_reduce vs ddp per epoch: within noise (1.09x faster) at N=2, 2.08x faster at N=1"),
            std::string::npos)
      << c.reading;
  EXPECT_NE(c.reading.find("at N=2, fastest first: ring_all_reduce 1.1, ddp 1.2 (within noise), torch_ddp 1.6 s/epoch"),
            std::string::npos)
      << c.reading;
  EXPECT_NE(c.reading.find("torch_ddp vs ddp: 1.33x slower"), std::string::npos) << c.reading;
}

// Each series' rows carry the min and max of its repeats, drawn as error bars; the legend keeps
// the reference's origin, and the reference is not drawn in its rebuild's colour.
TEST(ReportReadings, LineChartsDrawTheSpreadAsErrorBars) {
  const Inputs in = ringDdpTorch();
  const Chart c = chartOf("ring_epoch_time", in);
  EXPECT_NE(c.dat.find("\n2 1.1 3 1 1.2 0\n"), std::string::npos) << c.dat;  // x y records lo hi busy
  EXPECT_NE(c.gp.find("index 0 using 1:2:4:5 with yerrorlines"), std::string::npos) << c.gp;
  EXPECT_NE(c.gp.find("\"torch_ddp (PyTorch)\""), std::string::npos) << c.gp;
  EXPECT_EQ(c.gp.find("#a50f15"), std::string::npos) << c.gp;
  // One value per point: no spread, no error bars.
  Inputs one = stylesOfThree();
  addRuns(one, "ring_all_reduce", 1, {1.0});
  addRuns(one, "ring_all_reduce", 2, {1.1});
  addRuns(one, "ddp", 2, {1.2});
  const Chart plain = chartOf("ring_epoch_time", one);
  EXPECT_EQ(plain.gp.find("yerrorlines"), std::string::npos) << plain.gp;
  EXPECT_NE(plain.dat.find("\n2 1.1 1 1.1 1.1 0\n"), std::string::npos) << plain.dat;
  EXPECT_EQ(plain.reading.find("within noise"), std::string::npos) << plain.reading;
}

// x -> the last column of each row of block `index` of a line chart's .dat.
std::map<std::string, std::string> busyColumn(const std::string& dat, int index) {
  std::map<std::string, std::string> out;
  std::istringstream in(dat);
  std::string line;
  int block = -1;
  while (std::getline(in, line)) {
    if (line.rfind("# [", 0) == 0) block = std::stoi(line.substr(3));
    if (block != index || line.empty() || line[0] == '#') continue;
    out[line.substr(0, line.find(' '))] = line.substr(line.rfind(' ') + 1);
  }
  return out;
}

// A point one of whose runs ran on a busy machine is drawn hollow (its row's busy column 1, a
// white filled marker under the series' hollow one), and the key says what hollow means; a chart
// with no busy point has neither. Every chart over runs marks them alike.
TEST(ReportReadings, PointsFromABusyMachineAreDrawnHollow) {
  Inputs in = ringDdpTorch();
  const Chart quiet = chartOf("ring_epoch_time", in);
  EXPECT_EQ(quiet.gp.find("hollow"), std::string::npos) << quiet.gp;
  for (auto& r : in.runs)
    if (r.strategy == "ddp" && r.n == 2 && r.config.at("repeat_index") == 1) r.busy = true;
  for (const char* id : {"ring_epoch_time", "throughput_scaling"}) {
    const Chart c = chartOf(id, in);
    ASSERT_TRUE(c.hasData()) << id << ": " << c.reason;
    // ddp is the second series drawn (display order ring_all_reduce, ddp, torch_ddp): its N=2 row
    // ends in 1, its N=1 row and every other series' rows in 0.
    EXPECT_EQ(busyColumn(c.dat, 1), (std::map<std::string, std::string>{{"1", "0"}, {"2", "1"}})) << c.dat;
    EXPECT_EQ(busyColumn(c.dat, 0), (std::map<std::string, std::string>{{"1", "0"}, {"2", "0"}})) << c.dat;
    EXPECT_NE(c.gp.find("index 1 using 1:($6 > 0 ? $2 : 1/0) with points pt 7 ps 1.2 lc rgb '#ffffff' notitle"),
              std::string::npos)
        << id << "\n" << c.gp;
    EXPECT_NE(c.gp.find("index 1 using 1:($6 > 0 ? $2 : 1/0) with points pt 6 ps 1.2"), std::string::npos) << c.gp;
    EXPECT_EQ(c.gp.find("index 0 using 1:($6"), std::string::npos) << c.gp;
    EXPECT_NE(c.gp.find("title 'hollow: the machine was busy'"), std::string::npos) << c.gp;
  }
  // A collective point on a busy machine marks its size's point.
  CollectivePoint a;
  a.busbw = 10;
  a.medianUs = a.minUs = a.maxUs = 100;
  CollectivePoint b = a;
  b.busy = true;
  EXPECT_FALSE(busbwPoints({{4096, {&a}}}).at(0).busy);
  EXPECT_TRUE(busbwPoints({{4096, {&a, &b}}}).at(0).busy);
}

// The parameter server's rank 0 serves: at N it trains on N - 1 data ranks, as data_parallel at
// N - 1. The reading pairs them by data ranks (the same global batch) and says the same-N
// difference as what it is, not as a gap between the algorithms.
TEST(ReportReadings, ParameterServerAccuracyIsComparedAtTheSameDataRanks) {
  Inputs in = stylesOfThree();
  in.styles.add(SeriesKind::Strategy, "param_server", entryOf(2, "#1f77b4", "from scratch"));
  in.styles.add(SeriesKind::Strategy, "data_parallel", entryOf(6, "#ff7f0e", "builtin"));
  const auto add = [&](const std::string& strategy, int n, int dataRanks, double accuracy) {
    addRuns(in, strategy, n, {1.0});
    in.runs.back().dataRanks = dataRanks;
    in.runs.back().accuracy = {accuracy};
  };
  add("param_server", 2, 1, 0.823);
  add("param_server", 3, 2, 0.702);
  add("data_parallel", 1, 1, 0.823);
  add("data_parallel", 2, 2, 0.701);
  add("data_parallel", 3, 3, 0.526);
  const Chart c = chartOf("ps_accuracy", in);
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_EQ(c.reading,
            "Final test accuracy, param_server vs data_parallel at the same data ranks (the same global batch): 1 data "
            "rank (N=2 vs N=1) 82.3 % vs 82.3 %; 2 data ranks (N=3 vs N=2) 70.2 % vs 70.1 %; largest difference +0.1 "
            "points. At the same N the parameter server trains on one data rank fewer (its rank 0 serves), so on a "
            "smaller global batch: N=3 70.2 % vs 52.6 %.");
}

TEST(ReportReadings, ThroughputLegendsKeepTheReferenceLabel) {
  const Chart c = chartOf("throughput_scaling", ringDdpTorch());
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.gp.find("\"torch_ddp (PyTorch)\""), std::string::npos) << c.gp;
  EXPECT_NE(c.gp.find("\"ddp (builtin)\""), std::string::npos) << c.gp;
}

// The scaling reading names every strategy it draws above N=1: the best, those between, the
// worst, and a reference that ran only at N=2 (no N=1 run to scale from).
TEST(ReportReadings, ThroughputReadingNamesEveryStrategyDrawn) {
  Inputs in = ringDdpTorch();
  in.styles.add(SeriesKind::Strategy, "param_server", entryOf(2, "#1f77b4", "from scratch"));
  addRuns(in, "param_server", 1, {1.0});
  addRuns(in, "param_server", 2, {0.7});
  const Chart c = chartOf("throughput_scaling", in);
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.reading.find("Best scaling: ddp reaches 1.75x its N=1 throughput at N=2"), std::string::npos)
      << c.reading;
  EXPECT_NE(c.reading.find("; then param_server 1.43x at N=2 (71 %)"), std::string::npos) << c.reading;
  EXPECT_NE(c.reading.find("; worst: ring_all_reduce 0.918x at N=2 (46 %"), std::string::npos) << c.reading;
  EXPECT_NE(c.reading.find("; torch_ddp has no N=1 run to scale from."), std::string::npos) << c.reading;
}

TEST(ReportReadings, BreakdownReadingNamesEveryStrategy) {
  const Chart c = chartOf("time_breakdown", ringDdpTorch());
  ASSERT_TRUE(c.hasData()) << c.reason;
  for (const char* name : {"ring_all_reduce's", "ddp's", "torch_ddp's"})
    EXPECT_NE(c.reading.find(name), std::string::npos) << name << ": " << c.reading;
}

// The stacked bars are medians; each stack carries an error bar from the smallest to the largest
// epoch wall time of its repeats (issue 31: every median with its spread), placed on its bar.
TEST(ReportReadings, BreakdownDrawsTheWallTimeSpreadAsErrorBars) {
  const Chart c = chartOf("time_breakdown", ringDdpTorch());
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.dat.find("\nN=2 0.66 0.366667 0.0733333 1.1 1 1.2\n"), std::string::npos) << c.dat;  // ... wall min max
  // ring (N=1, 2) at x = 0, 1; ddp at 3, 4; torch_ddp (N=2 only) at 6.
  EXPECT_NE(c.gp.find("index 0 using ($0+0):5:6:7 title 'wall min-max' with yerrorbars"),
            std::string::npos) << c.gp;
  EXPECT_NE(c.gp.find("index 2 using ($0+6):5:6:7 notitle with yerrorbars"), std::string::npos) << c.gp;
  EXPECT_NE(c.subtitle.find("error bars: the wall time's min to max over repeats"), std::string::npos) << c.subtitle;
  // One run per bar: nothing to draw.
  Inputs one = stylesOfThree();
  addRuns(one, "ring_all_reduce", 1, {1.0});
  addRuns(one, "ddp", 2, {1.2});
  EXPECT_EQ(chartOf("time_breakdown", one).gp.find("yerrorbars"), std::string::npos);
}

// The pipeline bubble's measured lines are medians over repeats with error bars, and say so.
TEST(ReportReadings, PipelineBubbleSaysItDrawsTheSpread) {
  const Chart c = chartOf("pipeline_bubble", loadInputs({kFixture}));
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.subtitle.find("median over repeats (error bars: min to max)"), std::string::npos) << c.subtitle;
  EXPECT_NE(c.dat.find("records lo hi"), std::string::npos) << c.dat;
}

TEST(ReportReadings, PipelineReadingSaysWithinNoise) {
  Inputs in;
  addRuns(in, "model_parallel", 2, {1.0, 1.1, 1.2});
  addRuns(in, "pipeline", 2, {0.9, 1.05, 1.1});
  const Chart c = chartOf("model_parallel_epoch_time", in);
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.reading.find("(1.05x faster than model_parallel, within noise)"), std::string::npos) << c.reading;
}

// A pipeline slower than model_parallel reads "1.25x slower", not "0.8x faster".
TEST(ReportReadings, PipelineSlowerThanModelParallelSaysSlower) {
  Inputs in;
  addRuns(in, "model_parallel", 2, {1.0});
  addRuns(in, "pipeline", 2, {1.25});
  const Chart c = chartOf("model_parallel_epoch_time", in);
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.reading.find("(1.25x slower than model_parallel)"), std::string::npos) << c.reading;
  EXPECT_EQ(c.reading.find("faster"), std::string::npos) << c.reading;
}

TEST(ReportReadings, GrowthWithinNoiseSaysSo) {
  const std::vector<Point> flat = {{1, 10, 3, 9, 11}, {2, 10.5, 3, 10, 12}};
  const std::vector<Point> steep = {{1, 10, 3, 9, 11}, {2, 20, 3, 19, 21}};
  const auto g = growthPerStrategy({{"flat", flat}, {"steep", steep}});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(growthRange(g), "1.05x (flat, within noise) to 2x (steep)");
  EXPECT_TRUE(withinNoise(flat[0], flat[1]));
  EXPECT_FALSE(withinNoise(steep[0], steep[1]));
  // Without spread only equal values are within noise of each other.
  EXPECT_FALSE(withinNoise({1, 10, 1, 10, 10}, {2, 10.5, 1, 10.5, 10.5}));
}

// ddp at three bucket sizes (three repeats each, 8 steps an epoch) beside a ring run at one size:
// the chart draws ddp's step time and exposed communication per bucket size and names the best
// and worst; the ring, shaped by no bucket, is left out.
TEST(ReportReadings, BucketChartNamesTheBestAndWorstBucket) {
  Inputs in = stylesOfThree();
  const std::map<double, std::vector<double>> walls{{1, {0.40, 0.42, 0.44}}, {5, {0.16, 0.17, 0.18}},
                                                    {25, {0.24, 0.25, 0.26}}};
  for (const auto& [mb, ws] : walls) {
    const std::size_t first = in.runs.size();
    addRuns(in, "ddp", 2, ws);
    for (std::size_t i = first; i < in.runs.size(); ++i) {
      in.runs[i].config["bucket_mb"] = mb;
      in.runs[i].settings.bucketMb = mb;
      in.runs[i].steps = {8};
    }
  }
  addRuns(in, "ring_all_reduce", 2, {0.2});
  in.runs.back().steps = {8};
  const Chart c = chartOf("bucket_size", in);
  ASSERT_TRUE(c.hasData()) << c.reason;
  // 0.17 s over 8 steps: 21.25 ms a step; 0.42 s: 52.5 ms, 2.47x slower.
  EXPECT_NE(c.reading.find("ddp: best at 5 MiB (21.2 ms/step), worst at 1 MiB, 2.47x slower."), std::string::npos)
      << c.reading;
  EXPECT_EQ(c.reading.find("ring_all_reduce"), std::string::npos) << c.reading;
  EXPECT_NE(c.gp.find("exposed comm"), std::string::npos) << c.gp;
  // Exposed communication: a third of each epoch, per step: 0.17 / 3 / 8 s = 7.08 ms at 5 MiB.
  EXPECT_NE(c.dat.find("\n5 7.08333 3 "), std::string::npos) << c.dat;
  // One bucket size only: nothing to draw, and the reason says what to run.
  Inputs one = stylesOfThree();
  addRuns(one, "ddp", 2, {0.2, 0.3});
  EXPECT_FALSE(chartOf("bucket_size", one).hasData());
}

// A collective's error bar runs from the bus bandwidth of its slowest iteration to that of its
// fastest, over every record at that size.
TEST(ReportReadings, BusbwSpreadComesFromTheIterations) {
  CollectivePoint a;
  a.busbw = 10;
  a.medianUs = 100;
  a.minUs = 80;
  a.maxUs = 200;
  CollectivePoint b = a;
  b.busbw = 12;
  const auto pts = busbwPoints({{4096, {&a, &b}}});
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_DOUBLE_EQ(pts[0].y, 11);
  EXPECT_DOUBLE_EQ(pts[0].lo, 5);   // 10 × 100 / 200
  EXPECT_DOUBLE_EQ(pts[0].hi, 15);  // 12 × 100 / 80
}

// tpbench's own points on the CPU and an nccl-tests log of 16 ranks on 2 nodes, imported: one
// chart draws both, each line named by what it is, and the subtitle says where each came from.
CollectivePoint busbwPoint(const std::string& op, const std::string& algo, int n, long long bytes, double busbw) {
  CollectivePoint p;
  p.op = op;
  p.algo = algo;
  p.transport = p.carrier = "shm";
  p.device = "cpu";
  p.status = "ok";
  p.n = n;
  p.bytes = bytes;
  p.busbw = busbw;
  p.medianUs = 100;
  return p;
}

Inputs ownAndImported() {
  Inputs in;
  in.files.resize(2);
  in.files[0].path = "results/own.json";
  in.files[1].path = "results/h100-2node.json";
  in.styles.add(SeriesKind::Algorithm, "ring", entryOf(1, "#2ca02c", "from scratch"));
  in.styles.add(SeriesKind::Algorithm, "nccl-tests", entryOf(90, "#7f7f7f", "nccl-tests"));
  for (long long b = 4096; b <= (16 << 20); b *= 4) {
    in.points.push_back(busbwPoint("allreduce", "ring", 2, b, 1 + b / 1e6));
    in.points.push_back(busbwPoint("allgather", "ring", 2, b, 1 + b / 2e6));
  }
  // nccl-tests' sweep from 8 B to 8 GiB in steps of 2: 31 sizes, in place and out of place.
  for (long long b = 8; b <= (8ll << 30); b *= 2)
    for (const char* op : {"allreduce", "allgather"})
      for (bool inPlace : {true, false}) {
        CollectivePoint p = busbwPoint(op, "nccl-tests", 16, b, 0.01 + b / 1e8);
        p.transport = p.carrier = "nccl";
        p.device = "cuda";
        p.inPlace = inPlace;
        p.imported = true;
        p.file = 1;
        p.nodes = 2;
        p.gpu = "NVIDIA H100 80GB HBM3";
        in.points.push_back(p);
      }
  return in;
}

TEST(ReportReadings, ImportedPointsAreDrawnBesideOwnOnAnyDevice) {
  const Inputs in = ownAndImported();
  for (const char* id : {"allreduce_busbw", "collective_busbw"}) {
    const Chart c = chartOf(id, in);
    ASSERT_TRUE(c.hasData()) << id << ": " << c.reason;
    EXPECT_EQ(c.subtitle.find("not shown"), std::string::npos) << id << ": " << c.subtitle;
    EXPECT_EQ(c.subtitle.find("from-scratch algorithms over nccl"), std::string::npos) << c.subtitle;
    EXPECT_NE(c.subtitle.find("devices cpu, cuda"), std::string::npos) << id << ": " << c.subtitle;
    EXPECT_NE(c.subtitle.find("imported, at the log's mean time per iteration: nccl-tests in h100-2node.json (16 ranks, "
                              "2 nodes, NVIDIA H100 80GB HBM3)"),
              std::string::npos)
        << id << ": " << c.subtitle;
    EXPECT_EQ(c.subtitle.find("N=16"), std::string::npos) << id << ": 16 ranks on 2 nodes are not N=16: " << c.subtitle;
    const std::string own = std::string(id) == "allreduce_busbw" ? "# [0] ring N=2 (cpu)\n" : "allgather ring (cpu)\n";
    EXPECT_NE(c.dat.find(own), std::string::npos) << id << ": " << c.dat.substr(0, 400);
    const std::string imported = std::string(id) == "allreduce_busbw" ? "] nccl-tests 16 ranks, 2 nodes (cuda)\n"
                                                                        : "] allgather nccl-tests 16 ranks, 2 nodes (cuda)\n";
    EXPECT_NE(c.dat.find(imported), std::string::npos) << id << ": " << c.dat.substr(0, 400);
    EXPECT_NE(c.reading.find("nccl-tests 16 ranks, 2 nodes (cuda)"), std::string::npos) << c.reading;
    // 8 B .. 8 GiB: at most kMaxSizeTics labels on the size axis, from the smallest to the largest.
    const auto tics = c.gp.find("set xtics (");
    ASSERT_NE(tics, std::string::npos) << c.gp;
    const std::string line = c.gp.substr(tics, c.gp.find('\n', tics) - tics);
    EXPECT_LE(std::count(line.begin(), line.end(), ','), static_cast<long>(kMaxSizeTics) - 1) << line;
    EXPECT_NE(line.find("\"8\" 8"), std::string::npos) << line;
    EXPECT_NE(line.find("\"8G\""), std::string::npos) << line;
  }
}

TEST(ReportReadings, SizeTicsThinOnlyWhereTheyWouldCrowd) {
  std::set<double> few = {4096, 65536, 1 << 20};
  EXPECT_EQ(sizeTics(few), few);
  std::set<double> many;
  for (double b = 8; b <= 8.0 * (1 << 30); b *= 2) many.insert(b);
  const auto tics = sizeTics(many);
  EXPECT_LE(tics.size(), kMaxSizeTics);
  EXPECT_GE(tics.size(), kMaxSizeTics - 2);
  EXPECT_EQ(*tics.begin(), 8);
}

// Two imported files of the same shape read alike but for their file's name.
TEST(ReportReadings, TwoImportsOfOneShapeAreToldApartByTheirFile) {
  Inputs in = ownAndImported();
  in.files.push_back({});
  in.files[2].path = "other/cluster-b.json";
  const std::size_t n = in.points.size();
  for (std::size_t i = 0; i < n; ++i)
    if (in.points[i].imported) {
      CollectivePoint p = in.points[i];
      p.file = 2;
      p.busbw /= 2;
      in.points.push_back(p);
    }
  const Chart c = chartOf("allreduce_busbw", in);
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.dat.find("nccl-tests 16 ranks, 2 nodes (cuda) (h100-2node.json)\n"), std::string::npos) << c.dat.substr(0, 600);
  EXPECT_NE(c.dat.find("nccl-tests 16 ranks, 2 nodes (cuda) (cluster-b.json)\n"), std::string::npos) << c.dat.substr(0, 600);
}

}  // namespace
}  // namespace tpb::report

namespace tpb::report {
namespace {

PredictionRecord predictionOf(const std::string& strategy, int n, double stepS, std::optional<double> bucket) {
  PredictionRecord p;
  p.strategy = strategy;
  p.workload = "mlp";
  p.nGpus = n;
  p.batchSize = 64;
  p.bucketMb = bucket;
  p.stepS = stepS;
  p.aloneS = 0.004;
  p.efficiency = p.aloneS / stepS;
  p.profile.source = "measured";
  p.profile.companions = n - 1;
  p.allreduce.source = "fit";
  p.allreduce.algo = "library";
  p.allreduce.fittedOn = std::vector<int>{2, 3};
  return p;
}

// A run of the point, two epochs: the first (warm-up) is not counted; the second took `wallS` for
// 8 optimizer steps (each taken by all n ranks, counted once: schema 2).
void addMeasured(Inputs& in, const std::string& strategy, int n, double bucket, double wallS) {
  addRuns(in, strategy, n, {wallS});
  Run& r = in.runs.back();
  r.settings.device = "cpu";
  r.settings.workload = "mlp";
  r.settings.bucketMb = bucket;
  r.dataRanks = n;
  r.wall = {100.0, wallS};  // a first epoch that would ruin any median it entered
  r.steps = {8.0, 8.0};
}

// Predictions meet the runs of their point (strategy, workload, batch, N, bucket): the chart puts
// each at (measured, predicted) and reads the median error; the table says each error, and a
// prediction without a run stays off the chart.
TEST(ReportReadings, StepModelChartsPredictionsAgainstTheirRuns) {
  Inputs in = stylesOfThree();
  in.predictions = {predictionOf("ddp", 2, 0.011, 25.0), predictionOf("ddp", 4, 0.015, 25.0),
                    predictionOf("ring_all_reduce", 2, 0.009, std::nullopt),
                    predictionOf("ddp", 8, 0.030, 25.0)};  // no run at N = 8
  addMeasured(in, "ddp", 2, 25, 0.080);                    // 10 ms a step: +10 %
  addMeasured(in, "ddp", 4, 25, 0.160);                    // 20 ms: -25 %
  addMeasured(in, "ddp", 4, 5, 0.016);                     // another bucket: not this point
  addMeasured(in, "ring_all_reduce", 2, 25, 0.080);        // 10 ms: -10 % (its bucket is no part of it)
  const std::vector<PredictedPoint> pts = matchPredictions(in.predictions, in.runs);
  ASSERT_EQ(pts.size(), 4u);
  EXPECT_NEAR(pts[0].error(), 0.10, 1e-9);
  EXPECT_NEAR(pts[1].error(), -0.25, 1e-9);
  EXPECT_EQ(pts[1].runs, 1);
  EXPECT_NEAR(pts[2].error(), -0.10, 1e-9);
  EXPECT_FALSE(pts[3].measured());
  const Chart c = chartOf("step_model", in);
  ASSERT_TRUE(c.hasData()) << c.reason;
  EXPECT_NE(c.reading.find("median |error| 10.0 % over 3 points; 2 within ±15 %."), std::string::npos) << c.reading;
  EXPECT_NE(c.dat.find("\n10 11 10 10 2 25 0\n"), std::string::npos) << c.dat;
  EXPECT_NE(c.dat.find("\n20 15 20 20 4 25 0\n"), std::string::npos) << c.dat;
  EXPECT_EQ(c.gp.find("hollow"), std::string::npos) << c.gp;
  // The N = 4 run measured on a busy machine: its point is drawn hollow (ddp's mark, a circle).
  Inputs busy = in;
  for (auto& r : busy.runs)
    if (r.n == 4 && r.settings.bucketMb == 25.0) r.busy = true;
  const Chart b = chartOf("step_model", busy);
  EXPECT_NE(b.dat.find("\n20 15 20 20 4 25 1\n"), std::string::npos) << b.dat;
  EXPECT_NE(b.dat.find("\n10 11 10 10 2 25 0\n"), std::string::npos) << b.dat;
  EXPECT_NE(b.gp.find("index 0 using 1:($7 > 0 ? $2 : 1/0) with points pt 6 ps 1.4"), std::string::npos) << b.gp;
  EXPECT_EQ(b.gp.find("index 1 using 1:($7"), std::string::npos) << b.gp;
  EXPECT_NE(b.gp.find("title 'hollow: the machine was busy'"), std::string::npos) << b.gp;
  const Table t = predictionTable(pts);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[1].back().content.front().text, "-25.0 %");
  EXPECT_EQ(t.rows[3].back().content.front().text, "—");
  // Three N of ddp at 25 MiB make a line; ring_all_reduce's one N does not.
  const Chart proj = chartOf("step_projection", in);
  ASSERT_TRUE(proj.hasData()) << proj.reason;
  EXPECT_NE(proj.reading.find("mlp ddp 25 MiB: this CPU, library fitted on N=2,3: 13.3 % at N=8."), std::string::npos)
      << proj.reading;
  EXPECT_EQ(proj.gp.find("ring_all_reduce"), std::string::npos) << proj.gp;
  // A profile built from a GPU preset's FLOPs is of no run measured here.
  in.predictions[0].profile.source = "flops";
  EXPECT_FALSE(matchPredictions(in.predictions, in.runs)[0].measured());
  // Predictions alone: nothing to check them against.
  Inputs alone = stylesOfThree();
  alone.predictions = in.predictions;
  EXPECT_EQ(chartOf("step_model", alone).reason,
            "needs runs of the points predicted (tpbench sweep with the same workload, strategy, batch, N and bucket "
            "on the CPU)");
}

}  // namespace
}  // namespace tpb::report
