// The tpbench command as a user runs it: bad input, the benchmark's output and JSON, and what
// happens when a rank dies, hangs or the user presses Ctrl-C.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/registry.h"
#include "harness/cli/bench_flags.h"
#include "harness/point_driver.h"
#include "tests/cli_util.h"

namespace tpb {
namespace {

using nlohmann::json;
using test::runCli;

using test::readJson;

using test::BadInput;

TEST(Cli, BadInputExitsTwoWithOneLineNamingTheFlag) {
  const std::vector<BadInput> cases = {
      {{"allreduce", "--n_gpus", "0"}, "--n_gpus"},
      {{"allreduce", "--n_gpus", "3..1"}, "--n_gpus"},
      {{"allreduce", "--n_gpus", "two"}, "--n_gpus"},
      {{"allreduce", "--bytes", "12Q"}, "--bytes"},
      {{"allreduce", "--algos", "ring,nope"}, "nope"},
      {{"allreduce", "--transport", "carrier-pigeon", "--n_gpus", "2"}, "--transport"},
      {{"allreduce", "--out", "/proc/no/such/dir/x.json"}, "--out"},
      {{"allreduce", "--iters", "0"}, "--iters"},
      {{"allreduce", "--device", "tpu"}, "--device"},
      {{"allreduce", "--no-such-flag"}, "--no-such-flag"},
      {{"frobnicate"}, "frobnicate"},
  };
  test::expectAllRefused({}, cases);
}

// A flag a command does not take is named with the nearest one it does: a typo, or another
// command's spelling (run's --strategy, sweep's --strategies); a name near none gets no guess.
TEST(Cli, AnUnknownFlagIsAnsweredWithTheNearestKnownOne) {
  const std::vector<BadInput> cases = {
      {{"run", "--n_gpu", "2"}, "unknown flag --n_gpu for run (did you mean --n_gpus?)"},
      {{"sweep", "--strategy", "ddp"}, "unknown flag --strategy for sweep (did you mean --strategies?)"},
      {{"run", "--strategies", "ddp"}, "unknown flag --strategies for run (did you mean --strategy?)"},
      {{"allreduce", "--byte=4K"}, "unknown flag --byte for allreduce (did you mean --bytes?)"},
      {{"sweep", "--n_gpus", "1-4", "--out", "x.json"}, "'1-4' is not a value; a range is written with two dots: 1..4"},
  };
  test::expectAllRefused({}, cases);
  const test::CliResult far = test::runCli({"run", "--frobnicate", "2"});
  EXPECT_EQ(far.exitCode, 2);
  EXPECT_NE(far.err.find("unknown flag --frobnicate for run (see --help)"), std::string::npos) << far.err;
}

// One case per class of bad input the allreduce benchmark, report and compare take (docs/cli.md,
// "Bad input"); each of these used to launch ranks, fail inside them, or be accepted.
TEST(Cli, EveryClassOfBadInputIsRefusedBeforeLaunching) {
  const std::string fixture = std::string(TPB_SOURCE_DIR) + "/tests/fixtures/report_small.json";
  const std::vector<BadInput> cases = {
      // sizes that are not whole float32 elements: a single value, and a range that steps off them
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4097"}, "--bytes: 4097 bytes"},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4..16:+3"}, "--bytes: 7 bytes"},
      // (buffers that cannot fit are left to InputChecks.AllreduceRunChecksSizesAndMemory: without
      // the check, 64 ranks x 16 GiB here would call in the OOM killer, not fail the test)
      // an absurd number of points
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4..40008:+4", "--timeout", "1"},
       "1 --algos x 1 --n_gpus x 10002 --bytes = 10002 points"},
      // negative counts
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--warmup", "-1"}, "--warmup"},
      // integers in octal or hex (CLI11 would read "010" as 8)
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--iters", "010"}, "--iters"},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--warmup", "0x1"}, "--warmup"},
      // empty values
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--out", ""}, "--out: must not be empty"},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--transport", ""}, "--transport: must not be empty"},
      {{"report", fixture, "-o", ""}, "--out: must not be empty"},
      // an unusable TMPDIR
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K"}, "TMPDIR: ", {{"TMPDIR", ""}}},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K"}, "TMPDIR: /no/such/dir",
       {{"TMPDIR", "/no/such/dir"}}},
      // non-finite or meaningless thresholds
      {{"compare", fixture, fixture, "--threshold", "inf"}, "--threshold"},
      {{"compare", fixture, fixture, "--acc_tolerance", "inf"}, "--acc_tolerance"},
      {{"compare", fixture, fixture, "--acc-tolerance", "inf"}, "--acc_tolerance"},  // the old spelling
      {{"compare", fixture, fixture, "--alpha", "nan"}, "--alpha"},
  };
  test::expectAllRefused({}, cases);
}

