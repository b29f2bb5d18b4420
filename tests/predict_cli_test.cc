// `tpbench predict`: what it refuses before measuring, and that its table is the step model's
// arithmetic on what it measured and fitted (the model's own timelines: step_model_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "record/results.h"
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
// the network, whose ports a node's GPUs share: with one port per GPU (the default) the node's
// eight carry 400 GB/s, near NVLink's 450; with one port per node, 50.
TEST(PredictCli, AGpuPresetProjectsAcrossNodes) {
  const auto projected = [](const std::string& nics) {
    std::vector<std::string> args = {"predict", "--link", "nvlink4", "--inter_link", "ib_ndr", "--gpus_per_node", "8",
                                     "--gpu", "h100", "--mfu", "0.3", "--workload", "resnet50", "--batch_size", "32",
                                     "--n_gpus", "1,8,16,2048", "--bucket_mb", "25"};
    if (!nics.empty()) args.insert(args.end(), {"--nics_per_node", nics});
    return test::runCli(args);
  };
  const auto r = projected("");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("# from FLOPs: resnet50 at batch 32 on NVIDIA H100 SXM5"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("# measured:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a node's 8 ports carry 400 GB/s together, so the ring's bandwidth across nodes is 400 GB/s"),
            std::string::npos)
      << r.out;
  const std::vector<Row> rows = rowsOf(r.out);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_NEAR(rows[0].efficiency, 100.0, 0.05);
  // ResNet-50's 97.5 MiB of gradients at 25 MiB: the 1 MiB first bucket and four more.
  EXPECT_EQ(rows[1].buckets, 5) << r.out;
  // 2(N-1)/N of 97.5 MiB at 450 GB/s within the node and at 400 across: the bytes take 1.2x as long
  // at N = 16, and 2 of the ring's 30 steps take 9.6 us instead of 3.4.
  EXPECT_GT(rows[2].commMs, 1.1 * rows[1].commMs) << r.out;
  EXPECT_LT(rows[2].commMs, 2 * rows[1].commMs) << r.out;
  // At 256 nodes a ring's 4094 steps would take 15 ms a bucket; the tree's 16 across the network
  // and 14 within a node, 0.2 ms: the step is the tree's, well under a ring's 5 x 15 ms.
  EXPECT_LT(rows[3].commMs, 10.0) << r.out;
  const auto one = projected("1");
  ASSERT_EQ(one.exitCode, 0) << one.err;
  const std::vector<Row> slow = rowsOf(one.out);
  ASSERT_EQ(slow.size(), 4u) << one.out;
  EXPECT_NEAR(slow[1].commMs, rows[1].commMs, 1e-3);  // one node: no network
  // 2(N-1)/N of 97.5 MiB at 50 GB/s: 7.7x the bytes' time at 400, the latency diluting it.
  EXPECT_GT(slow[2].commMs, 5 * rows[2].commMs) << one.out;
  test::expectRefusedUpFront(projected("0"), "--nics_per_node: must be in 1..1024");
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--nics_per_node", "2"}),
                             "--nics_per_node: goes with --inter_link");
}

