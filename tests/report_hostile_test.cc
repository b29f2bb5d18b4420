// Results files are untrusted input. A report of a results file whose names, devices, transports,
// config and meta fields, entry origins and error messages hold shell text in backquotes, system(...) calls,
// HTML, Markdown table breakers, quotes, commas and line breaks: gnuplot really draws the charts
// (where it is installed) and runs none of it, and index.html, index.md, the CSV files and the
// gnuplot data hold the escaped text. Colours reach the .gp files, so a file whose colour is not
// "#rrggbb" is refused, and every colour in a script is one.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/escape.h"
#include "report/report.h"
#include "tests/cli_util.h"
#include "tests/file_util.h"
#include "tests/report_util.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::readText;
using test::writeText;

const std::string& kFixture = test::kReportFixture;
using test::gnuplotAvailable;

// RFC 4180 records: fields split at commas outside quotes, "" inside quotes is one '"'.
std::vector<std::vector<std::string>> parseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  rows.back().emplace_back();
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& f = rows.back().back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        f += '"', ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        f += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else {
      f += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

class ReportHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::makeTempDir("tpb_report_hostile");
    ASSERT_FALSE(dir_.empty());
    fs::create_directory(marks());
    const std::string m = marks().string() + "/";
    strategy1_ = "lib`touch " + m + "s1`\"|<script>alert(1)</script>, x\ny";
    strategy2_ = "one\" . system(\"touch " + m + "s2\") . \"@GPVAL_PWD'`touch " + m + "s3`'";
    error_ = "boom <img src=x onerror=alert(1)> | a,b \"q\"\nnext `touch " + m + "e1`";
    algo_ = "ps`touch " + m + "a1`<b>|";
    transport_ = "shm$(touch " + m + "t1)`touch " + m + "t2`";
    device_ = "cpu`touch " + m + "d1`<i>";
    host_ = "<script>alert('m')</script>`touch " + m + "m1`|x\ny";
    origin_ = "builtin\" . system(\"touch " + m + "o1\") . \"`touch " + m + "o2`";

    json doc = json::parse(readText(kFixture));
    for (auto& r : doc["runs"]) {
      auto& c = r["config"];
      if (c["strategy"] == "allreduce") c["strategy"] = strategy1_;
      if (c["strategy"] == "single") c["strategy"] = strategy2_;
      c["note"] = "n`touch " + m + "n1`";
      if (r["status"] == "failed") r["error"] = error_;
      if (c["strategy"] == "ddp") r["origin"] = origin_, r["color"] = "#D62728";
    }
    json other = doc["runs"][0];
    other["config"]["note"] = "other";  // so that note is named in the subtitles
    doc["runs"].push_back(other);
    for (auto& p : doc["allreduce"]) {
      if (p["algo"] == "param_server") p["algo"] = algo_;
      if (p["algo"] == "ring" && p["n_gpus"] == 4) p["transport"] = transport_;
      p["device"] = device_;
    }
    doc["meta"]["host"] = host_;
    doc["meta"]["command"] = "tpbench sweep `touch " + m + "m2` | tee \"x\", y";
    writeText(dir_ / "hostile.json", doc.dump());
    // Trace files are untrusted too: run labels and strategy names reach the timeline's tics.
    json trace = json::parse(readText(test::kTraceFixture));
    for (auto& p : trace["tpbench"]["points"]) {
      p["label"] = (p["config"]["strategy"] == "ddp" ? strategy1_ : strategy2_) + " " + p["label"].get<std::string>();
      if (p["config"]["strategy"] == "ddp") p["config"]["strategy"] = strategy1_;
    }
    for (auto& e : trace["traceEvents"])
      if (e["ph"] == "X" && e["name"] == "forward") e["name"] = "f`touch " + m + "x1`";
    writeText(dir_ / "hostile.trace.json", trace.dump());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path marks() const { return dir_ / "marks"; }
  fs::path out() const { return dir_ / "report"; }

  ReportSummary report() {
    ReportOptions opt;
    opt.inputs = {(dir_ / "hostile.json").string()};
    opt.traces = {(dir_ / "hostile.trace.json").string()};
    opt.outDir = out().string();
    return writeReport(opt);
  }

  fs::path dir_;
  std::string strategy1_, strategy2_, error_, algo_, transport_, device_, host_, origin_;
};

