// The step model (cost_model/step_model.h): timelines worked by hand, DDP's buckets as ddp cuts
// them, what overlap hides, the bucket size a link's latency favours, and profiles it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "cost_model/alpha_beta.h"
#include "cost_model/step_model.h"

namespace tpb::model {
namespace {

constexpr double MiB = 1024.0 * 1024.0;

// Forward 1 s, backward 3 s, optimizer 0.5 s; three parameters of 4, 2 and 1 MiB whose gradients
// are ready 3, 2 and 1 s into backward (the last layer's first).
StepProfile threeLayers() {
  StepProfile p;
  p.forwardS = 1;
  p.backwardS = 3;
  p.optimizerS = 0.5;
  p.params = {{"fc0", 4 * MiB, 3.0}, {"fc1", 2 * MiB, 2.0}, {"fc2", 1 * MiB, 1.0}};
  return p;
}

// 0.1 s per allreduce plus 0.5 s per MiB, whatever N.
double linear(double bytes, int) { return 0.1 + 0.5 * bytes / MiB; }

TEST(StepModel, BucketsOverlapTheRestOfBackwardAsWorkedByHand) {
  // Cap 2 MiB: buckets {fc2} (the first closes at 1 MiB), {fc1}, {fc0}.
  const StepPrediction s = predictStep(threeLayers(), StepPlan{2, Sync::Bucketed, 2 * MiB}, linear);
  ASSERT_EQ(s.allreduces.size(), 3u);
  const double ready[] = {1.0, 2.0, 3.0}, start[] = {1.0, 2.0, 3.1}, end[] = {1.6, 3.1, 5.2};
  const std::size_t first[] = {2, 1, 0};
  for (std::size_t b = 0; b < 3; ++b) {
    SCOPED_TRACE(b);
    EXPECT_EQ(s.allreduces[b].firstParam, first[b]);
    EXPECT_EQ(s.allreduces[b].params, 1u);
    EXPECT_DOUBLE_EQ(s.allreduces[b].readyS, ready[b]);
    EXPECT_NEAR(s.allreduces[b].startS, start[b], 1e-12);  // fc0's waits for fc1's to finish
    EXPECT_NEAR(s.allreduces[b].endS, end[b], 1e-12);
  }
  EXPECT_NEAR(s.computeS, 4.5, 1e-12);
  EXPECT_NEAR(s.commS, 0.6 + 1.1 + 2.1, 1e-12);
  EXPECT_NEAR(s.stepS, 1 + 5.2 + 0.5, 1e-12);
  EXPECT_NEAR(s.exposedCommS, 2.2, 1e-12);
  EXPECT_NEAR(s.scalingEfficiency, 4.5 / 6.7, 1e-12);
}

TEST(StepModel, OneAllreduceAfterBackwardHidesNothing) {
  const StepPrediction s = predictStep(threeLayers(), StepPlan{2, Sync::AfterBackward}, linear);
  ASSERT_EQ(s.allreduces.size(), 1u);
  EXPECT_DOUBLE_EQ(s.allreduces[0].bytes, 7 * MiB);
  EXPECT_DOUBLE_EQ(s.allreduces[0].startS, 3.0);
  EXPECT_NEAR(s.stepS, 1 + 3 + 3.6 + 0.5, 1e-12);
  EXPECT_NEAR(s.exposedCommS, s.commS, 1e-12);
  // The same bytes in buckets hide part of it.
  EXPECT_LT(predictStep(threeLayers(), StepPlan{2, Sync::Bucketed, 2 * MiB}, linear).exposedCommS, s.exposedCommS);
}

TEST(StepModel, OneRankCommunicatesNothing) {
  for (const Sync sync : {Sync::Bucketed, Sync::AfterBackward}) {
    const StepPrediction s = predictStep(threeLayers(), StepPlan{1, sync, 2 * MiB}, linear);
    EXPECT_TRUE(s.allreduces.empty());
    EXPECT_DOUBLE_EQ(s.stepS, 4.5);
    EXPECT_DOUBLE_EQ(s.exposedCommS, 0.0);
    EXPECT_DOUBLE_EQ(s.scalingEfficiency, 1.0);
  }
}

// The buckets are ddp's own: a cap that holds everything makes the 1 MiB first bucket and one
// more; a bucket's gradient is ready when its last parameter's is.
TEST(StepModel, BucketsAreCutAsDdpCutsThem) {
  StepProfile p = threeLayers();
  const StepPrediction s = predictStep(p, StepPlan{2, Sync::Bucketed, 64 * MiB}, linear);
  ASSERT_EQ(s.allreduces.size(), 2u);
  EXPECT_DOUBLE_EQ(s.allreduces[0].bytes, 1 * MiB);
  EXPECT_DOUBLE_EQ(s.allreduces[1].bytes, 6 * MiB);
  EXPECT_EQ(s.allreduces[1].params, 2u);
  EXPECT_DOUBLE_EQ(s.allreduces[1].readyS, 3.0);
  const std::vector<std::size_t> firsts = ddpBucketFirsts({4 * MiB, 2 * MiB, 1 * MiB}, 64 * MiB);
  ASSERT_EQ(firsts.size(), s.allreduces.size());
  for (std::size_t b = 0; b < firsts.size(); ++b) EXPECT_EQ(s.allreduces[b].firstParam, firsts[b]);
}

// Many small layers: where each allreduce costs much latency, few large buckets win; where it
// costs almost none, small buckets hide more of the communication behind backward.
TEST(StepModel, TheBestBucketFollowsTheLinksLatency) {
  StepProfile p;
  p.forwardS = 0.05;
  p.backwardS = 0.1;
  for (int i = 0; i < 100; ++i) p.params.push_back({"layer" + std::to_string(i), 0.25 * MiB, 0.1 - 0.001 * i});
  const std::vector<double> caps = {0.5 * MiB, 2 * MiB, 8 * MiB, 32 * MiB};
  const auto slowStart = [](double bytes, int) { return 0.05 + bytes / MiB * 1e-3; };
  const auto fastStart = [](double bytes, int) { return 1e-6 + bytes / MiB * 1e-3; };
  EXPECT_EQ(bestBucket(p, 4, caps, slowStart).capBytes, 32 * MiB);
  EXPECT_EQ(bestBucket(p, 4, caps, fastStart).capBytes, 0.5 * MiB);
  const BucketChoice c = bestBucket(p, 4, caps, fastStart);
  for (const double cap : caps)
    EXPECT_LE(c.prediction.stepS, predictStep(p, StepPlan{4, Sync::Bucketed, cap}, fastStart).stepS) << cap;
}

// A tie goes to the smallest cap, whatever the order given: with communication free, every cap
// predicts the same step (the compute alone: forward 0.05 s + backward 0.1 s), and 0.5 MiB, the
// smallest of the four, is the one named.
TEST(StepModel, ATieBetweenBucketsGoesToTheSmallest) {
  StepProfile p;
  p.forwardS = 0.05;
  p.backwardS = 0.1;
  for (int i = 0; i < 100; ++i) p.params.push_back({"layer" + std::to_string(i), 0.25 * MiB, 0.1 - 0.001 * i});
  const auto free = [](double, int) { return 0.0; };
  const BucketChoice c = bestBucket(p, 4, {8 * MiB, 0.5 * MiB, 32 * MiB, 2 * MiB}, free);
  EXPECT_EQ(c.capBytes, 0.5 * MiB);
  EXPECT_DOUBLE_EQ(c.prediction.stepS, 0.15);
}

TEST(StepModel, AlphaBetaTimeIsTheFormulasLine) {
  const CostFormula ring = ringAllreduceCost();
  const AllreduceTime t = alphaBetaTime(ring, 10.0, 0.001);  // 10 µs per step, 1 GB/s
  // N = 4: 6 steps and 1.5·S bytes.
  EXPECT_NEAR(t(1e6, 4), (6 * 10.0 + 1.5 * 1e6 * 0.001) * 1e-6, 1e-15);
  EXPECT_NEAR(t(0, 2), 2 * 10.0 * 1e-6, 1e-15);
}

// From FLOPs: forward at mfu of the peak, backward twice it in reverse order, each block's gradients
// ready when its backward ends, the optimizer at the memory's rate.
TEST(StepModel, AProfileFromFlopsAsWorkedByHand) {
  const DevicePreset d{"test", "a test device", 100, 1000, "made up"};  // 100 TFLOPS, 1000 GB/s
  const StepProfile p = profileFromFlops({{"b0", 1e9, 4 * MiB}, {"b1", 2e9, 2 * MiB}}, 10, d, 0.5);
  // 5e13 FLOP/s: b0's forward 1e10 / 5e13 = 0.2 ms, b1's 0.4 ms.
  EXPECT_NEAR(p.forwardS, 0.6e-3, 1e-15);
  EXPECT_NEAR(p.backwardS, 1.2e-3, 1e-15);
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_NEAR(p.params[1].gradReadyS, 0.8e-3, 1e-15);  // the last block's backward comes first
  EXPECT_NEAR(p.params[0].gradReadyS, 1.2e-3, 1e-15);
  EXPECT_DOUBLE_EQ(p.params[0].bytes, 4 * MiB);
  EXPECT_NEAR(p.optimizerS, 5 * 6 * MiB / 1e12, 1e-15);
  EXPECT_THROW(profileFromFlops({{"b0", 1e9, 4 * MiB}}, 10, d, 0), UsageError);
  EXPECT_THROW(profileFromFlops({{"b0", 1e9, 4 * MiB}}, 10, d, 1.5), UsageError);
  EXPECT_THROW(profileFromFlops({{"b0", 1e9, 4 * MiB}}, 0, d, 0.5), UsageError);
  EXPECT_THROW(profileFromFlops({}, 10, d, 0.5), UsageError);
  // The presets: each with a source, and a peak and memory rate above zero; unknown names refused.
  for (const DevicePreset& g : devicePresets()) {
    EXPECT_GT(g.peakTflops, 0) << g.name;
    EXPECT_GT(g.memoryGBps, 0) << g.name;
    EXPECT_FALSE(g.source.empty()) << g.name;
    EXPECT_EQ(&findDevice(g.name), &g);
  }
  try {
    findDevice("tpu");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--gpu: unknown device 'tpu' (choose from v100, "), std::string::npos) << e.what();
  }
}

TEST(StepModel, ProfilesItCannotModelAreRefusedNamingTheField) {
  const auto refused = [](StepProfile p, const std::string& field) {
    try {
      predictStep(p, StepPlan{2}, linear);
      ADD_FAILURE() << "accepted; expected " << field;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  StepProfile p = threeLayers();
  p.forwardS = -1;
  refused(p, "forward_s");
  p = threeLayers();
  p.optimizerS = std::numeric_limits<double>::quiet_NaN();
  refused(p, "optimizer_s");
  p = threeLayers();
  p.params[1].gradReadyS = 3.5;  // after backward's end
  refused(p, "params[1].grad_ready_s");
  p = threeLayers();
  p.params[2].bytes = std::numeric_limits<double>::infinity();
  refused(p, "params[2].bytes");
  p = threeLayers();
  p.params.clear();
  refused(p, "params: no parameters");
  EXPECT_THROW(predictStep(threeLayers(), StepPlan{0}, linear), UsageError);
  EXPECT_THROW(predictStep(threeLayers(), StepPlan{2, Sync::Bucketed, 0}, linear), UsageError);
  EXPECT_THROW(predictStep(threeLayers(), StepPlan{2}, [](double, int) { return -1.0; }), UsageError);
  EXPECT_THROW(bestBucket(threeLayers(), 2, {}, linear), UsageError);
}

}  // namespace
}  // namespace tpb::model

namespace tpb::model {
namespace {

// A pipeline of two equal stages, four micro-batches of forward 1 s and backward 3 s (threeLayers'
// step, through the whole model), optimizer 0.5 s: each stage does half of each. The first
// micro-batch crosses both stages (4 s), the other three follow a stage's 2 s apart (6 s), then a
// stage's optimizer (0.25 s): 10.25 s, GPipe's (M + S - 1) = 5 slots of 2 s. Each stage is busy 4 x 2
// + 0.25 s: its idle share is 2 / 10.25, near GPipe's (S-1)/(M+S-1) = 0.2.
TEST(StepModel, APipelineIsItsSlowestStageTimesItsSlots) {
  const StepProfile micro = threeLayers();
  const PipelinePrediction even = predictPipeline(micro, {0.5, 0.5}, 4);
  EXPECT_NEAR(even.stepS, 10.25, 1e-12);
  EXPECT_NEAR(even.busyS, 8.25, 1e-12);
  EXPECT_NEAR(even.bubble, 2.0 / 10.25, 1e-12);
  // One micro-batch (model_parallel): the stages take turns; each is idle half the step.
  const PipelinePrediction one = predictPipeline(micro, {0.5, 0.5}, 1);
  EXPECT_NEAR(one.stepS, 4.25, 1e-12);
  EXPECT_NEAR(one.bubble, 1 - 2.25 / 4.25, 1e-12);
  // Unequal stages: the slower one (75 %) sets the pace: 4 + 3 x 3 + 0.375 s.
  const PipelinePrediction skew = predictPipeline(micro, {0.75, 0.25}, 4);
  EXPECT_NEAR(skew.stepS, 13.375, 1e-12);
  EXPECT_GT(skew.bubble, even.bubble);
  // One stage is the whole step, with no bubble.
  EXPECT_NEAR(predictPipeline(micro, {1.0}, 4).stepS, 4 * 4 + 0.5, 1e-12);
  EXPECT_NEAR(predictPipeline(micro, {1.0}, 4).bubble, 0, 1e-12);
  EXPECT_THROW(predictPipeline(micro, {0.5, 0.4}, 4), UsageError);
  EXPECT_THROW(predictPipeline(micro, {}, 4), UsageError);
  EXPECT_THROW(predictPipeline(micro, {0.5, 0.5}, 0), UsageError);
  EXPECT_THROW(predictPipeline(micro, {1.5, -0.5}, 2), UsageError);
}

}  // namespace
}  // namespace tpb::model