// Numbers in another spelling or beyond their flag's type (docs/cli.md, "Bad input"): each of these
// was accepted (a clamped --seed recorded as 2^64-1, "010" read as 10, a hex --lr), and so were
// more micro-batches than samples, a TMPDIR root "could write", and a run of nothing.
// A refusal quoting a 120 KB value is still one readable line: its start and end, and how much
// was left out between them.
TEST(Cli, ARefusalQuotingAHugeValueStaysShort) {
  const std::string huge(120 * 1024, 'x');
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--strategy", huge}, {"allreduce", "--algos", huge}, {huge}}) {
    const auto r = runCli(args);
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_LT(r.err.size(), 2600u) << r.err.substr(0, 300);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err.substr(0, 300);
    if (args.size() > 1) {
      EXPECT_NE(r.err.find("bytes left out"), std::string::npos) << r.err.substr(0, 300);
    }
  }
}

TEST(Cli, NumbersAndRunsOfNothingAreRefused) {
  const std::string out = test::tempPath("never.json");
  const std::vector<BadInput> cases = {
      {{"run", "--seed", "99999999999999999999999"}, "--seed: '99999999999999999999999' is out of range"},
      {{"run", "--test_size", "18446744073709551616"}, "--test_size"},
      {{"run", "--max_steps", "99999999999999999999"}, "--max_steps"},
      {{"run", "--epochs", "99999999999"}, "--epochs: '99999999999' is out of range"},
      {{"run", "--lr", "0x1p-3"}, "--lr: '0x1p-3' is not a plain decimal number"},
      {{"run", "--lr", "+0.5"}, "--lr"},
      {{"run", "--momentum", " 0.5"}, "--momentum"},
      {{"run", "--bucket_mb", "1e999"}, "--bucket_mb"},
      {{"compare", "a.json", "b.json", "--threshold", "0x1"}, "--threshold"},
      {{"sweep", "--n_gpus", "010", "--out", out}, "--n_gpus: '010' has a leading zero"},
      {{"sweep", "--batch_size", "32,064", "--out", out}, "--batch_size"},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "04K"}, "--bytes"},
      {{"run", "--strategy", "pipeline", "--batch_size", "4", "--microbatches", "5"}, "--microbatches 5"},
      {{"sweep", "--strategies", "pipeline", "--batch_size", "8,2", "--out", out}, "--microbatches 4"},
      {{"run", "--nproc_per_node", "3", "--n_gpus", "2"}, "--nproc_per_node 3"},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K"}, "TMPDIR: /proc", {{"TMPDIR", "/proc"}}},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K"}, "TPB_RING_CHUNK_KB", {{"TPB_RING_CHUNK_KB", "0x10"}}},
      {{"run", "--epochs", "1"}, "TPB_RING_CHUNK_KB", {{"TPB_RING_CHUNK_KB", "99999999999999999"}}},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K"}, "TPB_SHM_SINGLE_COPY", {{"TPB_SHM_SINGLE_COPY", "yes"}}},
      {{"run", "--epochs", "1"}, "TPB_SHM_SINGLE_COPY", {{"TPB_SHM_SINGLE_COPY", "01"}}},
      {{"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K"}, "TPB_MPI_THREAD", {{"TPB_MPI_THREAD", "multiple"}}},
      {{"run", "--epochs", "1"}, "TPB_MPI_THREAD", {{"TPB_MPI_THREAD", "SINGLE"}}},
  };
  test::expectAllRefused({}, cases);
  EXPECT_FALSE(std::filesystem::exists(out));
}

