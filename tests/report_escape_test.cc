// Tests for report/escape: each output's escaper leaves ordinary names and numbers as they are
// and turns hostile text (quotes, line breaks, markup, shell in backquotes) into plain text of
// its output. The gnuplot escaper is also checked against gnuplot itself, where it is installed:
// the literal reads back as the same text, and nothing in it runs.
#include "report/escape.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/file_util.h"
#include "tests/report_util.h"

namespace tpb::report {
namespace {

namespace fs = std::filesystem;
using test::gnuplotAvailable;

const std::vector<std::string> kOrdinary = {"ring_all_reduce", "N=2, batch 64/device",
                                            "cpu",             "94.6 %",
                                            "4K (4096)",       "ideal: N × single at N=1"};

TEST(ReportEscape, OrdinaryTextIsUnchanged) {
  for (const auto& s : kOrdinary) {
    SCOPED_TRACE(s);
    EXPECT_EQ(gnuplotString(s), "\"" + s + "\"");
    EXPECT_EQ(gnuplotComment(s), s);
    EXPECT_EQ(htmlText(s), s);
    EXPECT_EQ(markdownText(s), s);
    EXPECT_EQ(markdownCode(s), "`" + s + "`");
  }
  EXPECT_EQ(csvCell("ring_all_reduce"), "ring_all_reduce");
  EXPECT_EQ(csvCell("-1.5"), "-1.5") << "a negative number is data, not a formula";
  EXPECT_EQ(csvCell("+3e4"), "+3e4");
}

// One escaper, what goes in, what must come out.
struct Case {
  const char* escaper;
  std::string (*escape)(const std::string&);
  std::string in, out;
};

const std::vector<Case> kCases = {
    {"gnuplotString", gnuplotString, R"(a"b\c)", R"("a\"b\\c")"},
    {"gnuplotString", gnuplotString, "two\nlines", R"("two\nlines")"},
    {"gnuplotString", gnuplotString, "a`touch x`b", R"("a\140touch x\140b")"},
    {"gnuplotString", gnuplotString, "cr\rtab\t", R"("cr\015tab\011")"},
    // Text in a string literal is never evaluated.
    {"gnuplotString", gnuplotString, "system(\"id\") @x", R"("system(\"id\") @x")"},
    {"gnuplotComment", gnuplotComment, "a\nplot 1\r", "a plot 1 "},
    {"htmlText", htmlText, "<script>alert('x')</script>", "&lt;script&gt;alert('x')&lt;/script&gt;"},
    {"htmlText", htmlText, "a & \"b\"", "a &amp; &quot;b&quot;"},
    {"markdownText", markdownText, "a|b", "a\\|b"},
    {"markdownText", markdownText, "one\ntwo\r", "one two "},
    {"markdownText", markdownText, "<script>x</script>", "&lt;script&gt;x&lt;/script&gt;"},
    // No link can form: both brackets are escaped, so "javascript:" stays text.
    {"markdownText", markdownText, "[x](javascript:y) ![i](z)", "\\[x\\](javascript:y) !\\[i\\](z)"},
    // Escaped, these render as the same characters, not as code.
    {"markdownText", markdownText, "[launch.cc:212] `--flag` a\\b", "\\[launch.cc:212\\] \\`--flag\\` a\\\\b"},
    {"markdownText", markdownText, "Batch 32 -> 128", "Batch 32 -&gt; 128"},
    // Emphasis, strikethrough and entities are text; '_' inside a word is left as it is.
    {"markdownText", markdownText, "*em* _u_ ~s~ a_b &amp;", "\\*em\\* \\_u\\_ \\~s\\~ a_b &amp;amp;"},
    // A backslash before '|' is a character of its own: the '|' still cannot end the cell.
    {"markdownText", markdownText, "a\\|b", "a\\\\\\|b"},
    // Terminal controls become visible escapes (whose backslash Markdown then shows as one).
    {"markdownText", markdownText, "a\x1b[2Jb", "a\\\\x1b\\[2Jb"},
    {"gnuplotComment", gnuplotComment, "a\x1b]0;t\x07 end\\", "a\\x1b]0;t\\x07 end\\ "},
    {"csvCell", csvCell, "\t=1+2", "'\t=1+2"},
    {"markdownCode", markdownCode, "a`b``c", "``` a`b``c ```"},
    {"markdownCode", markdownCode, "a\nb", "`a b`"},
    {"csvCell", csvCell, "a,b", "\"a,b\""},
    {"csvCell", csvCell, "say \"hi\"", "\"say \"\"hi\"\"\""},
    {"csvCell", csvCell, "one\ntwo", "\"one\ntwo\""},
    {"csvCell", csvCell, "one\rtwo", "\"one\rtwo\""},
    // A spreadsheet would run these as formulas.
    {"csvCell", csvCell, "=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"},
    {"csvCell", csvCell, "@SUM(1,2)", "\"'@SUM(1,2)\""},
    {"csvCell", csvCell, "-x", "'-x"},
    {"csvCell", csvCell, "-infinity", "'-infinity"},
    {"csvCell", csvCell, "+0x1A", "'+0x1A"},
};

TEST(ReportEscape, HostileTextBecomesPlainText) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.escaper) + "(" + c.in + ")");
    EXPECT_EQ(c.escape(c.in), c.out);
  }
}

