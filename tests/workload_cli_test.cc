// --workload and --bucket_mb as a user gives them: a CNN and a transformer trained by run and
// sweep, what their records carry, the sweep's dimensions, and what is refused before launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_util.h"
#include "workload/network_spec.h"

namespace tpb {
namespace {

using nlohmann::json;
using test::readJson;
using test::runCli;

constexpr char kTinyGpt[] = "gpt:layers=1:hidden=32:heads=2:vocab=64:seq=16";

TEST(WorkloadCli, RunTrainsATransformerAndTheRecordCarriesItsCost) {
  const std::string out = test::tempPath("wl_run.json");
  const auto r = runCli({"run", "--strategy", "ddp", "--n_gpus", "2", "--workload", kTinyGpt, "--batch_size", "16",
                         "--epochs", "2", "--train_size", "512", "--test_size", "128", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json run = readJson(out).at("runs").at(0);
  EXPECT_EQ(run.at("status"), "ok");
  const std::string canonical = "gpt:layers=1:hidden=32:heads=2:ffn=128:vocab=64:seq=16";
  EXPECT_EQ(run.at("config").at("workload"), canonical);
  const NetworkCost cost = networkCost(parseWorkload("--workload", canonical, "512,512"));
  EXPECT_EQ(run.at("workload_cost").at("parameters").get<double>(), static_cast<double>(cost.parameters));
  EXPECT_EQ(run.at("workload_cost").at("gradient_bytes").get<double>(), 4.0 * cost.parameters);
  EXPECT_DOUBLE_EQ(run.at("workload_cost").at("train_flops_per_sample").get<double>(), cost.trainFlops);
  // It learns: the loss falls from ln(64) = 4.16 and next-token accuracy beats chance (1/64).
  const json& epochs = run.at("epochs");
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_LT(epochs[1].at("train_loss").get<double>(), epochs[0].at("train_loss").get<double>());
  EXPECT_GT(epochs[1].at("test_accuracy").get<double>(), 2.0 / 64);
  // Every epoch's traffic is the gradients' bytes times the ring's 2(N-1)/N per step, at least.
  EXPECT_GE(epochs[1].at("steps").get<double>(), 1);
  std::remove(out.c_str());
}

TEST(WorkloadCli, SweepCrossesWorkloadsAndBucketSizesForBucketedStrategiesOnly) {
  const std::string out = test::tempPath("wl_sweep.json");
  const auto r = runCli({"sweep", "--strategies", "ddp,ring_all_reduce", "--n_gpus", "2", "--workload",
                         std::string("mlp,") + kTinyGpt + ",mlp", "--bucket_mb", "0.5,2,0.5", "--hidden", "64",
                         "--batch_size", "16", "--epochs", "1", "--train_size", "256", "--test_size", "64",
                         "--max_steps", "2", "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::map<std::string, int> seen;
  const json doc = readJson(out);
  for (const auto& run : doc.at("runs")) {
    EXPECT_EQ(run.at("status"), "ok") << run.dump();
    const json& c = run.at("config");
    std::ostringstream key;
    key << c.at("strategy").get<std::string>() << " " << c.at("workload").get<std::string>().substr(0, 3) << " "
        << c.at("bucket_mb").get<double>();
    ++seen[key.str()];
  }
  // ddp at both bucket sizes, the ring once at the first; each workload once.
  const std::map<std::string, int> expected{{"ddp mlp 0.5", 1}, {"ddp mlp 2", 1}, {"ddp gpt 0.5", 1},
                                            {"ddp gpt 2", 1},   {"ring_all_reduce mlp 0.5", 1},
                                            {"ring_all_reduce gpt 0.5", 1}};
  EXPECT_EQ(seen, expected);
  std::remove(out.c_str());
}

TEST(WorkloadCli, WhatCannotRunIsRefusedBeforeLaunch) {
  const std::string out = test::tempPath("wl_refused.json");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--workload", "cnn"}, "--workload 'cnn': unknown workload"},
      {{"--workload", "gpt:heads=3"}, "--workload 'gpt:heads=3': hidden width 128 is not a multiple of the 3 heads"},
      {{"--workload", "gpt", "--dataset", "mnist:/nonexistent"}, "--dataset mnist:/nonexistent: --workload gpt:"},
      {{"--workload", "resnet18:res=32", "--strategy", "pipeline"}, "--microbatches 4: with norm=batch"},
      {{"--workload", "gpt", "--strategy", "model_parallel", "--split", "9"}, "--split: '9': each entry is the first block"},
      {{"--workload", "gpt", "--test_size", "20000"}, "--test_size"},
      {{"--workload", "gpt2-medium", "--batch_size", "100000"}, "--workload: 2 replicas on this node of gpt2-medium"},
      {{"--bucket_mb", "0"}, "--bucket_mb"},
      // Above what a results file may hold: the record would be written and never read back.
      {{"--bucket_mb", "2e9"}, "--bucket_mb: must be a finite number in (0, 1e+09], got 2e+09"},
  };
  for (const auto& [extra, needle] : cases) {
    std::vector<std::string> args{"run", "--n_gpus", "2", "--out", out};
    if (std::find(extra.begin(), extra.end(), "--strategy") == extra.end()) args.insert(args.end(), {"--strategy", "ddp"});
    args.insert(args.end(), extra.begin(), extra.end());
    SCOPED_TRACE(needle);
    test::expectRefusedUpFront(runCli(args), needle);
  }
  test::expectRefusedUpFront(runCli({"sweep", "--strategies", "ddp", "--bucket_mb", "1,-2", "--out", out}),
                             "--bucket_mb: must be a finite number in (0, 1e+09], got -2");
  // The same rule as run's, for every value of the list, even one no point carries (ring runs once).
  test::expectRefusedUpFront(runCli({"sweep", "--strategies", "ring_all_reduce", "--bucket_mb", "25,2e9", "--out", out}),
                             "--bucket_mb: must be a finite number in (0, 1e+09], got 2e+09");
  test::expectRefusedUpFront(runCli({"sweep", "--strategies", "ddp", "--bucket_mb", "1,x", "--out", out}),
                             "--bucket_mb: 'x' is not a size in MiB");
  test::expectRefusedUpFront(runCli({"sweep", "--strategies", "ddp", "--workload", "mlp,gpt:x=1", "--out", out}),
                             "--workload 'gpt:x=1'");
}

}  // namespace
}  // namespace tpb
