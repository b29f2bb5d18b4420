// Outputs as hostile input: what sits at an output path already (a link planted in a report
// directory or at --out, a results file of many runs, a text file, another tpbench's trace) is
// never written through, never replaced without --resume or --overwrite, and never replaced at
// all when tpbench did not write it. A refused command leaves nothing it created, and a relative
// --gnuplot runs what was checked, from any directory.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/out_file.h"
#include "report/chart.h"
#include "tests/cli_util.h"
#include "tests/file_util.h"
#include "tests/report_util.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::readText;
using test::runCli;
using test::writeText;

// The cheapest training point: one rank, one epoch of 256 samples.
std::vector<std::string> tinySweep(const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"sweep", "--strategies", "single", "--n_gpus", "1", "--batch_size", "64",
                                "--epochs", "1", "--train_size", "256", "--test_size", "64"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> tinyRun(const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"run", "--strategy", "single", "--n_gpus", "1", "--batch_size", "64",
                                "--epochs", "1", "--train_size", "256", "--test_size", "64"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> tinyBench(const char* cmd, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {cmd, "--algos", "ring", "--n_gpus", "2", "--bytes", "4K", "--iters", "1", "--warmup", "0"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += a + " ";
  return s;
}

// A stand-in for gnuplot that writes <id>.png and <id>.svg the way gnuplot does: by opening the
// names in its current directory, following whatever sits there.
void writeFakeGnuplot(const fs::path& path) {
  writeText(path, "#!/bin/sh\nid=$(basename \"$1\" .gp)\necho png > \"$id.png\"\necho svg > \"$id.svg\"\n");
  fs::permissions(path, fs::perms::owner_all);
}

class OutputsHostile : public test::TempDirTest {
 protected:
  OutputsHostile() : TempDirTest("tpb_outputs") {}
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A results file of many runs (the report fixture) at `name`.
  std::string resultsCopy(const std::string& name) const {
    fs::copy_file(test::kReportFixture, dir_ / name);
    return path(name);
  }
};

TEST_F(OutputsHostile, ReportWritesNoFileThroughALinkInItsDirectory) {
  const fs::path out = dir_ / "report", victims = dir_ / "victims";
  fs::create_directories(out);
  fs::create_directories(victims);
  std::vector<std::string> names = {"index.html", "index.md", "runs.csv", "allreduce.csv", "overlap.csv"};
  for (const auto& def : report::registeredCharts())
    for (const char* ext : {".png", ".svg", ".gp", ".dat"}) names.push_back(def.id + ext);
  for (const auto& name : names) {
    writeText(victims / name, "precious " + name);
    fs::create_symlink(victims / name, out / name);
  }
  // A dangling link: writing through it would create its target.
  fs::remove(out / "index.md");
  fs::create_symlink(victims / "created-through-a-link", out / "index.md");
  writeFakeGnuplot(dir_ / "fake-gnuplot");
  const std::vector<std::string> args = {"report", test::kReportFixture, "--trace", test::kTraceFixture, "-o",
                                         out.string(), "--gnuplot", (dir_ / "fake-gnuplot").string()};
  // A directory without tpbench's mark: its files are not tpbench's, links included: refused.
  test::expectRefusedUpFront(runCli(args), "is there and tpbench did not write it");
  for (const auto& name : names) EXPECT_TRUE(fs::is_symlink(out / name)) << name;
  // Marked (a report of tpbench's was written there once): the links are replaced, not followed.
  writeText(out / ".tpbench-report", "");
  const auto r = runCli(args);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("drawn:"), std::string::npos) << r.out;
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    if (name != "index.md") {
      EXPECT_EQ(readText(victims / name), "precious " + name);
    }
    EXPECT_FALSE(fs::is_symlink(out / name)) << "still a link: the report's file is not there";
  }
  EXPECT_FALSE(fs::exists(victims / "created-through-a-link"));
  EXPECT_NE(readText(out / "index.md").find("tpbench report"), std::string::npos);
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().filename() != ".tpbench-report") {
      EXPECT_NE(e.path().filename().string().rfind(".tpbench-", 0), 0u) << "left behind: " << e.path();
    }
  }
}

