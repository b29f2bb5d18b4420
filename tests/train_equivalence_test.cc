// The core correctness property: from the same seed, after K steps every strategy holds the
// parameters that `single` reaches at the equivalent global batch (N*B; (N-1)*B for the
// parameter server), on every rank. PyTorch's own DDP (torch_ddp) is held to it too; a strategy
// that cannot run here (torch not importable, torch_dp without GPUs) is skipped with its reason.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "tests/train_util.h"

namespace tpb {
namespace {

using test::maxRelDiff;
using test::trainAll;

TrainConfig smallConfig(const std::string& strategy, int n, int batch) {
  return test::smallTrainConfig(strategy, n, batch);
}

class Equivalence : public testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_P(Equivalence, MatchesSingleAtTheGlobalBatch) {
  const auto [strategy, n] = GetParam();
  if (const std::string why = findStrategy("--strategy", strategy).unsupported(Device::Cpu, n); !why.empty())
    GTEST_SKIP() << strategy << " cannot run here: " << why;
  const int batch = 16;
  const auto got = trainAll(smallConfig(strategy, n, batch));
  const auto ref = trainAll(test::referenceConfigFor(strategy, n, batch));
  const auto untrained = [&] {
    TrainConfig c = test::referenceConfigFor(strategy, n, batch);
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
    testing::Combine(testing::ValuesIn(test::synchronisingStrategies()), testing::Values(2, 3, 4)),
    name);

// A wrong reference must be told apart: N ranks at batch B do NOT match single at batch B.
TEST(EquivalenceSanity, DifferentGlobalBatchIsDetected) {
  at::set_num_threads(1);
  const auto got = trainAll(smallConfig("ring_all_reduce", 2, 16));
  const auto wrong = trainAll(test::referenceConfigFor("ring_all_reduce", 1, 16));
  EXPECT_GT(maxRelDiff(got[0], wrong[0]), 1e-4);
}

}  // namespace
}  // namespace tpb
