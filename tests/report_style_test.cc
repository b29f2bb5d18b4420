// Tests for how the report styles its series (report/style.h): order, colour and origin come
// from the records' entry fields, else from this build's registry (which tpbench passes in), else
// from a deterministic fallback; report/ keeps no table of names. Also: a report of
// results/baseline-cpu.json, with and without its entry fields (files older than those fields
// have none), reads exactly as the committed reports/baseline-cpu, and a bad results file is
// record/'s one-line usage error (exit 2).
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "report/escape.h"
#include "report/style.h"
#include "tests/cli_util.h"
#include "tests/file_util.h"
#include "tests/report_util.h"

namespace tpb::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::readText;
using test::writeText;

// A registry that knows one strategy, "known".
std::optional<SeriesStyle> oneEntryRegistry(SeriesKind kind, const std::string& name) {
  if (kind == SeriesKind::Strategy && name == "known") return SeriesStyle{3, "#1f77b4", "from scratch", ""};
  return std::nullopt;
}

EntryRecord entry(std::optional<int> order, std::optional<std::string> color,
                  std::optional<std::string> origin) {
  EntryRecord e;
  e.order = order;
  e.color = std::move(color);
  e.origin = std::move(origin);
  return e;
}

TEST(ReportStyle, RecordFieldsWinOverTheRegistryFieldByField) {
  Styles styles(oneEntryRegistry);
  styles.add(SeriesKind::Strategy, "known", entry(std::nullopt, "#123456", std::nullopt));
  const SeriesStyle s = styles.of(SeriesKind::Strategy, "known");
  EXPECT_EQ(s.color, "#123456") << "the record's colour";
  EXPECT_EQ(s.order, 3) << "the registry's order: the record has none";
  EXPECT_EQ(s.origin, "from scratch");
  EXPECT_EQ(styles.label(SeriesKind::Strategy, "known"), "known (from scratch)");
  // The first record that has a field wins: a later one does not repaint the series, but fills
  // the fields the first lacked.
  styles.add(SeriesKind::Strategy, "known", entry(9, "#654321", "library"));
  EXPECT_EQ(styles.color(SeriesKind::Strategy, "known"), "#123456");
  EXPECT_EQ(styles.order(SeriesKind::Strategy, "known"), 9);
  EXPECT_EQ(styles.origin(SeriesKind::Strategy, "known"), "library");
  // Kinds are separate namespaces.
  EXPECT_EQ(styles.origin(SeriesKind::Algorithm, "known"), "");
}

TEST(ReportStyle, AnUnknownNameIsStyledByItsRecord) {
  Styles styles(oneEntryRegistry);
  styles.add(SeriesKind::Strategy, "newcomer", entry(-1, "#abcdef", "builtin-equivalent"));
  EXPECT_TRUE(styles.less(SeriesKind::Strategy, "newcomer", "known"));
  EXPECT_EQ(styles.color(SeriesKind::Strategy, "newcomer"), "#abcdef");
  EXPECT_EQ(styles.label(SeriesKind::Strategy, "newcomer"), "newcomer (builtin)");
}

TEST(ReportStyle, FallbackIsDeterministicAndAfterTheKnownOnes) {
  const Styles styles(oneEntryRegistry);
  const Styles none;
  const SeriesStyle s = styles.of(SeriesKind::Strategy, "stranger");
  EXPECT_EQ(s.order, INT_MAX);
  EXPECT_EQ(s.origin, "");
  EXPECT_TRUE(isHexColor(s.color)) << s.color;
  EXPECT_EQ(none.color(SeriesKind::Strategy, "stranger"), s.color) << "by the name alone";
  EXPECT_TRUE(styles.less(SeriesKind::Strategy, "known", "stranger"));
  EXPECT_TRUE(styles.less(SeriesKind::Strategy, "a_stranger", "stranger")) << "then by name";
  EXPECT_EQ(styles.label(SeriesKind::Strategy, "stranger"), "stranger");
}

