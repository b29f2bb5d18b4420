// Tests for report/ (tpbench report): on a hand-made but realistic results file every chart is
// drawn (PNG + SVG + .gp + .dat) and listed in index.md/index.html; charts without data are
// listed as skipped, not drawn empty; without gnuplot (or when it fails) tables and data are
// still written; bad inputs are usage errors. Drawing tests need gnuplot (scripts/install-deps.sh
// installs gnuplot-nox) and are skipped where it is missing.
#include "report/report.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "report/chart.h"
#include "report/format.h"
#include "tests/file_util.h"
#include "tests/report_util.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string& kFixture = test::kReportFixture;
using test::gnuplotAvailable;

const std::vector<std::string> kTrainingCharts = {"ps_accuracy",    "ring_epoch_time",
                                                  "data_scaling",   "throughput_scaling",
                                                  "time_breakdown", "batch_throughput",
                                                  "bucket_size",    "model_parallel_epoch_time",
                                                  "pipeline_bubble"};
// Every registered chart's title by id, read when a test first asks (after static
// initialisation has registered them; the registry's order and completeness are
// report_charts_test's to check).
const std::map<std::string, std::string>& chartTitles() {
  static const std::map<std::string, std::string> titles = [] {
    std::map<std::string, std::string> byId;
    for (const auto& def : report::registeredCharts()) byId[def.id] = def.title;
    return byId;
  }();
  return titles;
}
// What the timeline says without a trace file.
const std::string kNoTrace = "no trace given (tpbench run|sweep --trace FILE, then tpbench report --trace FILE)";

using test::readText;
using test::usageErrorOf;
using test::writeText;

bool hasPngSignature(const fs::path& p) {
  const std::string s = readText(p);
  static const std::string sig("\x89PNG\r\n\x1a\n", 8);
  return s.size() > 1000 && s.compare(0, sig.size(), sig) == 0;
}

std::set<std::string> skippedIds(const ReportSummary& s) {
  std::set<std::string> ids;
  for (const auto& [id, reason] : s.skipped) ids.insert(id);
  return ids;
}

class ReportTest : public test::TempDirTest {
 protected:
  ReportTest() : TempDirTest("tpb_report_test") {}
  fs::path path(const std::string& name) const { return dir_ / name; }
  fs::path out() const { return dir_ / "report"; }

  // The fixture with one of its arrays emptied, as a new input file.
  std::string fixtureWithout(const std::string& key, const std::string& name) const {
    json doc = json::parse(readText(kFixture));
    doc[key] = json::array();
    writeText(path(name), doc.dump());
    return path(name).string();
  }
};

TEST_F(ReportTest, FixtureIsSmallAndValid) {
  ASSERT_TRUE(fs::exists(kFixture)) << kFixture;
  EXPECT_LT(fs::file_size(kFixture), 72u * 1024);
  const json doc = json::parse(readText(kFixture));
  EXPECT_EQ(doc.at("schema"), "tpbench.results/1");  // read in schema 2's meaning (results/README.md)
  std::set<std::string> strategies;
  for (const auto& r : doc.at("runs")) strategies.insert(r.at("config").at("strategy"));
  EXPECT_EQ(strategies.size(), 8u);  // the sweep of six, then model_parallel and pipeline
}