TEST_F(ReportHostileTest, GnuplotDrawsAndRunsNothing) {
  if (!gnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed";
  const ReportSummary s = report();
  for (const auto& [id, reason] : s.skipped) ADD_FAILURE() << id << " skipped: " << reason;
  EXPECT_EQ(s.drawn.size(), 14u);
  EXPECT_TRUE(fs::is_empty(marks())) << "a command from the results file ran: "
                                     << fs::directory_iterator(marks())->path();
  for (const auto& e : fs::directory_iterator(out())) {
    const std::string name = e.path().filename().string();
    const std::string text = readText(e.path());
    if (e.path().extension() == ".gp") {
      EXPECT_EQ(text.find('`'), std::string::npos) << name << " holds a backquote";
      // Every series colour (the fixed ones of the frame are the report's own).
      const std::string lc = "lc rgb ";
      for (std::size_t at = text.find(lc); at != std::string::npos; at = text.find(lc, at + 1)) {
        const std::string colour = text.substr(at + lc.size(), 9);
        EXPECT_TRUE(colour.size() == 9 && colour[0] == '\'' && colour[8] == '\'' &&
                    report::isHexColor(colour.substr(1, 7)))
            << name << ": " << colour;
      }
    }
    if (e.path().extension() == ".dat") {
      // A line break in a name must not start a data row.
      std::istringstream in(text);
      std::string line;
      while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const bool numberOrLabel = std::isdigit(static_cast<unsigned char>(line[0])) ||
                                   line.rfind("N=", 0) == 0 || line.rfind("NaN", 0) == 0;
        EXPECT_TRUE(numberOrLabel) << name << ": " << line;
      }
    }
  }
  // The names are drawn as text.
  const std::string svg = readText(out() / "throughput_scaling.svg");
  EXPECT_NE(svg.find("lib`touch "), std::string::npos);
  EXPECT_NE(readText(out() / "ring_epoch_time.gp").find("lc rgb '#D62728'"), std::string::npos);
  EXPECT_NE(readText(out() / "ring_epoch_time.svg").find("ddp (builtin\" . system(\"touch "),
            std::string::npos)
      << "the origin is drawn as text";
  EXPECT_NE(readText(out() / "allreduce_busbw.svg").find("ps`touch "), std::string::npos);
}

TEST_F(ReportHostileTest, PagesAndCsvHoldEscapedText) {
  report();
  // Each page: the raw markup of the hostile values is not there, their escaped text is.
  const std::string html = readText(out() / "index.html");
  const std::string md = readText(out() / "index.md");
  const struct {
    const std::string& page;
    std::vector<std::string> raw, escaped;
  } pages[] = {
      {html,
       {"<script", "<img src=x", "<b>|", "<i>"},
       {"lib`touch ", "&quot;|&lt;script&gt;alert(1)&lt;/script&gt;, x\ny",
        "boom &lt;img src=x onerror=alert(1)&gt; | a,b &quot;q&quot;",
        "&lt;script&gt;alert('m')&lt;/script&gt;"}},
      {md,
       {"<script", "<img", "<b>", "<i>"},
       {"lib\\`touch ", "\"\\|&lt;script&gt;alert(1)&lt;/script&gt;, x y",
        "boom &lt;img src=x onerror=alert(1)&gt; \\| a,b \"q\" next \\`touch ",
        "&lt;script&gt;alert('m')&lt;/script&gt;"}},
  };
  for (const auto& p : pages) {
    for (const auto& raw : p.raw) EXPECT_EQ(p.page.find(raw), std::string::npos) << raw;
    for (const auto& text : p.escaped) EXPECT_NE(p.page.find(text), std::string::npos) << text;
  }
  std::istringstream lines(md);
  std::string line;
  std::size_t header = 0;  // the cells of the current table's header row; 0 outside a table
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '|') {
      header = 0;
      continue;
    }
    EXPECT_EQ(line.back(), '|') << "a table row was broken: " << line;
    std::size_t cells = 0;
    for (std::size_t i = 0; i < line.size(); ++i)
      cells += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    if (header == 0) header = cells;
    EXPECT_EQ(cells, header) << "a row has other cells than its table's header: " << line;
  }

  const auto runs = parseCsv(readText(out() / "runs.csv"));
  ASSERT_GT(runs.size(), 1u);
  bool sawStrategy = false, sawError = false;
  for (const auto& row : runs) {
    EXPECT_EQ(row.size(), 10u);
    sawStrategy = sawStrategy || row[0] == strategy1_;
    sawError = sawError || row.back() == "failed: " + error_;
  }
  EXPECT_TRUE(sawStrategy) << "the strategy reads back whole from runs.csv";
  EXPECT_TRUE(sawError) << "the error reads back whole from runs.csv";
  const auto ar = parseCsv(readText(out() / "allreduce.csv"));
  bool sawAlgo = false;
  for (const auto& row : ar) {
    EXPECT_EQ(row.size(), 9u);
    sawAlgo = sawAlgo || (row[0] == algo_ && row[2] == device_);
  }
  EXPECT_TRUE(sawAlgo);
  EXPECT_TRUE(fs::is_empty(marks()));
}

