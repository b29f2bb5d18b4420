// workload/stage_model.cc — one rank's stage of a model: its units, their shapes at the
// boundaries, and the weights it shares with another stage.
#include "workload/stage_model.h"

#include <torch/torch.h>

#include <algorithm>

#include "common/error.h"
#include "workload/network.h"

namespace tpb {

namespace {

// S+1 offsets of the stages' slices in the whole model's flat order.
std::vector<std::size_t> offsetsOf(TrainableImpl& whole, const std::vector<int>& bounds) {
  std::vector<std::size_t> offsets{0};
  for (std::size_t r = 0; r + 1 < bounds.size(); ++r) {
    std::size_t n = 0;
    for (int u = bounds[r]; u < bounds[r + 1]; ++u) n += parameterCount(whole.unit(u).parameters());
    offsets.push_back(offsets.back() + n);
  }
  return offsets;
}

// Where `w` starts in `params` laid out one after another.
std::size_t offsetIn(const std::vector<torch::Tensor>& params, const torch::Tensor& w) {
  std::size_t at = 0;
  for (const auto& p : params) {
    if (p.is_same(w)) return at;
    at += static_cast<std::size_t>(p.numel());
  }
  TPB_THROW(Error, "a tied weight is not among the parameters");
}

}  // namespace

StageModel::StageModel(const TrainConfig& cfg, const std::vector<int>& bounds, int stage, const torch::Tensor& sample,
                       torch::Device device)
    : whole_(makeTrainable(cfg)), stage_(stage), first_(bounds.at(stage)), end_(bounds.at(stage + 1)) {
  TPB_CHECK(bounds.back() == static_cast<int>(whole_->unitCount()),
            "stage bounds end at unit " << bounds.back() << " of " << whole_->unitCount());
  learnShapes(sample);
  stageOffsets_ = offsetsOf(*whole_, bounds);
  linkTies(bounds);
  takeUnits(device);
  flat = std::make_unique<FlatParams>(params_);
  grads = std::make_unique<FlatGrads>(params_);
  sgd = std::make_unique<FlatSgd>(cfg.lr, cfg.momentum, flat->flat());
  for (TiedLink& l : ties_) l.offset = offsetIn(params_, l.weight);
}

void StageModel::learnShapes(const torch::Tensor& sample) {
  torch::NoGradGuard noGrad;
  whole_->eval();  // BatchNorm's running statistics stay as they are
  torch::Tensor x = sample;
  for (std::size_t u = 0;; ++u) {
    TPB_CHECK(u == 0 || x.scalar_type() == torch::kFloat32, "unit " << u - 1 << "'s output is not float32");
    shapes_.push_back(x.sizes().slice(1).vec());
    boundaryBytes_.push_back(static_cast<double>(x.numel() * x.element_size()) / static_cast<double>(x.size(0)));
    if (u == whole_->unitCount()) break;
    x = whole_->forwardUnits(x, u, u + 1);
  }
  whole_->train();
}

// Every tie with one end on this stage and the other on another.
void StageModel::linkTies(const std::vector<int>& bounds) {
  auto stageOf = [&](std::size_t unit) {
    return static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), static_cast<int>(unit)) - bounds.begin()) - 1;
  };
  const std::vector<torch::Tensor> order = whole_->orderedParameters();
  for (const auto& tie : whole_->ties()) {
    const int owner = stageOf(tie.owner), user = stageOf(tie.user);
    if (owner == user || (stage_ != owner && stage_ != user)) continue;
    ties_.push_back({tie.weight, stage_ == owner ? user : owner, stage_ == owner, 0,
                     static_cast<std::size_t>(tie.weight.numel()), offsetIn(order, tie.weight)});
  }
}

bool StageModel::tiedHere(const torch::Tensor& w) const {
  for (const TiedLink& l : ties_)
    if (l.weight.is_same(w)) return true;
  return false;
}

// Moves this stage's units to `device` and lists their parameters, then the weights it uses from
// another stage's units; the parameters of every other unit are released.
void StageModel::takeUnits(torch::Device device) {
  torch::NoGradGuard noGrad;
  for (int u = first_; u < end_; ++u) {
    whole_->unit(u).to(device);
    for (const auto& p : whole_->unit(u).parameters()) params_.push_back(p);
  }
  for (TiedLink& l : ties_) {
    if (l.ownedHere) continue;
    l.weight.set_data(l.weight.to(device));
    params_.push_back(l.weight);
  }
  for (std::size_t u = 0; u < whole_->unitCount(); ++u) {
    if (ownsUnit(u)) continue;
    for (auto& p : whole_->unit(u).parameters())
      if (!tiedHere(p)) p.set_data(torch::empty({0}, p.options()));
  }
}

torch::Tensor StageModel::forward(const torch::Tensor& x) { return whole_->forwardUnits(x, first_, end_); }

void StageModel::step() {
  torch::Tensor w = flat->flat();
  sgd->step(w, grads->flat());
}

std::vector<std::int64_t> StageModel::withRows(std::int64_t rows, int boundary) const {
  std::vector<std::int64_t> shape{rows};
  const auto& s = shapes_.at(boundary);
  shape.insert(shape.end(), s.begin(), s.end());
  return shape;
}

double StageModel::boundaryBytesPerRow() const {
  double bytes = 0;
  for (int b = first_; b <= end_; ++b) bytes += boundaryBytes_[b];
  return bytes;
}

void StageModel::loadFromWhole(torch::Tensor dst, const std::vector<float>& whole) const {
  TPB_CHECK(whole.size() == stageOffsets_.back(), "checkpoint: " << whole.size() << " values for a model of "
                                                                 << stageOffsets_.back());
  torch::NoGradGuard noGrad;
  auto part = [&](std::size_t from, std::size_t at, std::size_t n) {
    const auto len = static_cast<std::int64_t>(n);
    dst.narrow(0, static_cast<std::int64_t>(at), len)
        .copy_(torch::from_blob(const_cast<float*>(whole.data()) + from, {len}, torch::kFloat32));
  };
  part(stageOffsets_[stage_], 0, ownCount());
  for (const TiedLink& l : ties_)
    if (!l.ownedHere) part(l.wholeOffset, l.offset, l.count);
}

void StageModel::sumTiedGradients(Transport& t) {
  torch::NoGradGuard noGrad;
  for (const TiedLink& l : ties_) {
    torch::Tensor mine = grads->flat().narrow(0, static_cast<std::int64_t>(l.offset), static_cast<std::int64_t>(l.count));
    torch::Tensor theirs = torch::empty_like(mine);
    const std::size_t bytes = l.count * sizeof(float);
    t.sendRecv(l.peer, mine.data_ptr<float>(), bytes, l.peer, theirs.data_ptr<float>(), bytes);
    mine.add_(theirs);  // both stages add the same two values: the same sum
  }
}

std::vector<torch::Tensor> StageModel::buffers() {
  std::vector<torch::Tensor> out;
  for (int u = first_; u < end_; ++u)
    for (const auto& b : whole_->unit(u).buffers()) out.push_back(b);
  return out;
}

}  // namespace tpb
