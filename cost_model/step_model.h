// cost_model/step_model.h — what one data-parallel training step costs on N ranks, from what one
// rank's step costs alone: the step model behind `tpbench model`'s step predictions.
//
// One rank's step is a profile: forward seconds, then backward, in which each parameter's
// gradient becomes ready at a known moment (the order backward produces them: last layer
// first), then the optimizer. Data parallelism adds the gradients' allreduce, in one of two
// ways:
//  * Bucketed (ddp, PyTorch DDP): the gradients are cut into buckets by DDP's rule
//    (core/ddp_buckets.h); a bucket's allreduce starts once its last gradient is ready and the
//    previous bucket's allreduce is done (one communication channel, as one NCCL stream), so it
//    runs beside the rest of backward. The optimizer waits for the last bucket.
//  * AfterBackward (ring_all_reduce, allreduce): one allreduce of every gradient once backward
//    is done; nothing overlaps.
// Each allreduce's time comes from a function of its bytes and N (alphaBetaTime: a fitted or
// preset α-β line through the algorithm's formula). The step is forward + max(backward, last
// allreduce's end) + optimizer; what it adds over the compute alone is the exposed
// communication, and compute over step is the scaling efficiency of weak scaling (each rank
// keeps its batch). What the model leaves out, named so that its errors can be read: compute and
// communication sharing cores or memory bandwidth (they slow each other where ranks outnumber
// cores, or on a CPU), the buckets' copies, and a step's variation between ranks (stragglers).
// No I/O, no LibTorch.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/algo_cost.h"
#include "core/ddp_buckets.h"

namespace tpb::model {

// One parameter tensor, in the network's (forward) order.
struct ParamTiming {
  std::string name;
  double bytes = 0;       // its gradient's size
  double gradReadyS = 0;  // from backward's start to its gradient being ready
};

// One rank's step, alone (no communication), in seconds.
struct StepProfile {
  double forwardS = 0;
  double backwardS = 0;  // backward's whole length (every gradient ready by then)
  double optimizerS = 0;
  std::vector<ParamTiming> params;  // forward order
  double computeS() const { return forwardS + backwardS + optimizerS; }
  double gradientBytes() const;
};

// Throws UsageError naming the field where a profile cannot be modelled: a time or size that is
// not finite or is negative, a gradient ready after backward's end, no parameters.
void checkProfile(const StepProfile& p);

enum class Sync { Bucketed, AfterBackward };

struct StepPlan {
  int n = 1;
  Sync sync = Sync::Bucketed;
  double capBytes = 25.0 * 1024 * 1024;  // --bucket_mb (Bucketed only)
  double firstBucketBytes = kDdpFirstBucketBytes;
};

// Seconds of one allreduce of `bytes` over `n` ranks.
using AllreduceTime = std::function<double(double bytes, int n)>;

// T = a(N)·α + b(N)·S·β of the formula, α in µs per step and β in µs per byte, as seconds.
AllreduceTime alphaBetaTime(const CostFormula& f, double alphaUs, double betaUsPerByte);

// One allreduce of the step: a bucket (or, after backward, every gradient), with its times from
// backward's start.
struct BucketSpan {
  std::size_t firstParam = 0, params = 0;  // its parameters [firstParam, firstParam + params)
  double bytes = 0;
  double readyS = 0, startS = 0, endS = 0;
};

struct StepPrediction {
  double stepS = 0;
  double computeS = 0;            // the profile's, alone
  double commS = 0;               // every allreduce's time, hidden or not
  double exposedCommS = 0;        // stepS - computeS
  double scalingEfficiency = 1;   // computeS / stepS
  std::vector<BucketSpan> allreduces;  // in launch order; empty at N = 1
};

// The step on plan.n ranks. N = 1 communicates nothing. Throws as checkProfile, and where the
// plan's N is below 1 or a Bucketed cap is not a positive finite size.
StepPrediction predictStep(const StepProfile& p, const StepPlan& plan, const AllreduceTime& allreduce);

// A GPU's published peak: dense (no sparsity) 16-bit tensor throughput and memory bandwidth.
struct DevicePreset {
  std::string name, description;
  double peakTflops = 0;  // dense BF16/FP16 tensor cores
  double memoryGBps = 0;  // HBM
  std::string source;
};
const std::vector<DevicePreset>& devicePresets();
// Throws UsageError naming --gpu and the presets.
const DevicePreset& findDevice(const std::string& name);
std::string deviceNames();

// One block of a network (workload/network_spec.h's networkBlockCosts), in forward order.
struct BlockCost {
  std::string name;
  double forwardFlopsPerSample = 0;
  double gradientBytes = 0;
};

// One rank's step on a device from FLOPs instead of a measurement: each block's forward takes its
// FLOPs x batch at `mfu` (the fraction of peak reached) and its backward twice that, in reverse
// order, its gradients ready when its backward ends; the optimizer (SGD with momentum) moves 20
// bytes per 4-byte parameter (read weight, gradient and momentum, write weight and momentum) at
// the memory's bandwidth. Throws UsageError for an mfu outside (0, 1], a batch below 1 or no blocks.
StepProfile profileFromFlops(const std::vector<BlockCost>& blocks, int batch, const DevicePreset& device, double mfu);

// The cap among `capsBytes` with the shortest predicted step (the smaller cap where two tie).
struct BucketChoice {
  double capBytes = 0;
  StepPrediction prediction;
};
BucketChoice bestBucket(const StepProfile& p, int n, const std::vector<double>& capsBytes,
                        const AllreduceTime& allreduce);

// A pipeline's step (pipeline: S stages on S ranks, each batch cut into M micro-batches): GPipe
// runs every micro-batch's forward through the stages, then every backward; 1F1B interleaves
// them after a warm-up, holding fewer activations for the same length where every stage's
// micro-batch costs the same. `micro` is one micro-batch's step through the whole model on one
// rank; stage s does shares[s] of its forward, backward and optimizer (the stage's part of the
// network's FLOPs; the shares sum to 1). The first micro-batch crosses every stage, each of the
// other M - 1 follows one slowest stage later (forward, then backward back), then the slowest
// stage's optimizer: (M + S - 1) slots of a stage's micro-batch where the stages are equal. The bubble is each
// stage's idle share of it, averaged over the stages (GPipe's (S-1)/(M+S-1) where the stages are
// equal). The activations' and their gradients' transfers between stages are left out. Throws
// UsageError for an M below 1, no shares, or shares that are negative or do not sum to 1.
struct PipelinePrediction {
  double stepS = 0;
  double busyS = 0;   // the busiest stage's compute: M x its micro-batch + its optimizer
  double bubble = 0;  // the stages' mean idle share of the step
};
PipelinePrediction predictPipeline(const StepProfile& micro, const std::vector<double>& shares, int microbatches);

}  // namespace tpb::model
