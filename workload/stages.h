// workload/stages.h — model parallelism: the model --workload names cut into S sequential stages
// of units (the MLP's Linear layers; a network's blocks: resnet's stem, residual blocks and head,
// a transformer's embeddings, layers and head), stage s on rank s, with activations sent forward
// and their gradients backward over the Transport, and the pipeline schedules that interleave
// micro-batches through the stages. workload/stage_model.h holds one rank's stage, and how a
// weight tied across stages (GPT's LM head and token embedding) stays one weight.
//
// One step at batch B with M micro-batches (model parallel is M = 1):
//   forward of micro m on stage s:  receive its input from s-1 (stage 0 gathers the inputs:
//                                   images or tokens), run the stage's units, send the output to
//                                   s+1 (the last stage takes the loss against the labels, scaled
//                                   by rows_m / B so the micro losses add up to the batch mean);
//   backward of micro m on stage s: receive d(loss)/d(output) from s+1 (the last stage starts
//                                   from its loss), backward through the stage into its flat
//                                   gradient buffer, send d(loss)/d(input) to s-1;
//   after every micro-batch's backward: the stages sharing a tied weight add its gradients, then
//                                   one SGD step on each stage's own parameters.
// The gradients accumulated over the micro-batches are the batch's mean gradient, so after K
// steps the stages hold what `single` holds at batch B (the equivalence tests check it). That
// needs every sample's output to depend on its own rows only: BatchNorm (resnet's norm=batch)
// normalises by the micro-batch's statistics, so it is refused with M > 1.
//
// Cost per step: each boundary carries B x (the activation's size per sample) floats forward and
// as many back. Only one stage computes at a time without micro-batches; GPipe's schedule leaves
// each stage idle for a fraction (S-1)/(M+S-1) of the step when forward and backward cost the
// same on every stage (the "bubble", recorded beside the measured one).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "workload/pipeline_step.h"
#include "workload/train.h"

namespace tpb {

// Where the stages start: S+1 ascending unit indices, stage s holding units [b[s], b[s+1]).
// `split` empty: contiguous stages balanced by cost (the costliest stage as cheap as it can be):
// the MLP's layers by parameter count, a network's blocks by forward FLOPs (networkBlockCosts);
// else S-1 comma-separated unit indices where stages 1..S-1 start. Throws UsageError naming
// `flag` when S exceeds the units (suggesting a deeper --hidden or --workload) or `split` is
// malformed.
std::vector<int> stageBounds(const NetworkSpec& spec, int stages, const std::string& split,
                             const std::string& flag = "--split");
// The same check without throwing: "" when the stages can be made, else the one-line reason.
std::string stagesProblem(const NetworkSpec& spec, int stages, const std::string& split,
                          const std::string& flag = "--split");
// What model_parallel (micro 1) and pipeline (micro = --microbatches) refuse of `cfg`: the
// stages above, and BatchNorm with micro-batches. "" when it trains.
std::string stagesConfigProblem(const TrainConfig& cfg, int micro);

// A pipeline schedule: for stage `stage` of `stages`, the order of its 2M ops and which of their
// sends start at once (workload/pipeline_step.h says why that is the schedule's to decide).
struct PipelineSchedule {
  std::string name;
  std::string description;
  std::function<std::vector<PipeOp>(int stage, int stages, int micro)> order;
};

// "gpipe" (every forward, then every backward; every send starts at once) and "1f1b" (after
// S-s-1 warm-up forwards, one forward then one backward, which holds at most S-s micro-batches'
// activations instead of M; the sends of that steady state share a group with the receive that
// follows them, the warm-up's and cool-down's start at once).
const std::vector<PipelineSchedule>& pipelineSchedules();
// Throws UsageError naming `flag` and the valid names.
const PipelineSchedule& findSchedule(const std::string& flag, const std::string& name);

// GPipe's bubble: (S-1)/(M+S-1).
double gpipeBubble(int stages, int micro);

// Trains cfg on the stages of ctx's world (rank s = stage s) with `micro` micro-batches per step
// in `schedule`'s order. Rank 0 aggregates and evaluates (it gathers the weights once per
// epoch) and calls onEpoch; every rank returns the whole model's final parameters.
TrainResult trainStages(Transport& t, const TrainConfig& cfg, int micro, const PipelineSchedule& schedule,
                        const EpochCallback& onEpoch);

}  // namespace tpb