TEST(ReportStyle, OnlyAValidColourIsHandedOut) {
  const std::string hostile = "#1f77b4' . system('touch x') . '";
  Styles styles([&](SeriesKind, const std::string&) { return SeriesStyle{0, hostile, "", ""}; });
  EXPECT_TRUE(isHexColor(styles.color(SeriesKind::Strategy, "x")));
  EntryRecord bad;  // record/ refuses such a file; Styles does not rely on that
  bad.color = hostile;
  styles.add(SeriesKind::Strategy, "y", bad);
  EXPECT_TRUE(isHexColor(styles.color(SeriesKind::Strategy, "y")));
  EXPECT_EQ(gnuplotColor("#A0b1C2"), "'#A0b1C2'");
  for (const std::string& c : {hostile, std::string("red"), std::string("#12345"),
                              std::string("#1234567"), std::string("#12345g"), std::string()})
    EXPECT_THROW(gnuplotColor(c), Error) << c;
}

double rgbDistance(const std::string& a, const std::string& b) {
  double d = 0;
  for (int i = 0; i < 3; ++i) {
    const int x = std::stoi(a.substr(1 + 2 * i, 2), nullptr, 16), y = std::stoi(b.substr(1 + 2 * i, 2), nullptr, 16);
    d += double(x - y) * (x - y);
  }
  return std::sqrt(d);
}

// A PyTorch reference is drawn beside the strategy it is the reference of: files that recorded a
// near-identical colour for it (ddp and torch_ddp, two reds) still draw two distinct lines; a
// colour already distinct is kept.
TEST(ReportStyle, AReferenceNeverSharesItsRebuildsColour) {
  Styles styles;
  EntryRecord ddp = entry(5, "#d62728", "builtin-equivalent");
  EntryRecord torch = entry(20, "#a50f15", "reference (PyTorch)");
  torch.referenceOf = "ddp";
  styles.add(SeriesKind::Strategy, "ddp", ddp);
  styles.add(SeriesKind::Strategy, "torch_ddp", torch);
  const std::string mine = styles.color(SeriesKind::Strategy, "torch_ddp");
  EXPECT_TRUE(isHexColor(mine)) << mine;
  EXPECT_GE(rgbDistance(mine, "#d62728"), 200) << mine;
  EXPECT_EQ(styles.color(SeriesKind::Strategy, "ddp"), "#d62728") << "the rebuild keeps its own";
  EntryRecord distinct = entry(21, "#123456", "reference (PyTorch)");
  distinct.referenceOf = "ddp";
  styles.add(SeriesKind::Strategy, "torch_other", distinct);
  EXPECT_EQ(styles.color(SeriesKind::Strategy, "torch_other"), "#123456");
}

// ------------------------------------------------------------------------------------------
// Through tpbench, which passes this build's registry.
// ------------------------------------------------------------------------------------------

class ReportStyleCli : public test::TempDirTest {
 protected:
  ReportStyleCli() : TempDirTest("tpb_report_style") {}
  // The fixture with `edit` applied to each run record, reported without gnuplot.
  fs::path reportOfFixture(const std::function<void(json& run)>& edit) {
    json doc = json::parse(readText(test::kReportFixture));
    for (auto& r : doc["runs"]) edit(r);
    writeText(dir_ / "in.json", doc.dump());
    const fs::path out = dir_ / "out";
    const test::CliResult r =
        test::runCli({"report", (dir_ / "in.json").string(), "-o", out.string(), "--gnuplot", ""});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return out;
  }
};

TEST_F(ReportStyleCli, ARecordsColourWinsOverTheRegistry) {
  const fs::path out = reportOfFixture([](json& r) {
    if (r["config"]["strategy"] == "ring_all_reduce") r["color"] = "#123456";
  });
  const std::string gp = readText(out / "ring_epoch_time.gp");
  EXPECT_NE(gp.find("title \"ring_all_reduce (from scratch)\" lc rgb '#123456'"), std::string::npos)
      << gp;
  EXPECT_EQ(gp.find("'#2ca02c'"), std::string::npos) << "the registry's ring colour";
  EXPECT_NE(gp.find("title \"ddp (builtin)\" lc rgb '#d62728'"), std::string::npos)
      << "records without the field keep the registry's";
}