// Repeated list entries count once (docs/cli.md, "Duplicates"): one (algorithm, N, size) is
// measured once.
TEST(Cli, DuplicateListEntriesRunOnce) {
  const std::string out = test::tempPath("dup.json");
  const auto r = runCli({"allreduce", "--algos", "ring,ring", "--n_gpus", "2,2", "--bytes", "4K,4K,2K..4K",
                         "--iters", "1", "--warmup", "0", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json doc = readJson(out);
  ASSERT_EQ(doc.at("allreduce").size(), 2u) << doc.dump();  // ring at N=2: 4K and 2K
  EXPECT_EQ(doc.at("allreduce")[0].at("bytes"), 4096);
  EXPECT_EQ(doc.at("allreduce")[1].at("bytes"), 2048);
  std::remove(out.c_str());
}

TEST(Cli, HelpAndVersionAndList) {
  EXPECT_EQ(runCli({"--help"}).exitCode, 0);
  auto v = runCli({"--version"});
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_NE(v.out.find("tpbench"), std::string::npos);
  auto h = runCli({"allreduce", "--help"});
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_NE(h.out.find("--bytes"), std::string::npos);
  auto l = runCli({"list"});
  EXPECT_EQ(l.exitCode, 0);
  for (const char* name : {"ring", "param_server", "library", "shm", "gloo"})
    EXPECT_NE(l.out.find(name), std::string::npos) << name;
  // Every training strategy, with its aliases.
  for (const char* name : {"single", "ring_all_reduce", "allreduce", "ddp", "data_parallel",
                           "ring_all_reduce_builtin", "param_server_builtin"})
    EXPECT_NE(l.out.find(name), std::string::npos) << name;
}

// A bare `allreduce` or `collective` is sized for about a minute on a 2-core CPU (issue 31), as a
// bare sweep is: allreduce N = 2..4 and 4K..16M, collective (seven ops) N = 2 and 4K..1M:x4;
// on cuda the wider nccl-tests ranges, at most as many ranks as GPUs visible. --help says so.
TEST(Cli, BareBenchmarksAreSizedForAMinuteOnTheCpu) {
  const auto bare = [](const char* command) {
    CLI::App app;
    auto* cmd = app.add_subcommand(command);
    cli::BenchFlags f;
    cli::addBenchFlags(cmd, f);
    app.parse(std::vector<std::string>{command});
    return cli::benchOptions(cmd, f, command, nullptr);
  };
  const auto ar = bare("allreduce");
  EXPECT_EQ(ar.nGpus, (std::vector<long long>{2, 3, 4}));
  ASSERT_EQ(ar.bytes.size(), 13u);
  EXPECT_EQ(ar.bytes.front(), 4096u);
  EXPECT_EQ(ar.bytes.back(), std::size_t(16) << 20);
  const auto coll = bare("collective");
  EXPECT_EQ(coll.nGpus, (std::vector<long long>{2}));
  EXPECT_EQ(coll.bytes, (std::vector<std::size_t>{4096, 16384, 65536, 262144, 1 << 20}));
  EXPECT_EQ(cli::benchDefaults("allreduce", true, 16).nGpus, "2..8");
  EXPECT_EQ(cli::benchDefaults("allreduce", true, 4).nGpus, "2..4");
  EXPECT_EQ(cli::benchDefaults("collective", true, 1).nGpus, "2");
  EXPECT_EQ(cli::benchDefaults("allreduce", true, 8).bytes, "4K..64M");
  EXPECT_EQ(cli::benchDefaults("collective", true, 8).bytes, "4K..64M:x4");
  for (const char* command : {"allreduce", "collective"}) {
    const std::string help = runCli({command, "--help"}).out;
    EXPECT_NE(help.find("about a minute on two cores"), std::string::npos) << help;
    EXPECT_NE(help.find("(default: " + cli::benchDefaults(command, false, 0).nGpus + " on cpu"), std::string::npos)
        << help;
  }
}

// The help of run and sweep names every registered strategy; list's device line names what the
// registry says cannot run there (torch_dp on cpu: torch.nn.DataParallel needs CUDA).
TEST(Cli, HelpNamesEveryStrategyAndListEveryDeviceLimit) {
  const auto helpOf = [](const char* cmd, const std::string& flag) {
    const std::string help = runCli({cmd, "--help"}).out;
    const std::size_t at = help.find(flag + " ");
    return at == std::string::npos ? std::string() : help.substr(at, help.find("\n  --", at) - at);
  };
  const std::string run = helpOf("run", "--strategy"), sweep = helpOf("sweep", "--strategies");
  for (const auto& name : strategyNames())
    for (const std::string& help : {run, sweep})
      EXPECT_TRUE(std::regex_search(help, std::regex(" " + name + "([, ]|$)"))) << name << " in\n" << help;
  const std::string list = runCli({"list"}).out;
  const std::size_t cpu = list.find("\n  cpu ");
  ASSERT_NE(cpu, std::string::npos) << list;
  const std::string line = list.substr(cpu + 1, list.find('\n', cpu + 1) - cpu - 1);
  for (const auto& s : trainStrategies()) {
    const bool named = std::regex_search(line, std::regex(" " + s.name + "([, ]|$)"));
    EXPECT_EQ(named, !s.unsupported(Device::Cpu, 1).empty()) << s.name << ": " << line;
  }
  EXPECT_NE(line.find("torch_dp"), std::string::npos) << line;
}

// One spelling style, the JSON keys' (underscores); the older hyphenated spellings still work,
// unlisted.
TEST(Cli, OldFlagSpellingsAreHiddenAliases) {
  const std::string fixture = std::string(TPB_SOURCE_DIR) + "/tests/fixtures/report_small.json";
  const auto help = runCli({"compare", "--help"}).out + runCli({"allreduce", "--help"}).out;
  for (const char* now : {"--acc_tolerance", "--no_check"}) EXPECT_NE(help.find(now), std::string::npos) << now;
  for (const char* old : {"--acc-tolerance", "--no-check"}) EXPECT_EQ(help.find(old), std::string::npos) << old;
  EXPECT_EQ(runCli({"compare", fixture, fixture, "--acc-tolerance", "0.01"}).exitCode, 0);
  for (const char* flag : {"--no_check", "--no-check"}) {
    const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K", "--iters", "1",
                           "--warmup", "0", flag, "--out", test::tempPath(std::string("nocheck") + flag + ".json")});
    EXPECT_EQ(r.exitCode, 0) << flag << ": " << r.err;
  }
}

