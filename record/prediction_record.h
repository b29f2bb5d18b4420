// record/prediction_record.h — predictions[] of a results file: one point of `tpbench predict`
// (harness/step_prediction.h), a data-parallel training step predicted at one N and, for ddp,
// one bucket cap, with what it was predicted from: the step profile (measured on this CPU, or
// built from FLOPs on a GPU preset) and the allreduce's cost (fitted from collective results, or
// link presets). Written beside runs[] and allreduce[] so that `report` charts predictions
// against the runs that measured the same points and `compare` says which predictions moved.
// Fields and units: results/README.md, "predictions".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/json_in.h"

namespace tpb {

// One rank's step as the prediction read it.
struct PredictionProfile {
  std::string source;             // "measured" (this CPU) or "flops" (a GPU preset)
  std::optional<int> companions;  // measured: replicas stepping beside it (the run's other ranks)
  std::optional<std::string> device;  // flops: the GPU preset (--gpu)
  std::optional<double> mfu;          // flops: the fraction of its peak
  double forwardS = 0, backwardS = 0, optimizerS = 0;
  double gradientBytes = 0;
  int tensors = 0;  // gradient tensors (measured) or blocks (flops)
  nlohmann::json toJson() const;
  static PredictionProfile fromJson(const JsonIn& in);
};

// The allreduce's cost as the prediction read it.
struct PredictionAllreduce {
  std::string source;  // "fit" (--collectives), "link" (--link presets) or "none" (a pipeline: no allreduce)
  std::string algo;    // the algorithm whose formula carries the cost
  std::string text;    // the one line `predict` prints for it
  std::optional<double> alphaUs, betaUsPerByte;  // fit
  std::optional<std::vector<int>> fittedOn;      // fit: the N it was fitted across
  std::optional<std::string> link, interLink;    // link
  std::optional<int> gpusPerNode, nicsPerNode;   // link, with interLink
  nlohmann::json toJson() const;
  static PredictionAllreduce fromJson(const JsonIn& in);
};

struct PredictionRecord {
  // The point, spelled as a run's config spells it (runs[].config), so that a run measuring it matches.
  std::string workload = "mlp", hidden = "512,512", strategy = "ddp";
  int batchSize = 64;
  int nGpus = 1;
  std::optional<double> bucketMb;  // ddp only
  std::optional<int> microbatches;  // pipeline only
  PredictionProfile profile;
  PredictionAllreduce allreduce;
  // Predicted, in seconds: the step, its compute (the profile's at this N), one rank's step alone
  // (the efficiency's base), every allreduce's time and the exposed part (step - compute).
  // A pipeline: computeS is the busiest stage's, exposedS its idle time, commS 0.
  double stepS = 0, computeS = 0, aloneS = 0, commS = 0, exposedS = 0;
  double efficiency = 1;  // aloneS / stepS; a pipeline, whose S ranks share one batch: aloneS / (S x stepS)
  std::optional<double> bubble;  // a pipeline: the stages' mean idle share of the step
  double samplesPerS = 0;  // nGpus x batchSize / stepS
  int allreduces = 0;      // the step's allreduce calls (buckets)
  bool bestBucket = false;  // ddp: the best of the caps predicted at this N (two or more given)
  nlohmann::json extra = nlohmann::json::object();

  // "predict ddp resnet50 batch=32 N=16 bucket=25" ("... M=4" for a pipeline): what compare and
  // report call the point.
  std::string label() const;
  nlohmann::json toJson() const;
  // Throws UsageError naming the field (predictions[i].step_s: ...) for a wrong type or range.
  static PredictionRecord fromJson(const JsonIn& in);
};

}  // namespace tpb