// A strategy this build has never heard of is drawn by its records' entry fields alone: first
// (order -1), in its colour, as a library strategy beside the ring and DDP, and as the reference
// loop where its origin says so.
TEST_F(ReportStyleCli, AnUnknownStrategyIsStyledByItsEntryFields) {
  const fs::path out = reportOfFixture([](json& r) {
    json& strategy = r["config"]["strategy"];
    if (strategy == "allreduce") {
      strategy = "zz_sync";
      r["origin"] = "library";
      r["order"] = -1;
      r["color"] = "#abcdef";
    } else if (strategy == "single") {
      strategy = "one_device";
      r["origin"] = "reference";
    }
  });
  const std::string csv = readText(out / "runs.csv");
  EXPECT_EQ(csv.find("\nzz_sync,"), csv.find('\n')) << "first row: order -1\n" << csv;
  EXPECT_NE(readText(out / "ring_epoch_time.gp").find("title \"zz_sync (library)\" lc rgb '#abcdef'"),
            std::string::npos);
  const std::string tp = readText(out / "throughput_scaling.gp");
  EXPECT_NE(tp.find("index 0 using 1:2 with linespoints title \"zz_sync (library)\" lc rgb '#abcdef'"),
            std::string::npos)
      << tp;
  EXPECT_NE(tp.find("ideal: N × one_device at N=1"), std::string::npos) << tp;
}

// The committed report is what this build draws from the committed results, and from the same
// results with the records' entry fields taken out (as in files written before them): the
// registry styles those exactly as the fields do (PNG/SVG depend on gnuplot's version; their
// scripts and data, tables and pages are compared).
class BaselineReport : public ReportStyleCli, public ::testing::WithParamInterface<bool> {};

TEST_P(BaselineReport, IsUnchanged) {
  const std::string src = std::string(TPB_SOURCE_DIR) + "/";
  const bool withoutEntryFields = GetParam();
  std::string results = src + "results/baseline-cpu.json";
  if (withoutEntryFields) {
    json doc = json::parse(readText(results));
    int stripped = 0;
    for (auto& run : doc.at("runs"))
      for (const char* key : {"origin", "order", "color", "data_ranks", "reference_of"}) stripped += run.erase(key) > 0;
    ASSERT_GT(stripped, 0) << "the committed baseline has no entry fields to take out";
    // At the same path below dir_ as the committed file below the source: the report names it.
    fs::create_directories(dir_ / "results");
    results = (dir_ / "results" / "baseline-cpu.json").string();
    writeText(results, doc.dump());
  }
  const fs::path out = dir_ / "baseline";
  const test::CliResult r = test::runCli({"report", results, "-o", out.string(), "--gnuplot", ""});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  int compared = 0;
  for (const auto& e : fs::directory_iterator(src + "reports/baseline-cpu")) {
    const std::string ext = e.path().extension().string();
    if (ext == ".png" || ext == ".svg") continue;
    SCOPED_TRACE(e.path().filename().string());
    std::string fresh = readText(out / e.path().filename());
    for (const std::string& prefix : {src, dir_.string() + "/"})
      for (std::size_t at; (at = fresh.find(prefix)) != std::string::npos;) fresh.erase(at, prefix.size());
    std::string committed = readText(e.path());
    if (ext == ".md" || ext == ".html") {
      // Without gnuplot every chart is "skipped: gnuplot disabled" in the index: compare the tables.
      committed = committed.substr(committed.find("Training runs"));
      fresh = fresh.substr(fresh.find("Training runs"));
    }
    EXPECT_EQ(fresh, committed);
    ++compared;
  }
  EXPECT_GE(compared, 14);
}

INSTANTIATE_TEST_SUITE_P(ReportStyleCli, BaselineReport, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "WithoutEntryFields" : "AsCommitted"; });

TEST_F(ReportStyleCli, ABadFieldIsRecordsOneLineUsageError) {
  json doc = json::parse(readText(test::kReportFixture));
  doc["runs"][3]["config"]["n_gpus"] = "two";
  writeText(dir_ / "bad.json", doc.dump());
  const test::CliResult r = test::runCli(
      {"report", (dir_ / "bad.json").string(), "-o", (dir_ / "out").string(), "--gnuplot", ""});
  test::expectRefusedUpFront(r, "bad.json: runs[3].config.n_gpus: expected");
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace tpb::report
