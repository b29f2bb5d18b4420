// workload/network_data.cc — synthetic images and token sequences for workload/network.h.
#include "workload/network_data.h"

#include <torch/torch.h>

#include <vector>

#include "common/error.h"
#include "workload/network_blocks.h"
#include "workload/sampler.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tpb {

namespace {

constexpr std::uint64_t kImageTag = 0x494D47;  // "IMG"
constexpr std::uint64_t kTokenTag = 0x544F4B;  // "TOK"
constexpr int kGrid = 7;                       // prototype cells per side
constexpr int kMaxShift = 2;                   // pixels a sample's pattern moves each way
constexpr int kSuccessors = 4;                 // likely next tokens per token

// ---- images --------------------------------------------------------------------------------------

// Each pixel's prototype cell along one axis after a circular shift.
std::vector<int> cellsShifted(int resolution, int shift) {
  std::vector<int> cells(static_cast<std::size_t>(resolution));
  for (int p = 0; p < resolution; ++p) {
    const int q = ((p + shift) % resolution + resolution) % resolution;
    cells[static_cast<std::size_t>(p)] = q * kGrid / resolution;
  }
  return cells;
}

Dataset makeImages(const ResnetSpec& r, std::size_t n, std::uint64_t seed, std::uint64_t split) {
  const int cellsPerClass = r.inChannels * kGrid * kGrid;
  std::vector<float> protos(static_cast<std::size_t>(r.classes) * cellsPerClass);
  SplitMix64 pg(mixSeed(seed, kImageTag));
  for (float& v : protos) v = standardNormal(pg);
  const auto res = static_cast<std::int64_t>(r.resolution);
  auto images = torch::empty({static_cast<std::int64_t>(n), r.inChannels, res, res}, torch::kFloat32);
  auto labels = torch::empty({static_cast<std::int64_t>(n)}, torch::kInt64);
  float* px = images.data_ptr<float>();
  auto* lab = labels.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < n; ++i) {
    SplitMix64 g(mixSeed(mixSeed(seed, kImageTag, split), i));
    const auto label = static_cast<std::int64_t>(g.below(static_cast<std::uint64_t>(r.classes)));
    const auto rows = cellsShifted(r.resolution, static_cast<int>(g.below(2 * kMaxShift + 1)) - kMaxShift);
    const auto cols = cellsShifted(r.resolution, static_cast<int>(g.below(2 * kMaxShift + 1)) - kMaxShift);
    lab[i] = label;
    const float* proto = protos.data() + label * cellsPerClass;
    for (int c = 0; c < r.inChannels; ++c) {
      for (int y = 0; y < r.resolution; ++y) {
        for (int x = 0; x < r.resolution; ++x) *px++ = proto[(c * kGrid + rows[y]) * kGrid + cols[x]] + standardNormal(g);
      }
    }
  }
  return Dataset{images, labels};
}

// ---- tokens --------------------------------------------------------------------------------------

// Markov chains over the vocabulary: chain k's likely successors of token v.
struct Chains {
  std::int64_t vocab = 0, classes = 0;
  bool congruent = false;  // uniform draws of chain k keep to tokens = k (mod classes)
  std::vector<std::int64_t> successors;  // [chains][vocab][kSuccessors]

  std::int64_t uniform(SplitMix64& g, std::int64_t chain) const {
    if (!congruent) return static_cast<std::int64_t>(g.below(static_cast<std::uint64_t>(vocab)));
    const auto count = (vocab - chain + classes - 1) / classes;
    return chain + classes * static_cast<std::int64_t>(g.below(static_cast<std::uint64_t>(count)));
  }
  std::int64_t next(SplitMix64& g, std::int64_t chain, std::int64_t prev) const {
    if (g.below(4) == 3) return uniform(g, chain);
    const auto k = static_cast<std::int64_t>(g.below(kSuccessors));
    return successors[static_cast<std::size_t>((chain * vocab + prev) * kSuccessors + k)];
  }
};

Chains makeChains(const TransformerSpec& t, std::int64_t chains, bool congruent, std::uint64_t seed) {
  Chains c{t.vocab, chains, congruent, {}};
  c.successors.resize(static_cast<std::size_t>(chains * t.vocab * kSuccessors));
  SplitMix64 g(mixSeed(seed, kTokenTag));
  for (auto& s : c.successors) s = static_cast<std::int64_t>(g.below(static_cast<std::uint64_t>(t.vocab)));
  return c;
}

// Sequences of `length` tokens; sample i's chain is its label (one chain: label 0).
void makeSequences(const Chains& chains, std::size_t n, int length, std::uint64_t seed, std::uint64_t split,
                   torch::Tensor& tokens, torch::Tensor& labels) {
  tokens = torch::empty({static_cast<std::int64_t>(n), length}, torch::kInt64);
  labels = torch::empty({static_cast<std::int64_t>(n)}, torch::kInt64);
  auto* tok = tokens.data_ptr<std::int64_t>();
  auto* lab = labels.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < n; ++i) {
    SplitMix64 g(mixSeed(mixSeed(seed, kTokenTag, split), i));
    const auto chain = static_cast<std::int64_t>(g.below(static_cast<std::uint64_t>(chains.classes)));
    lab[i] = chain;
    std::int64_t prev = chains.uniform(g, chain);
    for (int p = 0; p < length; ++p) {
      *tok++ = prev;
      prev = chains.next(g, chain, prev);
    }
  }
}

Dataset makeTokens(const NetworkSpec& spec, const Chains& chains, std::size_t n, std::uint64_t seed,
                   std::uint64_t split) {
  const auto& t = spec.transformer;
  torch::Tensor tokens, labels;
  if (spec.kind == NetworkKind::Bert) {
    makeSequences(chains, n, t.seqLen, seed, split, tokens, labels);
    return Dataset{tokens, labels};
  }
  makeSequences(chains, n, t.seqLen + 1, seed, split, tokens, labels);
  return Dataset{tokens.narrow(1, 0, t.seqLen).contiguous(), tokens.narrow(1, 1, t.seqLen).contiguous()};
}

}  // namespace

DataSplit makeNetworkData(const NetworkSpec& spec, std::size_t nTrain, std::size_t nTest, std::uint64_t seed) {
  const std::string problem = networkProblem(spec);
  if (!problem.empty()) TPB_THROW(UsageError, "network " << spec.name << ": " << problem);
  DataSplit data;
  data.name = "synthetic-" + spec.name;
  if (spec.kind == NetworkKind::Resnet) {
    data.train = makeImages(spec.resnet, nTrain, seed, 0);
    data.test = makeImages(spec.resnet, nTest, seed, 1);
    return data;
  }
  const auto& t = spec.transformer;
  const bool bert = spec.kind == NetworkKind::Bert;
  if (bert && t.classes > t.vocab) {
    TPB_THROW(UsageError, "network " << spec.name << ": " << t.classes << " classes need a vocabulary at least as large");
  }
  const Chains chains = makeChains(t, bert ? t.classes : 1, bert, seed);
  data.train = makeTokens(spec, chains, nTrain, seed, 0);
  data.test = makeTokens(spec, chains, nTest, seed, 1);
  return data;
}

}  // namespace tpb
