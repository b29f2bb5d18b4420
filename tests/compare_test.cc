// tpbench compare: regressions in timing, accuracy, status; the U test; bad input; exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "record/compare.h"
#include "record/history.h"
#include "tests/cli_util.h"

namespace tpb {
namespace {

using nlohmann::json;

json run(const std::string& strategy, int n, double sps, double acc, double loss, int repeat = 0,
         const std::string& status = "ok") {
  json config = {{"strategy", strategy}, {"n_gpus", n},         {"batch_size", 64},   {"epochs", 1},
                 {"device", "cpu"},      {"transport", "shm"},  {"dataset", "synthetic"},
                 {"train_size", 8192},   {"test_size", 0},      {"hidden", "512,512"}, {"lr", 0.01},
                 {"momentum", 0.0},      {"seed", 1},           {"bucket_mb", 25.0},   {"repeat_index", repeat}};
  json r = {{"config", config}, {"status", status}};
  if (status != "ok") {
    r["error"] = "rank 1 was killed by signal 9 (SIGKILL)";
    r["epochs"] = json::array();
    return r;
  }
  r["epochs"] = json::array({{{"epoch", 1}, {"wall_s", 8192 / sps}, {"compute_s", 0.1}, {"comm_s", 0.1},
                              {"samples_per_s", sps}, {"train_loss", loss}, {"test_accuracy", acc},
                              {"samples", 8192}}});
  r["summary"] = {{"total_s", 8192 / sps}, {"samples_per_s", sps}, {"final_test_accuracy", acc},
                  {"final_train_loss", loss}, {"scaling_efficiency", nullptr}};
  return r;
}

json allreduce(const std::string& algo, int n, std::size_t bytes, double busbw) {
  return {{"algo", algo}, {"transport", "shm"}, {"device", "cpu"}, {"n_gpus", n}, {"bytes", bytes},
          {"count", bytes / 4}, {"time_us", {{"median", 1.0}, {"min", 1.0}, {"max", 1.0}}},
          {"algbw_gbps", busbw}, {"busbw_gbps", busbw}, {"wrong", 0}, {"status", "ok"},
          {"iters", 20}, {"warmup", 5}};
}

json doc(json runs, json ar = json::array()) {
  return {{"schema", "tpbench.results/1"}, {"meta", {{"command", "test"}}}, {"runs", runs}, {"allreduce", ar}};
}

std::string write(const std::string& name, const json& d) {
  const std::string path = test::tempPath(name);
  std::ofstream(path) << d.dump();
  return path;
}

CompareResult compare(const json& base, const json& now, double threshold = 0.10) {
  CompareOptions o;
  o.basePath = write("base.json", base);
  o.newPath = write("new.json", now);
  o.threshold = threshold;
  return compareResults(o);
}

const Comparison* find(const CompareResult& r, const std::string& metric) {
  for (const auto& pc : r.points)
    if (const Comparison* c = pc.metric(metric)) return c;
  return nullptr;
}

// The first row of the first point: with regressions listed first, the worst news.
const Comparison& firstRow(const CompareResult& r) { return r.points.front().metrics.front(); }

TEST(Compare, IdenticalFilesHaveNoRegression) {
  const json d = doc({run("ring_all_reduce", 2, 30000, 0.93, 0.5)}, {allreduce("ring", 2, 1 << 20, 14.0)});
  const auto r = compare(d, d);
  EXPECT_FALSE(r.regressed());
  EXPECT_EQ(r.matched, 2u);
  ASSERT_NE(find(r, "samples_per_s"), nullptr);
  EXPECT_DOUBLE_EQ(find(r, "samples_per_s")->change, 0.0);
}

TEST(Compare, SlowerThanTheThresholdRegressesFasterDoesNot) {
  const json base = doc({run("ddp", 2, 20000, 0.93, 0.5)});
  const auto slow = compare(base, doc({run("ddp", 2, 16000, 0.93, 0.5)}));  // 25 % slower
  EXPECT_TRUE(slow.regressed());
  EXPECT_TRUE(slow.points.front().regression()) << "regressions are listed first";
  EXPECT_NEAR(find(slow, "samples_per_s")->slowdown, 0.25, 1e-9);
  EXPECT_TRUE(find(slow, "epoch_s")->regression);
  EXPECT_FALSE(compare(base, doc({run("ddp", 2, 19000, 0.93, 0.5)})).regressed());  // 5 % slower
  // The bound is the threshold itself: just over it regresses, just under it does not.
  EXPECT_TRUE(compare(base, doc({run("ddp", 2, 17800, 0.93, 0.5)})).regressed());   // 12.4 % slower
  EXPECT_FALSE(compare(base, doc({run("ddp", 2, 18300, 0.93, 0.5)})).regressed());  // 9.3 % slower
  EXPECT_FALSE(compare(base, doc({run("ddp", 2, 17800, 0.93, 0.5)}), 0.13).regressed());
  EXPECT_FALSE(compare(base, doc({run("ddp", 2, 40000, 0.93, 0.5)})).regressed());  // faster
}

// A slow point is slow in its epoch time and its samples/s alike: one verdict, one regression.
TEST(Compare, OneVerdictPerPointWithItsMetricsBeside) {
  const std::string base = write("v1.json", doc({run("ddp", 2, 20000, 0.93, 0.5), run("ddp", 4, 20000, 0.93, 0.5)}));
  const std::string slow = write("v2.json", doc({run("ddp", 2, 16000, 0.93, 0.5), run("ddp", 4, 20000, 0.93, 0.5)}));
  const auto r = compare(json::parse(std::ifstream(base)), json::parse(std::ifstream(slow)));
  EXPECT_TRUE(find(r, "epoch_s")->regression && find(r, "samples_per_s")->regression);
  EXPECT_EQ(r.regressions(), 1u);
  EXPECT_EQ(r.points.size(), 2u);
  const auto text = test::runCli({"compare", base, slow});
  ASSERT_EQ(text.exitCode, 3) << text.err;
  EXPECT_EQ(std::count(text.out.begin(), text.out.end(), '\n'), 5) << text.out;  // head, 2 points, blank, total
  EXPECT_NE(text.out.find("2 points matched, 1 regressed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("20000 -> 16000/s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("+25.0 %"), std::string::npos) << text.out;
  EXPECT_EQ(json::parse(test::runCli({"compare", base, slow, "--format", "json"}).out).at("regressions"), 1);
}

// Which part of the epoch got slower, from the epochs' compute_s and comm_s.
TEST(Compare, SaysWhetherComputeOrCommunicationGotSlower) {
  const json base = doc({run("ddp", 2, 20000, 0.93, 0.5)});
  json comm = run("ddp", 2, 10000, 0.93, 0.5), compute = comm;
  comm["epochs"][0]["comm_s"] = 0.5;
  compute["epochs"][0]["compute_s"] = 0.5;
  const auto slowComm = compare(base, doc({comm}));
  ASSERT_TRUE(slowComm.points.front().split.has_value());
  EXPECT_EQ(slowerPart(*slowComm.points.front().split), "communication");
  EXPECT_NEAR(slowComm.points.front().split->commNew, 0.5, 1e-12);
  EXPECT_EQ(slowerPart(*compare(base, doc({compute})).points.front().split), "compute");
  const std::string b = write("sb.json", base), n = write("sn.json", doc({comm}));
  const auto text = test::runCli({"compare", b, n});
  EXPECT_NE(text.out.find("communication got slower"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("compute +0.0 %, comm +400.0 %"), std::string::npos) << text.out;
  EXPECT_EQ(test::runCli({"compare", b, b}).out.find("got slower"), std::string::npos);
}

// Every median printed comes with its spread, so a reader sees whether a change is within
// noise: min-max over the repeats of a run, over the timed iterations of a collective point.
TEST(Compare, EveryMedianComesWithItsSpread) {
  json base = json::array(), now = json::array();
  const double b[] = {20000, 19000, 21000}, n[] = {18500, 17500, 19800};
  for (int i = 0; i < 3; ++i) {
    base.push_back(run("ddp", 2, b[i], 0.9, 0.5, i));
    now.push_back(run("ddp", 2, n[i], 0.9, 0.5, i));
  }
  json coll = allreduce("ring", 2, 1 << 20, 10.0);
  coll["time_us"] = {{"median", 100.0}, {"min", 80.0}, {"max", 125.0}};  // busbw 8 at the slowest, 12.5 at the fastest
  const std::string bp = write("sp1.json", doc(base, {coll})), np = write("sp2.json", doc(now, {coll}));
  const auto text = test::runCli({"compare", bp, np});
  ASSERT_EQ(text.exitCode, 0) << text.err;  // 8 % slower: within the threshold
  EXPECT_NE(text.out.find("20000 (19000-21000) -> 18500 (17500-19800)/s"), std::string::npos) << text.out;
  // Epoch time is 8192 / samples/s: 0.4096 s at 20000, 0.3901 at 21000, 0.4311 at 19000.
  EXPECT_NE(text.out.find("0.4096 (0.3901-0.4312) -> "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" 10 (8-12.5) GB/s"), std::string::npos) << text.out;
  // Identical repeats have no spread to show: the median stands alone.
  EXPECT_NE(text.out.find(" 0.9 "), std::string::npos) << text.out;
  const auto md = test::runCli({"compare", bp, np, "--format", "markdown"});
  EXPECT_NE(md.out.find("20000 (19000-21000) -&gt; 18500 (17500-19800)/s"), std::string::npos) << md.out;
  const json j = json::parse(test::runCli({"compare", bp, np, "--format", "json"}).out);
  bool sawRun = false, sawCollective = false;
  for (const auto& p : j.at("points"))
    for (const auto& m : p.at("metrics")) {
      if (m.at("metric") == "samples_per_s") {
        sawRun = true;
        EXPECT_EQ(m.at("base_min"), 19000.0);
        EXPECT_EQ(m.at("new_max"), 19800.0);
      }
      if (m.at("metric") == "busbw_gbps") {
        sawCollective = true;
        EXPECT_DOUBLE_EQ(m.at("base_min").get<double>(), 8.0);
        EXPECT_DOUBLE_EQ(m.at("new_max").get<double>(), 12.5);
      }
    }
  EXPECT_TRUE(sawRun && sawCollective) << j.dump(2);
}

// Counts print as integers and byte counts with K/M/G, never as 1.71445e+08.
TEST(Compare, NumbersArePlainAndBytesHaveUnits) {
  json r = run("ring_all_reduce", 2, 20000, 0.93, 0.5);
  r["epochs"][0]["traffic"] = {{"bytes_sent", {171445000, 171445000}}, {"bytes_recv", {171445000, 171445000}},
                               {"msgs_sent", {12, 12}}, {"msgs_recv", {12, 12}}};
  json more = r;
  more["epochs"][0]["traffic"]["msgs_sent"] = {12, 14};
  const std::string base = write("pb.json", doc({r})), now = write("pn.json", doc({more}));
  const auto same = test::runCli({"compare", base, base});
  EXPECT_NE(same.out.find("327M"), std::string::npos) << same.out;  // 2 x 171445000 bytes
  EXPECT_NE(same.out.find(" 20000/s "), std::string::npos) << same.out;
  EXPECT_EQ(same.out.find("e+"), std::string::npos) << same.out;
  const auto changed = test::runCli({"compare", base, now});
  EXPECT_EQ(changed.exitCode, 3);
  EXPECT_NE(changed.out.find("msgs_sent 24 -> 26"), std::string::npos) << changed.out;
  EXPECT_NE(changed.out.find("rank 1: 12 -> 14"), std::string::npos) << changed.out;
}

// --ignore matches points that differ only in the settings it names: a straggler run against the
// same run without one (slow_ranks), a batch against another. The label says what was ignored;
// two points of one file that differ only in it would pool, and are refused; so is a key that is
// no setting, and --ignore with --paired.
TEST(Compare, IgnoreMatchesPointsThatDifferOnlyInTheNamedSettings) {
  json base = run("ddp", 2, 20000, 0.93, 0.5), slowed = base;
  slowed["config"]["slow_ranks"] = "1:2";
  for (json& e : slowed["epochs"]) e["wall_s"] = e["wall_s"].get<double>() * 2;
  slowed["summary"]["samples_per_s"] = 10000.0;
  try {
    compare(doc({base}), doc({slowed}));
    ADD_FAILURE() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("slow_ranks differs (\"absent\" vs \"1:2\"); --ignore slow_ranks compares them "
                                         "as one point"),
              std::string::npos)
        << e.what();
  }
  const std::string b = write("ib.json", doc({base})), n = write("in.json", doc({slowed}));
  CompareOptions opt;
  opt.basePath = b;
  opt.newPath = n;
  opt.ignore = {"slow_ranks"};
  const CompareResult r = compareResults(opt);
  EXPECT_EQ(r.matched, 1u);
  ASSERT_FALSE(r.points.empty());
  EXPECT_NE(r.points[0].point.find("(ignoring slow_ranks)"), std::string::npos) << r.points[0].point;
  // Named twice on the command line, ignored (and named) once.
  const auto twice = test::runCli({"compare", b, n, "--ignore", "slow_ranks,slow_ranks", "--ignore", "slow_ranks"});
  EXPECT_EQ(twice.exitCode, 3) << twice.err;  // the straggler halved the throughput: a regression
  EXPECT_NE(twice.out.find("(ignoring slow_ranks)"), std::string::npos) << twice.out;
  // One file holding the run with and without the straggler: they would pool as repeats.
  const std::string both = write("iboth.json", doc({base, slowed}));
  opt.newPath = both;
  try {
    compareResults(opt);
    ADD_FAILURE() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds points that differ only in what it ignores"), std::string::npos)
        << e.what();
  }
  opt.newPath = n;
  opt.ignore = {"slow_rank"};
  EXPECT_THROW(compareResults(opt), UsageError);
  opt.ignore = {"batch_size"};
  opt.paired = true;
  EXPECT_THROW(compareResults(opt), UsageError);
}

// With nothing in common, the refusal names the first field that keeps the nearest points apart.
TEST(Compare, NothingInCommonNamesTheFirstFieldThatDiffers) {
  json base = run("ddp", 2, 20000, 0.93, 0.5), now = base;
  base["config"]["batch_size"] = 128;
  try {
    compare(doc({base}), doc({now, run("ring_all_reduce", 4, 20000, 0.9, 0.5)}));
    ADD_FAILURE() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no point in common"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(": batch_size differs (128 vs 64)"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("more fields"), std::string::npos) << e.what();
  }
  try {
    compare(doc(json::array(), {allreduce("ring", 2, 1 << 20, 14.0)}),
            doc(json::array(), {allreduce("ring", 2, 2 << 20, 14.0)}));
    ADD_FAILURE() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bytes differs (1048576 vs 2097152)"), std::string::npos) << e.what();
  }
  // Back-to-back times are not per-call times: never compared with each other. A file older
  // than the field holds per-call ones.
  json backToBack = allreduce("ring", 2, 1 << 20, 14.0);
  backToBack["timing"] = "back_to_back";
  try {
    compare(doc(json::array(), {allreduce("ring", 2, 1 << 20, 14.0)}), doc(json::array(), {backToBack}));
    ADD_FAILURE() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("timing differs (\"per_call\" vs \"back_to_back\")"), std::string::npos)
        << e.what();
  }
  json perCall = allreduce("ring", 2, 1 << 20, 14.0);
  perCall["timing"] = "per_call";
  EXPECT_NO_THROW(compare(doc(json::array(), {allreduce("ring", 2, 1 << 20, 14.0)}), doc(json::array(), {perCall})));
}

TEST(Compare, WithRepeatsASlowdownMustAlsoBeSignificant) {
  json base = json::array(), shifted = json::array(), noisy = json::array();
  const double b[] = {100, 101, 99, 102, 98, 100};
  const double s[] = {80, 81, 79, 82, 78, 80};  // clearly slower: every value below the base's
  // Median 85 (18 % slower), but half the values lie above all of the base's: U = 18 of 36.
  const double m[] = {51, 119, 52.7, 117.3, 68, 102};
  for (int i = 0; i < 6; ++i) {
    base.push_back(run("ring_all_reduce", 2, b[i], 0.9, 0.5, i));
    shifted.push_back(run("ring_all_reduce", 2, s[i], 0.9, 0.5, i));
    noisy.push_back(run("ring_all_reduce", 2, m[i], 0.9, 0.5, i));
  }
  const auto r1 = compare(doc(base), doc(shifted));
  const Comparison* c1 = find(r1, "samples_per_s");
  ASSERT_NE(c1, nullptr);
  EXPECT_EQ(c1->nBase, 6);
  EXPECT_LT(c1->p, 0.05);
  EXPECT_TRUE(c1->regression);
  // Slower by the median, but the samples overlap: the U test does not reject.
  const auto r2 = compare(doc(base), doc(noisy));
  const Comparison* c2 = find(r2, "samples_per_s");
  ASSERT_NE(c2, nullptr);
  EXPECT_GT(c2->slowdown, 0.10);
  EXPECT_GT(c2->p, 0.05);
  EXPECT_FALSE(c2->regression);
}

// --scale_by_sgemm: a baseline from a faster machine. NEW's machine does the product 3x slower
// and trains 3.3x slower: as on BASE's machine that is 10 % slower, within a 50 % threshold; the
// same file unscaled regresses. A real slowdown on top (2x) still regresses when scaled.
// Collectives are not scaled.
TEST(Compare, ScaledBySgemmAMachineThreeTimesSlowerIsNotARegression) {
  const auto withRate = [](json d, double gflops) {
    d["meta"]["sgemm_gflops"] = gflops;
    return d;
  };
  json base = json::array(), slowMachine = json::array(), slowCode = json::array();
  for (int i = 0; i < 6; ++i) {
    const double b = 30000 + 100 * i;
    base.push_back(run("ddp", 2, b, 0.9, 0.5, i));
    slowMachine.push_back(run("ddp", 2, b / 3.3, 0.9, 0.5, i));
    slowCode.push_back(run("ddp", 2, b / 6.6, 0.9, 0.5, i));
  }
  const json baseDoc = withRate(doc(base, {allreduce("ring", 2, 1 << 20, 14.0)}), 90.0);
  CompareOptions o;
  o.basePath = write("sb.json", baseDoc);
  o.newPath = write("sm.json", withRate(doc(slowMachine, {allreduce("ring", 2, 1 << 20, 14.0 / 3)}), 30.0));
  o.threshold = 0.5;
  EXPECT_TRUE(compareResults(o).regressed()) << "unscaled, the slower machine is a regression";
  o.scaleBySgemm = true;
  const CompareResult r = compareResults(o);
  ASSERT_TRUE(r.scale.has_value());
  EXPECT_DOUBLE_EQ(r.scale->factor(), 3.0);
  const Comparison* sps = find(r, "samples_per_s");
  ASSERT_NE(sps, nullptr);
  EXPECT_NEAR(sps->slowdown, 0.1, 1e-9);
  EXPECT_FALSE(sps->regression);
  EXPECT_NEAR(sps->now, 30250 / 3.3, 1e-6) << "the median shown is the one measured";
  const Comparison* busbw = find(r, "busbw_gbps");
  ASSERT_NE(busbw, nullptr);
  EXPECT_NEAR(busbw->slowdown, 2.0, 1e-9) << "a collective is not scaled";
  EXPECT_TRUE(busbw->regression);

  o.newPath = write("sc.json", withRate(doc(slowCode), 30.0));
  const CompareResult code = compareResults(o);
  EXPECT_NEAR(find(code, "samples_per_s")->slowdown, 1.2, 1e-9);
  EXPECT_TRUE(find(code, "samples_per_s")->regression);
  EXPECT_LT(find(code, "samples_per_s")->p, 0.05) << "the U test runs on the scaled values";

  // Through the CLI: the line under the table says what was scaled, and by how much.
  const std::string fast = write("sf.json", withRate(doc(base), 90.0)), slow = write("ss.json", withRate(doc(slowMachine), 30.0));
  const auto cli = test::runCli({"compare", fast, slow, "--threshold", "0.5", "--scale_by_sgemm"});
  EXPECT_EQ(cli.exitCode, 0) << cli.out << cli.err;
  EXPECT_NE(cli.out.find("sgemm 90 GFLOP/s in BASE, 30 in NEW, so NEW's run times / 3"), std::string::npos) << cli.out;
  const auto j = test::runCli({"compare", fast, slow, "--scale_by_sgemm", "--format", "json"});
  EXPECT_DOUBLE_EQ(json::parse(j.out).at("sgemm_scale").at("factor").get<double>(), 3.0);
  EXPECT_TRUE(json::parse(test::runCli({"compare", fast, slow, "--format", "json"}).out).at("sgemm_scale").is_null());
}

// A file without the rate cannot be scaled: exit 2 naming it; and rounds of one machine are not.
TEST(Compare, ScaleBySgemmNeedsTheRateInBothFilesAndIsNotForPairedRounds) {
  json with = doc({run("ddp", 2, 20000, 0.9, 0.5)});
  with["meta"]["sgemm_gflops"] = 30.0;
  const std::string a = write("sa.json", with), old = write("so.json", doc({run("ddp", 2, 20000, 0.9, 0.5)}));
  for (const auto& [b, n] : {std::pair{a, old}, std::pair{old, a}}) {
    const auto r = test::runCli({"compare", b, n, "--scale_by_sgemm"});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_NE(r.err.find("--scale_by_sgemm: " + old + " has no meta.sgemm_gflops"), std::string::npos) << r.err;
  }
  CompareOptions o;
  o.basePath = o.newPath = a;
  o.paired = o.scaleBySgemm = true;
  EXPECT_THROW(compareResults(o), UsageError);
}

// A rate no machine of the gate's has cannot excuse a regression: NEW ten times slower in
// training, its file claiming a machine a billion times slower (sgemm 1e-9 against 30), is
// refused, exit 2, not called "ok". The bound, kSgemmScaleMax times either way, passes at it.
TEST(Compare, ScaleBySgemmRefusesAnImplausibleMachineRatio) {
  const auto withRate = [](json d, double gflops) {
    d["meta"]["sgemm_gflops"] = gflops;
    return d;
  };
  json base = json::array(), slow = json::array();
  for (int i = 0; i < 6; ++i) {
    base.push_back(run("ddp", 2, 30000 + 100 * i, 0.9, 0.5, i));
    slow.push_back(run("ddp", 2, (30000 + 100 * i) / 10.0, 0.9, 0.5, i));
  }
  const std::string b = write("sx-base.json", withRate(doc(base), 30.0));
  for (const double claimed : {1e-9, 30.0 / 9, 30.0 * 9, 1e9}) {
    SCOPED_TRACE(claimed);
    const std::string n = write("sx-new.json", withRate(doc(slow), claimed));
    const auto r = test::runCli({"compare", b, n, "--scale_by_sgemm"});
    EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--scale_by_sgemm: meta.sgemm_gflops"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("up to 8x only"), std::string::npos) << r.err;
  }
  // At the bound it is judged: 10x slower on an 8x slower machine is 25 % slower as on BASE's.
  const std::string n = write("sx-new.json", withRate(doc(slow), 30.0 / kSgemmScaleMax));
  CompareOptions o;
  o.basePath = b;
  o.newPath = n;
  o.scaleBySgemm = true;
  o.threshold = 0.2;
  const CompareResult r = compareResults(o);
  EXPECT_NEAR(find(r, "samples_per_s")->slowdown, 0.25, 1e-9);
  EXPECT_TRUE(find(r, "samples_per_s")->regression);
}

// Paired rounds: `dir`/rNN.json, one file per round with one run of ring_all_reduce at each rate.
std::string roundsDir(const std::string& name, const std::vector<double>& rates) {
  const std::string dir = test::tempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < rates.size(); ++i)
    std::ofstream(dir + "/r" + std::to_string(10 + i) + ".json") << doc({run("ring_all_reduce", 2, rates[i], 0.9, 0.5)}).dump();
  return dir;
}

CompareResult comparePaired(const std::string& base, const std::string& now, double threshold, double alpha) {
  CompareOptions o;
  o.basePath = base;
  o.newPath = now;
  o.threshold = threshold;
  o.alpha = alpha;
  o.paired = true;
  return compareResults(o);
}

TEST(ComparePaired, ASteadySlowdownUnderAMoodyMachineIsCaughtWhereTheUTestMissesIt) {
  // The machine's mood moves each round's rate by up to 40 %; NEW is 8 % slower in every round.
  const std::vector<double> mood = {100, 60, 140, 80, 120, 90, 110, 70};
  std::vector<double> slower;
  for (double m : mood) slower.push_back(m / 1.08);
  const std::string a = roundsDir("pa", mood), b = roundsDir("pb", slower);
  const auto r = comparePaired(a, b, 0.05, 0.01);
  const Comparison* c = find(r, "samples_per_s");
  ASSERT_NE(c, nullptr);
  EXPECT_NEAR(c->slowdown, 0.08, 1e-9);
  EXPECT_DOUBLE_EQ(c->p, 1.0 / 256);  // all 8 log ratios positive
  EXPECT_TRUE(c->regression);
  EXPECT_EQ(r.rounds, 8u);
  EXPECT_EQ(c->nBase, 8);
  // The same values unpaired: the medians differ by 8 %, the samples overlap, no verdict.
  json base = json::array(), now = json::array();
  for (std::size_t i = 0; i < mood.size(); ++i) {
    base.push_back(run("ring_all_reduce", 2, mood[i], 0.9, 0.5, static_cast<int>(i)));
    now.push_back(run("ring_all_reduce", 2, slower[i], 0.9, 0.5, static_cast<int>(i)));
  }
  const Comparison* u = find(compare(doc(base), doc(now), 0.05), "samples_per_s");
  ASSERT_NE(u, nullptr);
  EXPECT_GT(u->p, 0.05);
  EXPECT_FALSE(u->regression);
}

TEST(ComparePaired, NoiseWithoutAShiftAndASmallShiftPass) {
  const std::vector<double> mood = {100, 60, 140, 80, 120, 90, 110, 70};
  std::vector<double> noisy, small;
  for (std::size_t i = 0; i < mood.size(); ++i) {
    noisy.push_back(mood[i] * (i % 2 ? 1.04 : 0.96));
    small.push_back(mood[i] / 1.02);  // 2 % slower in every round: significant, under the threshold
  }
  const std::string a = roundsDir("na", mood);
  const Comparison* n = find(comparePaired(a, roundsDir("nb", noisy), 0.05, 0.01), "samples_per_s");
  ASSERT_NE(n, nullptr);
  EXPECT_FALSE(n->regression);
  EXPECT_GT(n->p, 0.01);
  const Comparison* s = find(comparePaired(a, roundsDir("ns", small), 0.05, 0.01), "samples_per_s");
  ASSERT_NE(s, nullptr);
  EXPECT_LT(s->p, 0.01);
  EXPECT_FALSE(s->regression);
  // Fewer rounds than minRepeats: no test, the threshold alone decides (as unpaired).
  const std::string a3 = roundsDir("ta", {100, 60, 140}), b3 = roundsDir("tb", {90, 54, 126});
  const Comparison* t = find(comparePaired(a3, b3, 0.05, 0.01), "samples_per_s");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->p, -1);
  EXPECT_TRUE(t->regression);
  EXPECT_NE(t->note.find("fewer than 5"), std::string::npos) << t->note;
}