// The ETA extrapolates the launched points' own times; the progress line shows the time elapsed.
TEST(Cli, EtaComesFromMeasuredPointTimesBesideTheElapsedTime) {
  EXPECT_FALSE(remainingS(0, 0, 5).has_value());
  EXPECT_DOUBLE_EQ(*remainingS(10, 2, 3), 15);
  const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "1,2", "--bytes", "4K", "--iters", "1",
                         "--warmup", "0", "--out", test::tempPath("eta.json")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("[1/2] "), std::string::npos) << r.err;
  const std::size_t second = r.err.find("[2/2] ");
  ASSERT_NE(second, std::string::npos) << r.err;
  const std::string line = r.err.substr(second, r.err.find('\n', second) - second);
  EXPECT_NE(line.find("(elapsed "), std::string::npos) << line;
  EXPECT_NE(line.find(" s, ETA "), std::string::npos) << line;
}

// A point with more ranks than the cores this process may use gets a warning line of its own
// before it launches (its times include waiting for a core); one with as many does not.
TEST(Cli, MoreRanksThanCoresIsWarnedBeforeLaunch) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int cores = CPU_COUNT(&set);
  if (cores < 1 || cores > 8) GTEST_SKIP() << cores << " cores: oversubscribing them would take too many ranks";
  const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", std::to_string(cores) + "," + std::to_string(cores + 1),
                         "--bytes", "4K", "--iters", "1", "--warmup", "0", "--out", test::tempPath("oversub.json")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string note = " ranks on " + std::to_string(cores) + " available cores: they take turns";
  EXPECT_NE(r.err.find("\nwarning: " + std::to_string(cores + 1) + note), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(std::to_string(cores) + note), std::string::npos) << r.err;
  // Before the point that oversubscribes runs: right after its progress line.
  const std::size_t progress = r.err.find("[2/2]");
  ASSERT_NE(progress, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\nwarning: ", progress), r.err.find('\n', progress)) << r.err;
}

