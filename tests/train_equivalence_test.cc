// The core correctness property: from the same seed, after K steps every strategy holds the
// parameters that `single` reaches at the equivalent global batch (N*B; (N-1)*B for the
// parameter server), on every rank.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "harness/registry.h"
#include "tests/thread_world.h"

namespace tpb {
namespace {

TrainConfig smallConfig(const std::string& strategy, int n, int batch) {
  TrainConfig c;
  c.strategy = strategy;
  c.nGpus = n;
  c.batchSize = batch;
  c.epochs = 1;
  c.trainSize = 4096;
  c.maxSteps = 6;
  c.evaluate = false;
  c.lr = 0.05;
  c.momentum = 0.5;  // exercises the velocity buffer too
  c.seed = 7;
  return c;
}

// Runs `strategy` on its own world and returns every rank's final parameters.
std::vector<std::vector<float>> trainAll(const TrainConfig& cfg) {
  const TrainStrategy& s = findStrategy("--strategy", cfg.strategy);
  const int procs = s.processes(cfg.nGpus);
  std::vector<std::vector<float>> params(procs);
  test::runThreads("shm", procs, [&](CommContext& ctx) {
    params[ctx.rank()] = s.run(ctx, cfg, nullptr).params;
  });
  return params;
}

// max |a-b| / (|b| + 1e-3) over all elements: relative, with a floor for weights near zero.
double maxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (std::abs(double(b[i])) + 1e-3));
  return worst;
}

class Equivalence : public testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_P(Equivalence, MatchesSingleAtTheGlobalBatch) {
  const auto [strategy, n] = GetParam();
  const int batch = 16;
  TrainConfig cfg = smallConfig(strategy, n, batch);
  if (strategy == "ddp") cfg.bucketMb = 0.25;  // several buckets: 4 for the default MLP
  const auto got = trainAll(cfg);
  const int dataRanks = strategy == "param_server" ? n - 1 : n;
  const auto ref = trainAll(smallConfig("single", 1, batch * dataRanks));
  const auto untrained = [&] {
    TrainConfig c = smallConfig("single", 1, batch);
    c.maxSteps = 0;
    return trainAll(c)[0];
  }();
  ASSERT_GT(maxRelDiff(ref[0], untrained), 1e-3) << "the reference did not move: the test would prove nothing";
  for (std::size_t r = 0; r < got.size(); ++r) {
    EXPECT_LE(maxRelDiff(got[r], ref[0]), 1e-5) << strategy << " N=" << n << " rank " << r;
  }
}

std::string name(const testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  return std::get<0>(info.param) + "_N" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, Equivalence,
    testing::Combine(testing::Values("ring_all_reduce", "allreduce", "ddp", "data_parallel", "param_server"),
                     testing::Values(2, 3, 4)),
    name);

// A wrong reference must be told apart: N ranks at batch B do NOT match single at batch B.
TEST(EquivalenceSanity, DifferentGlobalBatchIsDetected) {
  at::set_num_threads(1);
  const auto got = trainAll(smallConfig("ring_all_reduce", 2, 16));
  const auto wrong = trainAll(smallConfig("single", 1, 16));
  EXPECT_GT(maxRelDiff(got[0], wrong[0]), 1e-4);
}

}  // namespace
}  // namespace tpb
