// `tpbench predict`: what it refuses before measuring, and that its table is the step model's
// arithmetic on what it measured and fitted (the model's own timelines: step_model_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/file_util.h"

namespace tpb {
namespace {

struct Row {
  int n = 0;
  std::string bucket;
  int buckets = 0;
  double stepMs = 0, commMs = 0, exposedMs = 0, efficiency = 0;
  double profiledMs = NAN;  // the step of the profile line above it (forward + backward + optimizer)
  int companions = -1;      // what that profile was measured beside
};

// The table's rows (lines that start with blanks and a number), each with the last profile line
// before it.
std::vector<Row> rowsOf(const std::string& out) {
  std::vector<Row> rows;
  std::istringstream in(out);
  std::string line;
  const std::regex row(R"(^\s+(\d+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+\d+$)");
  const std::regex profile(R"(beside (\d+) stepping as it.*\(step ([\d.]+) ms;)");
  const std::regex flops(R"(^# from FLOPs: .*forward ([\d.]+) ms, backward ([\d.]+) ms .*optimizer ([\d.]+) ms)");
  std::smatch m;
  double profiled = NAN;
  int companions = -1;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, profile)) {
      companions = std::stoi(m[1]);
      profiled = std::stod(m[2]);
    } else if (std::regex_search(line, m, flops)) {
      profiled = std::stod(m[1]) + std::stod(m[2]) + std::stod(m[3]);
    } else if (std::regex_match(line, m, row)) {
      rows.push_back({std::stoi(m[1]), m[2], std::stoi(m[3]), std::stod(m[4]), std::stod(m[5]), std::stod(m[6]),
                      std::stod(m[7]), profiled, companions});
    }
  }
  return rows;
}

TEST(PredictCli, RefusesWhatItCannotModelBeforeMeasuring) {
  const std::string fits = test::tempPath("predict_refused.json");
  test::expectRefusedUpFront(test::runCli({"predict"}), "--collectives: give either");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--collectives", fits}), "not both");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "warp9"}), "--link: unknown link 'warp9'");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--strategy", "param_server"}),
                             "--strategy: 'param_server' is not one the step model covers");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--n_gpus", "2,0"}), "--n_gpus: 0");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--bucket_mb", "0"}), "--bucket_mb: 0");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--algo", "ring"}), "--algo: a --link preset");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--workload", "alexnet"}), "--workload");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--steps", "0"}), "--steps");
  test::expectRefusedUpFront(test::runCli({"predict", "--collectives", fits}), fits);  // no such file
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--gpu", "h100"}), "--mfu: give");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--mfu", "0.3"}), "--mfu: goes with --gpu");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--gpu", "tpu", "--mfu", "0.3"}),
                             "--gpu: unknown device 'tpu'");
  test::expectRefusedUpFront(test::runCli({"predict", "--collectives", fits, "--gpu", "h100", "--mfu", "0.3"}),
                             "--gpu: goes with --link");
  test::expectRefusedUpFront(test::runCli({"predict", "--inter_link", "ib_ndr", "--collectives", fits}),
                             "--inter_link: goes with --link");
}

