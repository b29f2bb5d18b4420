// workload/stages.h — model parallelism: the MLP cut into S sequential stages, stage s on rank s,
// with activations sent forward and their gradients backward over the Transport, and the
// pipeline schedules that interleave micro-batches through the stages.
//
// One step at batch B with M micro-batches (model parallel is M = 1):
//   forward of micro m on stage s:  receive its input from s-1 (stage 0 gathers images), run the
//                                   stage's layers, send the output to s+1 (the last stage takes
//                                   the loss, scaled by rows_m / B so the micro losses add up
//                                   to the batch mean);
//   backward of micro m on stage s: receive d(loss)/d(output) from s+1 (the last stage starts
//                                   from its loss), backward through the stage into its flat
//                                   gradient buffer, send d(loss)/d(input) to s-1;
//   after every micro-batch's backward: one SGD step on the stage's own parameters.
// The gradients accumulated over the micro-batches are the batch's mean gradient, so after K
// steps the stages hold what `single` holds at batch B (the equivalence tests check it).
//
// Cost per step: each boundary carries B x width floats forward and as many back. Only one
// stage computes at a time without micro-batches; GPipe's schedule leaves each stage idle for
// a fraction (S-1)/(M+S-1) of the step when forward and backward cost the same on every stage
// (the "bubble", recorded beside the measured one).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "workload/pipeline_step.h"
#include "workload/train.h"

namespace tpb {

// Linear layers of the MLP `m` (hidden layers + the output layer).
int layerCount(const ModelConfig& m);

// Where the stages start: S+1 ascending layer indices, stage s holding layers [b[s], b[s+1]).
// `split` empty: contiguous stages balanced by parameter count (the largest stage as small as
// it can be); else S-1 comma-separated layer indices where stages 1..S-1 start. Throws
// UsageError naming `flag` when S exceeds the layers (suggesting a deeper --hidden) or `split`
// is malformed.
std::vector<int> stageBounds(const ModelConfig& m, int stages, const std::string& split,
                             const std::string& flag = "--split");
// The same check without throwing: "" when the stages can be made, else the one-line reason.
std::string stagesProblem(const ModelConfig& m, int stages, const std::string& split,
                          const std::string& flag = "--split");

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