TEST_F(OutputsHostile, AnExistingResultsFileIsReplacedOnlyWithResumeOrOverwrite) {
  const std::string out = resultsCopy("many.json"), before = readText(out);
  const std::string model = path("model.json");
  writeText(model, R"({"schema": "tpbench.model/1", "fits": []})");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {tinySweep({"--out", out}), "add --resume to continue it or --overwrite to replace it"},
      {tinyRun({"--out", out}), "add --overwrite to replace it"},
      {tinyBench("allreduce", {"--out", out}), "add --overwrite to replace it"},
      {tinyBench("collective", {"--op", "allreduce", "--out", out}), "add --overwrite to replace it"},
      {{"model", test::kReportFixture, "--out", model}, "add --overwrite to replace it"},
  };
  for (const auto& [args, hint] : cases) {
    SCOPED_TRACE(joined(args));
    const auto r = runCli(args);
    test::expectRefusedUpFront(r, hint);
    EXPECT_NE(r.err.find("--out: '"), std::string::npos) << r.err;
  }
  EXPECT_EQ(readText(out), before) << "the results file changed";
  EXPECT_EQ(readText(model), R"({"schema": "tpbench.model/1", "fits": []})");
  EXPECT_FALSE(fs::exists(out + ".lock"));
}

TEST_F(OutputsHostile, AFileTpbenchDidNotWriteIsNeverReplaced) {
  const std::string notes = path("notes.txt"), results = resultsCopy("r.json"), link = path("link.json");
  writeText(notes, "my notes\n");
  fs::create_symlink(results, link);
  const std::string before = readText(results);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {tinySweep({"--out", notes, "--overwrite"}), "is not a tpbench results file"},
      {tinySweep({"--out", notes, "--resume"}), "is not a tpbench results file"},
      {tinyRun({"--out", notes, "--overwrite"}), "is not a tpbench results file"},
      {tinyBench("allreduce", {"--out", notes, "--overwrite"}), "is not a tpbench results file"},
      {tinySweep({"--out", path("t.json"), "--trace", notes, "--overwrite"}), "is not a tpbench trace"},
      {tinySweep({"--out", path("t.json"), "--trace", results, "--overwrite"}), "is not a tpbench trace"},
      {{"model", test::kReportFixture, "--out", results, "--overwrite"}, "is not a tpbench model"},
      {tinySweep({"--out", link, "--overwrite"}), "is a symbolic link"},
  };
  for (const auto& [args, why] : cases) {
    SCOPED_TRACE(joined(args));
    test::expectRefusedUpFront(runCli(args), why);
  }
  EXPECT_EQ(readText(notes), "my notes\n");
  EXPECT_EQ(readText(results), before);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_FALSE(fs::exists(path("t.json")));
}

