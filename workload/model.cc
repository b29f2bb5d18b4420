// workload/model.cc — the MLP, its deterministic initialisation, FlatGrads and FlatParams.
#include "workload/model.h"

#include <torch/torch.h>

#include <cmath>

#include "common/error.h"
#include "workload/sampler.h"

// Bit-identical results on every machine need each float operation rounded as written, never
// fused into a multiply-add: GCC does not contract in ISO mode (-std=c++17, as tpbench builds);
// clang contracts by default where FMA exists (e.g. -march=native), so tell it not to.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tpb {

MlpImpl::MlpImpl(const ModelConfig& config) : config_(config) {
  if (config.inputs <= 0 || config.classes <= 0) {
    TPB_THROW(UsageError, "model: inputs (" << config.inputs << ") and classes (" << config.classes
                                            << ") must be positive");
  }
  int in = config.inputs;
  std::vector<int> outs = config.hidden;
  outs.push_back(config.classes);
  for (std::size_t i = 0; i < outs.size(); ++i) {
    if (outs[i] <= 0) TPB_THROW(UsageError, "model: hidden layer width " << outs[i] << " must be positive");
    layers_.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(in, outs[i])));
    in = outs[i];
  }
}

torch::Tensor MlpImpl::forwardUnits(torch::Tensor x, std::size_t begin, std::size_t end) {
  TPB_CHECK(begin <= end && end <= layers_.size(), "layers [" << begin << ", " << end << ") of " << layers_.size());
  for (std::size_t i = begin; i < end; ++i) {
    x = layers_[i]->forward(x);
    if (i + 1 < layers_.size()) x = torch::relu(x);
  }
  return x;
}

std::vector<std::string> MlpImpl::parameterNames() {
  std::vector<std::string> names;
  for (std::size_t l = 0; l < layers_.size(); ++l)
    for (const char* what : {".weight", ".bias"}) names.push_back(std::to_string(2 * l) + what);
  return names;
}

Mlp makeModel(const ModelConfig& config, std::uint64_t seed) {
  Mlp model(config);
  // Overwrite LibTorch's initialisation (drawn from its global generator) with values from our
  // own stream: fc0.weight row-major, fc0.bias, fc1.weight, ... all from one SplitMix64.
  SplitMix64 g(mixSeed(seed, 0x4D4C50 /* "MLP" */));
  torch::NoGradGuard noGrad;
  for (auto& module : model->children()) {
    auto* linear = module->as<torch::nn::Linear>();
    TPB_CHECK(linear != nullptr, "MLP child is not a Linear layer");
    const auto fanIn = linear->weight.size(1);
    const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fanIn)));
    for (torch::Tensor* t : {&linear->weight, &linear->bias}) {
      auto cpu = torch::empty(t->sizes(), torch::kFloat32);
      float* p = cpu.data_ptr<float>();
      for (std::int64_t i = 0; i < cpu.numel(); ++i) p[i] = bound * (2.0f * g.uniform() - 1.0f);
      t->copy_(cpu);
    }
  }
  return model;
}

torch::Tensor TrainableImpl::loss(const torch::Tensor& output, const torch::Tensor& targets, bool sum) {
  namespace F = torch::nn::functional;
  auto options = F::CrossEntropyFuncOptions();
  if (sum) options.reduction(torch::kSum);
  if (output.dim() == 2) return F::cross_entropy(output, targets, options);
  return F::cross_entropy(output.reshape({-1, output.size(-1)}), targets.reshape({-1}), options);
}

std::vector<std::string> TrainableImpl::parameterNames() { return named_parameters(/*recurse=*/true).keys(); }

std::vector<std::string> TrainableImpl::bufferNames() { return named_buffers(/*recurse=*/true).keys(); }

torch::Tensor TrainableImpl::correct(const torch::Tensor& output, const torch::Tensor& targets) {
  return output.argmax(-1).eq(targets).sum();
}

std::vector<torch::Tensor> orderedParameters(Mlp& model) { return model->parameters(/*recurse=*/true); }

