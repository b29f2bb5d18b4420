// The pipeline's bubble, measured on the schedule code that trains (runStageOps, with the
// schedules of workload/stages.h), over shm and over the grouped transport (NCCL's semantics).
// The stages' work is a sleep (forward one unit, backward two, the same on every stage), so the
// ranks do not compete for this machine's two cores and the idle time is the schedule's own:
// with balanced stages both GPipe and 1F1B should idle (S-1)/(M+S-1) of the step.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "tests/thread_world.h"
#include "workload/stages.h"

namespace tpb {
namespace {

using clock_type = std::chrono::steady_clock;

// Runs `steps` steps of `ops` (per stage) on S ranks of `transport` and returns the bubble: the
// stages' idle share of the wall time between two barriers, averaged over the stages.
// `flush`: start sends where the schedule says, never before the next wait, or always at once.
enum class Flush { AsScheduled, Never, Always };

double measuredBubble(const std::string& transport, int stages, int micro, const std::string& schedule,
                      Flush flush = Flush::AsScheduled, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  // Long enough that a message's latency (tens of microseconds, a few milliseconds when the
  // machine is busy) stays a small part of the step.
  const auto unit = std::chrono::milliseconds(25);
  const int steps = 3;
  std::mutex mu;
  double idleShare = 0;
  test::runThreads(transport, stages, [&](CommContext& ctx) {
    const int s = ctx.rank();
    std::vector<PipeOp> ops = findSchedule("--schedule", schedule).order(s, stages, micro);
    for (PipeOp& op : ops)
      if (flush != Flush::AsScheduled) op.flushSend = flush == Flush::Always;
    std::vector<float> in(256), out(256);
    StageWork work;
    work.stage = s;
    work.stages = stages;
    work.receiveInto = [&](const PipeOp&) { return StageBuffer{in.data(), in.size() * sizeof(float)}; };
    work.compute = [&](const PipeOp& op) {
      std::this_thread::sleep_for(op.forward ? unit : 2 * unit);
      return StageBuffer{out.data(), out.size() * sizeof(float)};
    };
    ctx.transport.barrier();
    const auto t0 = clock_type::now();
    double compute = 0;
    for (int i = 0; i < steps; ++i) compute += runStageOps(ctx.transport, ops, work).computeS;
    ctx.transport.barrier();
    const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
    std::lock_guard<std::mutex> lock(mu);
    idleShare += (wall - compute) / wall / stages;
  }, timeout);
  return idleShare;
}

class PipelineBubble : public testing::TestWithParam<std::string> {};

TEST_P(PipelineBubble, BalancedStagesIdleAsTheFormulaSays) {
  const int micro = 4;
  for (const std::string schedule : {"gpipe", "1f1b"})
    for (int stages : {2, 3, 4}) {
      const double got = measuredBubble(GetParam(), stages, micro, schedule);
      const double formula = gpipeBubble(stages, micro);
      std::printf("bubble over %s, %s, S=%d, M=%d: measured %.3f, formula %.3f\n", GetParam().c_str(),
                  schedule.c_str(), stages, micro, got, formula);
      EXPECT_NEAR(got, formula, 0.05) << schedule << " S=" << stages << " M=" << micro;
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, PipelineBubble, testing::Values("shm", "grouped"));

// The measurement sees a schedule that NCCL would serialise: with no send started before the
// next wait, stage 0's forwards reach stage 1 only once all are done, and at S=2, M=4 the stages
// idle about half the step (0.50 in the model of those semantics) instead of 0.20.
TEST(PipelineBubbleSanity, SendsLeftForTheNextWaitSerialiseGpipeOverGrouped) {
  const double got = measuredBubble("grouped", 2, 4, "gpipe", Flush::Never);
  std::printf("bubble over grouped, gpipe without flushes, S=2, M=4: measured %.3f, formula %.3f\n", got,
              gpipeBubble(2, 4));
  EXPECT_GT(got, gpipeBubble(2, 4) + 0.2);
}

}  // namespace
}  // namespace tpb

namespace tpb {
namespace {

// And the other way: 1F1B's steady-state sends must share a group with the receive after them.
// Flushed alone, each stage's receive waits on its stream behind a send that waits for the
// neighbour's receive, which waits behind the neighbour's own send: NCCL would hang, and the
// grouped transport times out.
TEST(PipelineBubbleSanity, FlushingEverySendDeadlocks1f1bOverGrouped) {
  EXPECT_NO_THROW(measuredBubble("shm", 2, 4, "1f1b", Flush::Always, std::chrono::milliseconds(1500)));
  EXPECT_THROW(measuredBubble("grouped", 2, 4, "1f1b", Flush::Always, std::chrono::milliseconds(1500)), TimeoutError);
}

}  // namespace
}  // namespace tpb
