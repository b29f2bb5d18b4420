// Model parallelism (workload/stages.h): how the MLP and the networks are cut into stages, the two
// pipeline schedules, the per-epoch bubble and activation figures, and equivalence with `single`
// at the same batch beyond what the registry-driven equivalence tests cover (1f1b, micro-batch
// counts that do not divide the batch, more micro-batches than rows, a given --split, networks
// over three stages, BatchNorm, evaluation).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <mutex>

#include "tests/cli_util.h"
#include "tests/train_util.h"
#include "workload/stages.h"

namespace tpb {
namespace {

NetworkSpec mlp(std::vector<int> hidden) {
  NetworkSpec m;
  m.mlp.hidden = std::move(hidden);
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

NetworkSpec network(const std::string& workload) { return parseWorkload("--workload", workload, ""); }

constexpr const char* kGpt = "gpt:layers=2:hidden=16:heads=2:ffn=32:vocab=64:seq=8";
constexpr const char* kBert = "bert:layers=2:hidden=16:heads=2:ffn=32:vocab=64:seq=8:classes=3";
constexpr const char* kResnet = "resnet:depth=10:width=4:image=mnist:norm=group";

TEST(StageBounds, NetworksAreCutByBlocksBalancedByFlops) {
  // gpt: embeddings (no multiply), two layers of 36864 FLOPs a sample, the tied head 16384.
  EXPECT_EQ(stageBounds(network(kGpt), 2, ""), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(stageBounds(network(kGpt), 4, ""), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(stageBounds(network(kGpt), 2, "3"), (std::vector<int>{0, 3, 4}));
  // resnet depth 10: stem, four residual blocks, head.
  EXPECT_EQ(stageBounds(network(kResnet), 6, "").size(), 7u);
  const std::string why = stagesProblem(network(kGpt), 5, "");
  EXPECT_NE(why.find("--n_gpus: 5 stages need at least 5 blocks, gpt (embeddings, 2 layers, head) has 4"),
            std::string::npos) << why;
  EXPECT_NE(why.find("layers=3 in --workload"), std::string::npos) << why;
  const std::string bad = stagesProblem(network(kResnet), 2, "6");
  EXPECT_NE(bad.find("--split: '6': each entry is the first block of the next stage, ascending in 1..5"),
            std::string::npos) << bad;
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
void expectMatchesSingle(const TrainConfig& cfg, const std::string& transport = "") {
  const auto got = test::trainAll(cfg, transport);
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

// Every network over three stages, 1F1B with micro-batches that do not divide the batch of 8: gpt's
// tied head sits two stages from its embedding, with a stage between that holds neither.
TEST_F(StagesTraining, NetworksOverThreeStagesMatchSingle) {
  for (const char* workload : {kGpt, kBert, kResnet}) {
    TrainConfig c = test::smallTrainConfig("pipeline", 3, 8);
    c.workload = workload;
    c.trainSize = 128;
    c.schedule = "1f1b";
    c.microbatches = 3;
    expectMatchesSingle(c);
  }
}

// The tied gradients' swap is a send and a receive posted together: under NCCL's group semantics
// (the grouped transport) and over Gloo it neither deadlocks nor goes wrong.
TEST_F(StagesTraining, TiedHeadOverEveryCpuTransport) {
  for (const std::string& transport : test::cpuTransports()) {
    TrainConfig c = test::smallTrainConfig("pipeline", 2, 8);
    c.workload = kGpt;
    c.trainSize = 128;
    c.schedule = "1f1b";
    SCOPED_TRACE(transport);
    expectMatchesSingle(c, transport);
  }
}

// BatchNorm normalises by the rows it sees: with the whole batch on every stage (model_parallel,
// or one micro-batch) the stages match single, and evaluation sees every stage's running
// statistics; with micro-batches it cannot, and is refused naming the flag.
TEST_F(StagesTraining, BatchNormTrainsWithoutMicroBatchesOnly) {
  TrainConfig c = test::smallTrainConfig("model_parallel", 2, 8);
  c.workload = "resnet:depth=10:width=4:image=mnist:norm=batch";
  c.trainSize = 128;
  EXPECT_EQ(findStrategy("--strategy", "model_parallel").unsupportedConfig(c), "");
  expectMatchesSingle(c);
  TrainConfig p = c;
  p.strategy = "pipeline";
  p.microbatches = 1;
  EXPECT_EQ(findStrategy("--strategy", "pipeline").unsupportedConfig(p), "");
  p.microbatches = 2;
  const std::string why = findStrategy("--strategy", "pipeline").unsupportedConfig(p);
  EXPECT_EQ(why.rfind("--microbatches 2: with norm=batch", 0), 0u) << why;
  // What the refusal keeps out: run anyway, the micro-batches' statistics move the weights away
  // from single's.
  TrainConfig ref = p;
  ref.strategy = test::referenceStrategy().name;
  ref.nGpus = 1;
  EXPECT_GT(test::maxRelDiff(test::trainAll(p)[0], test::trainAll(ref)[0]), 1e-4);
}

// Rank 0 evaluates the whole model with the weights and BatchNorm statistics of every stage: its
// test accuracy is single's.
TEST_F(StagesTraining, EvaluationSeesEveryStage) {
  for (const std::string norm : {"batch", "group"}) {
    TrainConfig c = test::smallTrainConfig("model_parallel", 2, 16);
    c.workload = "resnet:depth=10:width=4:image=mnist:norm=" + norm;
    c.trainSize = 512;
    c.testSize = 256;
    c.maxSteps = 20;
    c.evaluate = true;
    std::vector<double> accuracy;
    for (const std::string& strategy : std::vector<std::string>{"model_parallel", test::referenceStrategy().name}) {
      c.strategy = strategy;
      c.nGpus = strategy == "model_parallel" ? 2 : 1;
      std::mutex m;
      test::runThreads("shm", c.nGpus, [&](CommContext& ctx) {
        findStrategy("--strategy", c.strategy).run(ctx, c, [&](const EpochStats& e) {
          std::lock_guard<std::mutex> lock(m);
          accuracy.push_back(e.testAccuracy);
        });
      });
    }
    ASSERT_EQ(accuracy.size(), 2u);
    EXPECT_DOUBLE_EQ(accuracy[0], accuracy[1]) << norm;
  }
}

TEST(StagesCli, NetworksRefuseWhatCannotBeCutUpFront) {
  test::expectRefusedUpFront(test::runCli({"run", "--strategy", "pipeline", "--n_gpus", "2", "--workload",
                                           "resnet:depth=10:width=4:norm=batch", "--train_size", "256"}),
                             "--microbatches 4");
  test::expectRefusedUpFront(test::runCli({"run", "--strategy", "model_parallel", "--n_gpus", "4", "--workload",
                                           "gpt:layers=1:hidden=16:heads=2:vocab=64:seq=8", "--train_size", "256"}),
                             "layers=2 in --workload");
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
