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

struct Case {
  std::string strategy;
  int n;
  std::string transport;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.strategy << " N=" << c.n << " over " << c.transport; }

class Equivalence : public testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_P(Equivalence, MatchesSingleAtTheGlobalBatch) {
  const auto [strategy, n, transport] = GetParam();
  if (const std::string why = findStrategy("--strategy", strategy).unsupported(Device::Cpu, n); !why.empty())
    GTEST_SKIP() << strategy << " cannot run here: " << why;
  const int batch = 16;
  const auto got = trainAll(smallConfig(strategy, n, batch), transport);
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

std::string name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return c.strategy + (c.transport == "shm" ? "" : "_" + c.transport) + "_N" + std::to_string(c.n);
}

// Every strategy over shm; the from-scratch ones, whose messages go through the transport, also
// over every other CPU transport, the grouped one (NCCL's semantics) among them: a schedule
// that deadlocks or goes wrong there fails here.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (const std::string& strategy : test::synchronisingStrategies())
    for (const std::string& transport : test::cpuTransports()) {
      if (transport != "shm" && findStrategy("--strategy", strategy).origin != Origin::FromScratch) continue;
      for (int n : {2, 3, 4}) out.push_back({strategy, n, transport});
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cpu, Equivalence, testing::ValuesIn(cases()), name);

// Two whole epochs whose last batch is partial, at N = 3: 300 samples are 6 global batches of 48
// and 12 over (of 32 and 12 for the parameter server's two workers), every rank's share of the
// last batch the same size, so the average of the ranks' gradients is the global batch's. An epoch
// boundary, a sampler that does not move on with the epoch in one strategy, or a short batch
// averaged as a full one shows here; six steps of one epoch (above) cannot see them.
class TwoEpochEquivalence : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_P(TwoEpochEquivalence, MatchesSingleAtTheGlobalBatchWithAPartialLastBatch) {
  const std::string strategy = GetParam();
  const int n = 3, batch = 16;
  if (const std::string why = findStrategy("--strategy", strategy).unsupported(Device::Cpu, n); !why.empty())
    GTEST_SKIP() << strategy << " cannot run here: " << why;
  const auto twoEpochs = [](TrainConfig c) {
    c.epochs = 2;
    c.trainSize = 300;
    c.maxSteps = -1;
    return c;
  };
  const TrainConfig cfg = twoEpochs(smallConfig(strategy, n, batch));
  const TrainConfig refCfg = twoEpochs(test::referenceConfigFor(strategy, n, batch));
  ASSERT_NE(cfg.trainSize % (refCfg.batchSize), 0u) << "the last global batch must be partial";
  const auto got = trainAll(cfg);
  const auto ref = trainAll(refCfg);
  TrainConfig oneEpoch = refCfg;
  oneEpoch.epochs = 1;
  ASSERT_GT(maxRelDiff(ref[0], trainAll(oneEpoch)[0]), 1e-4) << "the second epoch did not move the reference";
  for (std::size_t r = 0; r < got.size(); ++r)
    EXPECT_LE(maxRelDiff(got[r], ref[0]), 1e-5) << strategy << " N=" << n << " rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Cpu, TwoEpochEquivalence, testing::ValuesIn(test::synchronisingStrategies()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// The CNN and the transformers at small sizes: every strategy that trains them (the others say
// why not, and are skipped with that reason) matches single at the global batch as the MLP does.
struct WorkloadCase {
  std::string strategy, workload;
};

void PrintTo(const WorkloadCase& c, std::ostream* os) { *os << c.strategy << " on " << c.workload; }

class WorkloadEquivalence : public testing::TestWithParam<WorkloadCase> {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_P(WorkloadEquivalence, MatchesSingleAtTheGlobalBatch) {
  const auto [strategy, workload] = GetParam();
  const int n = 2, batch = 8;
  TrainConfig cfg = smallConfig(strategy, n, batch);
  cfg.workload = workload;
  cfg.trainSize = 256;
  const TrainStrategy& s = findStrategy("--strategy", strategy);
  if (const std::string why = s.unsupported(Device::Cpu, n); !why.empty())
    GTEST_SKIP() << strategy << " cannot run here: " << why;
  if (const std::string why = s.unsupportedConfig(cfg); !why.empty()) {
    EXPECT_NE(why.find("--workload " + workload), std::string::npos) << why;
    GTEST_SKIP() << why;
  }
  TrainConfig refCfg = test::referenceConfigFor(strategy, n, batch);
  refCfg.workload = workload;
  refCfg.trainSize = cfg.trainSize;
  const auto got = trainAll(cfg);
  const auto ref = trainAll(refCfg);
  refCfg.maxSteps = 0;
  const auto untrained = trainAll(refCfg)[0];
  ASSERT_EQ(ref[0].size(), networkCost(cfg.network()).parameters);
  ASSERT_GT(maxRelDiff(ref[0], untrained), 1e-3) << "the reference did not move: the test would prove nothing";
  for (std::size_t r = 0; r < got.size(); ++r)
    EXPECT_LE(maxRelDiff(got[r], ref[0]), 1e-5) << strategy << " on " << workload << " rank " << r;
}

std::vector<WorkloadCase> workloadCases() {
  std::vector<WorkloadCase> out;
  for (const std::string& strategy : test::synchronisingStrategies())
    for (const char* w : {"resnet:depth=10:width=4:image=mnist:norm=group",
                          "gpt:layers=1:hidden=16:heads=2:ffn=32:vocab=64:seq=8",
                          "bert:layers=1:hidden=16:heads=2:ffn=32:vocab=64:seq=8:classes=3"})
      out.push_back({strategy, w});
  return out;
}

std::string workloadName(const testing::TestParamInfo<WorkloadCase>& info) {
  const std::string& w = info.param.workload;
  return info.param.strategy + "_" + w.substr(0, w.find(':'));
}

INSTANTIATE_TEST_SUITE_P(Cpu, WorkloadEquivalence, testing::ValuesIn(workloadCases()), workloadName);

// A wrong reference must be told apart: N ranks at batch B do NOT match single at batch B.
TEST(EquivalenceSanity, DifferentGlobalBatchIsDetected) {
  at::set_num_threads(1);
  const auto got = trainAll(smallConfig("ring_all_reduce", 2, 16));
  const auto wrong = trainAll(test::referenceConfigFor("ring_all_reduce", 1, 16));
  EXPECT_GT(maxRelDiff(got[0], wrong[0]), 1e-4);
}

}  // namespace
}  // namespace tpb
