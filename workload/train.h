// workload/train.h — the training pieces every strategy shares: the model with flat parameter
// and gradient buffers, flat SGD, and the replicated data-parallel loop (each rank: its shard,
// forward/backward, a gradient synchronisation, a local optimizer step) that `single`,
// `ring_all_reduce`, `allreduce` and `ddp` run with different GradSync objects. The run's
// configuration and its per-epoch statistics are in workload/train_config.h (no LibTorch).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/transport.h"
#include "common/trace.h"
#include "workload/dataset.h"
#include "workload/model.h"
#include "workload/train_config.h"

namespace tpb {

torch::Device torchDevice(const TrainConfig& cfg, int offset = 0);
// The CUDA device index of `d` for GPU spans (comm/cuda/gpu_trace.h); -1 for the CPU.
inline int gpuOf(const torch::Device& d) { return d.is_cuda() ? (d.has_index() ? d.index() : 0) : -1; }
// On CUDA, blocks until every kernel queued on the default stream of the device of `cfg`
// (replica `offset`) has run, so host clocks read afterwards measure the work; other streams
// (the nccl transport's) are not waited for (waitDefaultStream). A no-op on the CPU.
void synchronize(const TrainConfig& cfg, int offset = 0);

class FlatSgd {
 public:
  enum class Impl { Auto, Loop, TensorOps };  // Auto: Loop on the CPU, TensorOps elsewhere
  // `like`: a flat float32 tensor on the replica's device (sizes the velocity buffer).
  FlatSgd(double lr, double momentum, const torch::Tensor& like, Impl impl = Impl::Auto);
  void step(torch::Tensor& params, const torch::Tensor& grads);
  // The momentum buffer (undefined when momentum is 0), for checkpoints.
  torch::Tensor velocity() const { return velocity_; }

 private:
  float lr_, momentum_;
  bool loop_;
  torch::Tensor velocity_;  // undefined when momentum is 0
};

// The whole model's training state in the flat order of orderedParameters(): what a checkpoint
// holds (workload/checkpoint.h).
struct ModelState {
  std::vector<float> weights;
  std::vector<float> velocity;  // empty when momentum is 0
  // The model's buffers (BatchNorm's running statistics), copies on the CPU in buffers() order;
  // empty for a model without.
  std::vector<torch::Tensor> buffers;
};

// Model, data and optimizer state of one replica, on `device` (the same seed gives the same
// initial weights on every device: they are drawn on the CPU and copied).
struct Replica {
  Replica(const TrainConfig& cfg, torch::Device device);
  torch::Device device;
  Trainable model;  // --workload's
  std::vector<torch::Tensor> params;
  std::unique_ptr<FlatParams> flatParams;
  FlatSgd sgd;
  // Forward + backward on the samples epochIndices[begin, end) of `data` (indices and data may
  // live on another device: the batch is moved to this replica's); loss scaled by `lossScale`
  // (so that summing replicas' gradients gives a global mean). Returns the unscaled mean loss
  // as a 0-dim tensor on this replica's device: reading it (.item()) would wait for the GPU,
  // so loops add it up on the device and read the sum once per epoch.
  torch::Tensor forwardBackward(const Dataset& data, const torch::Tensor& epochIndices,
                                std::size_t begin, std::size_t end, double lossScale);
  // Applies the optimizer to the flat parameters with flat gradients `grads`.
  void step(const torch::Tensor& grads) {
    torch::Tensor w = flatParams->flat();
    sgd.step(w, grads);
  }
  // The flat parameters, copied to host memory.
  std::vector<float> hostParams();
  // Weights, momentum and buffers copied to host memory, and back (checkpoints).
  ModelState state();
  void load(const ModelState& s);
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
  // The flat gradient buffer (on the replica's device).
  virtual torch::Tensor grads() = 0;
  // finish()'s span in a trace (common/trace.h): what the host does meanwhile.
  virtual const char* traceName() const { return "allreduce"; }
  virtual trace::Category traceCategory() const { return trace::Category::Comm; }
};

// Gradients accumulate straight into one flat buffer (parameters' .grad are views of it), and
// finish() averages that buffer over ranks with `reduce` (sum in place; `buf` is device memory
// on a GPU) — or not at all on one rank.
class FlatGradSync : public GradSync {
 public:
  using ReduceFn = std::function<void(float* buf, std::size_t count)>;
  FlatGradSync(int worldSize, ReduceFn reduce);
  void attach(Replica& r) override;
  void beforeBackward() override;
  void finish() override;
  torch::Tensor grads() override;

