// workload/stage_model.h — one rank's stage of a model cut by workload/stages.h: units
// [bounds[s], bounds[s+1]) of what --workload trains (the MLP's layers, a network's blocks:
// TrainableImpl::unitCount), taken from the whole model built from the seed so that their weights
// are the ones `single` starts from, with the stage's flat parameters, gradients and optimizer,
// the shapes of the activations that cross its boundaries, and the weights tied across stages.
//
// A weight tied across stages (GPT's token embedding, which its LM head multiplies by) is held
// by both stages that use it, as Megatron-LM does: the owner's stage (the embeddings, stage 0)
// as one of its parameters, the user's (the head, the last stage) as an extra parameter at the
// end of its flat buffer, outside its slice of the whole model's order. After every step's
// backward the two swap the weight's gradient and each adds the other's; float addition
// commutes, so both hold the same sum — the gradient `single` accumulates into its one weight —
// apply the same update and keep the same weight. Per step that moves the weight's size (vocab x
// hidden floats) each way between the first and the last stage.
//
// Inputs never cross stages: every rank loads the data; the first stage gathers a micro-batch's
// inputs (images or int64 tokens), the last its labels. What crosses is float32 activations and
// their gradients, shaped [rows, per-sample shape at the boundary].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "workload/train.h"

namespace tpb {

class StageModel {
 public:
  // Stage `stage` of `bounds` (S+1 unit indices) on `device`; `sample` (one input on the CPU)
  // is run through the whole model once, in eval mode without gradients, to learn the shapes.
  StageModel(const TrainConfig& cfg, const std::vector<int>& bounds, int stage, const torch::Tensor& sample,
             torch::Device device);
  torch::Tensor forward(const torch::Tensor& x);
  // The model's loss (the last stage's): TrainableImpl::loss.
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) { return whole_->loss(output, targets); }
  void step();

  // The float32 activations this stage receives from stage-1 and sends to stage+1, for `rows`.
  std::vector<std::int64_t> inputShape(std::int64_t rows) const { return withRows(rows, first_); }
  std::vector<std::int64_t> outputShape(std::int64_t rows) const { return withRows(rows, end_); }
  // Bytes a sample leaves held for backward at the stage's boundaries: each unit's input and the
  // stage's output (what autograd keeps inside a unit comes on top).
  double boundaryBytesPerRow() const;

  // Where every stage's parameters sit in the whole model's flat order: S+1 offsets.
  const std::vector<std::size_t>& stageOffsets() const { return stageOffsets_; }
  // This stage's slice of the whole model's order (the tied copy it holds for another stage left
  // out), in its flat weights and momentum.
  torch::Tensor ownWeights() { return flat->flat().narrow(0, 0, ownCount()); }
  torch::Tensor ownVelocity() { return sgd->velocity().narrow(0, 0, ownCount()); }
  std::size_t ownCount() const { return stageOffsets_[stage_ + 1] - stageOffsets_[stage_]; }
  // Loads this stage's part of a whole model's flat `weights` (host, whole order) into `dst`,
  // its flat weights or momentum, tied copies included.
  void loadFromWhole(torch::Tensor dst, const std::vector<float>& whole) const;

  // After backward, before step(): sums each weight tied across stages with the other stage.
  void sumTiedGradients(Transport& t);
  bool sharesWeights() const { return !ties_.empty(); }
  // The running statistics of its units (BatchNorm's), in unit order.
  std::vector<torch::Tensor> buffers();

  std::unique_ptr<FlatParams> flat;
  std::unique_ptr<FlatGrads> grads;
  std::unique_ptr<FlatSgd> sgd;

 private:
  // A weight this stage shares with stage `peer`: its place in this stage's flat buffer and, for
  // loading, in the whole model's.
  struct TiedLink {
    torch::Tensor weight;
    int peer;
    bool ownedHere;
    std::size_t offset, count, wholeOffset;
  };
  bool ownsUnit(std::size_t u) const { return static_cast<int>(u) >= first_ && static_cast<int>(u) < end_; }
  std::vector<std::int64_t> withRows(std::int64_t rows, int boundary) const;
  void learnShapes(const torch::Tensor& sample);
  void linkTies(const std::vector<int>& bounds);
  void takeUnits(torch::Device device);
  bool tiedHere(const torch::Tensor& w) const;

  Trainable whole_;
  int stage_, first_, end_;
  std::vector<std::size_t> stageOffsets_;
  std::vector<std::vector<std::int64_t>> shapes_;  // per unit boundary, one sample's, batch dim left out
  std::vector<double> boundaryBytes_;              // one sample's, per unit boundary
  std::vector<torch::Tensor> params_;
  std::vector<TiedLink> ties_;
};

}  // namespace tpb
