// `pipeline`, from scratch: model_parallel's N stages (workload/stages.h) with each batch split
// into --microbatches M, so that stage s works on micro-batch m while s+1 works on m-1. The
// schedule (--schedule) orders each stage's forwards and backwards: "gpipe" runs all M forwards,
// then all M backwards, accumulating the gradients, then one optimizer step, and idles for
// (N-1)/(M+N-1) of the step when every stage costs the same; "1f1b" alternates once warmed up
// and holds at most N-s micro-batches' activations on stage s instead of M. Traffic per step is
// model_parallel's (the same B x (activation size per sample) floats per boundary and direction, in M
// messages). With norm=batch a ResNet is refused at M > 1 (see workload/stages.h).
// The global batch is B, so the reference is `single` at batch B.
#include "core/registry.h"
#include "workload/stages.h"

namespace tpb {

namespace {

TrainStrategy pipelineStrategy() {
  TrainStrategy s;
  s.name = "pipeline";
  s.origin = Origin::FromScratch;
  s.description = "model_parallel's stages with each batch split into --microbatches M, scheduled by "
                  "--schedule (gpipe: all forwards, all backwards, one step; or 1f1b)";
  s.order = 7;
  s.color = "#e377c2";
  s.dataRanks = [](int) { return 1; };
  s.splitsModel = true;
  s.microbatched = true;
  s.unsupportedConfig = [](const TrainConfig& c) { return stagesConfigProblem(c, c.microbatches); };
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainStages(ctx.transport, cfg, cfg.microbatches, findSchedule("--schedule", cfg.schedule), onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(pipelineStrategy);

}  // namespace tpb
