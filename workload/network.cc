// workload/network.cc — network specs and presets, the block-list network, its deterministic
// initialisation, and its cost from the spec.
#include "workload/network.h"

#include <torch/torch.h>

#include <sstream>

#include "common/error.h"
#include "workload/network_blocks.h"
#include "workload/sampler.h"
#include "workload/train_config.h"

namespace tpb {

// ---- the network ---------------------------------------------------------------------------------

NetworkImpl::NetworkImpl(const NetworkSpec& spec) : spec_(spec) {
  const std::string problem = networkProblem(spec);
  if (!problem.empty()) TPB_THROW(UsageError, "network " << spec.name << ": " << problem);
  if (spec.kind == NetworkKind::Resnet) {
    const auto& r = spec.resnet;
    add(std::make_shared<ResnetStem>(r));
    int in = r.width;
    for (std::size_t s = 0; s < r.stageBlocks.size(); ++s) {
      for (int b = 0; b < r.stageBlocks[s]; ++b) {
        auto block = std::make_shared<ResidualBlock>(in, r.width << s, s > 0 && b == 0 ? 2 : 1, r.bottleneck, r.norm);
        in = block->outChannels();
        add(block);
      }
    }
    add(std::make_shared<ResnetHead>(in, r.classes));
    return;
  }
  const auto& t = spec.transformer;
  if (spec.kind == NetworkKind::Gpt) {
    auto embedding = std::make_shared<GptEmbedding>(t);
    add(embedding);
    for (int l = 0; l < t.layers; ++l) add(std::make_shared<GptLayer>(t));
    add(std::make_shared<GptHead>(t, embedding->tokenWeight()));
    ties_.push_back({0, blocks_.size() - 1, embedding->tokenWeight()});
  } else {
    add(std::make_shared<BertEmbedding>(t));
    for (int l = 0; l < t.layers; ++l) add(std::make_shared<BertLayer>(t));
    add(std::make_shared<BertHead>(t));
  }
}

void NetworkImpl::add(std::shared_ptr<NetworkBlock> block) {
  blocks_.push_back(register_module("block" + std::to_string(blocks_.size()), std::move(block)));
}

std::vector<std::string> NetworkImpl::blockNames(bool buffers) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < blocks_.size(); ++i)
    for (const std::string& key : (buffers ? blocks_[i]->named_buffers() : blocks_[i]->named_parameters()).keys())
      names.push_back(std::to_string(i) + "." + key);
  return names;
}

torch::Tensor NetworkImpl::forwardBlocks(torch::Tensor x, std::size_t begin, std::size_t end) {
  TPB_CHECK(begin <= end && end <= blocks_.size(), "blocks [" << begin << ", " << end << ") of " << blocks_.size());
  for (std::size_t i = begin; i < end; ++i) x = blocks_[i]->forward(x);
  return x;
}

Network makeNetwork(const NetworkSpec& spec, std::uint64_t seed) {
  Network network(spec);
  // One stream for the whole network (LibTorch's own init, from its global generator, is
  // overwritten), block after block: the parameter order of orderedParameters().
  SplitMix64 g(mixSeed(seed, 0x4E4554 /* "NET" */));
  for (std::size_t i = 0; i < network->blockCount(); ++i) network->block(i).initialize(g);
  return network;
}

std::vector<torch::Tensor> orderedParameters(Network& network) { return network->parameters(/*recurse=*/true); }

Trainable makeTrainable(const TrainConfig& cfg) {
  if (cfg.trainsMlp()) return makeModel(cfg.model(), cfg.seed).ptr();
  return makeNetwork(cfg.network(), cfg.seed).ptr();
}


}  // namespace tpb