TEST(Cli, AllreduceWritesTablesAndConsistentJson) {
  const std::string out = test::tempPath("ar.json");
  const auto r = runCli({"allreduce", "--algos", "ring,param_server,library", "--n_gpus", "2,3",
                         "--bytes", "4K,1M", "--iters", "3", "--warmup", "1", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("busbw_GB/s"), std::string::npos);
  EXPECT_NE(r.out.find("p99_us"), std::string::npos);
  EXPECT_NE(r.err.find("[rank 0] "), std::string::npos) << "progress lines come with rank prefixes";
  const json doc = readJson(out);
  EXPECT_EQ(doc.at("schema"), "tpbench.results/2");
  ASSERT_EQ(doc.at("allreduce").size(), 3u * 2u * 2u);
  for (const auto& p : doc.at("allreduce")) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p.at("status"), "ok");
    EXPECT_EQ(p.at("wrong"), 0);
    const int n = p.at("n_gpus");
    const double bytes = p.at("bytes"), med = p.at("time_us").at("median");
    EXPECT_LE(p.at("time_us").at("min").get<double>(), med);
    EXPECT_GE(p.at("time_us").at("max").get<double>(), med);
    // Three iterations: p90 and p99 are the third smallest (nearest rank), the largest.
    EXPECT_EQ(p.at("time_us").at("p90"), p.at("time_us").at("max"));
    EXPECT_EQ(p.at("time_us").at("p99"), p.at("time_us").at("max"));
    EXPECT_GE(p.at("time_us").at("first").get<double>(), p.at("time_us").at("min").get<double>());
    EXPECT_LE(p.at("time_us").at("spikes").get<int>(), 3);
    EXPECT_GE(p.at("time_us").at("cv").get<double>(), 0.0);
    // Each rank's mean call (IMB's and OSU's reading): every call of a rank is at most that
    // call's slowest, so the largest mean is at most the slowest calls' mean, at most max.
    const double rankMean = p.at("time_us").at("rank_mean"), rankMeanMax = p.at("time_us").at("rank_mean_max");
    EXPECT_GT(rankMean, 0.0);
    EXPECT_LE(rankMean, rankMeanMax);
    EXPECT_LE(rankMeanMax, p.at("time_us").at("max").get<double>());
    EXPECT_NEAR(p.at("algbw_gbps").get<double>(), bytes / (med * 1e-6) / 1e9, 1e-9 + 1e-9 * bytes);
    EXPECT_NEAR(p.at("busbw_gbps").get<double>(), p.at("algbw_gbps").get<double>() * 2.0 * (n - 1) / n, 1e-9);
    EXPECT_EQ(p.at("count").get<double>() * 4, bytes);
  }
  std::remove(out.c_str());
}

