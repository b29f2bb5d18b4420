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
};

// The table's rows (lines that start with blanks and a number).
std::vector<Row> rowsOf(const std::string& out) {
  std::vector<Row> rows;
  std::istringstream in(out);
  std::string line;
  const std::regex row(R"(^\s+(\d+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+\d+$)");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, row))
      rows.push_back({std::stoi(m[1]), m[2], std::stoi(m[3]), std::stod(m[4]), std::stod(m[5]), std::stod(m[6]),
                      std::stod(m[7])});
  return rows;
}

// The profile line's step (forward + backward + optimizer), in ms.
double profiledStepMs(const std::string& out) {
  std::smatch m;
  const std::regex step(R"(\(step ([\d.]+) ms;)");
  return std::regex_search(out, m, step) ? std::stod(m[1]) : NAN;
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
}

// One results file with ring allreduce points at N = 2, 3: the fit's line, then a ring_all_reduce
// prediction (nothing overlaps: every row's exposed communication is all of it, and its step the
// profile's plus that) and a ddp one (the MLP's 2.5 MiB of gradients make two buckets at any cap
// up to 1.6 MiB: its first 1 MiB bucket, then the rest).
TEST(PredictCli, ItsTableIsTheModelsArithmeticOnWhatItMeasured) {
  const std::string fits = test::tempPath("predict_fits.json");
  const auto bench = test::runCli({"allreduce", "--algos", "ring", "--n_gpus", "2,3", "--bytes", "64K,1M", "--iters", "5",
                                   "--out", fits, "--overwrite"});
  ASSERT_EQ(bench.exitCode, 0) << bench.err;
  const auto ring = test::runCli({"predict", "--strategy", "ring_all_reduce", "--collectives", fits, "--n_gpus", "1,2,4",
                                  "--steps", "5", "--warmup", "1"});
  ASSERT_EQ(ring.exitCode, 0) << ring.err;
  EXPECT_NE(ring.out.find("# allreduce ring over shm, fitted on N=2,3: alpha "), std::string::npos) << ring.out;
  const double step = profiledStepMs(ring.out);
  ASSERT_TRUE(step > 0) << ring.out;
  const std::vector<Row> rows = rowsOf(ring.out);
  ASSERT_EQ(rows.size(), 3u) << ring.out;
  EXPECT_EQ(rows[0].n, 1);
  EXPECT_EQ(rows[0].buckets, 0);
  EXPECT_NEAR(rows[0].stepMs, step, 0.002);
  EXPECT_NEAR(rows[0].efficiency, 100.0, 0.05);
  for (const Row& r : {rows[1], rows[2]}) {
    SCOPED_TRACE(r.n);
    EXPECT_EQ(r.buckets, 1);
    EXPECT_GT(r.commMs, 0);
    EXPECT_NEAR(r.exposedMs, r.commMs, 0.002);
    EXPECT_NEAR(r.stepMs, step + r.commMs, 0.003);
    EXPECT_NEAR(r.efficiency, 100 * step / r.stepMs, 0.1);
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
