// workload/train_config.h — what a training run is asked to do and what it reports, without
// LibTorch: the model's shape (ModelConfig), the run's configuration (TrainConfig), per-epoch
// statistics and the result. The strategy interface (core/train_strategy.h), the registry and
// the command line need only these, so they compile without LibTorch's headers; the training
// code itself is in workload/train.h.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/transport.h"
#include "common/train_settings.h"
#include "workload/network_spec.h"

namespace tpb {

// Layer widths of the MLP: inputs -> hidden[0] -> ... -> hidden.back() -> classes.
struct ModelConfig {
  int inputs = 784;
  std::vector<int> hidden = {512, 512};
  int classes = 10;
};

// Parses a --hidden value such as "512,512" or "1024,1024,1024" (positive widths, comma
// separated, at least one). Throws tpb::UsageError naming `flag` and `text` on bad input.
std::vector<int> parseHidden(const std::string& flag, const std::string& text);
// The canonical text of widths: "512,512".
std::string hiddenText(const std::vector<int>& widths);

// The settings (common/train_settings.h: declared once, recorded, sent to every rank) and what
// only this process needs to run them.
struct TrainConfig : TrainSettings {
  std::string saveDir;           // write a checkpoint after every epoch here ("": none)
  bool evaluate = true;          // test accuracy after every epoch
  // Where this rank's replica lives: the CPU, or cuda:deviceIndex (the worker sets LOCAL_RANK;
  // data_parallel puts replica i on cuda:deviceIndex+i).
  Device device = Device::Cpu;
  int deviceIndex = 0;
  // A directory this rank may write files into for the point (the launcher removes it after the
  // sweep; the worker sets the job file's directory); empty: $TMPDIR, else /tmp.
  std::string scratchDir;

  // The network --hidden describes (checked before launch, so a config that reaches a rank parses).
  ModelConfig model() const { return ModelConfig{784, parseHidden("--hidden", hidden), 10}; }
  // What --workload (with --hidden for the mlp) trains; checked before launch like the above.
  NetworkSpec network() const { return parseWorkload("--workload", workload, hidden); }
  bool trainsMlp() const { return workload == "mlp"; }
};

struct EpochStats {
  int epoch = 0;
  double wallS = 0;        // slowest rank's time for the epoch's steps (evaluation excluded)
  double computeS = 0;     // forward + backward (+ optimizer), mean over ranks that compute
  double commS = 0;        // waiting on gradient/weight synchronisation, mean over those ranks
  double samplesPerS = 0;  // training samples of all ranks / wallS
  double trainLoss = 0;    // mean loss over the epoch's steps and ranks
  double testAccuracy = -1;  // in [0,1]; -1 when not evaluated
  double evalS = 0;
  long steps = 0;           // optimizer steps of the model: each once, whatever the strategy and N
  std::size_t samples = 0;  // training samples, each consumed once (all ranks together)
  // What the epoch's steps moved over the transport: this rank's; after gatherEpoch, on rank 0,
  // every rank's in rank order (empty without a transport).
  Traffic traffic;
  std::vector<Traffic> rankTraffic;
  // This rank's median compute seconds per step, where each step's compute is timed on the host
  // (NaN where the device's time is read after the epoch instead): unlike the epoch's sum, one
  // step that lost its core does not move it.
  double stepComputeMedianS = NAN;
  // The same median on this thread's CPU clock (common/cpu_clock.h), where the step times its
  // compute there too (EpochLoop::stepsTimeCpu; NaN elsewhere): a step that waited for a core
  // costs no more of it, so it tells a slow rank from one that shared its core.
  double computeCpuS = 0;  // the steps' compute on the CPU clock, summed (with stepsTimeCpu)
  double stepComputeCpuMedianS = NAN;
  // After gatherEpoch, on rank 0 with several ranks: each rank's compute and comm seconds and its
  // median step compute on the wall and CPU clocks, in rank order (empty otherwise).
  std::vector<double> rankComputeS, rankCommS, rankStepComputeS, rankStepComputeCpuS;
  // Model parallel strategies (workload/stages.h); -1 / empty elsewhere.
  double bubbleFraction = -1;  // idle time over wall time of each stage, averaged
  double bubbleFormula = -1;   // GPipe's (S-1)/(M+S-1) for the same S and M
  std::vector<double> activationBytes;  // per stage: most activation bytes held for backward at once
};

struct TrainResult {
  std::vector<EpochStats> epochs;
  std::vector<float> params;  // final flat parameters (on the reporting rank)
};

using EpochCallback = std::function<void(const EpochStats&)>;

// SGD on flat buffers with PyTorch's update rule (dampening 0, no Nesterov, no weight decay):
//   v = momentum * v + g;  w -= lr * v   (v = g when momentum is 0)
// On the CPU the update is one restrict-pointer loop (vectorised, and rounded exactly as
// written); on a GPU it is two or three in-place tensor operations on the flat buffers, queued
// on the current stream like the rest of the step.
}  // namespace tpb
