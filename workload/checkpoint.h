// workload/checkpoint.h — per-epoch checkpoints that PyTorch can read.
//
// A checkpoint is one file written with LibTorch's pickle_save (the zip-of-pickle format
// torch.save writes), so in Python `torch.load(FILE)` returns a dict:
//
//   "format"    "tpbench.checkpoint/1"
//   "model"     the MLP's state_dict under nn.Sequential's names for the same MLP
//               (Linear, ReLU, Linear, ...: "0.weight", "0.bias", "2.weight", ...), so
//               nn.Sequential(...).load_state_dict(ck["model"]) loads it
//   "optimizer" torch.optim.SGD's state_dict: {"state": {i: {"momentum_buffer": T}},
//               "param_groups": [{"lr", "momentum", "dampening", "weight_decay", "nesterov",
//               "maximize", "foreach", "params": [0, 1, ...]}]} (no state when momentum is 0)
//   "epoch"     epochs completed;  "steps": optimizer steps taken in all
//   "sampler"   {"seed", "epoch": the next epoch's index, "position": 0}: where the sample order
//               resumes (checkpoints are taken between epochs)
//   "config"    {field: text} of every setting that shapes the training (those marked
//               checkpointed in common/train_settings.h: strategy, n_gpus, batch_size, dataset,
//               train_size, hidden, lr, momentum, seed, microbatches, schedule, split); a run may
//               resume only a checkpoint whose settings equal its own
//
// Tensors are float32 on the CPU. Files are written to a temporary name in the same directory
// and renamed, so a crash never leaves a half-written checkpoint under the final name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workload/train.h"

namespace tpb {

constexpr const char* kCheckpointFormat = "tpbench.checkpoint/1";

struct Checkpoint {
  ModelState state;
  int epoch = 0;   // epochs completed
  long steps = 0;  // optimizer steps taken in all
  std::uint64_t samplerSeed = 0;
  std::map<std::string, std::string> config;
};

// The settings a checkpoint records and a resumed run must share.
std::map<std::string, std::string> checkpointConfig(const TrainConfig& cfg);

// Where the checkpoint of cfg's run after epoch `epoch` (1-based) goes in `dir`:
// DIR/<strategy>-n<N>-epoch-<epoch>.pt (a sweep's points of other strategies or N keep theirs).
std::string checkpointPath(const std::string& dir, const TrainConfig& cfg, int epoch);

// Writes `ck` for `cfg`'s model atomically (temporary file + rename). Throws tpb::Error.
void saveCheckpoint(const std::string& path, const TrainConfig& cfg, const Checkpoint& ck);

// Reads the checkpoint at `path` for a run of `cfg`. Throws UsageError, one line naming the file
// and what is wrong, when it cannot be read, is not a tpbench checkpoint (truncated, foreign),
// or was written with other settings (naming the first that differs and both values).
Checkpoint loadCheckpoint(const std::string& path, const TrainConfig& cfg);

}  // namespace tpb
