// workload/checkpoint.h — per-epoch checkpoints that PyTorch can read.
//
// A checkpoint is one file written with LibTorch's pickle_save (the zip-of-pickle format
// torch.save writes), so in Python `torch.load(FILE)` returns a dict:
//
//   "format"    "tpbench.checkpoint/2" (workload/checkpoint_layout.h; /1 files, MLP only, still load)
//   "model"     the state_dict of the same module in PyTorch: the parameters under
//               TrainableImpl::parameterNames() (the MLP's as nn.Sequential names them: "0.weight",
//               "0.bias", "2.weight", ...; a network's as scripts/torch_ddp.py's nn.Sequential of
//               its blocks: "0.conv1.weight", ...), then the buffers under bufferNames()
//               (BatchNorm's running_mean, running_var and num_batches_tracked, rank 0's), so
//               module.load_state_dict(ck["model"]) loads it
//   "shapes"    {name: [sizes...]} of every tensor of "model", in its order: parameters in the
//               flat order of orderedParameters(), then buffers; a run resumes only a file whose
//               shapes are its model's
//   "optimizer" torch.optim.SGD's state_dict: {"state": {i: {"momentum_buffer": T}},
//               "param_groups": [{"lr", "momentum", "dampening", "weight_decay", "nesterov",
//               "maximize", "foreach", "params": [0, 1, ...]}]} (no state when momentum is 0)
//   "epoch"     epochs completed;  "steps": optimizer steps taken in all
//   "sampler"   {"seed", "epoch": the next epoch's index, "position": 0}: where the sample order
//               resumes (checkpoints are taken between epochs)
//   "config"    {field: text} of every setting that shapes the training (those marked
//               checkpointed in common/train_settings.h: strategy, n_gpus, batch_size, dataset,
//               train_size, hidden, workload (its canonical text), lr, momentum, seed,
//               microbatches, schedule, split); a run may resume only a checkpoint whose settings
//               equal its own
//
// Tensors are on the CPU: parameters and momentum float32, buffers of their own type. Files are
// written to a temporary name in the same directory and renamed, so a crash never leaves a
// half-written checkpoint under the final name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workload/checkpoint_layout.h"
#include "workload/train.h"

namespace tpb {

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

// The model of cfg's run as its checkpoints hold it (built once, from --workload and --hidden).
struct CheckpointModel {
  ModelLayout layout;                     // the parameters, then the buffers
  std::size_t parameters = 0;             // the first `parameters` entries of layout
  std::vector<c10::ScalarType> bufferTypes;  // the element type of each buffer
  std::string what;                       // "this run's --workload ..." for messages
};
CheckpointModel checkpointModel(const TrainConfig& cfg);

// Writes `ck` of `model` for `cfg`'s run atomically (temporary file + rename). Throws tpb::Error.
void saveCheckpoint(const std::string& path, const TrainConfig& cfg, const CheckpointModel& model,
                    const Checkpoint& ck);

// Reads the checkpoint at `path` for a run of `cfg` whose model is `model`. Throws UsageError,
// one line naming the file and what is wrong, when it cannot be read, is not a tpbench
// checkpoint (truncated, foreign, a newer format), was written with other settings (naming the
// first that differs and both values) or holds tensors of other names or shapes.
Checkpoint loadCheckpoint(const std::string& path, const TrainConfig& cfg, const CheckpointModel& model);
// The same, building cfg's model to know its shapes.
Checkpoint loadCheckpoint(const std::string& path, const TrainConfig& cfg);

}  // namespace tpb
