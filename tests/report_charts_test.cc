// Tests for the chart registry (report/chart.h): every registered chart has an entry here saying
// what it does with tests/fixtures/report_small.json (drawn, or skipped with which reason), so a
// new chart without an entry fails; the registry keeps the index order; and the registrars
// survive linking into both this test binary and tpbench.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include "report/chart.h"
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
    {"model_parallel_epoch_time", ""},
    {"pipeline_bubble", ""},
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

}  // namespace
}  // namespace tpb::report