TEST(ComparePaired, RoundsMustPairAndLinksAreRefused) {
  const std::string a = roundsDir("ra", {100, 100, 100, 100, 100}), b = roundsDir("rb", {100, 100, 100, 100});
  EXPECT_THROW(comparePaired(a, b, 0.05, 0.01), UsageError);  // r14.json only in BASE
  const auto missing = test::runCli({"compare", "--paired", a, b});
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_NE(missing.err.find("r14.json"), std::string::npos) << missing.err;
  // A link among the rounds, a link as the directory, a file as the directory, no round at all.
  const std::string c = roundsDir("rc", {100, 100, 100, 100});
  std::filesystem::create_symlink(a + "/r14.json", c + "/r14.json");
  const auto link = test::runCli({"compare", "--paired", a, c});
  EXPECT_EQ(link.exitCode, 2);
  EXPECT_NE(link.err.find("not a regular file"), std::string::npos) << link.err;
  const std::string dirLink = test::tempPath("rlink");
  std::filesystem::remove(dirLink);
  std::filesystem::create_directory_symlink(a, dirLink);
  EXPECT_EQ(test::runCli({"compare", "--paired", a, dirLink}).exitCode, 2);
  EXPECT_EQ(test::runCli({"compare", "--paired", a, a + "/r10.json"}).exitCode, 2);
  const std::string empty = roundsDir("re", {});
  EXPECT_EQ(test::runCli({"compare", "--paired", empty, empty}).exitCode, 2);
  // Without --paired a directory is not a results file.
  EXPECT_EQ(test::runCli({"compare", a, a}).exitCode, 2);
}

