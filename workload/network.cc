// workload/network.cc — network specs and presets, the block-list network, its deterministic
// initialisation, and its cost from the spec.
#include "workload/network.h"

#include <torch/torch.h>

#include <sstream>

#include "common/error.h"
#include "workload/network_blocks.h"
#include "workload/sampler.h"

namespace tpb {

std::vector<int> resnetStageBlocks(int depth, bool& bottleneck) {
  bottleneck = depth >= 50;
  switch (depth) {
    case 10: return {1, 1, 1, 1};
    case 18: return {2, 2, 2, 2};
    case 34: return {3, 4, 6, 3};
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
    default: TPB_THROW(UsageError, "resnet depth " << depth << " is not one of 10, 18, 34, 50, 101, 152");
  }
}

namespace {

NetworkSpec resnetPreset(const std::string& name, int depth) {
  NetworkSpec s;
  s.kind = NetworkKind::Resnet;
  s.name = name;
  s.resnet.stageBlocks = resnetStageBlocks(depth, s.resnet.bottleneck);
  return s;  // the other ResnetSpec defaults are ImageNet's
}

NetworkSpec transformerPreset(const std::string& name, NetworkKind kind, int layers, int hidden, int heads) {
  NetworkSpec s;
  s.kind = kind;
  s.name = name;
  auto& t = s.transformer;
  t.layers = layers;
  t.hidden = hidden;
  t.heads = heads;
  t.vocab = kind == NetworkKind::Bert ? 30522 : 50257;
  t.positions = t.seqLen = kind == NetworkKind::Bert ? 512 : 1024;
  return s;
}

}  // namespace

const std::vector<std::string>& networkPresetNames() {
  static const std::vector<std::string> names{"resnet18", "resnet50", "bert-base", "bert-large", "gpt2-small",
                                              "gpt2-medium"};
  return names;
}

NetworkSpec networkPreset(const std::string& name) {
  if (name == "resnet18") return resnetPreset(name, 18);
  if (name == "resnet50") return resnetPreset(name, 50);
  if (name == "bert-base") return transformerPreset(name, NetworkKind::Bert, 12, 768, 12);
  if (name == "bert-large") return transformerPreset(name, NetworkKind::Bert, 24, 1024, 16);
  if (name == "gpt2-small") return transformerPreset(name, NetworkKind::Gpt, 12, 768, 12);
  if (name == "gpt2-medium") return transformerPreset(name, NetworkKind::Gpt, 24, 1024, 16);
  std::ostringstream known;
  for (const auto& n : networkPresetNames()) known << (known.tellp() > 0 ? ", " : "") << n;
  TPB_THROW(UsageError, "unknown network preset '" << name << "' (known: " << known.str() << ")");
}

namespace {

std::string resnetProblem(const ResnetSpec& r) {
  std::ostringstream why;
  if (r.stageBlocks.empty() || r.stageBlocks.size() > 8) why << "a resnet needs 1 to 8 stages";
  for (int b : r.stageBlocks) {
    if (b < 1) why << "every resnet stage needs at least one block";
  }
  if (r.width < 1 || r.width > 4096) why << "resnet width " << r.width << " is not in 1..4096";
  if (r.inChannels < 1 || r.classes < 1 || r.resolution < 1) {
    why << "resnet input channels (" << r.inChannels << "), resolution (" << r.resolution << ") and classes ("
        << r.classes << ") must be positive";
  }
  return why.str();
}

std::string transformerProblem(NetworkKind kind, const TransformerSpec& t) {
  std::ostringstream why;
  if (t.layers < 1 || t.hidden < 1 || t.heads < 1 || t.ffn < 0 || t.vocab < 2 || t.positions < 1 || t.seqLen < 1) {
    why << "transformer layers, hidden, heads, positions and sequence length must be positive, vocab at least 2";
  } else if (t.hidden % t.heads != 0) {
    why << "hidden width " << t.hidden << " is not a multiple of the " << t.heads << " heads";
  } else if (t.seqLen > t.positions) {
    why << "sequence length " << t.seqLen << " exceeds the " << t.positions << " positions";
  } else if (kind == NetworkKind::Bert && (t.tokenTypes < 1 || t.classes < 1)) {
    why << "bert needs at least one token type and one class";
  }
  return why.str();
}

}  // namespace

std::string networkProblem(const NetworkSpec& spec) {
  return spec.kind == NetworkKind::Resnet ? resnetProblem(spec.resnet) : transformerProblem(spec.kind, spec.transformer);
}

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
  } else {
    add(std::make_shared<BertEmbedding>(t));
    for (int l = 0; l < t.layers; ++l) add(std::make_shared<BertLayer>(t));
    add(std::make_shared<BertHead>(t));
  }
}