// A GPU's step from FLOPs, nothing measured: within a node the ring runs on NVLink, beyond it on
// the network; the step at N = 16 pays for the slower link.
TEST(PredictCli, AGpuPresetProjectsAcrossNodes) {
  const auto r = test::runCli({"predict", "--link", "nvlink4", "--inter_link", "ib_ndr", "--gpus_per_node", "8", "--gpu",
                               "h100", "--mfu", "0.3", "--workload", "resnet50", "--batch_size", "32", "--n_gpus",
                               "1,8,16", "--bucket_mb", "25"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("# from FLOPs: resnet50 at batch 32 on NVIDIA H100 SXM5"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("# measured:"), std::string::npos) << r.out;
  const std::vector<Row> rows = rowsOf(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_NEAR(rows[0].efficiency, 100.0, 0.05);
  // ResNet-50's 97.5 MiB of gradients at 25 MiB: the 1 MiB first bucket and four more.
  EXPECT_EQ(rows[1].buckets, 5) << r.out;
  // 2(N-1)/N of 97.5 MiB at 450 GB/s within the node, at 50 GB/s across: the bytes take 9.6x as
  // long at N = 16 (each bucket's latency, 14 steps of 3.4 us against 2 of 9.6 and 28 of 3.4,
  // dilutes that to 6.9x).
  EXPECT_GT(rows[2].commMs, 6 * rows[1].commMs) << r.out;
  EXPECT_GT(rows[2].stepMs, rows[1].stepMs) << r.out;
}

// One results file with ring allreduce points at N = 2, 3: the fit's line, then a ring_all_reduce
// prediction (nothing overlaps: every row's exposed communication is all of it, and its step the
// profile's plus that) and a ddp one (the MLP's 2.5 MiB of gradients make two buckets at any cap
// up to 1.6 MiB: its first 1 MiB bucket, then the rest).
TEST(PredictCli, ItsTableIsTheModelsArithmeticOnWhatItMeasured) {
  const std::string fits = test::tempPath("predict_fits.json");
  const auto bench = test::runCli({"allreduce", "--algos", "ring", "--n_gpus", "2,3", "--bytes", "64K,256K,1M,4M", "--iters", "10",
                                   "--out", fits, "--overwrite"});
  ASSERT_EQ(bench.exitCode, 0) << bench.err;
  const auto ring = test::runCli({"predict", "--strategy", "ring_all_reduce", "--collectives", fits, "--n_gpus", "1,2,4",
                                  "--steps", "5", "--warmup", "1"});
  ASSERT_EQ(ring.exitCode, 0) << ring.err;
  // Fitted on N = 2 and 3, or on one of them where the other's line was clamped (no fit: a busy machine).
  EXPECT_NE(ring.out.find("# allreduce ring over shm, fitted on N="), std::string::npos) << ring.out;
  const std::vector<Row> rows = rowsOf(ring.out);
  ASSERT_EQ(rows.size(), 3u) << ring.out;
  EXPECT_EQ(rows[0].n, 1);
  EXPECT_EQ(rows[0].buckets, 0);
  EXPECT_NEAR(rows[0].stepMs, rows[0].profiledMs, 0.002);
  EXPECT_NEAR(rows[0].efficiency, 100.0, 0.05);
  // Each N's profile was measured beside N - 1 replicas (the run's other ranks).
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].companions, rows[i].n - 1) << ring.out;
  for (const Row& r : {rows[1], rows[2]}) {
    SCOPED_TRACE(r.n);
    EXPECT_EQ(r.buckets, 1);
    EXPECT_GT(r.commMs, 0);
    EXPECT_NEAR(r.exposedMs, r.commMs, 0.002);
    EXPECT_NEAR(r.stepMs, r.profiledMs + r.commMs, 0.003);
    EXPECT_NEAR(r.efficiency, 100 * rows[0].profiledMs / r.stepMs, 0.1);  // one rank alone over the step at N
  }
  EXPECT_GT(rows[2].commMs, rows[1].commMs);  // 2(N-1)/N of the bytes and 2(N-1) steps grow with N

  const auto ddp = test::runCli({"predict", "--strategy", "ddp", "--algo", "ring", "--collectives", fits, "--n_gpus", "2",
                                 "--bucket_mb", "0.5,1.5", "--steps", "5", "--warmup", "1"});
  ASSERT_EQ(ddp.exitCode, 0) << ddp.err;
  const std::vector<Row> d = rowsOf(ddp.out);
  ASSERT_EQ(d.size(), 2u) << ddp.out;
  for (const Row& r : d) {
    EXPECT_EQ(r.buckets, 2) << ddp.out;
    EXPECT_LE(r.exposedMs, r.commMs + 0.002) << ddp.out;  // part of it may hide behind backward
  }
  EXPECT_NE(ddp.out.find("#  best bucket at N=2: "), std::string::npos) << ddp.out;
  // Gloo's library allreduce was not measured in the file: refused, naming the command that would.
  test::expectRefusedUpFront(test::runCli({"predict", "--collectives", fits}),
                             "--collectives: no in-place allreduce library on the CPU");
  std::remove(fits.c_str());
}

}  // namespace
}  // namespace tpb