 private:
  int world_;
  ReduceFn reduce_;
  std::unique_ptr<FlatGrads> grads_;
};

// flat *= factor in place (a loop on the CPU, rounded as written; a tensor op on a GPU).
void scaleInPlace(torch::Tensor flat, float factor);

class DistributedSampler;
class StreamClock;

// What one training step sees: its slice of the epoch's sample order, and where it adds its
// figures.
struct Step {
  const torch::Tensor& indices;  // the epoch's sample order, on EpochLoop::device
  std::size_t begin, end;        // this step's rows [begin, end) of `indices`
  EpochStats& stats;             // the step adds its computeS and commS (and computeCpuS)
  torch::Tensor& lossSum;        // and its mean loss (a 0-dim float64 tensor on EpochLoop::device)
};

// The epoch skeleton every training loop shares; only the step differs between strategies.
struct EpochLoop {
  Transport* transport = nullptr;  // barrier before each epoch and at the end, statistics to its
                                   // rank 0; null: one process
  int rank = 0;                    // this rank, for TPB_FAULT
  std::size_t rowsPerStep = 1;     // rows of the epoch's order one step consumes
  torch::Device device = torch::Device(torch::kCPU);  // where the order and the loss sum live
  bool countsSamples = true;       // false: this rank trains on nothing (the parameter server)
  // True when steps never wait for the GPU (one rank, nothing to exchange): their compute time
  // is only launch time, so the epoch's compute_s becomes its wall time minus comm_s.
  bool computeIsWall = false;
  // True when the steps also add their compute's CPU time on this thread (stats.computeCpuS), so
  // that each epoch records the median step on the CPU clock beside the wall clock's.
  bool stepsTimeCpu = false;
  // On a GPU, the clock this loop's steps record their computations on (closeSpan): the epoch's
  // compute_s is then its spans' time on the GPU and comm_s the rest of wall_s, read once the
  // epoch's end has waited for the stream. Null or inactive: the steps' own host figures stand.
  StreamClock* gpuCompute = nullptr;
  std::function<void()> synchronize;  // waits for this rank's devices; called before clocks start
  // Called on every rank after an epoch's steps, before its figures are gathered on rank 0 (which
  // then evaluates): a loop adds its own figures here or brings the weights to rank 0.
  std::function<void(EpochStats&)> beforeClose;
  // Checkpoints (cfg.saveDir, cfg.resumeFrom). saveState runs on every rank after each epoch and
  // returns the whole model's state on rank 0 (the one that writes it); loadState puts a
  // checkpoint's state back on this rank before the first epoch.
  std::function<ModelState()> saveState;
  std::function<void(const ModelState&)> loadState;
};

// The median of a non-empty list (the mean of the middle two for an even count).
double medianOf(std::vector<double> xs);

// Runs cfg.epochs epochs, stopping after cfg.maxSteps steps in all: per epoch the sampler's
// order is uploaded to loop.device once, the ranks meet, `step` runs on each slice of
// loop.rowsPerStep rows, and closeEpoch() aggregates the figures on rank 0, which evaluates
// `evalModel` and calls onEpoch. The caller fills in TrainResult::params.
TrainResult runEpochs(const TrainConfig& cfg, const EpochLoop& loop, DistributedSampler& sampler,
                      const DataSplit& data, TrainableImpl* evalModel, const std::function<void(Step&)>& step,
                      const EpochCallback& onEpoch);

// The replicated loop. `t` is null on one rank. `dataRank`/`dataWorld` pick the shard.
// Rank 0 of `t` evaluates, aggregates statistics and calls `onEpoch`.
TrainResult trainReplicated(Transport* t, const TrainConfig& cfg, GradSync& sync,
                            const EpochCallback& onEpoch);

// Pieces for loops that are not replicated (parameter server, DataParallel):
// aggregates per-rank epoch figures on rank 0 over the transport (wall: max; compute and comm:
// mean over ranks that computed, i.e. had samples or compute time; loss: mean over steps of all
// ranks).
EpochStats gatherEpoch(Transport* t, const EpochStats& mine);
// Evaluates on the test split (respecting cfg.testSize) and fills testAccuracy/evalS.
void evaluateInto(EpochStats& s, TrainableImpl& model, const DataSplit& data, const TrainConfig& cfg);
// Ends an epoch on every rank: `mine` (with trainLoss = this rank's loss sum over its steps) is
// aggregated on rank 0 of `t` (t may be null: one process), which then evaluates `model` (null
// on the other ranks, which never evaluate),
// calls onEpoch and appends to result.epochs.
void closeEpoch(Transport* t, EpochStats mine, TrainableImpl* model, const DataSplit& data,
                const TrainConfig& cfg, const EpochCallback& onEpoch, TrainResult& result);
// Loads the workload's data (same on every rank) and moves it to `device` once, so that batches
// are gathered where the model is: --dataset for the mlp and a resnet on mnist images (seen as
// 1x28x28), else workload/network_data.h's generated images or tokens, --train_size samples or
// workloadTrainSize()'s.
DataSplit loadTrainData(const TrainConfig& cfg, torch::Device device);

}  // namespace tpb