TEST(ComparePaired, CliExitCodeAndMarkdownSayPaired) {
  const std::vector<double> mood = {100, 60, 140, 80, 120, 90};
  std::vector<double> slower;
  for (double m : mood) slower.push_back(m / 1.2);
  const std::string a = roundsDir("ca", mood), b = roundsDir("cb", slower);
  const auto r = test::runCli({"compare", "--paired", a, b, "--format", "markdown", "--threshold", "0.05"});
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_NE(r.out.find("paired over 6 round files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| REGRESSION |"), std::string::npos) << r.out;
  EXPECT_EQ(test::runCli({"compare", "--paired", a, a}).exitCode, 0);
  const auto j = test::runCli({"compare", "--paired", a, b, "--format", "json"});
  EXPECT_EQ(json::parse(j.out).at("paired_rounds").get<int>(), 6);
}

// ---- tpbench history (record/history.h): the points of compare followed over a series of files ----

// DIR/NN.json for each rate: one ddp run at that rate (none where the rate is 0) and one
// allreduce point at 5 GB/s.
std::string historyDir(const std::string& name, const std::vector<double>& rates) {
  const std::string dir = test::tempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < rates.size(); ++i) {
    json runs = json::array();
    if (rates[i] > 0) runs.push_back(run("ddp", 2, rates[i], 0.9, 0.5));
    char file[32];
    std::snprintf(file, sizeof file, "/%02zu.json", i);
    std::ofstream(dir + file) << doc(runs, json::array({allreduce("ring", 2, 1 << 20, 5.0)})).dump();
  }
  return dir;
}