TEST_F(OutputsHostile, OverwriteReplacesAResultsFileAndAnEmptyFileIsNew) {
  const std::string out = resultsCopy("many.json");
  auto r = runCli(tinySweep({"--out", out, "--overwrite"}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  json runs = test::readJson(out).at("runs");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].at("config").at("strategy"), "single");

  // An empty file (what mktemp makes) holds nothing to lose: written as a new one.
  const std::string empty = path("empty.json");
  writeText(empty, "");
  r = runCli(tinyRun({"--out", empty}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(test::readJson(empty).at("runs").size(), 1u);
}

// A stand-in for gnuplot whose first run, of all, touches `dir`/started and waits for
// `dir`/go: a report holds its directory, mid-chart, for as long as the test likes.
void writeHeldGnuplot(const fs::path& path, const fs::path& dir) {
  writeText(path, "#!/bin/sh\nif mkdir '" + (dir / "first").string() + "' 2>/dev/null; then touch '" +
                      (dir / "started").string() + "'; while [ ! -e '" + (dir / "go").string() +
                      "' ]; do sleep 0.05; done; fi\nid=$(basename \"$1\" .gp)\necho png > \"$id.png\"\n"
                      "echo svg > \"$id.svg\"\n");
  fs::permissions(path, fs::perms::owner_all);
}

// Runs a report into `out` whose first chart is held in gnuplot, and calls `whileHeld` with its pid.
test::CliResult heldReport(const fs::path& dir, const fs::path& out, const std::function<void(pid_t)>& whileHeld) {
  writeHeldGnuplot(dir / "held-gnuplot", dir);
  return runCli({"report", test::kReportFixture, "-o", out.string(), "--gnuplot", (dir / "held-gnuplot").string()},
                {}, [&](pid_t pid, const std::atomic<bool>& done, const test::SaidSoFar&) {
                  while (!done && !fs::exists(dir / "started")) std::this_thread::sleep_for(std::chrono::milliseconds(20));
                  if (!done) whileHeld(pid);
                  writeText(dir / "go", "");
                });
}

TEST_F(OutputsHostile, TwoReportsCannotShareOneDirectory) {
  const fs::path out = dir_ / "report";
  test::CliResult second;
  const auto first = heldReport(dir_, out, [&](pid_t) {
    second = runCli({"report", test::kReportFixture, "-o", out.string(), "--gnuplot", (dir_ / "held-gnuplot").string()});
  });
  ASSERT_EQ(first.exitCode, 0) << first.err;
  test::expectRefusedUpFront(second, "-o: " + out.string() + " is being written by another tpbench");
  EXPECT_NE(readText(out / "index.md").find("tpbench report"), std::string::npos);
}

// A report killed mid-chart leaves its scratch directory; the next report into the directory
// removes it, and nothing else: not a link under such a name, not what the link points to.
TEST_F(OutputsHostile, TheNextReportRemovesTheScratchOfOneKilledMidChart) {
  const fs::path out = dir_ / "report", victim = dir_ / "victim";
  fs::create_directories(victim);
  writeText(victim / "precious", "precious");
  const auto killed = heldReport(dir_, out, [&](pid_t pid) { ::kill(pid, SIGKILL); });
  EXPECT_NE(killed.exitCode, 0);
  std::vector<fs::path> left;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().filename().string().rfind(".tpbench-chart-", 0) == 0) left.push_back(e.path());
  ASSERT_EQ(left.size(), 1u) << "the killed report left no scratch directory to clean up";
  fs::create_directory_symlink(victim, out / ".tpbench-chart-Linked");
  fs::create_directories(out / ".tpbench-chart-not-mine");
  writeFakeGnuplot(dir_ / "fake-gnuplot");
  const auto r = runCli({"report", test::kReportFixture, "-o", out.string(), "--gnuplot", (dir_ / "fake-gnuplot").string()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(fs::exists(left[0])) << "still there: " << left[0];
  EXPECT_TRUE(fs::is_symlink(out / ".tpbench-chart-Linked"));
  EXPECT_EQ(readText(victim / "precious"), "precious");
  EXPECT_TRUE(fs::is_directory(out / ".tpbench-chart-not-mine")) << "not a name mkdtemp gives";
}

// A directory the user keeps other files in: report -o and history -o refuse to replace a file
// of the names they write there unless the directory carries tpbench's mark (or is a report that
// tpbench wrote before the mark); the refused command changes nothing.
TEST_F(OutputsHostile, ReportAndHistoryReplaceNoFileTheyDidNotWrite) {
  writeFakeGnuplot(dir_ / "fake-gnuplot");
  const std::string gnuplot = (dir_ / "fake-gnuplot").string();
  // History's input: a directory of two results files.
  fs::create_directories(dir_ / "series");
  fs::copy_file(test::kReportFixture, dir_ / "series" / "00.json");
  fs::copy_file(test::kReportFixture, dir_ / "series" / "01.json");
  struct Case {
    std::string file;  // the user's file in the output directory
    std::vector<std::string> args;
  };
  const fs::path site = dir_ / "site";
  const std::vector<Case> cases = {
      {"index.html", {"report", test::kReportFixture, "-o", site.string(), "--gnuplot", gnuplot}},
      {"index.md", {"report", test::kReportFixture, "-o", site.string(), "--gnuplot", gnuplot}},
      {"ring_epoch_time.png", {"report", test::kReportFixture, "-o", site.string(), "--gnuplot", gnuplot}},
      {"history.md", {"history", (dir_ / "series").string(), "-o", site.string(), "--gnuplot", gnuplot, "--min_size", "2"}},
      {"history.json", {"history", (dir_ / "series").string(), "-o", site.string(), "--gnuplot", gnuplot, "--min_size", "2"}},
      {"history.gp", {"history", (dir_ / "series").string(), "-o", site.string(), "--gnuplot", gnuplot, "--min_size", "2"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file + ": " + joined(c.args));
    fs::remove_all(site);
    fs::create_directories(site);
    writeText(site / c.file, "the user's own\n");
    writeText(site / "notes.txt", "mine\n");
    test::expectRefusedUpFront(runCli(c.args), "-o: " + (site / c.file).string() + " is there and tpbench did not write it");
    EXPECT_EQ(readText(site / c.file), "the user's own\n");
    EXPECT_FALSE(fs::exists(site / ".tpbench-report"));
    // Without a file of its names there, the directory is written and marked, and the user's
    // other files stay; once marked, a second run replaces its own files.
    fs::remove(site / c.file);
    auto r = runCli(c.args);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_TRUE(fs::is_regular_file(site / ".tpbench-report"));
    EXPECT_EQ(readText(site / "notes.txt"), "mine\n");
    r = runCli(c.args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
  }
  // A mark that is a link is not tpbench's mark.
  fs::remove_all(site);
  fs::create_directories(site);
  writeText(site / "index.html", "the user's own\n");
  fs::create_symlink(dir_ / "notes-elsewhere", site / ".tpbench-report");
  test::expectRefusedUpFront(runCli(cases[0].args), ".tpbench-report is not a regular file");
  EXPECT_EQ(readText(site / "index.html"), "the user's own\n");
  // A report tpbench wrote before the mark existed is still its own (the committed baseline report).
  fs::remove_all(site);
  fs::create_directories(site);
  writeText(site / "index.md", "# tpbench report\n\nolder\n");
  writeText(site / "index.html", "<html>older</html>\n");
  const auto r = runCli(cases[0].args);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(readText(site / "index.html"), "<html>older</html>\n");
}

// A user's directory that happens to be named like a report's scratch (no stamp, files of its own)
// is left alone, contents and all.
TEST_F(OutputsHostile, AUsersDirectoryNamedLikeTheScratchIsLeftAlone) {
  const fs::path out = dir_ / "report";
  fs::create_directories(out / ".tpbench-chart-Abc123");
  writeText(out / ".tpbench-chart-Abc123" / "thesis.tex", "chapter 1\n");
  // Stamped, but holding a file no chart writes: also left.
  fs::create_directories(out / ".tpbench-chart-Def456");
  writeText(out / ".tpbench-chart-Def456" / ".tpbench-scratch", "tpbench report scratch\n");
  writeText(out / ".tpbench-chart-Def456" / "thesis.tex", "chapter 2\n");
  writeFakeGnuplot(dir_ / "fake-gnuplot");
  const auto r = runCli({"report", test::kReportFixture, "-o", out.string(), "--gnuplot", (dir_ / "fake-gnuplot").string()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readText(out / ".tpbench-chart-Abc123" / "thesis.tex"), "chapter 1\n");
  EXPECT_EQ(readText(out / ".tpbench-chart-Def456" / "thesis.tex"), "chapter 2\n");
}

// What sits at an output's lock name and is no lock (a link planted there, a directory, a FIFO)
// refuses the command with one line saying what it is; the thing stays, and so does its target.
TEST_F(OutputsHostile, APlantedLockIsNamedAndLeftAlone) {
  const std::string out = path("locked.json"), victim = path("victim.txt");
  writeText(victim, "precious\n");
  const std::vector<std::pair<std::function<void()>, std::string>> plants = {
      {[&] { fs::create_symlink(victim, out + ".lock"); }, "is a symbolic link, not a lock tpbench made"},
      {[&] { fs::create_directory(out + ".lock"); }, "is a directory, not a lock tpbench made"},
      {[&] { ASSERT_EQ(::mkfifo((out + ".lock").c_str(), 0644), 0); }, "is not a regular file, not a lock tpbench made"},
  };
  for (const auto& [plant, why] : plants) {
    SCOPED_TRACE(why);
    fs::remove_all(out + ".lock");
    plant();
    const auto r = runCli(tinyBench("allreduce", {"--out", out}));
    test::expectRefusedUpFront(r, why);
    EXPECT_TRUE(fs::exists(fs::symlink_status(out + ".lock")));
    EXPECT_FALSE(fs::exists(out));
  }
  EXPECT_EQ(readText(victim), "precious\n");
  fs::remove_all(out + ".lock");
}

TEST_F(OutputsHostile, TwoSweepsCannotShareOneTrace) {
  const std::string trace = path("shared.trace.json");
  test::CliResult second;
  // The first sweep is stopped once its point has started, so the second one starts while the
  // first certainly holds its outputs.
  const auto first = runCli(tinySweep({"--out", path("a.json"), "--trace", trace}), {},
                            [&](pid_t pid, const std::atomic<bool>& done, const test::SaidSoFar& said) {
                              while (!done && !said.has("[1/")) std::this_thread::sleep_for(std::chrono::milliseconds(20));
                              if (done) return;
                              ::kill(pid, SIGSTOP);
                              second = runCli(tinySweep({"--out", path("b.json"), "--trace", trace}));
                              ::kill(pid, SIGCONT);
                            });
  ASSERT_EQ(first.exitCode, 0) << first.err;
  test::expectRefusedUpFront(second, "--trace: " + trace + " is being written by another tpbench");
  EXPECT_FALSE(fs::exists(path("b.json")));
  EXPECT_EQ(test::readJson(trace).at("tpbench").at("points").size(), 1u);

  // Afterwards the trace is a tpbench trace: continued with --resume, refused without.
  test::expectRefusedUpFront(runCli(tinySweep({"--out", path("c.json"), "--trace", trace})),
                             "add --resume to continue it or --overwrite to replace it");
}

TEST_F(OutputsHostile, ARefusedCommandLeavesNothingItCreated) {
  // Refused by the dataset check, after --save_dir was created.
  auto r = runCli(tinySweep({"--save_dir", path("new1/ck"), "--out", path("new2/sub/r.json"), "--dataset",
                             "mnist:" + path("no-such-dir")}));
  test::expectRefusedUpFront(r, "--dataset");
  EXPECT_FALSE(fs::exists(path("new1")));
  EXPECT_FALSE(fs::exists(path("new2")));

  // Refused by the --save_dir lock, after --out's parents were created.
  {
    OutLock held("--save_dir", path("ck2"));
    r = runCli(tinySweep({"--save_dir", path("ck2"), "--out", path("new3/sub/r.json")}));
  }
  test::expectRefusedUpFront(r, "--save_dir: " + path("ck2") + " is being written by another tpbench");
  EXPECT_FALSE(fs::exists(path("new3")));
  EXPECT_FALSE(fs::exists(path("ck2")));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir_)) left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << left.front();
}

TEST_F(OutputsHostile, ARelativeGnuplotRunsWhatWasChecked) {
  fs::create_directories(dir_ / "bin");
  writeFakeGnuplot(dir_ / "bin" / "gp");
  // From dir_, "bin/gp" names the stand-in; from the report directory it names nothing.
  const auto r = test::runProgram("/bin/sh", {"-c", "cd '" + dir_.string() + "' && exec '" + std::string(TPB_BINARY) +
                                                        "' report '" + test::kReportFixture +
                                                        "' -o out --gnuplot bin/gp"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.find("skipped: ring_epoch_time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("drawn:"), std::string::npos) << r.out;
  EXPECT_EQ(readText(dir_ / "out" / "ring_epoch_time.png"), "png\n");
}

}  // namespace
}  // namespace tpb