// A '|' in a name is one literal '|' in its index.md cell, and so is a '\|' (a backslash that
// is text must not turn the escaping backslash into a character and let the '|' end the cell).
// Names that reach the terminal (the overlap lines quote trace labels) and file names in error
// lines are shown with their escapes visible, never obeyed.
TEST_F(ReportHostileTest, PipesStayInTheirCellAndTheTerminalIsNotDriven) {
  json doc = json::parse(readText(kFixture));
  for (auto& r : doc["runs"]) {
    if (r["config"]["strategy"] == "ddp") r["config"]["strategy"] = "a|b";
    if (r["config"]["strategy"] == "single") r["config"]["strategy"] = "c\\|d";
  }
  writeText(dir_ / "pipes.json", doc.dump());
  json trace = json::parse(readText(test::kTraceFixture));
  for (auto& p : trace["tpbench"]["points"]) p["label"] = "t\x1b[2J\x1b]0;pwned\x07 " + p["label"].get<std::string>();
  writeText(dir_ / "esc.trace.json", trace.dump());
  const auto r = test::runCli({"report", (dir_ / "pipes.json").string(), "--trace", (dir_ / "esc.trace.json").string(),
                               "-o", out().string(), "--gnuplot", ""});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overlap: t\\x1b[2J\\x1b]0;pwned\\x07 ddp"), std::string::npos) << r.out;

  const std::string md = readText(out() / "index.md");
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  std::istringstream lines(md);
  std::string line;
  int pipeRows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("| a\\", 0) != 0 && line.rfind("| c\\", 0) != 0) continue;
    ++pipeRows;
    // Cell borders: '|' after an even number of backslashes (GFM reads "\\" as one escaped
    // backslash, so "\\|" ends the cell).
    std::size_t borders = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      std::size_t slashes = 0;
      while (slashes < i && line[i - 1 - slashes] == '\\') ++slashes;
      borders += line[i] == '|' && slashes % 2 == 0;
    }
    EXPECT_EQ(borders, 11u) << line;  // the runs table's 10 cells
    if (line.rfind("| a\\", 0) == 0) {
      EXPECT_EQ(line.rfind("| a\\|b |", 0), 0u) << line;
      std::size_t escapedPipes = 0;
      for (std::size_t at = line.find("\\|"); at != std::string::npos; at = line.find("\\|", at + 1)) ++escapedPipes;
      EXPECT_EQ(escapedPipes, 1u) << "one '\\|', one literal '|': " << line;
    } else {
      EXPECT_EQ(line.rfind("| c\\\\\\|d |", 0), 0u) << "renders as c\\|d: " << line;
    }
  }
  EXPECT_GT(pipeRows, 1);

  // A file name with a terminal escape, in the one error line.
  const fs::path escName = dir_ / "bad\x1b[31m.json";
  writeText(escName, "{");
  const auto bad = test::runCli({"report", escName.string(), "-o", (dir_ / "o2").string()});
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_EQ(bad.err.find('\x1b'), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("bad\\x1b[31m.json"), std::string::npos) << bad.err;
  EXPECT_TRUE(fs::is_empty(marks()));
}

TEST_F(ReportHostileTest, AColourThatIsNotHexIsRefused) {
  json doc = json::parse(readText(dir_ / "hostile.json"));
  doc["runs"][2]["color"] = "#d62728' lw 2; system('touch " + (marks() / "c1").string() + "') #";
  writeText(dir_ / "hostile.json", doc.dump());
  const std::string msg = test::usageErrorOf([&] { report(); });
  EXPECT_NE(msg.find("hostile.json: runs[2].color: expected a colour \"#rrggbb\""),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line";
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_TRUE(fs::is_empty(marks()));
}

}  // namespace
}  // namespace tpb