TEST(History, AStepIsFoundAtItsFileAndAFlatSeriesHasNone) {
  std::vector<double> rates;
  for (int i = 0; i < 24; ++i) rates.push_back((i < 14 ? 1000 : 850) + (i % 3) * 5);  // 15 % slower from 14
  HistoryOptions o;
  o.dir = historyDir("hstep", rates);
  const History h = readHistory(o);
  ASSERT_EQ(h.files.size(), 24u);
  ASSERT_EQ(h.series.size(), 3u);  // ddp's samples_per_s and final_test_accuracy, ring's busbw
  const HistorySeries& s = h.series.front();  // the one with a change point comes first
  EXPECT_EQ(s.metric, "samples_per_s");
  ASSERT_EQ(s.changes.size(), 1u);
  EXPECT_EQ(h.files[s.files[s.changes[0].index]], "14.json");
  EXPECT_NEAR(s.changes[0].before, 1005, 1);
  EXPECT_NEAR(s.changes[0].after, 855, 1);
  EXPECT_TRUE(h.series[1].changes.empty());
  EXPECT_TRUE(h.series[2].changes.empty());
  EXPECT_EQ(h.changes(), 1u);
  const json j = json::parse(formatHistory(h, o, "json"));
  EXPECT_EQ(j.at("schema"), "tpbench.history/1");
  EXPECT_EQ(j.at("series").at(0).at("change_points").at(0).at("file"), "14.json");
  EXPECT_NE(formatHistory(h, o, "text").find("at 14.json: 1005 -> 855.5 (-14.8 %"), std::string::npos)
      << formatHistory(h, o, "text");
}