// The terminal's escaper: C0 controls, DEL, C1 controls (as UTF-8, U+009B is CSI), bidi
// overrides and bytes that are not UTF-8 become visible escapes; other UTF-8 passes unchanged.
TEST(ReportEscape, PrintableShowsEveryControlAndKeepsUtf8) {
  EXPECT_EQ(printable("ring_all_reduce N=2 µs — ok"), "ring_all_reduce N=2 µs — ok");
  EXPECT_EQ(printable("a\x1b[2J\x07\x7f\tb\nc\r"), "a\\x1b[2J\\x07\\x7f\\tb\\nc\\r");
  EXPECT_EQ(printable("csi \xc2\x9b" "31m"), "csi \\u009b31m");
  EXPECT_EQ(printable("rtl \xe2\x80\xae gpj.exe"), "rtl \\u202e gpj.exe");
  EXPECT_EQ(printable("raw \x9b and \xff \xc0\xaf \xe2\x82"), "raw \\x9b and \\xff \\xc0\\xaf \\xe2\\x82");
}

// gnuplot `print`s each literal; what it prints must be the text that went in, and the marker
// files that the text tries to create must not exist afterwards.
TEST(ReportEscape, GnuplotReadsBackTheSameTextAndRunsNothing) {
  if (!gnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed";
  const fs::path dir = test::makeTempDir("tpb_escape_test");
  ASSERT_FALSE(dir.empty());
  const std::string mark = (dir / "pwned").string();
  const std::vector<std::string> hostile = {
      "`touch " + mark + "1`",
      "\"`touch " + mark + "2`\"",
      "a\\`touch " + mark + "3`",
      "x\" . system(\"touch " + mark + "4\") . \"",
      "'`touch " + mark + "5`'",
      "@GPVAL_PWD `touch " + mark + "6`",
      "two\nlines \\n and a tab\t",
  };
  std::string script = "set print '" + (dir / "printed.txt").string() + "'\n";
  // A comment whose text ends in a backslash must not swallow the command after it.
  script += "# " + gnuplotComment("ends in a backslash \\") + "\n";
  for (const auto& s : hostile) script += "print " + gnuplotString(s) + "\n";
  test::writeText(dir / "t.gp", script);
  ASSERT_EQ(std::system(("gnuplot " + (dir / "t.gp").string() + " 2>" + (dir / "err.txt").string())
                            .c_str()),
            0)
      << test::readText(dir / "err.txt");
  std::string expected;
  for (const auto& s : hostile) expected += s + "\n";
  EXPECT_EQ(test::readText(dir / "printed.txt"), expected);
  for (int i = 1; i <= 6; ++i) EXPECT_FALSE(fs::exists(mark + std::to_string(i))) << i;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tpb::report
