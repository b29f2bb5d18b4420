// `model_parallel`, from scratch: the model cut into N sequential stages (the MLP by layers, a
// network by blocks: workload/stages.h), stage s on rank s, one batch at a time. Stage s receives
// the activations of its first boundary from s-1, runs its units and sends its output to s+1;
// backward sends the gradients the other way; each stage steps its own parameters, after GPT's
// first and last stage have added the gradients of the weight their embedding and LM head share
// (workload/stage_model.h). Every step moves B x (activation size per sample) floats across each
// of the N-1 boundaries in each direction, and only one stage computes at any moment, so the
// stages idle for about (N-1)/N of the step: the baseline that `pipeline` improves on.
// The global batch is B (one data stream), so the reference is `single` at batch B.
#include "core/registry.h"
#include "workload/stages.h"

namespace tpb {

namespace {

TrainStrategy modelParallelStrategy() {
  TrainStrategy s;
  s.name = "model_parallel";
  s.origin = Origin::FromScratch;
  s.description = "the model split into N sequential stages (rank s runs stage s), activations and their "
                  "gradients over Transport P2P, one batch at a time";
  s.order = 6;
  s.color = "#8c564b";
  s.dataRanks = [](int) { return 1; };
  s.splitsModel = true;
  s.unsupportedConfig = [](const TrainConfig& c) { return stagesConfigProblem(c, /*micro=*/1); };
  s.run = [](CommContext& ctx, const TrainConfig& cfg, const EpochCallback& onEpoch) {
    return trainStages(ctx.transport, cfg, /*micro=*/1, findSchedule("--schedule", "gpipe"), onEpoch);
  };
  return s;
}

}  // namespace

TPB_REGISTER_STRATEGY(modelParallelStrategy);

}  // namespace tpb
