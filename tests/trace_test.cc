// The per-rank timeline (--trace): the recorder, the clock alignment through the store, the
// trace file, and traced runs of every kind of step as a user starts them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "comm/cuda/gpu_trace.h"
#include "comm/store.h"
#include "common/error.h"
#include "common/trace.h"
#include "record/trace_file.h"
#include "report/tables.h"
#include "report/trace_input.h"
#include "tests/cli_util.h"
#include "tests/report_util.h"
#include "worker/trace_gather.h"

namespace tpb {
namespace {

using nlohmann::json;

TEST(TraceRecorder, RecordsOnlyWhenOnAndOnlyFromItsThread) {
  trace::enable(false);
  { trace::Span s("forward", trace::Category::Compute); }
  EXPECT_EQ(trace::size(), 0u);

  trace::enable(true);
  {
    trace::Span outer("step", trace::Category::Step, "step", 7);
    trace::Span inner("backward", trace::Category::Compute, "micro", 2);
  }
  std::thread other([] { trace::Span s("forward", trace::Category::Compute); });
  other.join();
  const auto c0 = trace::clock_type::now();
  const double secs = trace::close("recv", trace::Category::Comm, c0, "peer", 1);
  trace::record("bucket allreduce", trace::Category::Comm, 100, 250, "bucket", 3, trace::Track::Comm);
  std::vector<trace::Event> ev = trace::take();
  trace::enable(false);
  EXPECT_EQ(trace::size(), 0u);

  ASSERT_EQ(ev.size(), 4u);  // the other thread's span is dropped
  // Spans close inner first.
  EXPECT_STREQ(ev[0].name, "backward");
  EXPECT_STREQ(ev[0].argKey, "micro");
  EXPECT_EQ(ev[0].arg, 2);
  EXPECT_STREQ(ev[1].name, "step");
  EXPECT_EQ(ev[1].arg, 7);
  EXPECT_LE(ev[1].beginNs, ev[0].beginNs);
  EXPECT_GE(ev[1].endNs, ev[0].endNs);
  EXPECT_STREQ(ev[2].name, "recv");
  EXPECT_EQ(ev[2].cat, trace::Category::Comm);
  EXPECT_NEAR(static_cast<double>(ev[2].endNs - ev[2].beginNs) / 1e9, secs, 1e-6);
  EXPECT_EQ(ev[3].track, trace::Track::Comm);
  EXPECT_EQ(ev[3].beginNs, 100);
  EXPECT_EQ(ev[3].endNs, 250);
}

TEST(TraceRecorder, CloseReturnsTheSpanEvenWhenOff) {
  trace::enable(false);
  const auto c0 = trace::clock_type::now() - std::chrono::milliseconds(5);
  EXPECT_GE(trace::close("x", trace::Category::Compute, c0), 0.005);
  EXPECT_EQ(trace::size(), 0u);
}

// Two "hosts" in one process: rank 1's clock runs `skew` behind rank 0's, with another boot id.
ClockOffset alignTwo(std::int64_t skewNs, const std::string& boot1, ClockOffset* rank0 = nullptr) {
  auto store = Store::local();
  ClockOffset zero, one;
  std::thread t0([&] { zero = estimateClockOffset(*store, "t/", 0, 2, "boot-a", trace::nowNs); });
  one = estimateClockOffset(*store, "t/", 1, 2, boot1, [skewNs] { return trace::nowNs() - skewNs; });
  t0.join();
  if (rank0) *rank0 = zero;
  return one;
}

TEST(TraceClock, SameKernelNeedsNoExchange) {
  ClockOffset r0;
  const ClockOffset r1 = alignTwo(0, "boot-a", &r0);
  EXPECT_TRUE(r1.sameHost);
  EXPECT_EQ(r1.offsetNs, 0);
  EXPECT_TRUE(r0.sameHost);
  EXPECT_EQ(r0.offsetNs, 0);
}

TEST(TraceClock, AnotherHostsSkewIsRecoveredWithinHalfTheRoundTrip) {
  for (const std::int64_t skew : {std::int64_t{5'000'000'000}, std::int64_t{-123'456'789}, std::int64_t{0}}) {
    SCOPED_TRACE(skew);
    const ClockOffset r1 = alignTwo(skew, "boot-b");
    EXPECT_FALSE(r1.sameHost);
    EXPECT_GT(r1.rttNs, 0);
    // rank 0's clock = rank 1's + skew: the estimate is off by at most half the round trip.
    EXPECT_LE(std::llabs(r1.offsetNs - skew), r1.rttNs / 2 + 1000) << "offset " << r1.offsetNs << ", rtt " << r1.rttNs;
    EXPECT_LT(r1.rttNs, 50'000'000);  // an in-process store answers in far less than 50 ms
  }
}

json fragment(std::int64_t base) {
  return {{"ranks",
           {{{"rank", 0},
             {"host", "a"},
             {"events",
              {{"step", "step", "step", "host", base, base + 5000, 0},
               {"forward", nullptr, "compute", "host", base + 1000, base + 2000, 0},
               {"bucket allreduce", "bucket", "comm", "comm", base + 1500, base + 4000, 1}}}},
            {{"rank", 1}, {"host", "b"}, {"clock_offset_ns", 42}, {"clock_error_ns", 7},
             {"events", {{"step", "step", "step", "host", base + 100, base + 5100, 0}}}}}}};
}

TEST(TraceFile, EachPointIsAProcessAndEachRankTrackAThread) {
  const std::string path = test::tempPath("unit.trace.json");
  TraceFile f(path, 1'000'000, {{"host", "a"}});
  f.add("ddp N=2 batch 64", {{"strategy", "ddp"}, {"n_gpus", 2}}, fragment(1'000'000));
  f.add("ring_all_reduce N=2 batch 64", {{"strategy", "ring_all_reduce"}, {"n_gpus", 2}}, fragment(9'000'000));
  const json doc = test::readJson(path);
  EXPECT_EQ(doc.at("tpbench").at("schema"), "tpbench.trace/1");
  ASSERT_EQ(doc.at("tpbench").at("points").size(), 2u);
  EXPECT_EQ(doc["tpbench"]["points"][1]["config"]["strategy"], "ring_all_reduce");
  EXPECT_EQ(doc["tpbench"]["points"][0]["ranks"][1]["clock_error_ns"], 7);
  std::map<std::pair<int, int>, std::string> threadNames;
  std::vector<json> spans;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      threadNames[{e.at("pid").get<int>(), e.at("tid").get<int>()}] = e.at("args").at("name");
    if (e.at("ph") == "X") spans.push_back(e);
  }
  ASSERT_EQ(spans.size(), 8u);
  EXPECT_EQ(threadNames.at({1, 0}), "rank 0 (a)");
  EXPECT_EQ(threadNames.at({1, 1}), "rank 0 comm");
  EXPECT_EQ(threadNames.at({1, 4}), "rank 1 (b)");
  EXPECT_EQ(threadNames.count({1, 5}), 0u);  // rank 1 has no comm span
  EXPECT_EQ(threadNames.count({1, 2}), 0u);  // nor any rank a GPU span
  // ts and dur in µs from the origin.
  const json& fwd = spans[1];
  EXPECT_EQ(fwd.at("name"), "forward");
  EXPECT_DOUBLE_EQ(fwd.at("ts").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(fwd.at("dur").get<double>(), 1.0);
  EXPECT_EQ(fwd.count("args"), 0u);
  const json& bucket = spans[2];
  EXPECT_EQ(bucket.at("tid"), 1);
  EXPECT_EQ(bucket.at("args").at("bucket"), 1);
  EXPECT_EQ(spans[4].at("pid"), 2);
  EXPECT_DOUBLE_EQ(spans[4].at("ts").get<double>(), 8000.0);
}

TEST(TraceFile, AMalformedFragmentLeavesTheFileAsItWas) {
  const std::string path = test::tempPath("bad.trace.json");
  TraceFile f(path, 0, json::object());
  f.add("good", json::object(), fragment(0));
  const std::string before = test::readText(path);
  json bad = fragment(0);
  bad["ranks"][1]["events"][0][4] = "soon";
  EXPECT_THROW(f.add("bad", json::object(), bad), Error);
  EXPECT_THROW(f.add("bad", json::object(), json::object()), Error);
  EXPECT_EQ(test::readText(path), before);
  EXPECT_EQ(f.points(), 1u);
}

// Found by tests/fuzz/fuzz_trace: an event ending 1e300 µs in made resume's int64 origin
// undefined, and a number where a string belongs escaped as a JSON library error (exit 1).
TEST(TraceFile, AResumedTraceIsCheckedNotTrusted) {
  const std::string path = test::tempPath("odd.trace.json");
  auto trace = [](const std::string& schema, const std::string& event) {
    return R"({"traceEvents": [)" + event + R"(], "tpbench": {"schema": )" + schema + R"(, "meta": {}, "points": []}})";
  };
  const std::string step = R"({"ph": "X", "name": "step", "cat": "step", "pid": 1, "tid": 0, "ts": 5, "dur": 1})";
  for (const std::string& refused : {trace(R"("tpbench.trace/1")", R"({"ph": "X", "ts": 1e300, "dur": 1})"),
                                     trace("1", step)}) {
    test::writeText(path, refused);
    try {
      (void)TraceFile::resume(path, 0);
      ADD_FAILURE() << "resumed " << refused;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  // An event that is not a span (ph a number here) is kept, as a viewer keeps it, and not timed.
  test::writeText(path, trace(R"("tpbench.trace/1")", R"({"ph": 7, "ts": 9}, )" + step));
  EXPECT_EQ(TraceFile::resume(path, 0).points(), 0u);
}

TEST(TraceFile, GpuStreamsAreThreadsOfTheirOwnAndUnknownTracksAreRefused) {
  const std::string path = test::tempPath("gpu.trace.json");
  TraceFile f(path, 0, json::object());
  json frag = fragment(0);
  frag["ranks"][1]["events"].push_back({"forward", nullptr, "compute", "gpu", 300, 900, 0});
  frag["ranks"][1]["events"].push_back({"ddp bucket allreduce (ncclAllReduce)", nullptr, "comm", "gpu_comm", 700, 1200, 0});
  f.add("ddp N=2 batch 64", json::object(), frag);
  const json doc = test::readJson(path);
  std::map<int, std::string> threadNames;
  std::map<std::string, int> tidOf;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") threadNames[e.at("tid").get<int>()] = e.at("args").at("name");
    if (e.at("ph") == "X") tidOf[e.at("name")] = e.at("tid");
  }
  EXPECT_EQ(tidOf.at("forward"), traceTid(1, 2));
  EXPECT_EQ(tidOf.at("ddp bucket allreduce (ncclAllReduce)"), traceTid(1, 3));
  EXPECT_EQ(traceTid(1, 2), 6);
  EXPECT_EQ(threadNames.at(6), "rank 1 gpu");
  EXPECT_EQ(threadNames.at(7), "rank 1 gpu_comm");
  EXPECT_EQ(threadNames.count(2), 0u);  // rank 0 has no GPU span
  const std::string before = test::readText(path);
  json bad = fragment(0);
  bad["ranks"][0]["events"][0][3] = "disk";
  try {
    f.add("bad", json::object(), bad);
    ADD_FAILURE() << "an unknown track was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no track 'disk'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::readText(path), before);
}

// What can be checked of the GPU spans without a GPU: the rebasing arithmetic, and that a span
// that is not on a GPU queues nothing (the GPU side: GpuTrace* in gpu_train_test.cc).
TEST(TraceGpu, EventTimesAreRebasedOnTheAnchorsMidpoint) {
  // The anchor completed between 1000 and 3000 ns: at 2000 ns. An event 0.5 ms before it was
  // at 2000 - 500000 ns; one at the anchor, at the anchor.
  EXPECT_EQ(trace::gpuEventHostNs(1000, 3000, 0.5f), 2000 - 500'000);
  EXPECT_EQ(trace::gpuEventHostNs(1000, 3000, 0.0f), 2000);
  EXPECT_EQ(trace::gpuEventHostNs(10'000'000'000, 10'000'000'000, 2.0f), 10'000'000'000 - 2'000'000);
  // cudaEventElapsedTime's resolution is about 0.5 µs: sub-µs values survive, rounded to ns.
  EXPECT_EQ(trace::gpuEventHostNs(0, 0, 0.0015f), -1500);
}

TEST(TraceGpu, EachRecordingHasAGenerationOfItsOwn) {
  const std::uint64_t g = trace::generation();
  trace::enable(true);
  EXPECT_EQ(trace::generation(), g + 1);
  trace::enable(false);
  EXPECT_EQ(trace::generation(), g + 2);
}

TEST(TraceGpu, ASpanOffTheGpuQueuesNothing) {
  trace::enable(true);
  { trace::GpuSpan s("forward", trace::Category::Compute, trace::Track::Gpu, -1, nullptr); }
  EXPECT_EQ(trace::pendingGpuSpans(), 0u);
  trace::flushGpu();
  EXPECT_EQ(trace::size(), 0u);
  trace::enable(false);
  { trace::GpuSpan s("forward", trace::Category::Compute, trace::Track::Gpu, 0, nullptr); }  // tracing off
  EXPECT_EQ(trace::pendingGpuSpans(), 0u);
}

// ---- traced runs, as a user starts them ----------------------------------------------------

struct Span {
  std::string name, cat;
  int pid, tid;
  double ts, dur;
  json args;
};

std::vector<Span> spansOf(const json& doc, int pid) {
  std::vector<Span> out;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("pid") == pid)
      out.push_back({e.at("name"), e.at("cat"), pid, e.at("tid"), e.at("ts"), e.at("dur"), e.value("args", json())});
  return out;
}

std::size_t countOf(const std::vector<Span>& s, const std::string& name, int tid) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [&](const Span& x) { return x.name == name && x.tid == tid; }));
}

TEST(TraceCli, DdpBucketsRunDuringBackwardOnTheCommTrack) {
  const std::string out = test::tempPath("ddp.json"), tr = test::tempPath("ddp.trace.json");
  // 512 samples, 2 ranks, batch 64: 4 steps per rank. PyTorch's rule with 0.5 MiB buckets cuts
  // the 784-512-512-512-10 MLP (3.7 MB) into three: the first closes at 1 MiB (after fc2.weight),
  // the second after fc1.weight, the third holds fc0.
  const auto r = test::runCli({"run", "--strategy", "ddp", "--n_gpus", "2", "--batch_size", "64", "--epochs", "1",
                               "--train_size", "512", "--test_size", "200", "--hidden", "512,512,512",
                               "--bucket_mb", "0.5", "--out", out, "--trace", tr});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("trace of 1 run(s) written to " + tr), std::string::npos) << r.err;
  const json doc = test::readJson(tr);
  ASSERT_EQ(doc.at("tpbench").at("points").size(), 1u);
  EXPECT_EQ(doc["tpbench"]["points"][0]["config"]["strategy"], "ddp");
  const std::vector<Span> s = spansOf(doc, 1);
  std::size_t buckets = 0;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    const int host = traceTid(rank, 0), comm = traceTid(rank, 1);
    EXPECT_EQ(countOf(s, "step", host), 4u);
    EXPECT_EQ(countOf(s, "forward", host), 4u);
    EXPECT_EQ(countOf(s, "backward", host), 4u);
    EXPECT_EQ(countOf(s, "bucket wait", host), 4u);
    EXPECT_EQ(countOf(s, "optimizer", host), 4u);
    const std::size_t b = countOf(s, "bucket allreduce", comm);
    EXPECT_EQ(b % 4, 0u);
    EXPECT_EQ(b / 4, 3u) << "0.5 MiB buckets of a 3.7 MB model";
    buckets = b / 4;
    // Every bucket is launched by a hook during its step's backward and ends before that
    // step's optimizer starts.
    std::vector<Span> backward, optimizer;
    for (const Span& x : s) {
      if (x.tid == host && x.name == "backward") backward.push_back(x);
      if (x.tid == host && x.name == "optimizer") optimizer.push_back(x);
    }
    for (const Span& x : s) {
      if (x.tid != comm) continue;
      const auto it = std::find_if(backward.begin(), backward.end(), [&](const Span& b) {
        return x.ts >= b.ts - 1e-3 && x.ts <= b.ts + b.dur + 1e-3;
      });
      ASSERT_NE(it, backward.end()) << "bucket " << x.args.dump() << " at " << x.ts << " outside every backward";
      const Span& opt = optimizer[static_cast<std::size_t>(it - backward.begin())];
      EXPECT_LE(x.ts + x.dur, opt.ts + 1e-3);
    }
  }
  // Rank 0 evaluates once per epoch.
  EXPECT_EQ(countOf(s, "evaluate", 0), 1u);
  EXPECT_EQ(countOf(s, "evaluate", traceTid(1, 0)), 0u);
  // The trace's steps cover what the results file timed.
  const json run = test::readJson(out).at("runs").at(0);
  EXPECT_EQ(run.at("status"), "ok");
  EXPECT_GE(buckets, 3u);
}

// The host's wait for ddp's buckets ends when their communication does: averaging the summed
// gradients is computation, timed with the optimizer, not drawn as waiting past the buckets.
// A 2048-wide MLP makes that averaging take a millisecond or more on every step, far beyond a
// thread's wake-up; a busy machine can delay a single wake-up as much, so the check is on the
// median over 16 waits, which only a cost paid on most steps moves.
TEST(TraceCli, DdpHostWaitEndsWithItsBuckets) {
  const std::string out = test::tempPath("ddpwait.json"), tr = test::tempPath("ddpwait.trace.json");
  // A test process of an earlier run may have had this pid and left its files: they are not ours.
  std::remove(out.c_str());
  std::remove(tr.c_str());
  const auto r = test::runCli({"run", "--strategy", "ddp", "--n_gpus", "2", "--batch_size", "64", "--epochs", "1",
                               "--train_size", "1024", "--test_size", "100", "--hidden", "2048,2048",
                               "--bucket_mb", "4", "--out", out, "--trace", tr});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::vector<Span> s = spansOf(test::readJson(tr), 1);
  std::vector<double> pastUs;  // per wait: how long after its last bucket it ended
  for (int rank = 0; rank < 2; ++rank) {
    const int host = traceTid(rank, 0), comm = traceTid(rank, 1);
    double backwardTs = 0;
    for (const Span& w : s) {  // spans in time order per thread: a step's backward before its wait
      if (w.tid == host && w.name == "backward") backwardTs = w.ts;
      if (w.tid != host || w.name != "bucket wait") continue;
      double lastEnd = w.ts;  // buckets that completed before the wait began leave nothing to wait for
      for (const Span& c : s)
        if (c.tid == comm && c.ts >= backwardTs - 1e-3 && c.ts <= w.ts + w.dur) lastEnd = std::max(lastEnd, c.ts + c.dur);
      pastUs.push_back(w.ts + w.dur - lastEnd);
    }
  }
  ASSERT_EQ(pastUs.size(), 16u);  // 8 steps on each of 2 ranks
  std::vector<double> sorted = pastUs;
  std::sort(sorted.begin(), sorted.end());
  std::ostringstream all;
  for (double us : pastUs) all << " " << us;
  EXPECT_LE(sorted[sorted.size() / 2], 500) << "waits end this many us after their last bucket:" << all.str();
}

TEST(TraceCli, PipelineSpansEveryMicroBatchAndSweepsGiveOneProcessPerRun) {
  const std::string tr = test::tempPath("pipe.trace.json"), out = test::tempPath("pipe.json");
  const auto r = test::runCli({"sweep", "--strategies", "pipeline,ring_all_reduce", "--n_gpus", "2", "--batch_size", "64",
                               "--epochs", "1", "--train_size", "256", "--test_size", "100", "--hidden", "64,64,64",
                               "--microbatches", "4", "--out", out, "--trace", tr});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = test::readJson(tr);
  const json& points = doc.at("tpbench").at("points");
  ASSERT_EQ(points.size(), 2u);
  std::map<std::string, int> pidOf;
  for (const json& p : points) pidOf[p.at("config").at("strategy")] = p.at("pid");
  ASSERT_EQ(pidOf.count("pipeline"), 1u);
  ASSERT_EQ(pidOf.count("ring_all_reduce"), 1u);
  EXPECT_NE(points[0].at("label").get<std::string>().find("M=4 gpipe"), std::string::npos);

  // pipeline: 256 samples, batch 64 => 4 steps, each 4 micro-batches on both stages.
  const std::vector<Span> p = spansOf(doc, pidOf["pipeline"]);
  for (int stage = 0; stage < 2; ++stage) {
    SCOPED_TRACE(stage);
    const int tid = traceTid(stage, 0);
    EXPECT_EQ(countOf(p, "step", tid), 4u);
    EXPECT_EQ(countOf(p, "forward", tid), 16u);
    EXPECT_EQ(countOf(p, "backward", tid), 16u);
    std::set<int> micro;
    for (const Span& x : p)
      if (x.tid == tid && x.name == "forward") micro.insert(x.args.at("micro").get<int>());
    EXPECT_EQ(micro, (std::set<int>{0, 1, 2, 3}));
  }
  // Stage 0 sends activations and receives their gradients; stage 1 the other way round.
  EXPECT_EQ(countOf(p, "send", 0), 16u);
  EXPECT_EQ(countOf(p, "recv", 0), 16u);
  EXPECT_EQ(countOf(p, "recv", traceTid(1, 0)), 16u);
  EXPECT_EQ(countOf(p, "send", traceTid(1, 0)), 16u);
  // GPipe: in every step, stage 1's first forward starts after stage 0's first forward ended.
  std::vector<double> f0, f1;
  for (const Span& x : p) {
    if (x.name != "forward" || x.args.at("micro") != 0) continue;
    (x.tid == 0 ? f0 : f1).push_back(x.ts + (x.tid == 0 ? x.dur : 0));
  }
  ASSERT_EQ(f0.size(), f1.size());
  for (std::size_t i = 0; i < f0.size(); ++i) EXPECT_GE(f1[i], f0[i] - 1.0) << "step " << i;

  // ring_all_reduce: one allreduce per step on each rank (256 / 2 / 64 = 2 steps).
  const std::vector<Span> ring = spansOf(doc, pidOf["ring_all_reduce"]);
  EXPECT_EQ(countOf(ring, "allreduce", 0), 2u);
  EXPECT_EQ(countOf(ring, "allreduce", traceTid(1, 0)), 2u);
  // The second run started after the first ended.
  double endFirst = 0, startSecond = 1e300;
  for (const Span& x : p) endFirst = std::max(endFirst, x.ts + x.dur);
  for (const Span& x : ring) startSecond = std::min(startSecond, x.ts);
  EXPECT_GT(startSecond, endFirst);
}

TEST(TraceCli, AResumedSweepGoesOnInTheSameTrace) {
  const std::string out = test::tempPath("resume.json"), tr = test::tempPath("resume.trace.json");
  const std::vector<std::string> common = {"--n_gpus", "2", "--batch_size", "64", "--epochs", "1", "--train_size", "256",
                                           "--test_size", "100", "--out", out, "--trace", tr};
  auto args = [&](const std::string& strategies, bool resume) {
    std::vector<std::string> a = {"sweep", "--strategies", strategies};
    a.insert(a.end(), common.begin(), common.end());
    if (resume) a.push_back("--resume");
    return a;
  };
  auto r = test::runCli(args("ring_all_reduce", false));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const double firstEnd = [&] {
    double e = 0;
    for (const Span& x : spansOf(test::readJson(tr), 1)) e = std::max(e, x.ts + x.dur);
    return e;
  }();
  r = test::runCli(args("ring_all_reduce,ddp", true));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = test::readJson(tr);
  ASSERT_EQ(doc.at("tpbench").at("points").size(), 2u) << "the resumed sweep ran ddp only";
  EXPECT_EQ(doc["tpbench"]["points"][0]["config"]["strategy"], "ring_all_reduce");
  EXPECT_EQ(doc["tpbench"]["points"][1]["config"]["strategy"], "ddp");
  EXPECT_EQ(doc["tpbench"]["points"][1]["pid"], 2);
  const std::vector<Span> ddp = spansOf(doc, 2);
  ASSERT_FALSE(ddp.empty());
  for (const Span& x : ddp) EXPECT_GT(x.ts, firstEnd);
  EXPECT_EQ(countOf(spansOf(doc, 1), "allreduce", 0), 2u) << "the first run's spans are kept";

  // A file that is not a trace is not overwritten by a resumed sweep.
  test::writeText(tr, "{\"not\": \"a trace\"}");
  test::expectRefusedUpFront(test::runCli(args("ring_all_reduce,ddp,param_server", true)), "is not a tpbench trace");
  EXPECT_EQ(test::readText(tr), "{\"not\": \"a trace\"}");
}

TEST(TraceCli, BadTracePathsAreRefusedUpFront) {
  const std::string out = test::tempPath("same.json");
  test::expectRefusedUpFront(test::runCli({"run", "--strategy", "single", "--n_gpus", "1", "--out", out, "--trace", out}),
                             "--trace");
  test::expectRefusedUpFront(test::runCli({"run", "--strategy", "single", "--n_gpus", "1", "--trace", ""}), "--trace");
  test::expectRefusedUpFront(
      test::runCli({"run", "--strategy", "single", "--n_gpus", "1", "--trace", "/proc/no/such/dir/t.json"}), "--trace");
}

// ---- the report's side -------------------------------------------------------------------

report::TraceSpan span(const char* name, const char* cat, int rank, int track, double b, double e,
                       const char* key = "", long long arg = -1) {
  report::TraceSpan s;
  s.name = name;
  s.cat = cat;
  s.rank = rank;
  s.track = track;
  s.beginUs = b;
  s.endUs = e;
  s.argKey = key;
  s.arg = arg;
  return s;
}

TEST(TraceReport, OverlapCountsOnlyCommBesideTheHostThatComputeCovers) {
  report::TracedRun r;
  for (int rank = 0; rank < 2; ++rank) {
    const double o = rank * 100;  // rank 1 runs later: overlap is per rank, on its own clock span
    r.spans.push_back(span("step", "step", rank, 0, o + 0, o + 20, "step", 0));
    r.spans.push_back(span("forward", "compute", rank, 0, o + 0, o + 4));
    r.spans.push_back(span("backward", "compute", rank, 0, o + 4, o + 10));
    // bucket 0: 6..14, bucket 1: 12..16 (concurrent: in flight 6..16, 10 us), of which
    // 6..10 is behind backward
    r.spans.push_back(span("bucket allreduce", "comm", rank, 1, o + 6, o + 14, "bucket", 0));
    r.spans.push_back(span("bucket allreduce", "comm", rank, 1, o + 12, o + 16, "bucket", 1));
    r.spans.push_back(span("bucket wait", "wait", rank, 0, o + 10, o + 14));
  }
  // Another rank's compute never hides this rank's communication.
  r.spans.push_back(span("backward", "compute", 1, 0, 6, 14));
  const report::Overlap ov = report::overlapOf(r);
  EXPECT_EQ(ov.steps, 1);
  EXPECT_DOUBLE_EQ(ov.asyncUs, 10.0);
  EXPECT_DOUBLE_EQ(ov.hiddenUs, 4.0);
  EXPECT_DOUBLE_EQ(ov.hiddenFraction(), 0.4);
  EXPECT_DOUBLE_EQ(ov.exposedUs, 4.0);
  EXPECT_DOUBLE_EQ(ov.asyncPerStep, 2.0);
  // HTA's per rank: the same 10 us of communication and 4 us of it under compute, each rank on
  // its own clock (rank 1's extra backward at 6..14 is before its communication at 106..116).
  ASSERT_EQ(ov.ranks.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(ov.ranks[rank].rank, rank);
    EXPECT_DOUBLE_EQ(ov.ranks[rank].commUs, 10.0);
    EXPECT_DOUBLE_EQ(ov.ranks[rank].fraction(), 0.4);
  }
}

// HTA's figure counts blocking communication too, where today's share counts only what ran beside
// the host: a rank that also blocks in an allreduce overlaps less, and the table names it.
TEST(TraceReport, HtaOverlapPerRankCountsBlockingCommunicationToo) {
  report::TracedRun r;
  r.label = "ddp N=3";
  for (int rank = 0; rank < 3; ++rank) {
    r.spans.push_back(span("step", "step", rank, 0, 0, 40, "step", 0));
    r.spans.push_back(span("backward", "compute", rank, 0, 0, 10));
    r.spans.push_back(span("bucket allreduce", "comm", rank, 1, 5, 15, "bucket", 0));  // 5 of 10 under backward
  }
  r.spans.push_back(span("allreduce", "comm", 2, 0, 20, 30));  // rank 2 also blocks 10 us
  const report::Overlap ov = report::overlapOf(r);
  ASSERT_EQ(ov.ranks.size(), 3u);
  EXPECT_DOUBLE_EQ(ov.ranks[0].fraction(), 0.5);
  EXPECT_DOUBLE_EQ(ov.ranks[1].fraction(), 0.5);
  EXPECT_DOUBLE_EQ(ov.ranks[2].commUs, 20.0);
  EXPECT_DOUBLE_EQ(ov.ranks[2].fraction(), 0.25);
  EXPECT_DOUBLE_EQ(ov.hiddenFraction(), 0.5) << "today's share: only what ran beside the host";
  const report::Table t = report::overlapTable({r}, {ov});
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.header.back(), "HTA overlap per rank");
  const auto& cell = t.rows[0].back().content;
  ASSERT_EQ(cell.size(), 1u);
  EXPECT_EQ(cell[0].text, "r0 50.0 %, r1 50.0 %, r2 25.0 %");
}

TEST(TraceReport, OnCudaTheGpuStreamsAreComparedNotTheHost) {
  report::TracedRun r;
  r.spans.push_back(span("step", "step", 0, 0, 0, 30, "step", 0));
  // The host launched forward and backward in 2 us; the GPU ran them 2..12 and 12..22.
  r.spans.push_back(span("forward", "compute", 0, 0, 0, 1));
  r.spans.push_back(span("backward", "compute", 0, 0, 1, 2));
  r.spans.push_back(span("forward", "compute", 0, 2, 2, 12));
  r.spans.push_back(span("backward", "compute", 0, 2, 12, 22));
  // The bucket's allreduce on the nccl stream 18..26: 4 us behind backward. On the host, the
  // hook's launch-to-completion span would count none of it as hidden.
  r.spans.push_back(span("ddp bucket allreduce (ncclAllReduce)", "comm", 0, 3, 18, 26));
  r.spans.push_back(span("bucket allreduce", "comm", 0, 1, 3, 27));
  r.spans.push_back(span("bucket wait", "wait", 0, 0, 2, 27));
  const report::Overlap ov = report::overlapOf(r);
  EXPECT_TRUE(ov.gpu);
  EXPECT_DOUBLE_EQ(ov.asyncUs, 8.0);
  EXPECT_DOUBLE_EQ(ov.hiddenUs, 4.0);
  EXPECT_DOUBLE_EQ(ov.exposedUs, 25.0);
  EXPECT_DOUBLE_EQ(ov.asyncPerStep, 1.0);
  // Without the GPU streams the host tracks are compared.
  r.spans.erase(std::remove_if(r.spans.begin(), r.spans.end(), [](const report::TraceSpan& s) { return s.track >= 2; }),
                r.spans.end());
  const report::Overlap host = report::overlapOf(r);
  EXPECT_FALSE(host.gpu);
  EXPECT_DOUBLE_EQ(host.asyncUs, 24.0);
  EXPECT_DOUBLE_EQ(host.hiddenUs, 0.0);
}

// The overlap sentence says what ran, what of it was hidden and what the host waited, in that
// order, each with its unit.
TEST(TraceReport, OverlapLineReadsAsASentence) {
  report::Overlap o;
  o.steps = 4;
  o.asyncUs = 10300;
  o.hiddenUs = 3300;
  o.exposedUs = 7400;
  EXPECT_EQ(report::overlapLine("ddp N=2 batch 64", o),
            "ddp N=2 batch 64: 10.3 ms/step of communication ran beside the computation (host threads), 3.3 ms "
            "(32.0 %) of it hidden behind forward and backward; the host waited 7.4 ms/step for communication");
}

TEST(TraceReport, TheStepShownIsTheMiddleOneWithEachRanksOwnSpans) {
  report::TracedRun r;
  for (int step = 0; step < 3; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      const double b = step * 100 + rank * 30;  // rank 1 runs 30 us behind
      r.spans.push_back(span("step", "step", rank, 0, b, b + 90, "step", step));
      r.spans.push_back(span("forward", "compute", rank, 0, b + 1, b + 40));
      r.spans.push_back(span("bucket allreduce", "comm", rank, 1, b + 50, b + 95, "bucket", 0));
    }
  }
  const report::StepWindow w = report::representativeStep(r);
  EXPECT_EQ(w.step, 1);
  EXPECT_DOUBLE_EQ(w.beginUs, 100);
  EXPECT_DOUBLE_EQ(w.endUs, 220);
  ASSERT_EQ(w.spans.size(), 4u);  // each rank's forward and bucket of step 1, nothing of steps 0, 2
  for (const auto& s : w.spans) EXPECT_GE(s.beginUs, 100);
}

