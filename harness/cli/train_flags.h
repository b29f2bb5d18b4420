// harness/cli/train_flags.h — the flags `run` and `sweep` share, and their conversion into a
// TrainConfig (no logic beyond parsing).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "harness/train_runner.h"

namespace tpb::cli {

struct TrainFlags {
  int epochs = 3;
  std::string dataset = "synthetic";
  std::string hidden = "512,512";
  double lr = 0.01, momentum = 0.0;
  std::uint64_t seed = 1;
  double bucketMb = 25.0;
  std::size_t testSize = 0;
  std::string device = "cpu", transport, out;
  int timeout = 1800;
  long maxSteps = -1;
  int microbatches = 4;
  std::string schedule = "gpipe", split;
  std::string saveDir, resumeFrom;
};

void addTrainFlags(CLI::App* cmd, TrainFlags& f);
// Fills everything but strategy, n_gpus, batch_size and train_size; checkTrainRun checks it.
TrainConfig baseConfig(const TrainFlags& f);
// Copies the shared launcher options (device, transport, out, timeout) into `o`.
void applyRunOptions(const TrainFlags& f, TrainRunOptions& o);

}  // namespace tpb::cli