void NetworkImpl::add(std::shared_ptr<NetworkBlock> block) {
  blocks_.push_back(register_module("block" + std::to_string(blocks_.size()), std::move(block)));
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

torch::Tensor networkLoss(const NetworkSpec& spec, const torch::Tensor& output, const torch::Tensor& targets) {
  namespace F = torch::nn::functional;
  if (spec.kind != NetworkKind::Gpt) return F::cross_entropy(output, targets);
  return F::cross_entropy(output.reshape({-1, output.size(-1)}), targets.reshape({-1}));
}

// ---- cost ----------------------------------------------------------------------------------------

namespace {

// Parameters, forward FLOPs and activation floats of one sample, added up layer by layer.
struct Tally {
  double params = 0, flops = 0, activations = 0;
};

// A bias-free k x k conv (padding k/2) and its norm on a size x size input; `size` becomes the
// output's. Keeps the conv's output (the norm's input) and the ReLU's (the next conv's input).
void convUnit(Tally& t, double in, double out, int k, int stride, int& size) {
  size = (size + 2 * (k / 2) - k) / stride + 1;
  const double pixels = static_cast<double>(size) * size;
  t.params += in * out * k * k + 2 * out;
  t.flops += 2 * in * out * k * k * pixels;
  t.activations += 2 * out * pixels;
}

void residualBlock(Tally& t, int in, int planes, int stride, bool bottleneck, int& size) {
  const int out = bottleneck ? 4 * planes : planes;
  int inSize = size;
  if (bottleneck) {
    convUnit(t, in, planes, 1, 1, size);
    convUnit(t, planes, planes, 3, stride, size);
    convUnit(t, planes, out, 1, 1, size);
  } else {
    convUnit(t, in, planes, 3, stride, size);
    convUnit(t, planes, planes, 3, 1, size);
  }
  if (stride != 1 || in != out) convUnit(t, in, out, 1, stride, inSize);
  t.activations += static_cast<double>(out) * size * size;  // the block's output ReLU
}

Tally resnetTally(const ResnetSpec& r) {
  Tally t;
  int size = r.resolution;
  t.activations += static_cast<double>(r.inChannels) * size * size;
  convUnit(t, r.inChannels, r.width, r.imagenetStem ? 7 : 3, r.imagenetStem ? 2 : 1, size);
  if (r.imagenetStem) size = (size + 2 - 3) / 2 + 1;
  int in = r.width;
  for (std::size_t s = 0; s < r.stageBlocks.size(); ++s) {
    for (int b = 0; b < r.stageBlocks[s]; ++b) {
      residualBlock(t, in, r.width << s, s > 0 && b == 0 ? 2 : 1, r.bottleneck, size);
      in = r.bottleneck ? 4 * (r.width << s) : r.width << s;
    }
  }
  t.params += static_cast<double>(in) * r.classes + r.classes;
  t.flops += 2.0 * in * r.classes;
  t.activations += in;
  return t;
}

// One transformer layer (GPT-2's and BERT's have the same shapes): Q, K, V and output
// projections 4H^2 + 4H, two norms 4H, the FFN 2HF + F + H.
Tally transformerLayers(const TransformerSpec& s) {
  const double h = s.hidden, f = s.ffnWidth(), t = s.seqLen, layers = s.layers;
  Tally x;
  x.params = layers * (4 * h * h + 2 * h * f + 9 * h + f);
  x.flops = layers * (2 * t * (4 * h * h + 2 * h * f) + 4 * t * t * h);  // + QK^T and AV
  x.activations = layers * t * (8 * h + 2 * f + s.heads * t);
  return x;
}

Tally transformerTally(NetworkKind kind, const TransformerSpec& s) {
  Tally x = transformerLayers(s);
  const double h = s.hidden, t = s.seqLen, v = s.vocab;
  if (kind == NetworkKind::Gpt) {
    x.params += (v + s.positions) * h + 2 * h;  // embeddings and ln_f; the head is tied
    x.flops += 2 * t * h * v;
    x.activations += t * (3 * h + v);  // embedding sum, ln_f's input and output, log-probabilities
  } else {
    x.params += (v + s.positions + s.tokenTypes) * h + 2 * h + h * h + h + h * s.classes + s.classes;
    x.flops += 2 * h * h + 2 * h * s.classes;
    x.activations += t * 2 * h + 2 * h;  // embedding norm's input and output; the pooler
  }
  return x;
}

}  // namespace

NetworkCost networkCost(const NetworkSpec& spec) {
  const Tally t = spec.kind == NetworkKind::Resnet ? resnetTally(spec.resnet) : transformerTally(spec.kind, spec.transformer);
  NetworkCost c;
  c.parameters = static_cast<std::size_t>(t.params);
  c.gradientBytes = c.parameters * sizeof(float);
  c.forwardFlops = t.flops;
  c.trainFlops = 3 * t.flops;
  c.activationBytes = t.activations * sizeof(float);
  return c;
}

}  // namespace tpb
