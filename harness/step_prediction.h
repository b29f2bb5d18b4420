// harness/step_prediction.h — `tpbench predict`: measures one rank's training step of a workload
// on this CPU (workload/step_profile.h), or builds it from the workload's FLOPs on a GPU preset,
// takes an allreduce's α-β (fitted across N from collective results files, or published link
// presets, within and between nodes), and prints the step model's prediction
// (cost_model/step_model.h) per N and bucket size: step time, communication, what of it stays
// exposed, scaling efficiency, and the best bucket per N. What is measured, what is taken from a
// preset and what is predicted are said apart; with --out each row is also a record
// (predictions[] of a results file, record/prediction_record.h) with what it was predicted from.
#pragma once

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

namespace tpb {

struct PredictOptions {
  std::string workload = "mlp";
  std::string hidden = "512,512";
  int batchSize = 64;
  bool batchGiven = false;  // --batch_size was given (else the output says batch is the default)
  std::string strategy = "ddp";  // ddp (buckets overlap backward); ring_all_reduce, allreduce (after it); pipeline
  std::vector<int> microbatches;  // pipeline: micro-batches per step to predict ("": 4)
  std::vector<int> ns = {2, 4, 8};
  std::vector<double> bucketMb = {1, 5, 25};
  std::vector<std::string> collectives;  // results files with allreduce points to fit α-β from
  std::string algo;                      // the allreduce algorithm fitted; "": the strategy's own
  std::string link;                      // a link preset instead of collectives
  // Across nodes: above gpusPerNode ranks the ring runs over interLink, whose nicsPerNode ports
  // (0: one per GPU) carry a node's share of every ring together. "": one link for every N.
  std::string interLink;
  int gpusPerNode = 8;
  int nicsPerNode = 0;
  // A GPU preset: its step from the workload's FLOPs at mfu of its peak (the user's figure: no
  // default), nothing measured here.
  std::string gpu;
  double mfu = NAN;
  int warmup = 3, steps = 20;
  unsigned long long seed = 1;
  std::string out;         // a results file for the predictions; "": none
  bool overwrite = false;  // replace a results file at `out`
  std::string command;     // the command line, for the file's meta
};

// The allreduce algorithm whose α-β a strategy's gradients go through on the CPU: ddp and
// allreduce reduce with the collective library (`library`), ring_all_reduce with `ring`
// (pipeline has none: runPredict predicts it from its stages' compute alone).
// Throws UsageError naming --strategy for one the model does not cover.
std::string allreduceAlgoOf(const std::string& strategy);

// Throws UsageError (one line naming the flag or file) before measuring anything.
int runPredict(const PredictOptions& opt, std::ostream& os);

}  // namespace tpb