std::size_t parameterCount(const std::vector<torch::Tensor>& params) {
  std::size_t n = 0;
  for (const auto& p : params) n += static_cast<std::size_t>(p.numel());
  return n;
}

std::size_t parameterCount(Mlp& model) { return parameterCount(orderedParameters(model)); }

namespace {

// Offsets of each parameter in a flat buffer (size()+1 entries), after checking the parameters
// can live in one float32 buffer.
std::vector<std::size_t> layOut(const std::vector<torch::Tensor>& params, const char* what) {
  TPB_CHECK(!params.empty(), what << ": no parameters");
  std::vector<std::size_t> offsets{0};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    TPB_CHECK(p.defined(), what << ": parameter " << i << " is undefined");
    TPB_CHECK(p.scalar_type() == torch::kFloat32, what << ": parameter " << i << " is not float32");
    TPB_CHECK(p.is_contiguous(), what << ": parameter " << i << " is not contiguous");
    TPB_CHECK(p.device() == params[0].device(), what << ": parameters are on different devices");
    offsets.push_back(offsets.back() + static_cast<std::size_t>(p.numel()));
  }
  return offsets;
}

// A tensor of p's shape that shares `flat`'s storage at element `offset`. Deliberately a plain
// tensor rather than a narrow().view(): autograd views refuse the detach_() that optimizers'
// zero_grad() performs on grads.
torch::Tensor aliasOf(const torch::Tensor& flat, std::size_t offset, const torch::Tensor& p) {
  torch::NoGradGuard noGrad;
  auto t = torch::empty({0}, flat.options());
  t.set_(flat.storage(), flat.storage_offset() + static_cast<std::int64_t>(offset), p.sizes(),
         p.strides());
  return t;
}

bool aliases(const torch::Tensor& t, const float* where, const torch::Tensor& p) {
  return t.defined() && t.data_ptr() == static_cast<const void*>(where) && t.sizes() == p.sizes() &&
         t.strides() == p.strides();
}

}  // namespace

FlatLayout::FlatLayout(const std::vector<torch::Tensor>& params, const char* what)
    : params_(params), offsets_(layOut(params, what)), count_(offsets_.back()) {}

float* FlatLayout::data() { return flat_.data_ptr<float>(); }

std::size_t FlatLayout::offset(std::size_t paramIndex) const {
  TPB_CHECK(paramIndex < params_.size(), "parameter index " << paramIndex << " of " << params_.size());
  return offsets_[paramIndex];
}

torch::Tensor FlatLayout::slice(std::size_t i) const { return aliasOf(flat_, offsets_[i], params_[i]); }

bool FlatLayout::isSlice(const torch::Tensor& t, std::size_t i) const {
  return aliases(t, flat_.data_ptr<float>() + offsets_[i], params_[i]);
}

FlatGrads::FlatGrads(const std::vector<torch::Tensor>& params) : FlatLayout(params, "FlatGrads") {
  flat_ = torch::zeros({static_cast<std::int64_t>(count_)}, params[0].options().requires_grad(false));
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].mutable_grad() = slice(i);
}

void FlatGrads::zero() {
  torch::NoGradGuard noGrad;
  flat_.zero_();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!isSlice(params_[i].grad(), i)) params_[i].mutable_grad() = slice(i);
  }
}

bool FlatGrads::attached() const {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!isSlice(params_[i].grad(), i)) return false;
  }
  return true;
}

FlatParams::FlatParams(const std::vector<torch::Tensor>& params) : FlatLayout(params, "FlatParams") {
  torch::NoGradGuard noGrad;
  flat_ = torch::empty({static_cast<std::int64_t>(count_)}, params[0].options().requires_grad(false));
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto mine = slice(i);
    mine.copy_(params_[i].detach());
    // set_data keeps the parameter's TensorImpl (and autograd identity), so modules and
    // optimizers that hold it see the new storage.
    params_[i].set_data(mine);
  }
}

bool FlatParams::attached() const {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!isSlice(params_[i], i)) return false;
  }
  return true;
}

}  // namespace tpb
