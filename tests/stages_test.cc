// Model parallelism (workload/stages.h): how the MLP is cut into stages, the two pipeline
// schedules, the per-epoch bubble and activation figures, and equivalence with `single` at the
// same batch beyond what the registry-driven equivalence test covers (1f1b, micro-batch counts
// that do not divide the batch, more micro-batches than rows, a given --split).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <mutex>

#include "tests/cli_util.h"
#include "tests/train_util.h"
#include "workload/stages.h"

namespace tpb {
namespace {

ModelConfig mlp(std::vector<int> hidden) {
  ModelConfig m;
  m.hidden = std::move(hidden);
  return m;
}

TEST(StageBounds, BalancedByParameterCount) {
  // 784-512-512-10: layers of 401920, 262656 and 5130 parameters.
  EXPECT_EQ(stageBounds(mlp({512, 512}), 1, ""), (std::vector<int>{0, 3}));
  EXPECT_EQ(stageBounds(mlp({512, 512}), 2, ""), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(stageBounds(mlp({512, 512}), 3, ""), (std::vector<int>{0, 1, 2, 3}));
  // 784-512-512-512-10: {401920} {262656, 262656, 5130} would hold 530442; {401920, 262656}
  // {262656, 5130} 664576: the first is smaller.
  EXPECT_EQ(stageBounds(mlp({512, 512, 512}), 2, ""), (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(stageBounds(mlp({512, 512, 512}), 3, ""), (std::vector<int>{0, 1, 2, 4}));
  // A wide last hidden layer moves the cut: 784-16-16-4096-10 puts the 4096-wide layers apart.
  EXPECT_EQ(stageBounds(mlp({16, 16, 4096}), 2, ""), (std::vector<int>{0, 3, 4}));
}

TEST(StageBounds, GivenSplit) {
  EXPECT_EQ(stageBounds(mlp({512, 512}), 2, "2"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(stageBounds(mlp({512, 512, 512}), 3, "1,3"), (std::vector<int>{0, 1, 3, 4}));
}

TEST(StageBounds, RefusesWhatCannotBeCut) {
  EXPECT_THROW(stageBounds(mlp({512, 512}), 4, ""), UsageError);
  const std::string why = stagesProblem(mlp({512, 512}), 4, "");
  EXPECT_NE(why.find("--n_gpus: 4 stages need at least 4 layers, the MLP has 3"), std::string::npos) << why;
  EXPECT_NE(why.find("--hidden, e.g. 512,512,512"), std::string::npos) << why;
  for (const std::string bad : {"0", "3", "x", "", "1,", "-1"}) {
    if (bad.empty()) continue;  // empty means balanced
    EXPECT_NE(stagesProblem(mlp({512, 512}), 2, bad).find("--split: '" + bad + "'"), std::string::npos) << bad;
  }
  EXPECT_NE(stagesProblem(mlp({512, 512, 512}), 3, "2,1").find("ascending"), std::string::npos);
  EXPECT_NE(stagesProblem(mlp({512, 512, 512}), 3, "2").find("makes 2 stages, --n_gpus asks for 3"),
            std::string::npos);
  EXPECT_EQ(stagesProblem(mlp({512, 512}), 3, ""), "");
}

std::string text(const std::vector<PipeOp>& ops) {
  std::string s;
  for (const auto& o : ops) s += (o.forward ? "F" : "B") + std::to_string(o.micro) + " ";
  return s;
}

TEST(PipelineSchedule, GpipeRunsEveryForwardFirst) {
  const auto& g = findSchedule("--schedule", "gpipe");
  EXPECT_EQ(text(g.order(0, 3, 3)), "F0 F1 F2 B2 B1 B0 ");
  EXPECT_EQ(text(g.order(2, 3, 1)), "F0 B0 ");
}

TEST(PipelineSchedule, OneForwardOneBackward) {
  const auto& s = findSchedule("--schedule", "1f1b");
  EXPECT_EQ(text(s.order(0, 3, 4)), "F0 F1 F2 B0 F3 B1 B2 B3 ");
  EXPECT_EQ(text(s.order(1, 3, 4)), "F0 F1 B0 F2 B1 F3 B2 B3 ");
  EXPECT_EQ(text(s.order(2, 3, 4)), "F0 B0 F1 B1 F2 B2 F3 B3 ");
  EXPECT_EQ(text(s.order(0, 4, 2)), "F0 F1 B0 B1 ");  // fewer micro-batches than warm-up slots
  EXPECT_THROW(findSchedule("--schedule", "zigzag"), UsageError);
}

TEST(PipelineSchedule, GpipeBubbleFormula) {
  EXPECT_DOUBLE_EQ(gpipeBubble(4, 4), 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(gpipeBubble(2, 1), 0.5);
  EXPECT_DOUBLE_EQ(gpipeBubble(1, 8), 0.0);
}

class StagesTraining : public testing::Test {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

// `cfg` (a pipeline or model_parallel point) against `single` at the same batch and model.
void expectMatchesSingle(const TrainConfig& cfg) {
  const auto got = test::trainAll(cfg);
  TrainConfig ref = cfg;
  ref.strategy = test::referenceStrategy().name;
  ref.nGpus = 1;
  const auto want = test::trainAll(ref);
  for (std::size_t r = 0; r < got.size(); ++r)
    EXPECT_LE(test::maxRelDiff(got[r], want[0]), 1e-5) << cfg.strategy << " " << cfg.schedule << " M="
                                                       << cfg.microbatches << " rank " << r;
}

TEST_F(StagesTraining, SchedulesAndMicroBatchCountsMatchSingle) {
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    for (int m : {3, 32}) {  // 3 does not divide the batch of 16; 32 leaves micro-batches empty
      TrainConfig c = test::smallTrainConfig("pipeline", 3, 16);
      c.schedule = schedule;
      c.microbatches = m;
      expectMatchesSingle(c);
    }
  }
}

TEST_F(StagesTraining, GivenSplitMatchesSingle) {
  TrainConfig c = test::smallTrainConfig("model_parallel", 2, 16);
  c.split = "2";
  expectMatchesSingle(c);
}

TEST_F(StagesTraining, ReportsBubbleAndActivationMemory) {
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    TrainConfig c = test::smallTrainConfig("pipeline", 2, 16);
    c.schedule = schedule;
    c.microbatches = 4;
    const TrainStrategy& s = findStrategy("--strategy", "pipeline");
    std::vector<EpochStats> epochs;
    test::runThreads("shm", 2, [&](CommContext& ctx) {
      s.run(ctx, c, [&](const EpochStats& e) { epochs.push_back(e); });
    });
    ASSERT_EQ(epochs.size(), 1u);
    const EpochStats& e = epochs[0];
    EXPECT_DOUBLE_EQ(e.bubbleFormula, 1.0 / 5.0);
    EXPECT_GT(e.bubbleFraction, 0.0);
    EXPECT_LT(e.bubbleFraction, 1.0);
    EXPECT_EQ(e.steps, 6);
    EXPECT_EQ(e.samples, 96u);
    // Stages {fc0} and {fc1, fc2} of 784-512-512-10, micro-batches of 4 rows: stage 0 holds
    // 784 + 512 floats a row per micro-batch, stage 1 512 + 512 + 10. GPipe holds all four
    // micro-batches; 1F1B at most two on stage 0 and one on the last stage.
    const double s0 = 4.0 * (784 + 512) * 4, s1 = 4.0 * (512 + 512 + 10) * 4;
    const std::vector<double> want =
        schedule == "gpipe" ? std::vector<double>{4 * s0, 4 * s1} : std::vector<double>{2 * s0, 1 * s1};
    EXPECT_EQ(e.activationBytes, want) << schedule;
  }
}

TEST(StagesCli, TooFewLayersIsRefusedUpFront) {
  test::expectRefusedUpFront(
      test::runCli({"run", "--strategy", "model_parallel", "--n_gpus", "4", "--train_size", "256"}), "--hidden");
  test::expectRefusedUpFront(
      test::runCli({"run", "--strategy", "pipeline", "--n_gpus", "2", "--split", "5", "--train_size", "256"}),
      "--split");
  test::expectRefusedUpFront(
      test::runCli({"run", "--strategy", "pipeline", "--n_gpus", "2", "--microbatches", "0"}), "--microbatches");
  test::expectRefusedUpFront(test::runCli({"run", "--strategy", "pipeline", "--n_gpus", "2", "--schedule", "x"}),
                             "--schedule");
}

}  // namespace
}  // namespace tpb
