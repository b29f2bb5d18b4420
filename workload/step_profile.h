// workload/step_profile.h — one rank's training step of a workload, measured alone on this
// machine: forward, backward with the moment each parameter's gradient became ready, and the
// optimizer. What the step model (cost_model/step_model.h) needs to predict the step on N ranks.
//
// The step is the replicated strategies' (workload/train.h's Replica): the batch gathered,
// forward and loss, backward, the flat SGD step. Each gradient's ready time is read in an
// autograd hook on its parameter, as DDP's hooks see it, from backward's start. On the CPU only:
// on a GPU the hooks fire when the host queues the work, not when it is done.
#pragma once

#include <string>
#include <vector>

#include "workload/train_config.h"

namespace tpb {

struct MeasuredStep {
  int steps = 0;       // timed steps the means are over (after the warm-up)
  int companions = 0;  // replicas stepping beside it (measureStep)
  double forwardS = 0, backwardS = 0, optimizerS = 0;  // means
  double stepMinS = 0, stepMaxS = 0;                    // the timed steps' whole compute, min and max
  std::vector<std::string> names;  // each parameter, in the flat (forward) order
  std::vector<double> bytes;       // its gradient's bytes
  std::vector<double> gradReadyS;  // mean, from backward's start; at most backwardS
};

// The least time measureStep times for. Means, not medians: where ranks outnumber cores a short
// step often runs within one time slice of the scheduler and now and then waits a slice or more
// for its core; a median sees the first only, a run's wall time per step (what the model
// predicts) both, in the proportion they happen.
constexpr double kMinTimedS = 1.0;

// Runs `warmup` untimed and then at least `steps` timed steps (and at least kMinTimedS of them)
// of cfg's workload at cfg.batchSize on the CPU, in this thread (call worker/worker.h's startRankProcess() first for a rank's settings),
// while `companions` other replicas step on threads of their own: the N - 1 other ranks of a run
// on this machine, which share its cores, caches and memory bandwidth. Throws UsageError for a
// configuration it cannot profile (not the CPU, steps < 1).
constexpr int kMaxCompanions = 1024;
MeasuredStep measureStep(const TrainConfig& cfg, int warmup, int steps, int companions = 0);

}  // namespace tpb