// TPB_FAULT is read strictly, before anything is launched: atoi read "abc:KILL" as rank 0's fault.
TEST(Cli, AMalformedFaultVariableIsRefusedBeforeLaunching) {
  const std::string out = test::tempPath("fault-spec.json");
  for (const std::string bad : {"abc:KILL", "1:KILLL", "1:hang:0", "1:hang:x", "1", "-1:exit"}) {
    SCOPED_TRACE(bad);
    std::remove(out.c_str());
    const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "2", "--bytes", "4K", "--iters", "1", "--out", out},
                          {{"TPB_FAULT", bad}});
    test::expectRefusedUpFront(r, "TPB_FAULT");
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

// A rank killed mid-run: reported with its rank and signal, the others stopped, nothing left.
TEST(Cli, KilledRankIsReportedAndNothingIsLeftBehind) {
  const auto shmBefore = test::shmSegments();
  for (const std::string action : {"KILL", "SEGV", "exit"}) {
    SCOPED_TRACE(action);
    const std::string out = test::tempPath("kill.json");
    const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "3", "--bytes", "4K,64K",
                           "--iters", "5", "--timeout", "60", "--out", out, "--overwrite"},
                          {{"TPB_FAULT", "1:" + action + ":3"}});
    EXPECT_EQ(r.exitCode, 1) << r.err;
    EXPECT_LT(r.seconds, 30) << "the launcher must not wait for the survivors' timeouts";
    EXPECT_NE(r.err.find("rank 1"), std::string::npos) << r.err;
    if (action != "exit") {
      EXPECT_NE(r.err.find("SIG" + action), std::string::npos) << r.err;
    }
    if (action == "SEGV") {  // the rank's crash report: its stack, its last line quoted
      EXPECT_NE(r.err.find("stack at a fatal signal"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("(SIGSEGV): tpbench (pid "), std::string::npos) << r.err;
    }
    const json doc = readJson(out);
    ASSERT_EQ(doc.at("allreduce").size(), 2u);
    for (const auto& p : doc.at("allreduce")) {
      EXPECT_EQ(p.at("status"), "failed");
      EXPECT_NE(p.at("error").get<std::string>().find("rank 1"), std::string::npos) << p.dump();
    }
    EXPECT_TRUE(test::workerPids().empty()) << "workers outlived the launcher";
    EXPECT_EQ(test::shmSegments(), shmBefore) << "shm segments left in /dev/shm";
    std::remove(out.c_str());
  }
}

TEST(Cli, HungRankIsStoppedAtTheTimeout) {
  const std::string out = test::tempPath("hang.json");
  const auto r = runCli({"allreduce", "--algos", "param_server", "--n_gpus", "2", "--bytes", "4K",
                         "--iters", "5", "--timeout", "3", "--out", out},
                        {{"TPB_FAULT", "1:hang:2"}});
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_GE(r.seconds, 3);
  EXPECT_LT(r.seconds, 20);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_EQ(readJson(out).at("allreduce").at(0).at("status"), "failed");
  EXPECT_TRUE(test::workerPids().empty());
  std::remove(out.c_str());
}

// Ctrl-C: the launcher stops its ranks, keeps what finished, and leaves a valid file.
TEST(Cli, InterruptLeavesValidResults) {
  const std::string out = test::tempPath("int.json");
  const auto r = runCli({"allreduce", "--algos", "ring", "--n_gpus", "2,3", "--bytes", "4K",
                         "--iters", "5", "--timeout", "60", "--out", out},
                        {{"TPB_FAULT", "1:hang:3"}},
                        test::interruptOnceSaid("injecting 'hang'"));  // once rank 1 hangs in the first point
  EXPECT_EQ(r.exitCode, 130) << r.err;
  EXPECT_LT(r.seconds, 20);
  const json doc = readJson(out);
  EXPECT_EQ(doc.at("schema"), "tpbench.results/2");
  EXPECT_GE(doc.at("allreduce").size(), 1u);
  EXPECT_TRUE(test::workerPids().empty());
  std::remove(out.c_str());
}

}  // namespace
}  // namespace tpb
