// workload/network.h — networks beyond the MLP: a ResNet-style CNN, a decoder-only transformer
// language model (GPT-2's layout) and a transformer encoder (BERT's layout), each built from a
// spec of kind and sizes, plus presets with the layer shapes of the published architectures.
//
// A network is an ordered list of blocks and its forward runs them in order, so a pipeline can
// cut it into stages by block ranges (as workload/stages.h cuts the MLP by layers). Blocks:
//   resnet: stem (conv, norm, ReLU[, max-pool]), one block per residual block, head (global
//           average pool, Linear to the classes);
//   gpt:    embeddings (token + position), one block per decoder layer, head (final LayerNorm and
//           the LM head, which multiplies by the token embedding's weight: tied);
//   bert:   embeddings (token + position + token type, LayerNorm), one block per encoder layer,
//           head (pooler: Linear + tanh on the first token, then a Linear classifier).
// Inputs: resnet takes float32 images [B, C, H, W] and returns logits [B, classes]; gpt takes
// int64 tokens [B, T] and returns next-token logits [B, T, vocab]; bert takes int64 tokens
// [B, T] and returns class logits [B, classes]. No dropout anywhere: it adds no parameters and
// would make runs depend on LibTorch's generator.
//
// Weights are drawn from SplitMix64 like makeModel()'s (workload/model.h): one stream, parameter
// after parameter in registration order, each row-major, so the same seed gives bit-identical
// weights in every process and a Python rebuild can draw the same values.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "workload/model.h"
#include "workload/network_spec.h"

namespace tpb {

class SplitMix64;

// One block of a network: a module whose forward maps the previous block's output to its own.
class NetworkBlock : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // Draws this block's parameters from `g` in registration order (see the file comment).
  virtual void initialize(SplitMix64& g) = 0;
};

class NetworkImpl : public TrainableImpl {
 public:
  explicit NetworkImpl(const NetworkSpec& spec);  // throws UsageError if networkProblem() says so
  torch::Tensor forward(torch::Tensor x) override { return forwardBlocks(x, 0, blockCount()); }
  // Blocks [begin, end) in order: what one pipeline stage runs.
  torch::Tensor forwardBlocks(torch::Tensor x, std::size_t begin, std::size_t end);
  std::size_t blockCount() const { return blocks_.size(); }
  NetworkBlock& block(std::size_t i) { return *blocks_.at(i); }
  const NetworkSpec& spec() const { return spec_; }
  // nn.Sequential's names for the same blocks, as scripts/torch_ddp.py builds them:
  // "0.conv1.weight", ..., "1.bn1.running_mean", ...
  std::vector<std::string> parameterNames() override { return blockNames(/*buffers=*/false); }
  std::vector<std::string> bufferNames() override { return blockNames(/*buffers=*/true); }
  // A pipeline stage's units are the blocks; gpt's head is tied to block 0's token embedding.
  std::size_t unitCount() const override { return blockCount(); }
  torch::nn::Module& unit(std::size_t i) override { return block(i); }
  torch::Tensor forwardUnits(torch::Tensor x, std::size_t begin, std::size_t end) override {
    return forwardBlocks(x, begin, end);
  }
  std::vector<Tie> ties() override { return ties_; }

 private:
  void add(std::shared_ptr<NetworkBlock> block);
  std::vector<std::string> blockNames(bool buffers);
  NetworkSpec spec_;
  std::vector<std::shared_ptr<NetworkBlock>> blocks_;
  std::vector<Tie> ties_;
};
TORCH_MODULE(Network);

// Builds `spec` on the CPU with weights from SplitMix64(seed). Initial distributions: resnet as
// torchvision (conv: Kaiming normal, fan_out, ReLU gain; norm: weight 1, bias 0; the final
// Linear: PyTorch's default U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias); gpt as
// GPT-2 (Linear and embedding weights N(0, 0.02), biases 0, LayerNorm 1 and 0, the residual
// output projections N(0, 0.02/sqrt(2 layers))); bert as BERT (initializer_range 0.02: Linear and
// embedding weights N(0, 0.02), biases 0, LayerNorm 1 and 0). Normal draws are a sum of six
// uniforms (bounded at 4.2 sigma), made of integer arithmetic so they are the same everywhere.
Network makeNetwork(const NetworkSpec& spec, std::uint64_t seed);

// The parameters in registration order: block 0's, then block 1's, ... The order gradients are
// laid out in (FlatGrads); it must never change. The tied LM head is listed once, as the token
// embedding's weight in block 0 (the head block holds it without registering it).
std::vector<torch::Tensor> orderedParameters(Network& network);

// What a run of `cfg` trains (--workload): the MLP (makeModel) or a network (makeNetwork), from
// cfg.seed, on the CPU.
struct TrainConfig;
Trainable makeTrainable(const TrainConfig& cfg);

}  // namespace tpb
