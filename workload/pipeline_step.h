// workload/pipeline_step.h — one stage's part of one pipeline step: the schedule's ops in order,
// each receiving its input, computing, and sending its result on, with the sends started where
// a transport that defers posts (nccl, grouped) needs them started. LibTorch-free: trainStages
// supplies the layers' work, and the bubble tests supply timed stand-ins for it.
//
// Where sends start. Over nccl a posted send waits in the transport's queue until the next wait
// or flush() launches it as part of one NCCL group, and a group's send completes only once the
// receiving stage's matching receive is running. Two rules follow, both checked by the grouped
// transport's tests and by a model of those semantics for S = 2..6 stages, M = 1..12:
//  * A send that nothing would launch soon must be flushed at once, or the next stage starves:
//    stage 0's forward sends (it receives nothing until its first backward) and the last
//    stage's backward sends. Left queued, GPipe runs its stages one after another (bubble 0.50
//    at S = 2, M = 4 instead of the formula's 0.20).
//  * A send in 1F1B's steady state must NOT be flushed alone: it has to share a group with the
//    receive that follows it. Stage s sends forward to s+1 and then waits for a gradient from
//    s+1, which is doing the mirror image; as two groups each, every stage's receive sits on
//    its stream behind a send that waits for the other's receive, and the pipeline deadlocks.
// So the schedule marks each op's send: flushed (every GPipe send, 1F1B's warm-up forwards and
// cool-down backwards) or left for the next receive (1F1B's steady state).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace tpb {

class Transport;

// One forward or backward of one micro-batch in a stage's schedule.
struct PipeOp {
  bool forward;
  int micro;
  // After this op's send: launch it at once (Transport::flush), or leave it to share a group
  // with the receive that comes next in the schedule.
  bool flushSend = true;
};

struct StageBuffer {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// What a stage computes; runStageOps does the communication around it.
struct StageWork {
  int stage = 0, stages = 1;
  // Where an op's input arrives: the activations from stage-1 (forward, not on the first stage)
  // or the output's gradient from stage+1 (backward, not on the last).
  std::function<StageBuffer(const PipeOp&)> receiveInto;
  // Runs the op; returns what it sends on: the output to stage+1 (forward, not on the last
  // stage) or the input's gradient to stage-1 (backward, not on the first). The buffer must
  // stay valid until runStageOps returns.
  std::function<StageBuffer(const PipeOp&)> compute;
};

struct StageTimes {
  double computeS = 0;  // in work.compute
  double commS = 0;     // receiving, posting sends, and waiting for the sends at the end
};

// Runs `ops` (a schedule's order for this stage) once and waits for every send.
StageTimes runStageOps(Transport& t, const std::vector<PipeOp>& ops, const StageWork& work);

}  // namespace tpb
