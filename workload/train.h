// workload/train.h — the training pieces every strategy shares: configuration, the model with
// flat parameter and gradient buffers, flat SGD, per-epoch statistics, and the replicated
// data-parallel loop (each rank: its shard, forward/backward, a gradient synchronisation,
// a local optimizer step) that `single`, `ring_all_reduce`, `allreduce` and `ddp` run with
// different GradSync objects.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/transport.h"
#include "workload/dataset.h"
#include "workload/model.h"

namespace tpb {

struct TrainConfig {
  std::string strategy = "single";
  int nGpus = 1;                 // ranks (CPU: processes; data_parallel: replicas)
  int batchSize = 64;            // per device (DDP's meaning)
  int epochs = 3;
  std::string dataset = "synthetic";
  std::size_t trainSize = 0;     // 0: the whole training set
  std::size_t testSize = 0;      // 0: the whole test set
  ModelConfig model;
  double lr = 0.01;
  double momentum = 0.0;
  std::uint64_t seed = 1;
  double bucketMb = 25.0;        // ddp
  long maxSteps = -1;            // stop after this many optimizer steps (tests); -1: all
  bool evaluate = true;          // test accuracy after every epoch
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
  long steps = 0;
  std::size_t samples = 0;
};

struct TrainResult {
  std::vector<EpochStats> epochs;
  std::vector<float> params;  // final flat parameters (on the reporting rank)
};

using EpochCallback = std::function<void(const EpochStats&)>;

// SGD on flat buffers with PyTorch's update rule (dampening 0, no Nesterov, no weight decay):
//   v = momentum * v + g;  w -= lr * v   (v = g when momentum is 0)
class FlatSgd {
 public:
  FlatSgd(double lr, double momentum, std::size_t count);
  void step(float* params, const float* grads);

 private:
  float lr_, momentum_;
  std::size_t count_;
  std::vector<float> velocity_;
};

// Model, data and optimizer state of one replica.
struct Replica {
  Replica(const TrainConfig& cfg, const DataSplit& data);
  Mlp model;
  std::vector<torch::Tensor> params;
  std::unique_ptr<FlatParams> flatParams;
  FlatSgd sgd;
  // Forward + backward on rows [begin, end) of `indices`; loss scaled by `lossScale` (so that
  // summing replicas' gradients gives a global mean). Returns the unscaled mean loss.
  double forwardBackward(const Dataset& data, const std::vector<std::int64_t>& indices,
                         std::size_t begin, std::size_t end, double lossScale);
};

// How a replicated strategy turns local gradients into the global mean gradient.
class GradSync {
 public:
  virtual ~GradSync() = default;
  // Called once, before training, with the replica; sets up gradient storage.
  virtual void attach(Replica& r) = 0;
  // Before each backward (zero or reset gradient storage; arm hooks).
  virtual void beforeBackward() = 0;
  // After backward: when it returns, grads() holds the mean gradient over all ranks.
  virtual void finish() = 0;
  virtual float* grads() = 0;
};

// Gradients accumulate straight into one flat buffer (parameters' .grad are views of it), and
// finish() averages that buffer over ranks with `reduce` (sum in place) — or not at all on one
// rank.
class FlatGradSync : public GradSync {
 public:
  using ReduceFn = std::function<void(float* buf, std::size_t count)>;
  FlatGradSync(int worldSize, ReduceFn reduce);
  void attach(Replica& r) override;
  void beforeBackward() override;
  void finish() override;
  float* grads() override;

 private:
  int world_;
  ReduceFn reduce_;
  std::unique_ptr<FlatGrads> grads_;
};

// The replicated loop. `t` is null on one rank. `dataRank`/`dataWorld` pick the shard.
// Rank 0 of `t` evaluates, aggregates statistics and calls `onEpoch`.
TrainResult trainReplicated(Transport* t, const TrainConfig& cfg, GradSync& sync,
                            const EpochCallback& onEpoch);

// Pieces for loops that are not replicated (parameter server, DataParallel):
// aggregates per-rank epoch figures on rank 0 over the transport (wall: max; compute and comm:
// mean over ranks with samples > 0; loss: mean over steps of all ranks).
EpochStats gatherEpoch(Transport* t, const EpochStats& mine);
// Evaluates on the test split (respecting cfg.testSize) and fills testAccuracy/evalS.
void evaluateInto(EpochStats& s, Mlp& model, const DataSplit& data, const TrainConfig& cfg);
// Ends an epoch on every rank: `mine` (with trainLoss = this rank's loss sum over its steps) is
// aggregated on rank 0 of `t` (t may be null: one process), which then evaluates `model`,
// calls onEpoch and appends to result.epochs.
void closeEpoch(Transport* t, EpochStats mine, Mlp& model, const DataSplit& data,
                const TrainConfig& cfg, const EpochCallback& onEpoch, TrainResult& result);
// Loads the configured dataset (same on every rank).
DataSplit loadTrainData(const TrainConfig& cfg);

}  // namespace tpb