TEST(History, AFileWithoutThePointLeavesAGap) {
  std::vector<double> rates(12, 1000);
  rates[3] = rates[7] = 0;
  HistoryOptions o;
  o.dir = historyDir("hgap", rates);
  o.metrics = {"samples_per_s"};
  const History h = readHistory(o);
  ASSERT_EQ(h.series.size(), 1u);
  EXPECT_EQ(h.series[0].values.size(), 10u);
  EXPECT_EQ(h.series[0].files[3], 4u);
}

TEST(History, CliWritesTheChartAndTablesAndRefusesBadInput) {
  std::vector<double> rates;
  for (int i = 0; i < 20; ++i) rates.push_back(i < 10 ? 1000 + i : 700 + i);
  const std::string dir = historyDir("hcli", rates), out = test::tempPath("hcli-out");
  std::filesystem::remove_all(out);
  const auto r = test::runCli({"history", dir, "-o", out, "--gnuplot", ""});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("at 10.json"), std::string::npos) << r.out;
  for (const char* f : {"history.md", "history.json", "history.dat", "history.gp"})
    EXPECT_TRUE(std::filesystem::is_regular_file(out + "/" + f)) << f;
  std::ifstream gp(out + "/history.gp");
  const std::string script((std::istreambuf_iterator<char>(gp)), std::istreambuf_iterator<char>());
  EXPECT_NE(script.find("set arrow from 10.5"), std::string::npos) << script;  // file 11 (1-based), its left edge
  EXPECT_EQ(test::runCli({"history", dir, "--format", "markdown"}).exitCode, 0);
  // Refused before anything is read or written.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"history", dir + "/00.json"}, {"history", "/nonexistent-dir"},
        {"history", dir, "--metric", "speed"}, {"history", dir, "--min_size", "1"},
        {"history", dir, "--alpha", "1"}, {"history", dir, "--exponent", "2"}, {"history", dir, "--format", "yaml"},
        {"history", dir, "--permutations", "0"}, {"history", roundsDir("hempty", {})}}) {
    const auto b = test::runCli(bad);
    EXPECT_EQ(b.exitCode, 2) << bad.back() << ": " << b.err;
  }
  const std::string link = test::tempPath("hlink");
  std::filesystem::remove(link);
  std::filesystem::create_directory_symlink(dir, link);
  EXPECT_EQ(test::runCli({"history", link}).exitCode, 2);
}