TEST_F(ReportTest, DrawsEveryChartFromFixture) {
  if (!gnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed";
  ReportOptions opt;
  opt.inputs = {kFixture};
  opt.traces = {test::kTraceFixture};
  opt.outDir = out().string();
  const ReportSummary s = writeReport(opt);
  for (const auto& [id, reason] : s.skipped) ADD_FAILURE() << id << " skipped: " << reason;
  EXPECT_EQ(s.drawn.size(), chartTitles().size());

  const std::string md = readText(out() / "index.md");
  const std::string html = readText(out() / "index.html");
  for (const auto& [id, title] : chartTitles()) {
    SCOPED_TRACE(id);
    EXPECT_NE(std::find(s.drawn.begin(), s.drawn.end(), id), s.drawn.end());
    EXPECT_TRUE(hasPngSignature(out() / (id + ".png")));
    const std::string svg = readText(out() / (id + ".svg"));
    EXPECT_NE(svg.find("<svg"), std::string::npos);
    EXPECT_NE(svg.find(title), std::string::npos) << "SVG lacks its title";
    const std::string gp = readText(out() / (id + ".gp"));
    EXPECT_NE(gp.find("'" + id + ".dat'"), std::string::npos) << "script must read its data file";
    EXPECT_NE(gp.find("set output '" + id + ".svg'"), std::string::npos);
    const std::string dat = readText(out() / (id + ".dat"));
    EXPECT_EQ(dat.rfind("# ", 0), 0u) << "data starts with a commented header";
    EXPECT_NE(md.find("(`" + id + "`)"), std::string::npos);
    EXPECT_NE(md.find("](" + id + ".png)"), std::string::npos);
    EXPECT_NE(md.find(title), std::string::npos);
    EXPECT_NE(html.find("src=\"" + id + ".png\""), std::string::npos);
    EXPECT_NE(html.find(title), std::string::npos);
  }
  // Readings are computed from the numbers (the fixture's ring peak is 14.8 GB/s at 4 MiB, N=2).
  EXPECT_NE(md.find("ring busbw peaks at 14.8 GB/s at 4M, N=2"), std::string::npos);
  EXPECT_NE(md.find("ring_all_reduce vs ddp per epoch: "), std::string::npos);
  EXPECT_NE(md.find(" faster at N=2"), std::string::npos);
  // The bubble's reading follows the line with the most values of M (the fixture's N=2
  // pipeline at M = 1, 2, 4, 8), not a lone point at N=1.
  EXPECT_NE(md.find("N=2 gpipe, M=8: measured 51.3 % idle against the formula's 11.1 %; at M=1: 52.0 %."),
            std::string::npos);
  // Tables and the meta block of the input.
  EXPECT_NE(md.find("| strategy | N | batch | train_size | epochs | samples/s | samples/s min–max | final accuracy |"),
            std::string::npos);
  EXPECT_NE(md.find("| algo | carried over | device | N | bytes | median µs | min–max µs | busbw GB/s | status |"),
            std::string::npos);
  EXPECT_NE(md.find("rank 2 was killed by signal 9"), std::string::npos)
      << "failed runs are listed";
  EXPECT_NE(md.find("AMD EPYC 7B13"), std::string::npos);
  EXPECT_NE(md.find("tpbench sweep --strategies all"), std::string::npos);
  EXPECT_NE(html.find("AMD EPYC 7B13"), std::string::npos);
  EXPECT_TRUE(fs::exists(out() / "runs.csv"));
  EXPECT_TRUE(fs::exists(out() / "allreduce.csv"));
}

// --where keeps the runs whose config holds KEY=VALUE: the committed baseline (batch 32 and 128)
// draws batch 128 by default, saying another config is not shown and how to draw it; with
// --where batch_size=32 it draws batch 32. A key no run has, a value none has and a text that is
// not KEY=VALUE are refused naming them.
TEST_F(ReportTest, WhereChartsTheConfigurationAsked) {
  ReportOptions opt;
  opt.inputs = {std::string(TPB_SOURCE_DIR) + "/results/baseline-cpu.json"};
  opt.outDir = out().string();
  opt.gnuplot = "";
  writeReport(opt);
  const std::string byDefault = readText(out() / "ring_epoch_time.dat");
  EXPECT_NE(byDefault.find("batch 128/device"), std::string::npos) << byDefault;
  EXPECT_NE(byDefault.find("(1 other config not shown: report --where KEY=VALUE draws another)"), std::string::npos)
      << byDefault;
  fs::remove_all(out());
  opt.where = {"batch_size=32"};
  writeReport(opt);
  const std::string asked = readText(out() / "ring_epoch_time.dat");
  EXPECT_NE(asked.find("batch 32/device"), std::string::npos) << asked;
  EXPECT_EQ(asked.find("not shown"), std::string::npos) << asked;
  fs::remove_all(out());
  for (const auto& [where, says] : std::vector<std::pair<std::string, std::string>>{
           {"batch_size=33", "--where batch_size=33: no run has it; batch_size is one of 128, 32"},
           {"colour=red", "--where: no run's config has colour"},
           {"batch", "--where: 'batch' is not KEY=VALUE"}}) {
    opt.where = {where};
    try {
      writeReport(opt);
      ADD_FAILURE() << where << ": accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

// Repeats are combined by the median of each run's mean epoch time; failed runs do not count.
TEST_F(ReportTest, EpochTimeIsMedianOfRunMeans) {
  ReportOptions opt;
  opt.inputs = {kFixture};
  opt.outDir = out().string();
  opt.gnuplot = "";  // only the data is looked at
  writeReport(opt);
  const json doc = json::parse(readText(kFixture));
  std::vector<double> means, rates;
  for (const auto& r : doc.at("runs")) {
    const auto& c = r.at("config");
    if (r.at("status") != "ok" || c.at("strategy") != "ring_all_reduce" || c.at("n_gpus") != 2 ||
        c.at("batch_size") != 64 || c.at("train_size") != 8192)
      continue;
    double sum = 0;
    for (const auto& e : r.at("epochs")) sum += e.at("wall_s").get<double>();
    means.push_back(sum / r.at("epochs").size());
    rates.push_back(r.at("summary").at("samples_per_s").get<double>());
  }
  ASSERT_EQ(means.size(), 3u);
  std::sort(means.begin(), means.end());
  // The ring's block in ring_epoch_time.dat holds "N epoch_s records" rows.
  std::istringstream dat(readText(out() / "ring_epoch_time.dat"));
  std::string line;
  bool inRing = false, found = false;
  while (std::getline(dat, line)) {
    if (line.rfind("# [", 0) == 0) inRing = line.find("ring_all_reduce") != std::string::npos;
    if (!inRing || line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    double n = 0, t = 0, lo = 0, hi = 0;
    int records = 0;
    row >> n >> t >> records >> lo >> hi;
    if (n == 2) {
      EXPECT_NEAR(t, means[1], 1e-5 * means[1]);
      EXPECT_EQ(records, 3);
      // The spread the error bar draws: the smallest and largest of the repeats.
      EXPECT_NEAR(lo, means[0], 1e-5 * means[0]);
      EXPECT_NEAR(hi, means[2], 1e-5 * means[2]);
      found = true;
    }
  }
  EXPECT_TRUE(found) << "no N=2 row for ring_all_reduce";
  EXPECT_NE(readText(out() / "ring_epoch_time.gp").find("batch 64/device, 8192 samples/epoch"),
            std::string::npos)
      << "the chart names the slice it shows";
  // The runs table gives the same repeats' samples/s range beside their median.
  std::sort(rates.begin(), rates.end());
  const std::string row = "| ring_all_reduce | 2 | 64 | 8192 | 3 | " + report::fmtNum(rates[1]) + " | " +
                          report::fmtNum(rates[0]) + "–" + report::fmtNum(rates[2]) + " |";
  EXPECT_NE(readText(out() / "index.md").find(row), std::string::npos) << row;
}

TEST_F(ReportTest, AllreduceOnlySkipsTrainingCharts) {
  if (!gnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed";
  ReportOptions opt;
  opt.inputs = {fixtureWithout("runs", "ar_only.json")};
  opt.outDir = out().string();
  const ReportSummary s = writeReport(opt);
  // The fixture's predictions stay: projected over N, with no run to check them against.
  EXPECT_EQ(s.drawn, (std::vector<std::string>{"allreduce_busbw", "collective_busbw", "step_projection"}));
  ASSERT_EQ(s.skipped.size(), kTrainingCharts.size() + 2);
  const std::string md = readText(out() / "index.md");
  const std::string html = readText(out() / "index.html");
  for (const auto& [id, reason] : s.skipped) {
    SCOPED_TRACE(id);
    if (id == "timeline") {
      EXPECT_EQ(reason, kNoTrace);
      continue;
    }
    if (id == "step_model") {
      EXPECT_EQ(reason, "needs runs of the points predicted (tpbench sweep with the same workload, strategy, batch, N "
                        "and bucket on the CPU)");
      continue;
    }
    EXPECT_NE(std::find(kTrainingCharts.begin(), kTrainingCharts.end(), id), kTrainingCharts.end());
    EXPECT_EQ(reason, "no training runs in the input");
    for (const char* ext : {".png", ".svg", ".dat", ".gp"})
      EXPECT_FALSE(fs::exists(out() / (id + ext)));
    // Listed once, in the list of charts, with the reason; no section of its own.
    const std::size_t at = md.find("`" + id + "`");
    EXPECT_NE(at, std::string::npos) << "skipped charts are listed";
    EXPECT_EQ(md.find("`" + id + "`", at + 1), std::string::npos) << "listed once";
    EXPECT_EQ(html.find("id=\"" + id + "\""), std::string::npos) << "no section in index.html";
  }
  EXPECT_EQ(md.find("**Not drawn:**"), std::string::npos);
  // The drawn charts' table first, then one line on those not drawn and their table: no
  // "skipped" cell (red in HTML) among the charts drawn.
  const std::string notDrawn = "*" + std::to_string(s.skipped.size()) + " of " +
                               std::to_string(s.skipped.size() + s.drawn.size()) +
                               " charts not drawn: each needs runs or files these inputs do not hold";
  EXPECT_NE(md.find("| chart | id | reading |"), std::string::npos) << md;
  EXPECT_LT(md.find("| chart | id | reading |"), md.find(notDrawn)) << md;
  EXPECT_LT(md.find(notDrawn), md.find("| chart | id | not drawn: what it needs |")) << md;
  EXPECT_EQ(md.find("| skipped: "), std::string::npos) << md;
  EXPECT_EQ(html.find("class=\"skipped\""), std::string::npos);
  EXPECT_TRUE(hasPngSignature(out() / "allreduce_busbw.png"));
  EXPECT_TRUE(hasPngSignature(out() / "collective_busbw.png"));
}

TEST_F(ReportTest, TooFewSizesIsAReasonNotAnEmptyChart) {
  json doc = json::parse(readText(kFixture));
  json runs = json::array();
  for (const auto& r : doc["runs"]) {
    if (r["config"]["batch_size"] == 64 && r["config"]["train_size"] == 8192) runs.push_back(r);
  }
  doc["runs"] = runs;
  writeText(path("one_size.json"), doc.dump());
  ReportOptions opt;
  opt.inputs = {path("one_size.json").string()};
  opt.outDir = out().string();
  opt.gnuplot = "";
  const ReportSummary s = writeReport(opt);
  std::map<std::string, std::string> reasons(s.skipped.begin(), s.skipped.end());
  EXPECT_EQ(reasons["data_scaling"],
            "needs runs at >= 2 train_size values with otherwise equal settings; found 8192");
  EXPECT_EQ(reasons["batch_throughput"],
            "needs runs at >= 2 batch sizes with otherwise equal settings; found 64");
  EXPECT_EQ(reasons["ring_epoch_time"], "gnuplot disabled");
  EXPECT_FALSE(fs::exists(out() / "data_scaling.dat"));
  EXPECT_TRUE(fs::exists(out() / "ring_epoch_time.dat"));
}

TEST_F(ReportTest, WithoutGnuplotWritesTablesAndData) {
  ReportOptions opt;
  opt.inputs = {kFixture};
  opt.traces = {test::kTraceFixture};
  opt.outDir = out().string();
  opt.gnuplot = "/nonexistent/gnuplot";
  const ReportSummary s = writeReport(opt);
  EXPECT_TRUE(s.drawn.empty());
  EXPECT_EQ(skippedIds(s).size(), chartTitles().size());
  const std::string md = readText(out() / "index.md");
  for (const auto& [id, reason] : s.skipped) {
    SCOPED_TRACE(id);
    EXPECT_EQ(reason, "gnuplot not found");
    EXPECT_TRUE(fs::exists(out() / (id + ".dat")));
    EXPECT_TRUE(fs::exists(out() / (id + ".gp")));
    EXPECT_FALSE(fs::exists(out() / (id + ".png")));
    EXPECT_NE(md.find("(`" + id + "`)"), std::string::npos);
  }
  EXPECT_NE(md.find("**Not drawn:** gnuplot not found"), std::string::npos);
  EXPECT_NE(md.find("ring busbw peaks at"), std::string::npos) << "readings do not need gnuplot";
  EXPECT_NE(md.find("| ring_all_reduce | 2 | 64 | 8192 | 3 |"), std::string::npos);
  EXPECT_TRUE(fs::exists(out() / "index.html"));
  EXPECT_TRUE(fs::exists(out() / "runs.csv"));
}

TEST_F(ReportTest, GnuplotFailureSkipsWithItsMessage) {
  // A stand-in gnuplot that fails the way gnuplot does: message on stderr, status 1.
  const fs::path fake = path("fake-gnuplot");
  writeText(fake,
            "#!/bin/sh\necho 'plot foo' >&2\necho '     ^' >&2\n"
            "echo \"\\\"$1\\\" line 7: undefined variable: foo\" >&2\nexit 1\n");
  ::chmod(fake.c_str(), 0755);
  ReportOptions opt;
  opt.inputs = {kFixture};
  opt.traces = {test::kTraceFixture};
  opt.outDir = out().string();
  opt.gnuplot = fake.string();
  const ReportSummary s = writeReport(opt);
  EXPECT_TRUE(s.drawn.empty());
  ASSERT_EQ(s.skipped.size(), chartTitles().size());
  for (const auto& [id, reason] : s.skipped)
    EXPECT_EQ(reason, "gnuplot failed: \"" + id + ".gp\" line 7: undefined variable: foo");
  EXPECT_TRUE(fs::exists(out() / "index.md"));
}

TEST_F(ReportTest, MergesSeveralInputs) {
  if (!gnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed";
  ReportOptions opt;
  opt.inputs = {fixtureWithout("allreduce", "train.json"), fixtureWithout("runs", "ar.json")};
  opt.traces = {test::kTraceFixture};
  opt.outDir = out().string();
  const ReportSummary s = writeReport(opt);
  EXPECT_EQ(s.drawn.size(), chartTitles().size());
  EXPECT_TRUE(s.skipped.empty());
  const std::string md = readText(out() / "index.md");
  EXPECT_NE(md.find("From 2 results files"), std::string::npos);
  EXPECT_NE(md.find("### `" + opt.inputs[0] + "`"), std::string::npos);
  EXPECT_NE(md.find("### `" + opt.inputs[1] + "`"), std::string::npos);
}

// The collectives at a glance: a table per op, device and placement with two or more algorithms,
// names escaped as in every table; the allreduce table says what carried each point.
TEST_F(ReportTest, CollectivesAtAGlanceNameTheFastestAndWhatCarriedIt) {
  json doc = json::parse(readText(kFixture));
  for (auto& p : doc["allreduce"]) {
    if (p["algo"] == "param_server") p["algo"] = "<i>ps</i>|y";
    if (p["algo"] == "library") p["carrier"] = "gloo-tcp";
  }
  writeText(path("glance.json"), doc.dump());
  ReportOptions opt;
  opt.inputs = {path("glance.json").string()};
  opt.outDir = out().string();
  opt.gnuplot = "";
  writeReport(opt);
  const std::string md = readText(out() / "index.md");
  const std::string html = readText(out() / "index.html");
  EXPECT_NE(md.find("## Collectives at a glance"), std::string::npos) << md;
  EXPECT_NE(md.find("### allreduce (cpu, in place)\n\n| N | size | fastest | its busbw GB/s | "), std::string::npos)
      << md;
  EXPECT_NE(md.find(" | library (× time) | ring (× time) |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("&lt;i&gt;ps&lt;/i&gt;\\|y (× time)"), std::string::npos) << md;
  EXPECT_NE(md.find("### broadcast (cpu, out of place)"), std::string::npos) << md;
  EXPECT_NE(html.find("<th>&lt;i&gt;ps&lt;/i&gt;|y (× time)</th>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<i>ps</i>"), std::string::npos) << html;
  EXPECT_EQ(md.find("<i>ps</i>|y"), std::string::npos) << md;
  EXPECT_NE(md.find("| library | gloo-tcp | cpu |"), std::string::npos) << md;
  EXPECT_NE(readText(out() / "allreduce.csv").find("algo,carried over,device"), std::string::npos);
}

// The Inputs table gives the load average in three figures, as a person reads it (getloadavg's
// values are multiples of 1/2048: 6.02197265625).
TEST_F(ReportTest, InputsShowTheLoadAverageReadably) {
  json doc = json::parse(readText(kFixture));
  doc["meta"]["load_average"] = {6.02197265625, 5.5986328125, 4.23779296875};
  doc["meta"]["cpus_available"] = 2;
  writeText(path("load.json"), doc.dump());
  ReportOptions opt;
  opt.inputs = {path("load.json").string()};
  opt.outDir = out().string();
  opt.gnuplot = "";
  writeReport(opt);
  const std::string md = readText(out() / "index.md");
  EXPECT_NE(md.find("| load_average | 6.02, 5.6, 4.24 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| cpus_available | 2 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("6.02197265625"), std::string::npos) << md;
}

TEST_F(ReportTest, BadInputsAreUsageErrors) {
  ReportOptions opt;
  opt.outDir = out().string();
  opt.gnuplot = "";
  EXPECT_NE(usageErrorOf([&] { writeReport(opt); }).find("no results or trace file"), std::string::npos);

  opt.inputs = {path("missing.json").string()};
  EXPECT_NE(usageErrorOf([&] { writeReport(opt); }).find("missing.json"), std::string::npos);

  writeText(path("other.json"), R"({"schema": "tpbench.results/3", "runs": [], "allreduce": []})");
  opt.inputs = {path("other.json").string()};
  EXPECT_NE(usageErrorOf([&] { writeReport(opt); }).find("tpbench.results/3"), std::string::npos);

  writeText(path("garbage.json"), "not json at all");
  opt.inputs = {kFixture, path("garbage.json").string()};
  EXPECT_NE(usageErrorOf([&] { writeReport(opt); }).find("not JSON"), std::string::npos);
  EXPECT_FALSE(fs::exists(out())) << "nothing is written when an input is bad";

  writeText(path("bad_runs.json"), R"({"schema": "tpbench.results/1", "runs": [1, 2]})");
  opt.inputs = {path("bad_runs.json").string()};
  EXPECT_NE(usageErrorOf([&] { writeReport(opt); }).find("bad_runs.json: runs[0]: expected an object, got 1"),
            std::string::npos);

  // An output directory that cannot be created: its parent is a regular file.
  opt.inputs = {kFixture};
  opt.outDir = (path("other.json") / "report").string();
  EXPECT_NE(usageErrorOf([&] { writeReport(opt); }).find("cannot create directory"),
            std::string::npos);
  opt.outDir = "";
  EXPECT_NE(usageErrorOf([&] { writeReport(opt); }).find("output directory"), std::string::npos);
}

}  // namespace
}  // namespace tpb
