// `tpbench collective` and `tpbench model` as a user runs them: every op's records with nccl-tests'
// bandwidth factor, exact traffic and a clean verification; the model's measured and projected
// sections; bad input refused up front.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/collective.h"
#include "harness/launch.h"
#include "tests/cli_util.h"

namespace tpb {
namespace {

using nlohmann::json;
using test::BadInput;
using test::readJson;
using test::runCli;

TEST(CollectiveCli, EveryOpRecordsBusbwTrafficAndVerifies) {
  const std::string out = test::tempPath("coll.json");
  // --launcher tpbench: `--algos all` leaves out what needs mpirun (tests/mpi_test.cc runs those).
  const auto r = runCli({"collective", "--op", "all", "--n_gpus", "3", "--bytes", "4K,1M", "--iters", "2",
                         "--warmup", "1", "--launcher", "tpbench", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("# broadcast  algo=tree  N=3"), std::string::npos) << r.out;
  const json doc = readJson(out);
  std::map<std::string, int> perOp;
  for (const auto& p : doc.at("allreduce")) {
    SCOPED_TRACE(p.dump());
    const std::string op = p.at("op");
    ++perOp[op];
    EXPECT_EQ(p.at("status"), "ok");
    EXPECT_EQ(p.at("wrong"), 0);
    // The op table's factors (their values: tests/collective_ops_test.cc).
    const CollectiveOp& info = findOp("op", op);
    EXPECT_NEAR(p.at("busbw_gbps").get<double>(), p.at("algbw_gbps").get<double>() * info.busFactor(3), 1e-9);
    // Blocked ops round the count down to a multiple of N.
    if (info.blocked) {
      EXPECT_EQ(p.at("count").get<int>() % 3, 0);
    }
    if (p.at("origin") == "from scratch") {
      ASSERT_TRUE(p.contains("traffic"));
      EXPECT_EQ(p.at("traffic").at("bytes_sent").size(), 3u);
    } else {
      EXPECT_FALSE(p.contains("traffic"));
    }
    if (op == "broadcast" || op == "reduce") {
      EXPECT_EQ(p.at("root"), 0);
    }
  }
  // Two sizes, in and out of place where the op has both, for each of its algorithms.
  EXPECT_EQ(perOp["broadcast"], 2 * 2 * 2);
  EXPECT_EQ(perOp["alltoall"], 2 * 1 * 2);
  EXPECT_EQ(perOp["reduce_scatter"], 2 * 2 * 1);

  const std::string model = test::tempPath("model.json");
  const auto m = runCli({"model", out, "--link", "nvlink4", "--out", model});
  ASSERT_EQ(m.exitCode, 0) << m.err;
  EXPECT_NE(m.out.find("MEASURED"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("PROJECTED"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("365-370 GB/s"), std::string::npos) << m.out;
  const json md = readJson(model);
  EXPECT_EQ(md.at("schema"), "tpbench.model/1");
  EXPECT_FALSE(md.at("fits").empty());
  std::remove(out.c_str());
  std::remove(model.c_str());
}

// A library point names what carried it (Gloo's TCP, not the run's shm) in its header, its
// progress line and its record; the from-scratch one its transport. After the tables, the
// summary names the fastest per N and size with the other as a multiple of its time.
TEST(CollectiveCli, LabelsSayWhatCarriedEachPointAndTheSummaryFollowsTheTables) {
  const std::string out = test::tempPath("carrier.json");
  const auto r = runCli({"allreduce", "--algos", "ring,gloo", "--n_gpus", "2", "--bytes", "4K,64K", "--iters", "2",
                         "--warmup", "1", "--launcher", "tpbench", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("# allreduce  algo=ring  N=2  transport=shm  device=cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# allreduce  algo=gloo  N=2  over=gloo-tcp  transport=shm (barriers only)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("allreduce gloo N=2 over gloo-tcp"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("allreduce gloo N=2 over shm"), std::string::npos) << r.err;
  const json doc = readJson(out);
  ASSERT_EQ(doc.at("allreduce").size(), 4u);
  for (const auto& p : doc.at("allreduce")) {
    EXPECT_EQ(p.at("transport"), "shm") << p;  // the run's, which compare matches on
    EXPECT_EQ(p.at("carrier"), p.at("algo") == "gloo" ? "gloo-tcp" : "shm") << p;
  }
  const auto summary = r.out.find("# allreduce at a glance (cpu, in place)");
  ASSERT_NE(summary, std::string::npos) << r.out;
  EXPECT_GT(summary, r.out.rfind("# allreduce  algo="));
  // A neighbouring test may have kept the cores busy: then the row names no fastest, and says so.
  const std::regex row(
      "\n +2 +64K +((ring|gloo)( \u2248 (ring|gloo))?|none named \\(machine busy\\)) +[0-9.]+ +[0-9.]+x +[0-9.]+x\n");
  EXPECT_TRUE(std::regex_search(r.out.substr(summary), row)) << r.out;
  std::remove(out.c_str());
}

// --timing back_to_back (IMB's method): one barrier, then the timed calls one after another;
// the record says so (timing, timer) and one call's traffic is the per-call method's (no
// barrier's messages in it), with the sums verified.
TEST(CollectiveCli, BackToBackTimingIsRecordedAndMovesWhatOneCallMoves) {
  std::map<std::string, json> byTiming;
  for (const std::string timing : {"per_call", "back_to_back"}) {
    const std::string out = test::tempPath("timing_" + timing + ".json");
    const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "3", "--bytes", "64K", "--iters", "5",
                           "--warmup", "1", "--timing", timing, "--launcher", "tpbench", "--out", out});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out.find("timed back to back") != std::string::npos, timing == "back_to_back") << r.out;
    const json doc = readJson(out);
    ASSERT_EQ(doc.at("allreduce").size(), 1u);
    byTiming[timing] = doc.at("allreduce")[0];
    std::remove(out.c_str());
  }
  const json &each = byTiming["per_call"], &b2b = byTiming["back_to_back"];
  EXPECT_EQ(each.at("timing"), "per_call");
  EXPECT_EQ(each.at("timer"), "steady_clock");
  EXPECT_EQ(b2b.at("timing"), "back_to_back");
  EXPECT_EQ(b2b.at("timer"), "steady_clock_back_to_back");
  EXPECT_EQ(b2b.at("wrong"), 0);
  EXPECT_GT(b2b.at("time_us").at("median").get<double>(), 0.0);
  EXPECT_EQ(b2b.at("traffic"), each.at("traffic"));
}

// A rank that stalls 50 ms between two timed calls: per call, the next call's barrier absorbs
// it; back to back, its peer's next call waits for it, and that iteration is counted as an
// outlier and said on stderr. (Per call may have outliers of its own on a busy machine: a
// preempted rank costs a scheduler tick, some milliseconds, far below the stall.)
TEST(CollectiveCli, AStalledRankIsAnOutlierBackToBackButNotPerCall) {
  for (const std::string timing : {"per_call", "back_to_back"}) {
    SCOPED_TRACE(timing);
    const std::string out = test::tempPath("stall_" + timing + ".json");
    const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K", "--iters", "9",
                           "--warmup", "1", "--timing", timing, "--launcher", "tpbench", "--out", out},
                          {{"TPB_FAULT", "1:stall:4"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json p = readJson(out).at("allreduce").at(0);
    if (timing == "back_to_back") {
      EXPECT_GE(p.at("time_us").at("max").get<double>(), 40000.0) << p;
      // The stall is a spike, which the console's row flags.
      EXPECT_GE(p.at("time_us").at("spikes").get<int>(), 1) << p;
      EXPECT_NE(r.out.find("over 1.5x the median"), std::string::npos) << r.out;
      // And an outlier, said on stderr, where the machine leaves the median below a tenth of the
      // stall (a loaded machine's 4K calls can take milliseconds each).
      if (p.at("time_us").at("median").get<double>() < 4000.0) {
        ASSERT_TRUE(p.at("time_us").contains("outliers")) << p;
        EXPECT_GE(p.at("time_us").at("outliers").get<int>(), 1) << p;
        EXPECT_NE(r.err.find("iterations took over 10x the median"), std::string::npos) << r.err;
      }
    } else {
      EXPECT_LT(p.at("time_us").at("max").get<double>(), 40000.0) << p;
    }
    std::remove(out.c_str());
  }
}

// Every rank's own times reach the record: one median per rank, and the slowest of each
// iteration counted once, so the counts sum to the iterations.
TEST(CollectiveCli, EachRanksTimesAreRecorded) {
  const std::string out = test::tempPath("ranks.json");
  const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "3", "--bytes", "4K,64K", "--iters", "9",
                         "--warmup", "1", "--launcher", "tpbench", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = readJson(out);  // held: a range-for over a member of a temporary would dangle
  ASSERT_EQ(doc.at("allreduce").size(), 2u);
  for (const json& p : doc.at("allreduce")) {
    ASSERT_TRUE(p.contains("ranks")) << p;
    const json& ranks = p.at("ranks");
    ASSERT_EQ(ranks.at("median_us").size(), 3u);
    long long sum = 0;
    for (const auto& k : ranks.at("slowest_in")) sum += k.get<long long>();
    EXPECT_EQ(sum, 9) << ranks;
    // The point's median is the slowest rank's per iteration: at least every rank's own median.
    for (const auto& m : ranks.at("median_us")) EXPECT_LE(m.get<double>(), p.at("time_us").at("median").get<double>() + 1e-9);
  }
  std::remove(out.c_str());
}

// --bind core puts local rank r on the r-th CPU of the launcher's placement order (one per core
// first, then around again), and each point says where its ranks ran (ranks.cpu) and the run how
// it placed them (meta.bind); without it no rank is bound to one CPU.
TEST(CollectiveCli, BindCorePutsEachRankOnItsOwnCpuAndTheRecordSaysWhere) {
  const std::vector<int> order = placementOrder();
  const std::string out = test::tempPath("bound.json");
  const auto r = runCli({"allreduce", "--algos", "ring,recursive_doubling", "--n_gpus", "3", "--bytes", "4K",
                         "--iters", "3", "--warmup", "1", "--launcher", "tpbench", "--bind", "core", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("(float32 sum, in place, a core per rank)"), std::string::npos) << r.out;
  json doc = readJson(out);
  EXPECT_EQ(doc.at("meta").at("bind"), "core");
  ASSERT_EQ(doc.at("allreduce").size(), 2u);
  for (const json& p : doc.at("allreduce")) {
    ASSERT_TRUE(p.contains("ranks")) << p;
    std::vector<long long> want;
    for (std::size_t rank = 0; rank < 3; ++rank) want.push_back(order[rank % order.size()]);
    EXPECT_EQ(p.at("ranks").at("cpu").get<std::vector<long long>>(), want) << p;
    EXPECT_EQ(p.at("status"), "ok");
  }
  if (order.size() >= 2) {  // a command bound to one CPU binds its ranks whatever --bind says
    const auto free = runCli({"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K", "--iters", "2",
                              "--warmup", "1", "--launcher", "tpbench", "--out", out, "--overwrite"});
    ASSERT_EQ(free.exitCode, 0) << free.err;
    doc = readJson(out);
    EXPECT_EQ(doc.at("meta").at("bind"), "none");
    EXPECT_EQ(doc.at("allreduce").at(0).at("ranks").at("cpu"), json::array({-1, -1})) << doc.dump();
  }
  std::remove(out.c_str());
}

// TPB_SHM_SINGLE_COPY and TPB_RING_CHUNK_KB are in the record (meta.shm_single_copy, and
// meta.ring_chunk_kb where it was set), and the chunk recorded is the one the ring moved: 1 KiB
// chunks send each 4 KiB segment of a 8 KiB ring allreduce at N = 2 as four messages, not one.
TEST(CollectiveCli, SingleCopyAndRingChunkAreRecordedAsTheyRan) {
  std::map<bool, json> byTuned;
  for (const bool tuned : {false, true}) {
    const std::string out = test::tempPath(tuned ? "chunk_tuned.json" : "chunk_default.json");
    std::vector<std::pair<std::string, std::string>> env;
    if (tuned) env = {{"TPB_SHM_SINGLE_COPY", "0"}, {"TPB_RING_CHUNK_KB", "1"}};
    const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "8K", "--iters", "2",
                           "--warmup", "1", "--launcher", "tpbench", "--out", out},
                          env);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    byTuned[tuned] = readJson(out);
    std::remove(out.c_str());
  }
  const json &plain = byTuned[false], &tuned = byTuned[true];
  EXPECT_EQ(plain.at("meta").at("shm_single_copy"), true);
  EXPECT_FALSE(plain.at("meta").contains("ring_chunk_kb")) << plain.at("meta");
  EXPECT_EQ(tuned.at("meta").at("shm_single_copy"), false);
  EXPECT_EQ(tuned.at("meta").at("ring_chunk_kb"), 1);
  const json &a = plain.at("allreduce").at(0), &b = tuned.at("allreduce").at(0);
  EXPECT_EQ(a.at("wrong"), 0);
  EXPECT_EQ(b.at("wrong"), 0);
  const auto sent = [](const json& p) {  // every rank's messages in one call
    long long n = 0;
    for (const json& v : p.at("traffic").at("msgs_sent")) n += v.get<long long>();
    return n;
  };
  EXPECT_GT(sent(a), 0) << a.at("traffic");
  EXPECT_EQ(sent(b), 4 * sent(a)) << a.at("traffic") << " " << b.at("traffic");
}

// The verification pass counts what is wrong: one element corrupted on one rank fails the point
// with wrong = 1 (and the command with it), for each op that has a result to check.
TEST(CollectiveCli, ACorruptedElementFailsThePoint) {
  const std::string out = test::tempPath("corrupt.json");
  const auto r = runCli({"collective", "--op", "allreduce,broadcast,allgather,reduce_scatter", "--n_gpus", "2",
                         "--bytes", "4K", "--iters", "2", "--warmup", "1", "--launcher", "tpbench", "--out", out},
                        {{"TPB_FAULT", "1:corrupt"}});
  EXPECT_NE(r.exitCode, 0) << r.out;
  int checked = 0;
  const json doc = readJson(out);
  for (const json& p : doc.at("allreduce")) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p.at("wrong").get<long long>(), 1);
    EXPECT_EQ(p.at("status"), "failed");
    EXPECT_NE(p.at("error").get<std::string>().find("verification found 1 wrong elements"), std::string::npos);
    ++checked;
  }
  EXPECT_GE(checked, 4);
  std::remove(out.c_str());
}

TEST(CollectiveCli, BadInputIsRefusedUpFront) {
  test::expectAllRefused({}, {
      {{"collective", "--op", "gossip"}, "--op"},
      {{"collective", "--op", "broadcast", "--root", "3", "--n_gpus", "2..4"}, "--root"},
      {{"collective", "--op", "broadcast", "--place", "sideways"}, "--place"},
      {{"collective", "--op", "alltoall", "--place", "in"}, "--place"},
      {{"collective", "--op", "allgather", "--algos", "tree"}, "--algos"},
      {{"collective", "--op", "broadcast,allgather", "--algos", "pairwise"}, "--algos"},
      {{"collective", "--out", ""}, "--out"},
      {{"allreduce", "--timing", "sometimes"}, "--timing"},
      {{"allreduce", "--timing", ""}, "--timing"},
      {{"allreduce", "--bind", "socket"}, "--bind"},
      {{"collective", "--bind", ""}, "--bind"},
      {{"model"}, "FILES"},
      {{"model", "/no/such/file.json"}, "/no/such/file.json"},
      {{"model", "/no/such/file.json", "--link", ""}, "--link"},
  });
}

}  // namespace
}  // namespace tpb