// A hidden file (an editor's swap, another tool's) is no commit of the series: not read. More
// files than the change-point search can hold tables for are refused by count, before any is read.
TEST(History, HiddenFilesAreNotReadAndTooManyFilesAreRefused) {
  std::vector<double> rates(12, 1000);
  const std::string dir = historyDir("hhidden", rates);
  std::ofstream(dir + "/.00.json.swp.json") << "not json at all";
  HistoryOptions o;
  o.dir = dir;
  o.metrics = {"samples_per_s"};
  const History h = readHistory(o);
  EXPECT_EQ(h.files.size(), 12u);
  const std::string many = test::tempPath("hmany");
  std::filesystem::remove_all(many);
  std::filesystem::create_directories(many);
  for (std::size_t i = 0; i <= kMaxHistoryFiles; ++i) std::ofstream(many + "/" + std::to_string(10000 + i) + ".json");
  const auto r = test::runCli({"history", many});
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find(std::to_string(kMaxHistoryFiles + 1) + " results files"), std::string::npos) << r.err;
  std::filesystem::remove_all(many);
}

TEST(Compare, AnyAccuracyOrLossChangeBeyondToleranceRegresses) {
  const json base = doc({run("single", 1, 20000, 0.9300, 0.5000)});
  const auto acc = compare(base, doc({run("single", 1, 20000, 0.9250, 0.5000)}));
  EXPECT_TRUE(find(acc, "final_test_accuracy")->regression);
  EXPECT_NEAR(find(acc, "final_test_accuracy")->change, -0.005, 1e-12);
  const auto loss = compare(base, doc({run("single", 1, 20000, 0.9300, 0.5100)}));
  EXPECT_TRUE(find(loss, "final_train_loss")->regression);
  // Better accuracy is also a change: results are deterministic, so it means something moved.
  EXPECT_TRUE(compare(base, doc({run("single", 1, 20000, 0.9400, 0.5)})).regressed());
  EXPECT_FALSE(compare(base, doc({run("single", 1, 20000, 0.9305, 0.5)})).regressed());
}

TEST(Compare, MissingOrFailedPointsRegress) {
  const json base = doc({run("ddp", 2, 20000, 0.9, 0.5), run("allreduce", 2, 15000, 0.9, 0.5)});
  const auto missing = compare(base, doc({run("ddp", 2, 20000, 0.9, 0.5)}));
  ASSERT_TRUE(missing.regressed());
  EXPECT_EQ(firstRow(missing).note, "missing in NEW");
  EXPECT_NE(firstRow(missing).point.find("allreduce"), std::string::npos);
  const auto failed = compare(base, doc({run("ddp", 2, 20000, 0.9, 0.5), run("allreduce", 2, 0, 0, 0, 0, "failed")}));
  ASSERT_TRUE(failed.regressed());
  EXPECT_EQ(firstRow(failed).note, "failed in NEW");
}

TEST(Compare, AllreduceBandwidthDropRegresses) {
  const json base = doc(json::array(), {allreduce("ring", 2, 1 << 20, 14.0), allreduce("ring", 2, 16 << 20, 8.0)});
  const auto r = compare(base, doc(json::array(), {allreduce("ring", 2, 1 << 20, 14.5), allreduce("ring", 2, 16 << 20, 6.0)}));
  ASSERT_TRUE(r.regressed());
  EXPECT_NE(firstRow(r).point.find("16M"), std::string::npos);
  EXPECT_NEAR(r.points.front().slowdown(), 8.0 / 6.0 - 1, 1e-9);
}

TEST(Compare, BadInputIsAUsageError) {
  const json good = doc({run("ddp", 2, 20000, 0.9, 0.5)});
  json wrong = good;
  wrong["schema"] = "tpbench.results/0";
  EXPECT_THROW(compare(good, wrong), UsageError);
  EXPECT_THROW(compare(good, doc({run("ring_all_reduce", 4, 20000, 0.9, 0.5)})), UsageError);  // nothing in common
  CompareOptions o;
  o.basePath = "/nonexistent/base.json";
  o.newPath = write("x.json", good);
  EXPECT_THROW(compareResults(o), UsageError);
}

TEST(Compare, CliExitCodesAndFormats) {
  const std::string base = write("cb.json", doc({run("ddp", 2, 20000, 0.9, 0.5)}));
  const std::string same = write("cs.json", doc({run("ddp", 2, 20000, 0.9, 0.5)}));
  const std::string slow = write("cw.json", doc({run("ddp", 2, 10000, 0.9, 0.5)}));
  EXPECT_EQ(test::runCli({"compare", base, same}).exitCode, 0);
  const auto r = test::runCli({"compare", base, slow, "--format", "markdown"});
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_NE(r.out.find("| REGRESSION |"), std::string::npos) << r.out;
  const auto j = test::runCli({"compare", base, slow, "--format", "json"});
  EXPECT_EQ(j.exitCode, 3);
  EXPECT_GT(json::parse(j.out).at("regressions").get<int>(), 0);
  EXPECT_EQ(test::runCli({"compare", base, "/nonexistent.json"}).exitCode, 2);
  EXPECT_EQ(test::runCli({"compare", base, same, "--format", "yaml"}).exitCode, 2);
  // A generous threshold lets the halved throughput through.
  EXPECT_EQ(test::runCli({"compare", base, slow, "--threshold", "1.5"}).exitCode, 0);
}