TEST(TraceReport, ReportFromATraceAloneDrawsTheTimelineAndTablesTheOverlap) {
  const std::string dir = test::tempPath("trace_report");
  const auto r = test::runCli({"report", "--trace", test::kTraceFixture, "-o", dir});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // ddp's buckets are the one run with communication beside the host.
  EXPECT_NE(r.out.find("overlap: ddp N=2 batch 64: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("overlap: ring_all_reduce"), std::string::npos) << r.out;
  const std::string csv = test::readText(dir + "/overlap.csv");
  EXPECT_NE(csv.find("ddp N=2 batch 64"), std::string::npos) << csv;
  EXPECT_NE(csv.find("pipeline N=2 batch 64 M=4 gpipe"), std::string::npos) << csv;
  // A CPU trace: two ranks of host threads, no GPU stream.
  EXPECT_EQ(csv.find("GPU streams"), std::string::npos) << csv;
  EXPECT_NE(csv.find("host threads"), std::string::npos) << csv;
  const auto runs = report::loadTraces({test::kTraceFixture});
  for (const auto& run : runs) {
    EXPECT_EQ(run.ranks(), 2) << run.label;
    for (const auto& s : run.spans) EXPECT_LE(s.track, 1) << run.label << " " << s.name;
  }
  EXPECT_NE(test::readText(dir + "/index.md").find("Communication hidden behind computation"), std::string::npos);
  if (test::gnuplotAvailable()) {
    EXPECT_NE(r.out.find("drawn:   " + dir + "/timeline.png"), std::string::npos) << r.out;
    const std::string dat = test::readText(dir + "/timeline.dat");
    EXPECT_NE(dat.find("ddp N=2 batch 64, rank 1 comm"), std::string::npos) << dat;
    // GPipe's picture: the pipeline's micro-batches are labelled.
    for (const char* label : {"\"F0\"", "\"F3\"", "\"B0\"", "\"B3\""})
      EXPECT_NE(dat.find(label), std::string::npos) << label;
  }
}

TEST(TraceReport, WhatIsNotATraceIsRefusedNamingTheField) {
  // A results file is not a trace.
  test::expectRefusedUpFront(test::runCli({"report", "--trace", test::kReportFixture, "-o", test::tempPath("nt")}),
                             "no \"tpbench\"");
  json doc = test::readJson(test::kTraceFixture);
  for (auto& e : doc["traceEvents"])
    if (e["ph"] == "X") {
      e["dur"] = -5;
      break;
    }
  const std::string bad = test::tempPath("bad_dur.trace.json");
  test::writeText(bad, doc.dump());
  test::expectRefusedUpFront(test::runCli({"report", "--trace", bad, "-o", test::tempPath("nd")}),
                             ".dur: expected a number of microseconds in [0, 1e+15], got -5");
  doc = test::readJson(test::kTraceFixture);
  doc["tpbench"]["schema"] = "tpbench.trace/9";
  test::writeText(bad, doc.dump());
  test::expectRefusedUpFront(test::runCli({"report", "--trace", bad, "-o", test::tempPath("ns")}), "tpbench.trace/1");
  // A truncated file is named as the trace it should be.
  test::writeText(bad, test::readText(test::kTraceFixture).substr(0, 200));
  test::expectRefusedUpFront(test::runCli({"report", "--trace", bad, "-o", test::tempPath("nj")}),
                             "trace file '" + bad + "' is not JSON");
  test::expectRefusedUpFront(test::runCli({"report", "-o", test::tempPath("none")}), "--trace FILE");
}

// A span whose time is NaN-producing (ts + dur beyond any clock: the overlap's sums overflow to
// inf - inf), negative or not a number is refused, naming the field; so is a timestamp before
// the trace's origin.
TEST(TraceReport, TimesOutOfRangeAreRefusedNamingTheField) {
  const struct {
    const char* key;
    json value;
    std::string expected;
  } cases[] = {
      {"ts", 1e308, ".ts: expected a number of microseconds in [0, 1e+15], got 1e+308"},
      {"dur", 1e308, ".dur: expected a number of microseconds in [0, 1e+15], got 1e+308"},
      {"ts", -1, ".ts: expected a number of microseconds in [0, 1e+15], got -1"},
      {"dur", "5", ".dur: expected a number of microseconds in [0, 1e+15], got string"},
  };
  const std::string bad = test::tempPath("range.trace.json");
  for (const auto& c : cases) {
    json doc = test::readJson(test::kTraceFixture);
    for (auto& e : doc["traceEvents"])
      if (e["ph"] == "X" && e["cat"] == "comm") {
        e[c.key] = c.value;
        break;
      }
    test::writeText(bad, doc.dump());
    test::expectRefusedUpFront(test::runCli({"report", "--trace", bad, "-o", test::tempPath("nr")}), c.expected);
  }
  // Within range one by one, but ending past the bound together.
  json doc = test::readJson(test::kTraceFixture);
  for (auto& e : doc["traceEvents"])
    if (e["ph"] == "X") {
      e["ts"] = 9e14;
      e["dur"] = 9e14;
      break;
    }
  test::writeText(bad, doc.dump());
  test::expectRefusedUpFront(test::runCli({"report", "--trace", bad, "-o", test::tempPath("nr")}), ": ts + dur: ends after");
}

// A run with no communication beside its computation has no hidden share: "n/a" and why in the
// table and overlap.csv, never "nan %" and never a made-up 0 %.
TEST(TraceReport, OverlapWithoutCommunicationIsNotApplicable) {
  report::TracedRun r;
  r.label = "blocking";
  r.spans.push_back(span("step", "step", 0, 0, 0, 20, "step", 0));
  r.spans.push_back(span("forward", "compute", 0, 0, 0, 10));
  r.spans.push_back(span("allreduce", "comm", 0, 0, 10, 20));
  const report::Overlap o = report::overlapOf(r);
  EXPECT_EQ(o.asyncUs, 0);
  EXPECT_TRUE(std::isnan(o.hiddenFraction()));
  EXPECT_EQ(o.noHiddenFraction(), "no communication ran beside the computation");
  const report::Table t = report::overlapTable({r}, {o});
  ASSERT_EQ(t.rows.size(), 1u);
  ASSERT_EQ(t.rows[0].size(), t.header.size());
  EXPECT_EQ(t.rows[0][5].content.at(0).text, "n/a: no communication ran beside the computation");
  report::TracedRun empty;
  EXPECT_EQ(report::overlapOf(empty).noHiddenFraction(), "the trace holds no step of rank 0");

  // The fixture's ring_all_reduce communicates only on the host thread: n/a in overlap.csv.
  const std::string dir = test::tempPath("trace_na");
  const auto cli = test::runCli({"report", "--trace", test::kTraceFixture, "-o", dir, "--gnuplot", ""});
  ASSERT_EQ(cli.exitCode, 0) << cli.err;
  const std::string csv = test::readText(dir + "/overlap.csv");
  EXPECT_NE(csv.find("n/a: no communication ran beside the computation"), std::string::npos) << csv;
  for (const std::string& text : {csv, cli.out}) {
    EXPECT_EQ(text.find("nan"), std::string::npos) << text;
    EXPECT_EQ(text.find("inf"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace tpb
