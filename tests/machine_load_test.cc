// A loaded machine's points are marked: the CPU time other processes took beside a point, read
// from /proc/stat and getrusage, in the record and on the console, and compare holding back its
// verdict on them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cores.h"
#include "common/error.h"
#include "harness/machine_load.h"
#include "record/json_in.h"
#include "record/records.h"
#include "tests/cli_util.h"
#include "tests/file_util.h"

namespace tpb {
namespace {

using nlohmann::json;

// The first lines of this VM's /proc/stat (2026-12-07), cpu1 given 7 ticks of steal. Busy is user
// + nice + system + steal: cpu0 934150 + 158 + 299989 + 0 = 1 234 297 ticks, cpu1 1024632 + 165 +
// 343186 + 7 = 1 367 990; idle, iowait, irq and softirq are not counted. At 100 ticks a second:
// 12 342.97 s and 13 679.90 s.
constexpr const char* kProcStat =
    "cpu  1958782 324 643176 726013 4212 0 5516 0 0 0\n"
    "cpu0 934150 158 299989 430306 1471 0 2543 0 0 0\n"
    "cpu1 1024632 165 343186 295706 2740 0 2972 7 0 0\n"
    "intr 1 2 3\n";

TEST(MachineLoad, BusySecondsOfTheMasksCpusOnly) {
  EXPECT_DOUBLE_EQ(cpusBusySeconds(kProcStat, {0}, 100), 12342.97);
  EXPECT_DOUBLE_EQ(cpusBusySeconds(kProcStat, {1}, 100), 13679.90);  // its steal, 7 ticks, counts
  EXPECT_DOUBLE_EQ(cpusBusySeconds(kProcStat, {0, 1}, 100), 12342.97 + 13679.90);
  EXPECT_EQ(cpusBusySeconds(kProcStat, {2}, 100), -1);  // a CPU without a line
  EXPECT_EQ(cpusBusySeconds("cpu0 1 2\n", {0}, 100), -1);  // a line cut short
  EXPECT_EQ(cpusBusySeconds(kProcStat, {}, 100), -1);
}

TEST(MachineLoad, BusyWhenOthersTakeWhatTheRanksNeed) {
  MachineLoad m;
  m.cores = 2;
  m.wallS = 10;
  m.ranks = 2;
  m.othersCpuS = 2.0;  // 0.2 cores: within the slack
  EXPECT_FALSE(m.busy());
  m.othersCpuS = 3.0;  // 0.3 cores of 0 free
  EXPECT_TRUE(m.busy());
  m.ranks = 1;  // one core free: 0.3 of it takes nothing from the point
  EXPECT_FALSE(m.busy());
  m.othersCpuS = 13.0;  // 1.3 cores: 0.3 past the free one
  EXPECT_TRUE(m.busy());
  const MachineRecord r = machineRecordOf(m, 1);
  EXPECT_TRUE(r.busy);
  EXPECT_DOUBLE_EQ(r.othersCores, 1.3);
  EXPECT_EQ(r.text(), "other processes used 1.30 of 2 cores beside 1 rank");
  const MachineRecord back = MachineRecord::fromJson(JsonIn(r.toJson(), "machine"));
  EXPECT_EQ(back.toJson(), r.toJson());
  json bad = r.toJson();
  bad["others_cores"] = 3.0;  // more cores than the mask has
  EXPECT_THROW(MachineRecord::fromJson(JsonIn(bad, "machine")), UsageError);
  // Without /proc/loadavg's figures the record has neither field; with them, both, read back.
  EXPECT_FALSE(r.toJson().contains("load_1m"));
  m.load1m = 2.41;
  m.othersRunnable = 3;
  const MachineRecord loaded = machineRecordOf(m, 1);
  EXPECT_EQ(loaded.toJson().at("load_1m"), 2.41);
  EXPECT_EQ(loaded.toJson().at("others_runnable"), 3);
  EXPECT_EQ(MachineRecord::fromJson(JsonIn(loaded.toJson(), "machine")).toJson(), loaded.toJson());
  bad = loaded.toJson();
  bad["others_runnable"] = -1;
  EXPECT_THROW(MachineRecord::fromJson(JsonIn(bad, "machine")), UsageError);
}

// /proc/loadavg as Linux writes it (this machine's, 2026-12-08): load averages, running/total, last pid.
TEST(MachineLoad, LoadavgGivesTheLoadAndTheRunnable) {
  double load = 0;
  int running = 0;
  ASSERT_TRUE(parseLoadavg("2.07 1.54 1.31 3/271 88214\n", load, running));
  EXPECT_DOUBLE_EQ(load, 2.07);
  EXPECT_EQ(running, 3);
  EXPECT_FALSE(parseLoadavg("2.07 1.54 1.31 3 271 88214\n", load, running));
  EXPECT_FALSE(parseLoadavg("2.07 1.54\n", load, running));
  EXPECT_FALSE(parseLoadavg("", load, running));
  EXPECT_FALSE(parseLoadavg("2.07 1.54 1.31 300/271 1\n", load, running));  // more running than there are
}

// Spinning processes, one per core of this process's mask, until stopped (by their pids).
struct Spinners {
  std::vector<pid_t> pids;
  explicit Spinners(unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      pids.push_back(pid);
    }
  }
  ~Spinners() {
    for (pid_t pid : pids) kill(pid, SIGKILL);
    for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  }
};

TEST(MachineLoadCli, APointBesideABusyLoopIsMarkedBusy) {
  const std::string out = test::tempPath("busy.json");
  std::remove(out.c_str());
  test::CliResult r;
  {
    const Spinners spin(availableCores());
    r = test::runCli({"run", "--strategy", "ring_all_reduce", "--n_gpus", "2", "--batch_size", "32", "--train_size",
                      "2048", "--epochs", "1", "--out", out});
  }
  ASSERT_EQ(r.exitCode, 0) << r.err << r.out;
  const json doc = test::readJson(out);
  const json& m = doc.at("runs").at(0).at("machine");
  EXPECT_EQ(m.at("cores"), static_cast<int>(availableCores()));
  EXPECT_EQ(m.at("ranks"), 2);
  EXPECT_TRUE(m.at("busy").get<bool>()) << m.dump();
  EXPECT_GT(m.at("others_cores").get<double>(), 0.5) << m.dump();
  // The spinners were runnable when the point started and when it ended.
  EXPECT_GE(m.at("others_runnable").get<int>(), static_cast<int>(availableCores())) << m.dump();
  EXPECT_GE(m.at("load_1m").get<double>(), 0) << m.dump();
  EXPECT_NE(r.out.find("! busy: other processes used"), std::string::npos) << r.out;

  // compare: NEW three times slower on a busy machine is noted, not a regression; --allow_busy
  // judges it.
  json base = doc;
  base["runs"][0].erase("machine");
  json slow = doc;
  for (json& e : slow["runs"][0]["epochs"]) {
    e["wall_s"] = e["wall_s"].get<double>() * 3;
    e["samples_per_s"] = e["samples_per_s"].get<double>() / 3;
  }
  slow["runs"][0]["summary"]["samples_per_s"] = slow["runs"][0]["summary"]["samples_per_s"].get<double>() / 3;
  const std::string basePath = test::tempPath("busy-base.json"), newPath = test::tempPath("busy-new.json");
  test::writeText(basePath, base.dump());
  test::writeText(newPath, slow.dump());
  const test::CliResult noted = test::runCli({"compare", basePath, newPath});
  EXPECT_EQ(noted.exitCode, 0) << noted.out << noted.err;
  EXPECT_NE(noted.out.find("not judged: the machine was busy beside it in NEW"), std::string::npos) << noted.out;
  const test::CliResult judged = test::runCli({"compare", basePath, newPath, "--allow_busy"});
  EXPECT_EQ(judged.exitCode, 3) << judged.out << judged.err;
  EXPECT_NE(judged.out.find("REGRESSION"), std::string::npos) << judged.out;
  for (const std::string& p : {out, basePath, newPath}) std::remove(p.c_str());
}

}  // namespace
}  // namespace tpb
