// Tests for workload/network.h and workload/network_data.h: preset sizes against the published
// architectures, deterministic init, shapes, block-wise forward, cost formulas, synthetic data,
// and that a small CNN and small transformers learn their synthetic tasks.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "tests/file_util.h"
#include "workload/model.h"
#include "workload/network.h"
#include "workload/network_data.h"

namespace tpb {
namespace {

using test::expectUsageError;

// A CNN on MNIST-shaped input (CIFAR-style 3x3 stem), ResNet-10 layout at width 8.
NetworkSpec smallCnn(bool bottleneck = false) {
  NetworkSpec s;
  s.kind = NetworkKind::Resnet;
  s.name = "resnet";
  s.resnet.stageBlocks = bottleneck ? std::vector<int>{1, 2} : std::vector<int>{1, 1, 1, 1};
  s.resnet.bottleneck = bottleneck;
  s.resnet.width = 8;
  s.resnet.inChannels = 1;
  s.resnet.resolution = 28;
  s.resnet.classes = 10;
  s.resnet.imagenetStem = false;
  return s;
}

NetworkSpec smallTransformer(NetworkKind kind) {
  NetworkSpec s;
  s.kind = kind;
  s.name = kind == NetworkKind::Gpt ? "gpt" : "bert";
  auto& t = s.transformer;
  t.layers = 2;
  t.hidden = 32;
  t.heads = 4;
  t.vocab = 48;
  t.positions = 24;
  t.seqLen = 16;
  t.classes = 3;
  return s;
}

std::vector<NetworkSpec> smallSpecs() {
  return {smallCnn(), smallCnn(true), smallTransformer(NetworkKind::Gpt), smallTransformer(NetworkKind::Bert)};
}

// A batch of inputs the spec's network accepts.
torch::Tensor inputsFor(const NetworkSpec& spec, std::int64_t batch) {
  return makeNetworkData(spec, static_cast<std::size_t>(batch), 0, 7).train.images;
}

torch::Tensor flatValues(Network& n) {
  std::vector<torch::Tensor> v;
  for (const auto& p : orderedParameters(n)) v.push_back(p.detach().reshape({-1}));
  return torch::cat(v);
}

// ---- presets -------------------------------------------------------------------------------------

TEST(NetworkPresets, ParameterCountsWithinOnePercentOfPublished) {
  // torchvision's resnet18/resnet50; Hugging Face's BertModel (with pooler; our classifier adds
  // hidden x 2 + 2) and GPT2Model (tied head).
  const std::vector<std::pair<std::string, double>> published{
      {"resnet18", 11689512},  {"resnet50", 25557032},   {"bert-base", 109482240},
      {"bert-large", 335141888}, {"gpt2-small", 124439808}, {"gpt2-medium", 354823168}};
  ASSERT_EQ(published.size(), networkPresetNames().size());
  for (const auto& [name, count] : published) {
    const double ours = static_cast<double>(networkCost(networkPreset(name)).parameters);
    EXPECT_LT(std::abs(ours - count) / count, 0.01) << name << ": " << ours << " vs published " << count;
  }
  // The exact figures: the CNN and GPT-2 match to the parameter, BERT adds its classifier.
  EXPECT_EQ(networkCost(networkPreset("resnet50")).parameters, 25557032u);
  EXPECT_EQ(networkCost(networkPreset("gpt2-medium")).parameters, 354823168u);
  EXPECT_EQ(networkCost(networkPreset("bert-base")).parameters, 109482240u + 768 * 2 + 2);
}

TEST(NetworkPresets, CostFormulaCountsWhatIsBuilt) {
  auto specs = smallSpecs();
  // Medium networks with the presets' exact shapes: every ResNet layer (the count does not depend
  // on the resolution), and one full-width layer of each transformer preset (a smaller vocabulary
  // keeps it fast: the vocabulary's term, vocab x hidden, is checked by the small ones).
  for (const char* name : {"resnet18", "resnet50"}) {
    specs.push_back(networkPreset(name));
    specs.back().resnet.resolution = 32;
  }
  for (const char* name : {"bert-base", "gpt2-small"}) {
    specs.push_back(networkPreset(name));
    specs.back().transformer.layers = 1;
    specs.back().transformer.vocab = 1000;
  }
  for (const auto& spec : specs) {
    Network n(spec);
    EXPECT_EQ(parameterCount(orderedParameters(n)), networkCost(spec).parameters) << spec.name;
    // Block by block too (what model parallelism balances its stages by), adding up to the whole.
    const std::vector<NetworkCost> blocks = networkBlockCosts(spec);
    ASSERT_EQ(blocks.size(), n->blockCount()) << spec.name;
    double flops = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      EXPECT_EQ(parameterCount(n->block(b).parameters()), blocks[b].parameters) << spec.name << " block " << b;
      flops += blocks[b].forwardFlops;
    }
    EXPECT_EQ(flops, networkCost(spec).forwardFlops) << spec.name;
  }
}

TEST(NetworkPresets, ResnetFlopsMatchTorchvision) {
  // torchvision's published GFLOPS (multiply-adds) at 224x224: 1.81 and 4.09.
  EXPECT_NEAR(networkCost(networkPreset("resnet18")).forwardFlops / 2e9, 1.81, 0.02);
  EXPECT_NEAR(networkCost(networkPreset("resnet50")).forwardFlops / 2e9, 4.09, 0.04);
}

TEST(NetworkPresets, CostFollowsItsFormulas) {
  const auto spec = networkPreset("gpt2-small");
  const auto c = networkCost(spec);
  EXPECT_EQ(c.gradientBytes, 4 * c.parameters);
  EXPECT_DOUBLE_EQ(c.trainFlops, 3 * c.forwardFlops);
  // Every parameter but the position embeddings takes part in one multiply-add per token (the
  // tied embedding as the LM head), and attention adds 4 T^2 H per layer.
  const double t = 1024, h = 768, matmulParams = static_cast<double>(c.parameters) - 1024 * h;
  EXPECT_NEAR(c.forwardFlops / (2 * t * matmulParams + 12 * 4 * t * t * h), 1.0, 0.01);
  // Activations grow with the sequence; the attention probabilities make it faster than linear.
  auto shorter = spec;
  shorter.transformer.seqLen = 512;
  EXPECT_GT(c.activationBytes, 2 * networkCost(shorter).activationBytes);
}

TEST(NetworkPresets, UnknownNamesAndBadSpecsAreUsageErrors) {
  expectUsageError([] { networkPreset("resnet19"); }, {"resnet19", "gpt2-small"});
  bool bottleneck = false;
  expectUsageError([&] { resnetStageBlocks(20, bottleneck); }, {"20", "152"});
  auto spec = smallTransformer(NetworkKind::Gpt);
  spec.transformer.heads = 5;
  EXPECT_NE(networkProblem(spec).find("multiple"), std::string::npos);
  expectUsageError([&] { Network n(spec); }, {"heads"});
  spec.transformer.heads = 4;
  spec.transformer.seqLen = 25;
  EXPECT_NE(networkProblem(spec).find("positions"), std::string::npos);
  EXPECT_EQ(networkProblem(smallCnn()), "");
}

// ---- weights -------------------------------------------------------------------------------------

TEST(NetworkInit, SameSeedSameWeightsOtherSeedOthers) {
  for (const auto& spec : smallSpecs()) {
    Network a = makeNetwork(spec, 5), b = makeNetwork(spec, 5), c = makeNetwork(spec, 6);
    EXPECT_TRUE(torch::equal(flatValues(a), flatValues(b))) << spec.name;
    EXPECT_FALSE(torch::equal(flatValues(a), flatValues(c))) << spec.name;
  }
}

TEST(NetworkInit, DistributionsAreThePublishedOnes) {
  Network cnn = makeNetwork(smallCnn(), 1);
  const auto conv = orderedParameters(cnn)[0];  // stem conv1: 8 x 1 x 3 x 3, fan_out 72
  EXPECT_NEAR(conv.std().item<double>(), std::sqrt(2.0 / 72), 0.05);
  EXPECT_TRUE(torch::equal(orderedParameters(cnn)[1], torch::ones({8})));  // bn1.weight
  auto big = smallTransformer(NetworkKind::Gpt);
  big.transformer.vocab = 4096;
  Network gpt = makeNetwork(big, 1);
  const auto wte = orderedParameters(gpt)[0];
  EXPECT_NEAR(wte.mean().item<double>(), 0.0, 1e-3);
  EXPECT_NEAR(wte.std().item<double>(), 0.02, 2e-4);
}

TEST(NetworkInit, TiedHeadIsListedOnceAndUsed) {
  const auto spec = smallTransformer(NetworkKind::Gpt);
  Network n = makeNetwork(spec, 1);
  const auto params = orderedParameters(n);
  std::set<const void*> distinct;
  for (const auto& p : params) distinct.insert(p.data_ptr());
  EXPECT_EQ(distinct.size(), params.size());
  // Only token 0 is looked up, so the embedding alone would leave the other rows' gradients
  // zero: the head, multiplying by every row, fills them if and only if it is tied.
  const auto zeros = torch::zeros({2, 16}, torch::kInt64);
  n->loss(n->forward(zeros), zeros).backward();
  EXPECT_GT(params[0].grad().narrow(0, 1, 47).abs().sum().item<double>(), 0.0);
}

// ---- forward -------------------------------------------------------------------------------------

TEST(NetworkForward, Shapes) {
  auto cifar = smallCnn();
  cifar.resnet.inChannels = 3;
  cifar.resnet.resolution = 32;
  auto imagenet = networkPreset("resnet18");
  imagenet.resnet.width = 8;
  imagenet.resnet.resolution = 64;
  const std::vector<std::pair<NetworkSpec, std::vector<std::int64_t>>> cases{
      {smallCnn(), {3, 10}}, {cifar, {3, 10}}, {imagenet, {3, 1000}}, {smallCnn(true), {3, 10}},
      {smallTransformer(NetworkKind::Gpt), {3, 16, 48}}, {smallTransformer(NetworkKind::Bert), {3, 3}}};
  for (const auto& [spec, shape] : cases) {
    Network n = makeNetwork(spec, 1);
    EXPECT_EQ(n->forward(inputsFor(spec, 3)).sizes().vec(), shape) << spec.name;
  }
}

TEST(NetworkForward, BlocksInOrderEqualTheWhole) {
  for (const auto& spec : smallSpecs()) {
    Network n = makeNetwork(spec, 3);
    const auto x = inputsFor(spec, 4);
    const auto whole = n->forward(x);
    const std::size_t cut = n->blockCount() / 2;
    EXPECT_GE(n->blockCount(), 4u) << spec.name;
    const auto staged = n->forwardBlocks(n->forwardBlocks(x, 0, cut), cut, n->blockCount());
    EXPECT_TRUE(torch::equal(whole, staged)) << spec.name;
  }
}

// ---- data ----------------------------------------------------------------------------------------

TEST(NetworkData, DeterministicAndPrefixStable) {
  for (const auto& spec : smallSpecs()) {
    const auto a = makeNetworkData(spec, 40, 8, 9), b = makeNetworkData(spec, 20, 8, 9);
    const auto c = makeNetworkData(spec, 40, 8, 10);
    EXPECT_TRUE(torch::equal(a.train.images.narrow(0, 0, 20), b.train.images)) << spec.name;
    EXPECT_TRUE(torch::equal(a.train.labels.narrow(0, 0, 20), b.train.labels)) << spec.name;
    EXPECT_TRUE(torch::equal(a.test.images, b.test.images)) << spec.name;
    EXPECT_FALSE(torch::equal(a.train.images, c.train.images)) << spec.name;
    EXPECT_FALSE(torch::equal(a.train.images.narrow(0, 0, 8), a.test.images)) << spec.name;
  }
}

TEST(NetworkData, ShapesAndRanges) {
  const auto img = makeNetworkData(smallCnn(), 6, 2, 1);
  EXPECT_EQ(img.train.images.sizes().vec(), (std::vector<std::int64_t>{6, 1, 28, 28}));
  EXPECT_EQ(img.test.labels.sizes().vec(), (std::vector<std::int64_t>{2}));
  const auto gpt = makeNetworkData(smallTransformer(NetworkKind::Gpt), 5, 0, 1).train;
  EXPECT_EQ(gpt.images.sizes().vec(), (std::vector<std::int64_t>{5, 16}));
  EXPECT_TRUE(torch::equal(gpt.images.narrow(1, 1, 15), gpt.labels.narrow(1, 0, 15)));  // shifted by one
  EXPECT_LT(gpt.images.max().item<std::int64_t>(), 48);
  const auto bert = makeNetworkData(smallTransformer(NetworkKind::Bert), 50, 0, 1).train;
  EXPECT_EQ(bert.labels.max().item<std::int64_t>(), 2);
  EXPECT_EQ(bert.labels.min().item<std::int64_t>(), 0);
}

// ---- learning ------------------------------------------------------------------------------------

// Mean loss of the first and of the last five of `steps` Adam steps, each on a fresh batch of
// `batch` samples: no sample repeats, so the loss falls only if the task's structure is learnt
// (a few hundred samples cycled would be memorised even with labels unrelated to the inputs).
std::pair<double, double> trainLosses(const NetworkSpec& spec, int steps, int batch, double lr) {
  torch::manual_seed(0);
  Network n = makeNetwork(spec, 1);
  const auto data = makeNetworkData(spec, static_cast<std::size_t>(steps * batch), 0, 2).train;
  torch::optim::Adam opt(orderedParameters(n), torch::optim::AdamOptions(lr));
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    const auto rows = torch::arange(s * batch, (s + 1) * batch, torch::kInt64);
    opt.zero_grad();
    auto loss = n->loss(n->forward(data.images.index_select(0, rows)), data.labels.index_select(0, rows));
    loss.backward();
    opt.step();
    if (s < 5) first += loss.item<double>() / 5;
    if (s >= steps - 5) last += loss.item<double>() / 5;
  }
  return {first, last};
}

TEST(NetworkLearning, SmallCnnLearnsSyntheticImages) {
  const auto [first, last] = trainLosses(smallCnn(), 40, 32, 3e-3);
  EXPECT_LT(last, 0.5 * first) << first << " -> " << last;
}

TEST(NetworkLearning, SmallGptLearnsTheMarkovChain) {
  // From ln(48) = 3.87 towards the chain's entropy, about 2.5 nats (each token's 4 successors
  // take 3/4 of the mass): a loss near 3.2 or below means the successors are being learnt.
  const auto [first, last] = trainLosses(smallTransformer(NetworkKind::Gpt), 60, 16, 1e-2);
  EXPECT_LT(last, 0.85 * first) << first << " -> " << last;
}

TEST(NetworkLearning, SmallBertLearnsTheClasses) {
  const auto [first, last] = trainLosses(smallTransformer(NetworkKind::Bert), 40, 16, 3e-3);
  EXPECT_LT(last, 0.5 * first) << first << " -> " << last;
}

}  // namespace
}  // namespace tpb