// What the table rests on and the user did not say is said: the batch's default, and 64 GPUs on
// one NVLink ring without --inter_link. GPT-2 small's 13 buckets are the same at 1, 5 and 25 MiB
// (each of its blocks is above 25 MiB), so no bucket is best and none is named.
TEST(PredictCli, AssumptionsTiesAndTheErrorAreSaid) {
  const auto r = test::runCli({"predict", "--gpu", "h100", "--mfu", "0.4", "--link", "nvlink4", "--n_gpus", "8,64",
                               "--workload", "gpt2-small"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("# assumed: batch 64 per rank, the default (--batch_size)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# assumed: every rank on one nvlink4 ring at every N, as if one node held them all"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("#  best bucket at N=64: none, every bucket given predicts"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MiB of those given"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# error, as checked: from link presets and FLOPs the model put PyTorch's DDP benchmark"),
            std::string::npos)
      << r.out;
}

// --out: every row of the table as a record of a results file (predictions[]), with what it was
// predicted from; refused up front where the file is not tpbench's to replace.
TEST(PredictCli, WritesItsRowsAsRecords) {
  const std::string out = test::tempPath("predict_records.json");
  std::remove(out.c_str());
  const auto r = test::runCli({"predict", "--link", "nvlink4", "--inter_link", "ib_ndr", "--nics_per_node", "4", "--gpu",
                               "h100", "--mfu", "0.3", "--workload", "gpt2-small:seq=128", "--batch_size", "8",
                               "--n_gpus", "8,16", "--bucket_mb", "5,25", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::vector<Row> rows = rowsOf(r.out);
  const ResultsFile f = ResultsFile::load(out);
  ASSERT_EQ(f.predictions().size(), 4u);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  int best16 = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const PredictionRecord& p = f.predictions()[i];
    SCOPED_TRACE(p.label());
    EXPECT_EQ(p.workload, "gpt2-small:seq=128");
    EXPECT_EQ(p.strategy, "ddp");
    EXPECT_EQ(p.nGpus, rows[i].n);
    EXPECT_EQ(std::to_string(static_cast<int>(*p.bucketMb)), rows[i].bucket);
    EXPECT_NEAR(1e3 * p.stepS, rows[i].stepMs, 5e-4);
    EXPECT_NEAR(1e3 * p.exposedS, rows[i].exposedMs, 5e-4);
    EXPECT_NEAR(100 * p.efficiency, rows[i].efficiency, 0.05);
    EXPECT_NEAR(p.stepS, p.computeS + p.exposedS, 1e-12);
    EXPECT_EQ(p.allreduces, rows[i].buckets);
    EXPECT_EQ(p.profile.source, "flops");
    EXPECT_EQ(p.profile.device.value_or(""), "h100");
    EXPECT_EQ(p.allreduce.source, "link");
    EXPECT_EQ(p.allreduce.interLink.value_or(""), "ib_ndr");
    EXPECT_EQ(p.allreduce.nicsPerNode.value_or(0), 4);
    if (p.nGpus == 16) best16 += p.bestBucket;
  }
  // GPT-2 small's 13 buckets are the same at 5 and 25 MiB, so the two caps tie at N = 16 and
  // neither is marked best (the smaller was, though it won nothing).
  EXPECT_EQ(best16, 0);
  EXPECT_NE(r.out.find("# error, as checked: from link presets and FLOPs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("# assumed:"), std::string::npos) << r.out;  // batch, nodes: all given
  EXPECT_NE(f.meta().command.value_or("").find("predict"), std::string::npos);
  // Again: refused without --overwrite, replaced with it; a file that is not tpbench's never.
  test::expectRefusedUpFront(test::runCli({"predict", "--link", "nvlink4", "--gpu", "h100", "--mfu", "0.3", "--out", out}),
                             "--out");
  EXPECT_EQ(test::runCli({"predict", "--link", "nvlink4", "--gpu", "h100", "--mfu", "0.3", "--n_gpus", "8", "--bucket_mb",
                          "25", "--out", out, "--overwrite"})
                .exitCode,
            0);
  EXPECT_EQ(ResultsFile::load(out).predictions().size(), 1u);
  const std::string notOurs = test::tempPath("predict_not_ours.txt");
  std::ofstream(notOurs) << "keep me\n";
  test::expectRefusedUpFront(
      test::runCli({"predict", "--link", "nvlink4", "--gpu", "h100", "--mfu", "0.3", "--out", notOurs, "--overwrite"}),
      "--out");
  std::remove(out.c_str());
  std::remove(notOurs.c_str());
}

// One results file with ring allreduce points at N = 2, 3 (from 8 B: from 64 KiB alone the line
// through a ring whose bandwidth falls once the buffers leave the caches crosses zero, and the fit
// is refused for want of a latency): the fit's line, then a ring_all_reduce
// prediction (nothing overlaps: every row's exposed communication is all of it, and its step the
// profile's plus that) and a ddp one (the MLP's 2.5 MiB of gradients make two buckets at any cap
// up to 1.6 MiB: its first 1 MiB bucket, then the rest).
TEST(PredictCli, ItsTableIsTheModelsArithmeticOnWhatItMeasured) {
  const std::string fits = test::tempPath("predict_fits.json");
  const auto bench = test::runCli({"allreduce", "--algos", "ring", "--n_gpus", "2,3", "--bytes", "8,64K,256K,1M,4M",
                                   "--iters", "10", "--out", fits, "--overwrite"});
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

namespace tpb {
namespace {

// A pipeline of S stages (--n_gpus) and M micro-batches: one micro-batch's step measured here,
// the stages' shares of it, GPipe's slots; refused with what belongs to the data-parallel model.
TEST(PredictCli, APipelineIsPredictedFromItsStagesShares) {
  test::expectRefusedUpFront(test::runCli({"predict", "--strategy", "pipeline", "--n_gpus", "2", "--link", "nvlink4"}),
                             "--link: not with --strategy pipeline");
  test::expectRefusedUpFront(test::runCli({"predict", "--strategy", "ddp", "--link", "nvlink4", "--microbatches", "2"}),
                             "--microbatches: goes with --strategy pipeline");
  test::expectRefusedUpFront(test::runCli({"predict", "--strategy", "pipeline", "--n_gpus", "5"}), "--n_gpus: 5 stages");
  test::expectRefusedUpFront(
      test::runCli({"predict", "--strategy", "pipeline", "--n_gpus", "2", "--batch_size", "8", "--microbatches", "9"}),
      "--microbatches: 9");
  const std::string out = test::tempPath("predict_pipeline.json");
  std::remove(out.c_str());
  const auto r = test::runCli({"predict", "--strategy", "pipeline", "--n_gpus", "1,2", "--microbatches", "1,4",
                               "--hidden", "256,256,256", "--batch_size", "64", "--steps", "3", "--warmup", "1", "--out",
                               out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const ResultsFile f = ResultsFile::load(out);
  ASSERT_EQ(f.predictions().size(), 4u) << r.out;
  for (const PredictionRecord& p : f.predictions()) {
    SCOPED_TRACE(p.label());
    EXPECT_EQ(p.strategy, "pipeline");
    ASSERT_TRUE(p.microbatches && p.bubble);
    EXPECT_FALSE(p.bucketMb);
    EXPECT_EQ(p.allreduce.source, "none");
    EXPECT_EQ(p.profile.companions.value_or(-1), p.nGpus - 1);
    EXPECT_GE(p.stepS, p.computeS);
    EXPECT_NEAR(p.efficiency, p.aloneS / (p.nGpus * p.stepS), 1e-12);
    EXPECT_NEAR(p.samplesPerS, 64 / p.stepS, 1e-6);
    if (p.nGpus == 1) {
      EXPECT_NEAR(*p.bubble, 0, 1e-12);  // one stage is never idle
    }
  }
  // Two stages of one micro-batch take turns: each idles about half the step.
  EXPECT_EQ(f.predictions()[2].label(), "predict pipeline mlp hidden=256,256,256 batch=64 N=2 M=1");
  EXPECT_GT(*f.predictions()[2].bubble, 0.3);
  EXPECT_LT(*f.predictions()[2].bubble, 0.7);
  std::remove(out.c_str());
}

}  // namespace
}  // namespace tpb