TEST(Compare, ConfigsMatchByValueNotByText) {
  json now = run("ddp", 2, 20000, 0.9, 0.5);
  now["config"]["n_gpus"] = 2.0;
  now["config"]["lr"] = 1e-2;
  now["config"]["seed"] = 1.0;
  const auto r = compare(doc({run("ddp", 2, 20000, 0.9, 0.5)}), doc({now}));
  EXPECT_EQ(r.matched, 1u);
  EXPECT_FALSE(r.regressed());
}

TEST(Compare, MaxStepsDifferingMeansDifferentPoints) {
  const json base = doc({run("ddp", 2, 20000, 0.9, 0.5)});  // no max_steps: written before it was recorded
  json limited = run("ddp", 2, 20000, 0.9, 0.5);
  limited["config"]["max_steps"] = 10;
  EXPECT_THROW(compare(base, doc({limited})), UsageError);  // nothing in common
  json unlimited = run("ddp", 2, 20000, 0.9, 0.5);
  unlimited["config"]["max_steps"] = -1;
  const auto r = compare(base, doc({unlimited}));
  EXPECT_EQ(r.matched, 1u);
  EXPECT_FALSE(r.regressed());
}

TEST(Compare, AccuracyOrLossNullInNewRegresses) {
  const json base = doc({run("single", 1, 20000, 0.93, 0.5)});
  for (const char* metric : {"final_test_accuracy", "final_train_loss"}) {
    json now = run("single", 1, 20000, 0.93, 0.5);
    now["summary"][metric] = nullptr;
    const auto r = compare(base, doc({now}));
    ASSERT_TRUE(r.regressed()) << metric;
    EXPECT_EQ(firstRow(r).metric, metric);
    EXPECT_EQ(firstRow(r).note, "null in NEW");
  }
  // Null on both sides is nothing to compare, not a regression.
  json nullBase = run("single", 1, 20000, 0.93, 0.5);
  nullBase["summary"]["final_test_accuracy"] = nullptr;
  EXPECT_FALSE(compare(doc({nullBase}), doc({nullBase})).regressed());
}

// A collective that reports no bandwidth (busbw null: the reader allows it) has no timing row. Null
// in NEW where BASE measured one is a change that cannot pass; null on both sides leaves a point
// with nothing to compare, which every table prints as such (the fuzzer found the tables read the
// first row of a point that had none).
TEST(Compare, BusbwNullInNewRegressesAndNullOnBothSidesIsNothingToCompare) {
  json measured = allreduce("ring", 2, 1 << 20, 14.0);
  json unmeasured = measured;
  unmeasured["busbw_gbps"] = nullptr;
  const auto r = compare(doc(json::array(), {measured}), doc(json::array(), {unmeasured}));
  ASSERT_TRUE(r.regressed());
  EXPECT_EQ(firstRow(r).metric, "busbw_gbps");
  EXPECT_EQ(firstRow(r).note, "null in NEW");

  CompareOptions o;
  for (const char* format : {"text", "markdown", "json"}) {
    const auto both = compare(doc(json::array(), {unmeasured}), doc(json::array(), {unmeasured}));
    EXPECT_FALSE(both.regressed());
    ASSERT_EQ(both.points.size(), 1u);
    ASSERT_FALSE(both.points.front().metrics.empty());
    EXPECT_EQ(firstRow(both).note, "nothing measured to compare");
    EXPECT_NE(formatComparison(both, o, format).find("nothing measured to compare"), std::string::npos) << format;
  }
}

TEST(Compare, ZeroStepsOrSamplesCountAsFailedAndCannotPass) {
  const json base = doc({run("ddp", 2, 20000, 0.9, 0.5)});
  json empty = run("ddp", 2, 20000, 0.9, 0.5);
  empty["epochs"][0]["samples"] = 0;
  auto r = compare(base, doc({empty}));
  ASSERT_TRUE(r.regressed());
  EXPECT_EQ(firstRow(r).note, "failed in NEW");
  EXPECT_EQ(r.points.back().metrics.front().note, "nothing measured in NEW");
  json noSteps = run("ddp", 2, 20000, 0.9, 0.5);
  noSteps["epochs"][0]["steps"] = 0;
  EXPECT_TRUE(compare(base, doc({noSteps})).regressed());
  json noEpochs = run("ddp", 2, 20000, 0.9, 0.5);
  noEpochs["epochs"] = json::array();
  EXPECT_TRUE(compare(base, doc({noEpochs})).regressed());
  // A BASE point that measured nothing holds NEW to nothing: only the good point is compared.
  const auto both = compare(doc({run("ddp", 2, 20000, 0.9, 0.5), [&] {
                                   json e = empty;
                                   e["config"]["n_gpus"] = 4;
                                   return e;
                                 }()}),
                            doc({run("ddp", 2, 20000, 0.9, 0.5)}));
  EXPECT_FALSE(both.regressed());
  EXPECT_EQ(both.matched, 1u);
}

TEST(Compare, BadRecordsAreOneLineUsageErrorsNamingTheField) {
  json bad = doc({run("ddp", 2, 20000, 0.9, 0.5)});
  bad["runs"][0]["config"]["n_gpus"] = 1e20;
  const std::string good = write("good.json", doc({run("ddp", 2, 20000, 0.9, 0.5)}));
  const std::string badPath = write("bad.json", bad);
  const auto r = test::runCli({"compare", good, badPath});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find(badPath + ": runs[0].config.n_gpus: expected an integer in 1..65536, got 1e+20"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A results file is untrusted: a strategy name can hold Markdown, HTML, a link, line breaks and
// terminal escapes. In a markdown comparison each row stays one row of as many cells as the
// header, with no raw HTML and no link; on the terminal the escape is shown, not obeyed.
TEST(Compare, HostileNamesStayTextInEveryFormat) {
  const std::vector<std::string> names = {"a|b|c", "two\nlines\n| x | y |", "<script>alert(1)</script>",
                                          "[x](javascript:alert(1))", "red\x1b[31m\x1b]0;title\x07"};
  json runs = json::array();
  for (const auto& n : names) runs.push_back(run(n, 2, 20000, 0.9, 0.5));
  json slower = json::array();
  for (const auto& n : names) slower.push_back(run(n, 2, 10000, 0.9, 0.5));
  const std::string base = write("hb.json", doc(runs)), now = write("hn.json", doc(slower));
  const auto j = test::runCli({"compare", base, now, "--format", "json"});
  ASSERT_EQ(j.exitCode, 3) << j.err;
  const std::size_t rows = json::parse(j.out).at("points").size();
  EXPECT_EQ(j.out.find('\x1b'), std::string::npos);

  const auto md = test::runCli({"compare", base, now, "--format", "markdown"});
  ASSERT_EQ(md.exitCode, 3) << md.err;
  std::istringstream lines(md.out);
  std::string line;
  std::size_t tableLines = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '|') continue;
    ++tableLines;
    std::size_t cells = 0;  // '|' that a table takes as a cell border: not backslash-escaped
    for (std::size_t i = 0; i < line.size(); ++i) {
      std::size_t slashes = 0;
      while (slashes < i && line[i - 1 - slashes] == '\\') ++slashes;
      cells += line[i] == '|' && slashes % 2 == 0;
    }
    EXPECT_EQ(cells, 13u) << line;
  }
  EXPECT_EQ(tableLines, rows + 2) << md.out;  // header, rule, one line per row
  for (const char* raw : {"<script", "[x](javascript:", "\x1b"})
    EXPECT_EQ(md.out.find(raw), std::string::npos) << raw << " in\n" << md.out;
  // No link can form: every ']' of the text is escaped.
  for (std::size_t at = md.out.find(']'); at != std::string::npos; at = md.out.find(']', at + 1))
    EXPECT_EQ(md.out[at - 1], '\\') << md.out.substr(at - 5, 20);

  const auto text = test::runCli({"compare", base, now});
  ASSERT_EQ(text.exitCode, 3) << text.err;
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find('\x07'), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("red\\x1b[31m"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("two\\nlines"), std::string::npos) << "a name is one line of the table";
}

