// workload/model.h — the canonical model every strategy trains (an MLP, 784-512-512-10 by
// default), its deterministic initialisation, and flat storage for its gradients and weights.
//
// Why deterministic init matters: the core correctness property of tpbench is that every strategy
// ends with the same parameters as single-device training at the equivalent global batch. That
// only holds if every rank (and the single-device reference) starts from bit-identical weights,
// so makeModel() draws them from tpbench's own platform-stable PRNG (SplitMix64) instead of
// LibTorch's global generator; the same seed gives the same weights in every process, on every
// machine and under LibTorch 1.13 and 2.x alike.
//
// Why flat storage: communication wants one contiguous buffer (one send, one allreduce), not one
// small tensor per layer. FlatGrads is PyTorch DDP's gradient_as_bucket_view: each parameter's
// .grad() aliases a slice of one float32 buffer, so backward() accumulates straight into it and
// no copy is needed before or after the allreduce. FlatParams does the same for the weights
// themselves (the parameter server sends all weights as one buffer).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "workload/train_config.h"

namespace tpb {

// What every strategy trains: a module mapping a batch of inputs to outputs, with its task's loss
// and score. The MLP below and workload/network.h's networks (--workload).
class TrainableImpl : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // Cross-entropy of `output` against `targets`: the batch's mean, or its sum when `sum`. A
  // classifier scores one class per sample; a language model one token per position.
  virtual torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets, bool sum = false);
  // How many of the predictions (arg-max over the last dimension) equal `targets`: a 0-dim int64
  // tensor on output's device; targets.numel() predictions were made.
  torch::Tensor correct(const torch::Tensor& output, const torch::Tensor& targets);
  // The parameters in the order gradients are laid out in flat buffers (it must never change).
  virtual std::vector<torch::Tensor> orderedParameters() { return parameters(/*recurse=*/true); }
  // The names a checkpoint gives orderedParameters() and buffers(), in the same orders: the
  // state_dict names of the PyTorch module that loads it (named_parameters()'s and
  // named_buffers()'s here).
  virtual std::vector<std::string> parameterNames();
  virtual std::vector<std::string> bufferNames();

  // What model parallelism (workload/stages.h) cuts into stages: units run one after another,
  // the MLP's Linear layers or a network's blocks, whose parameters in unit order are
  // orderedParameters().
  virtual std::size_t unitCount() const = 0;
  virtual torch::nn::Module& unit(std::size_t i) = 0;
  // Units [begin, end) in order, each on the previous one's output.
  virtual torch::Tensor forwardUnits(torch::Tensor x, std::size_t begin, std::size_t end) = 0;
  // A parameter that unit `user` uses besides unit `owner`, which registers it (GPT's LM head
  // multiplies by the token embedding's weight): listed once, under its owner.
  struct Tie {
    std::size_t owner, user;
    torch::Tensor weight;
  };
  virtual std::vector<Tie> ties() { return {}; }
};
using Trainable = std::shared_ptr<TrainableImpl>;

// Linear layers with ReLU between them; forward() returns logits (no softmax). Submodules are
// registered as "fc0", "fc1", ... so parameters() lists fc0.weight, fc0.bias, fc1.weight, ...
class MlpImpl : public TrainableImpl {
 public:
  explicit MlpImpl(const ModelConfig& config);
  torch::Tensor forward(torch::Tensor x) override { return forwardUnits(x, 0, layers_.size()); }
  std::size_t unitCount() const override { return layers_.size(); }
  torch::nn::Module& unit(std::size_t i) override { return *layers_.at(i); }
  // Layers [begin, end), each followed by a ReLU but the output layer.
  torch::Tensor forwardUnits(torch::Tensor x, std::size_t begin, std::size_t end) override;
  // nn.Sequential's names for the same MLP (Linear, ReLU, Linear, ...): 0.weight, 0.bias, 2.weight, ...
  std::vector<std::string> parameterNames() override;
  const ModelConfig& config() const { return config_; }

 private:
  ModelConfig config_;
  std::vector<torch::nn::Linear> layers_;
};
TORCH_MODULE(Mlp);

// Builds the MLP on the CPU with weights drawn from SplitMix64(seed), using PyTorch's default
// Linear init distributions: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (what
// kaiming_uniform_(a=sqrt(5)) gives for the weight). Bit-identical for the same seed everywhere.
// Throws tpb::UsageError if a width is not positive.
Mlp makeModel(const ModelConfig& config, std::uint64_t seed);

// The parameters in registration order (fc0.weight, fc0.bias, fc1.weight, ...): the order every
// strategy uses to lay gradients out in buffers, so it must never change.
std::vector<torch::Tensor> orderedParameters(Mlp& model);

// Total number of scalars.
std::size_t parameterCount(const std::vector<torch::Tensor>& params);
std::size_t parameterCount(Mlp& model);

// One contiguous float32 buffer laid out as `params` in order (parameter i's slice starts at
// offset(i)): what FlatGrads and FlatParams share. Requires float32, contiguous parameters on
// one device; build it after moving the model to its device.
class FlatLayout {
 public:
  float* data();  // the buffer (device memory when the parameters are on a GPU)
  std::size_t count() const { return count_; }
  torch::Tensor flat() { return flat_; }  // 1-D, count() elements
  // Element offset of parameter `paramIndex`'s slice in the buffer.
  std::size_t offset(std::size_t paramIndex) const;

 protected:
  FlatLayout(const std::vector<torch::Tensor>& params, const char* what);
  // A tensor shaped like parameter i that shares the buffer's storage at its slice.
  torch::Tensor slice(std::size_t i) const;
  // True if `t` is parameter i's slice of the buffer (same data pointer, sizes and strides).
  bool isSlice(const torch::Tensor& t, std::size_t i) const;

  std::vector<torch::Tensor> params_;
  std::vector<std::size_t> offsets_;  // params_.size() + 1 entries
  std::size_t count_ = 0;
  torch::Tensor flat_;
};

// The gradients of `params` in one buffer; afterwards each p.grad() aliases its slice, so
// backward() accumulates into the buffer in place (autograd adds into an existing grad in place
// when not building a double-backward graph).
//
// The slices are plain tensors sharing the buffer's storage, not autograd views: optimizers call
// grad.detach_() in zero_grad(), which LibTorch refuses on views (the error DDP users see with
// gradient_as_bucket_view). Do not let anything set the grads to undefined
// (Optimizer::zero_grad() does in LibTorch 2.x by default): use zero() instead, which also
// re-attaches any grad that was replaced or reset.
class FlatGrads : public FlatLayout {
 public:
  explicit FlatGrads(const std::vector<torch::Tensor>& params);
  // Zeroes the buffer in place and re-points any parameter's grad that no longer aliases it.
  void zero();
  // True if every parameter's grad still aliases its slice of the buffer.
  bool attached() const;
};

// The parameter values in one buffer; afterwards each parameter (same TensorImpl, so modules
// and optimizers keep working) aliases its slice via set_data(), and in-place updates such as
// optimizer steps write straight into the buffer. The current values are copied in.
class FlatParams : public FlatLayout {
 public:
  explicit FlatParams(const std::vector<torch::Tensor>& params);
  // True if every parameter still aliases its slice of the buffer.
  bool attached() const;
};

}  // namespace tpb
