// One meaning per figure: every strategy at N = 1, 2, 3 on one configuration, its epochs' steps
// and samples against counts worked by hand from each strategy's semantics, and the console's
// time per step against the record's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "tests/cli_util.h"

namespace tpb {
namespace {

using nlohmann::json;

// 64 training samples at batch 4 per device (the sampler pads each epoch's order to a multiple of
// the data ranks by repeating its start, as PyTorch's DistributedSampler with drop_last=False):
struct Expected {
  long long steps, samples;
};
Expected expectedOf(const std::string& strategy, int n) {
  if (strategy == "single" || strategy == "model_parallel" || strategy == "pipeline")
    return {16, 64};  // one batch of 4 per step, whatever the stages: 64 / 4
  if (strategy == "data_parallel") {
    // one process, a global batch of 4n split over its replicas: 64 / 4 = 16, 64 / 8 = 8,
    // 64 / 12 = 5.33 -> 6 (the last batch has 4 samples)
    const long long steps[] = {0, 16, 8, 6};
    return {steps[n], 64};
  }
  if (strategy == "param_server") {
    // rank 0 serves, n - 1 workers step together: 1 worker 64 / 4 = 16; 2 workers 32 each, 8
    // (at n = 1 the one rank trains alone: 16)
    const long long steps[] = {0, 16, 16, 8};
    return {steps[n], 64};
  }
  // ddp, ring_all_reduce, torch_ddp: n ranks step together, each on ceil(64 / n) samples:
  // 64 -> 16 steps, 32 -> 8, 22 -> 6 (5 of 4 and one of 2); samples 64, 64, 3 x 22 = 66.
  const long long steps[] = {0, 16, 8, 6}, samples[] = {0, 64, 64, 66};
  return {steps[n], samples[n]};
}

TEST(StepMeaningCli, EveryStrategyCountsEachOptimizerStepOnceAndTheConsoleAgrees) {
  const std::string out = test::tempPath("step_meaning.json");
  std::remove(out.c_str());
  const test::CliResult r = test::runCli(
      {"sweep", "--strategies", "single,data_parallel,param_server,ddp,ring_all_reduce,model_parallel,pipeline,torch_ddp",
       "--n_gpus", "1,2,3", "--batch_size", "4", "--train_size", "64", "--test_size", "100", "--epochs", "1",
       "--out", out});
  ASSERT_EQ(r.exitCode, 0) << r.err << r.out;
  // "ddp N=2 epoch 1/1: 0.05 s, 8 steps (6.25 ms/step), ..." per point, in the order run.
  std::map<std::pair<std::string, int>, std::pair<long long, double>> console;
  const std::regex line(R"((\w+) N=(\d+) epoch 1/1: ([0-9.]+) s, (\d+) steps \(([0-9.]+) ms/step\))");
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), line), end; it != end; ++it)
    console[{(*it)[1], std::stoi((*it)[2])}] = {std::stoll((*it)[4]), std::stod((*it)[5])};
  const json doc = test::readJson(out);
  ASSERT_EQ(doc.at("schema"), "tpbench.results/2");
  int checked = 0;
  for (const json& run : doc.at("runs")) {
    const std::string strategy = run.at("config").at("strategy");
    const int n = run.at("config").at("n_gpus");
    SCOPED_TRACE(strategy + " N=" + std::to_string(n));
    // single runs one device; the rest run all three.
    const bool runs = !(strategy == "single" && n > 1);
    ASSERT_EQ(run.at("status"), runs ? "ok" : "skipped") << run.dump();
    if (!runs) continue;
    const Expected want = expectedOf(strategy, n);
    ASSERT_EQ(run.at("epochs").size(), 1u);
    const json& e = run.at("epochs").at(0);
    EXPECT_EQ(e.at("steps").get<long long>(), want.steps);
    EXPECT_EQ(e.at("samples").get<long long>(), want.samples);
    const auto c = console.find({strategy, n});
    ASSERT_NE(c, console.end()) << r.out;
    EXPECT_EQ(c->second.first, want.steps);
    const double recordMs = 1e3 * e.at("wall_s").get<double>() / want.steps;
    EXPECT_NEAR(c->second.second, recordMs, 0.006) << "console and record disagree per step";
    ++checked;
  }
  EXPECT_EQ(checked, 3 * 8 - 2);  // 24 points less single at N = 2 and 3
  std::remove(out.c_str());
}

}  // namespace
}  // namespace tpb