// A change against a base of almost 0 overflows: the tables never say inf or nan.
TEST(Compare, AChangeThatOverflowsPrintsNoInfinity) {
  json tiny = doc({run("ddp", 2, 1e-310, 0.9, 0.5)});
  const std::string base = write("tiny.json", tiny), now = write("big.json", doc({run("ddp", 2, 20000, 0.9, 0.5)}));
  for (const char* format : {"text", "markdown"}) {
    const auto r = test::runCli({"compare", base, now, "--format", format});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-100.0 %"), std::string::npos) << "NEW is all but infinitely faster\n" << r.out;
  }
}

// results/README.md bounds epoch times (>= 0) and accuracies ([0, 1]): compare refuses a file
// that breaks them, naming the file and the field, instead of comparing nonsense.
TEST(Compare, NumbersOutOfTheirRangeAreRefusedNamingTheField) {
  const std::string good = write("rg.json", doc({run("ddp", 2, 20000, 0.9, 0.5)}));
  json negative = doc({run("ddp", 2, 20000, 0.9, 0.5)});
  negative["runs"][0]["epochs"][0]["wall_s"] = -3;
  const std::string negPath = write("rneg.json", negative);
  test::expectRefusedUpFront(test::runCli({"compare", good, negPath}),
                             negPath + ": runs[0].epochs[0].wall_s: expected a finite number >= 0");
  json accuracy = doc({run("ddp", 2, 20000, 7.5, 0.5)});
  const std::string accPath = write("racc.json", accuracy);
  test::expectRefusedUpFront(test::runCli({"compare", accPath, good}),
                             accPath + ": runs[0].epochs[0].test_accuracy: expected a number in [0, 1]");
  // A file name is shown, not obeyed, by the terminal.
  const std::string escPath = write("r\x1b[2Jesc.json", negative);
  const auto r = test::runCli({"compare", good, escPath});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("r\\x1b[2Jesc.json"), std::string::npos) << r.err;
}

// `make gate` compares the committed baseline (written before max_steps was recorded) with a
// new sweep, whose configs carry max_steps -1: every point must still match.
// A file written before max_steps and workload were recorded (the committed baseline with the two
// taken out) matches a new sweep's points, which record max_steps -1 and workload "mlp".
TEST(Compare, CommittedBaselineMatchesANewSweepWithMaxSteps) {
  std::ifstream in(std::string(TPB_SOURCE_DIR) + "/results/baseline-cpu.json");
  const json now = json::parse(in);
  json base = now;
  for (auto& r : base["runs"]) {
    ASSERT_EQ(r["config"].value("max_steps", -1), -1);
    r["config"].erase("max_steps");
    r["config"].erase("workload");
  }
  const auto result = compare(base, now);
  EXPECT_FALSE(result.regressed());
  EXPECT_EQ(result.matched, 42u);
}

}  // namespace
}  // namespace tpb

namespace tpb {
namespace {

json prediction(int n, double stepS, const std::string& link = "nvlink4") {
  return {{"workload", "resnet50"}, {"hidden", "512,512"}, {"strategy", "ddp"}, {"batch_size", 32}, {"n_gpus", n},
          {"bucket_mb", 25}, {"step_s", stepS}, {"compute_s", 0.1}, {"alone_s", 0.1}, {"comm_s", 0.01},
          {"exposed_s", stepS - 0.1}, {"efficiency", 0.1 / stepS}, {"samples_per_s", n * 32 / stepS},
          {"allreduces", 5}, {"best_bucket", false},
          {"profile", {{"source", "flops"}, {"device", "h100"}, {"mfu", 0.3}, {"forward_s", 0.03}, {"backward_s", 0.06},
                       {"optimizer_s", 0.01}, {"gradient_bytes", 1e8}, {"tensors", 18}}},
          {"allreduce", {{"source", "link"}, {"algo", "ring"}, {"text", "ring on " + link}, {"link", link}}}};
}

json predictions(json list) {
  json d = doc(json::array());
  d["predictions"] = std::move(list);
  return d;
}

// Predictions are points too: matched by what they predict, whatever from; a predicted step
// slower beyond the threshold regresses, and a change of what it was predicted from is named.
TEST(Compare, PredictionsAreComparedByTheirPoint) {
  const json base = predictions({prediction(8, 0.110), prediction(64, 0.125)});
  const auto same = compare(base, base);
  EXPECT_FALSE(same.regressed());
  EXPECT_EQ(same.matched, 2u);
  const auto slower = compare(base, predictions({prediction(8, 0.110), prediction(64, 0.150, "pcie5")}));
  ASSERT_TRUE(slower.regressed());
  const PointComparison& worst = slower.points.front();
  EXPECT_EQ(worst.point, "predict ddp resnet50 batch=32 N=64 bucket=25");
  EXPECT_NEAR(worst.slowdown(), 0.2, 1e-9);
  EXPECT_NE(worst.metrics.front().note.find("predicted from h100 at 30 % of peak, ring nvlink4 -> h100 at 30 % of peak, ring pcie5"),
            std::string::npos)
      << worst.metrics.front().note;
  // A point predicted in BASE and not in NEW is missing, as a run would be.
  const auto missing = compare(base, predictions({prediction(8, 0.110)}));
  EXPECT_TRUE(missing.regressed());
  EXPECT_EQ(firstRow(missing).note, "missing in NEW");
  // A prediction field out of its range is refused with its place in the file.
  json bad = base;
  bad["predictions"][1]["step_s"] = -1;
  EXPECT_THROW(
      {
        try {
          compare(base, bad);
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find("predictions[1].step_s"), std::string::npos) << e.what();
          throw;
        }
      },
      UsageError);
}

}  // namespace
}  // namespace tpb
