// Tests for workload/network_spec.h's --workload spelling: what each name and key builds, the
// canonical text records keep (and that it reads back to the same spec), and what is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/file_util.h"
#include "workload/model.h"
#include "workload/network_spec.h"

namespace tpb {
namespace {

using test::expectUsageError;

NetworkSpec parse(const std::string& text, const std::string& hidden = "512,512") {
  return parseWorkload("--workload", text, hidden);
}

TEST(WorkloadSpec, TheMlpIsTheDefaultAndTakesItsWidthsFromHidden) {
  const NetworkSpec s = parse("mlp", "256,128,64");
  EXPECT_EQ(s.kind, NetworkKind::Mlp);
  EXPECT_EQ(s.mlp.hidden, (std::vector<int>{256, 128, 64}));
  EXPECT_EQ(workloadText(s), "mlp");
  EXPECT_EQ(workloadText(NetworkSpec{}), "mlp");
  // Its cost counts what makeModel builds.
  Mlp m = makeModel(ModelConfig{784, {256, 128, 64}, 10}, 1);
  EXPECT_EQ(networkCost(s).parameters, parameterCount(m));
  EXPECT_DOUBLE_EQ(networkCost(s).forwardFlops, 2.0 * (784 * 256 + 256 * 128 + 128 * 64 + 64 * 10));
}

TEST(WorkloadSpec, SizedNetworksTakeTheirKeysAndSpellEveryOne) {
  NetworkSpec r = parse("resnet");
  EXPECT_EQ(r.kind, NetworkKind::Resnet);
  EXPECT_TRUE(r.mnistImages);
  EXPECT_EQ(r.resnet.inChannels, 1);
  EXPECT_EQ(r.resnet.resolution, 28);
  EXPECT_EQ(r.resnet.norm, ConvNorm::Group);
  EXPECT_EQ(workloadText(r), "resnet:depth=10:width=16:image=mnist:norm=group");

  r = parse("resnet:image=cifar:depth=50:width=8:norm=batch:classes=100:res=40");
  EXPECT_FALSE(r.mnistImages);
  EXPECT_TRUE(r.resnet.bottleneck);
  EXPECT_EQ(r.resnet.stageBlocks, (std::vector<int>{3, 4, 6, 3}));
  EXPECT_EQ(r.resnet.classes, 100);
  EXPECT_EQ(r.resnet.resolution, 40);
  EXPECT_EQ(workloadText(r), "resnet:depth=50:width=8:image=cifar:res=40:classes=100:norm=batch");

  const NetworkSpec g = parse("gpt:layers=3:hidden=64:heads=8:vocab=500:seq=32");
  EXPECT_EQ(g.kind, NetworkKind::Gpt);
  EXPECT_EQ(g.transformer.layers, 3);
  EXPECT_EQ(g.transformer.positions, 32);
  EXPECT_EQ(workloadText(g), "gpt:layers=3:hidden=64:heads=8:ffn=256:vocab=500:seq=32");
  const NetworkSpec b = parse("bert:classes=5");
  EXPECT_EQ(workloadText(b), "bert:layers=2:hidden=128:heads=4:ffn=512:vocab=1024:seq=64:classes=5");
}

TEST(WorkloadSpec, PresetsKeepTheirShapesAndSayWhatWasCut) {
  EXPECT_EQ(workloadText(parse("gpt2-small")), "gpt2-small");
  const NetworkSpec g = parse("gpt2-small:seq=128");
  EXPECT_EQ(g.transformer.seqLen, 128);
  EXPECT_EQ(g.transformer.positions, 1024);  // the published position table, trained on 128
  EXPECT_EQ(networkCost(g).parameters, networkCost(parse("gpt2-small")).parameters);
  EXPECT_EQ(workloadText(g), "gpt2-small:seq=128");
  EXPECT_EQ(workloadText(parse("resnet50:res=64:norm=group")), "resnet50:res=64:norm=group");
  EXPECT_EQ(workloadText(parse("bert-large:seq=512")), "bert-large");  // the published length
}

TEST(WorkloadSpec, TheCanonicalTextReadsBackToTheSameSpec) {
  for (const std::string text :
       {"mlp", "resnet", "resnet:depth=18:image=imagenet:res=64", "gpt", "bert:heads=2", "resnet18:res=96",
        "resnet50", "bert-base:seq=128", "bert-large", "gpt2-small:seq=64", "gpt2-medium"}) {
    const std::string canonical = workloadText(parse(text));
    EXPECT_EQ(workloadText(parse(canonical)), canonical) << text;
    EXPECT_EQ(networkCost(parse(canonical)).parameters, networkCost(parse(text)).parameters) << text;
  }
}

TEST(WorkloadSpec, EveryMistakeIsAUsageErrorNamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"", "unknown workload ''"},
      {"cnn", "unknown workload 'cnn' (known: mlp, resnet, gpt, bert, resnet18"},
      {"mlp:hidden=5", "'mlp' takes no key 'hidden' (it takes none)"},
      {"gpt:layer=2", "'gpt' takes no key 'layer' (it takes: layers, hidden"},
      {"gpt2-small:layers=2", "a preset keeps its published layer shapes"},
      {"resnet50:depth=18", "a preset keeps its published layer shapes"},
      {"gpt:layers=2:layers=3", "layers given twice"},
      {"gpt:layers", "'layers' is not KEY=VALUE"},
      {"gpt:=3", "'=3' is not KEY=VALUE"},
      {"gpt:layers=", "'layers=' is not KEY=VALUE"},
      {"gpt:layers=02", "leading zero"},
      {"gpt:layers=0", "layers must be in 1..1024, not 0"},
      {"gpt:vocab=1e3", "vocab"},
      {"gpt:hidden=100:heads=3", "not a multiple of the 3 heads"},
      {"gpt2-small:seq=2048", "seq must be in 1..1024"},
      {"resnet:depth=20", "depth must be one of 10, 18, 34, 50, 101, 152"},
      {"resnet:image=svhn", "image=svhn is not one of mnist, cifar, imagenet"},
      {"resnet:res=64", "mnist images are 28x28"},
      {"resnet:image=cifar:res=4", "res must be in 8..4096"},
      {"resnet:norm=layer", "norm=layer is not one of group, batch"},
      {"bert:classes=1", "classes must be in 2.."},
  };
  for (const auto& [text, why] : bad) expectUsageError([&] { parse(text); }, {"--workload '" + text + "'", why});
  expectUsageError([] { parse("mlp", "512,,512"); }, {"--hidden"});
}

TEST(WorkloadSpec, GeneratedDataSizesFollowTheSampleSize) {
  // Small samples: MNIST's counts; big ones: as many as fit in the budget, never fewer than 64.
  EXPECT_EQ(workloadTrainSize(parse("gpt")), 60000u);
  EXPECT_EQ(workloadTestSize(parse("gpt")), 10000u);
  const NetworkSpec big = parse("resnet50");
  EXPECT_DOUBLE_EQ(sampleBytes(big), 4.0 * 3 * 224 * 224 + 8);
  EXPECT_EQ(workloadTrainSize(big), static_cast<std::size_t>(256.0 * (1 << 20) / sampleBytes(big)));
  EXPECT_EQ(workloadTrainSize(parse("resnet:image=imagenet:res=4096")), 64u);
  // The test set is also cut to 2e12 FLOP of forward passes, at least 8 samples. GPT-2 small at
  // sequence 1024, by hand: a layer 2t(4h^2 + 2hf) + 4t^2 h = 2*1024*(4*768^2 + 2*768*3072) +
  // 4*1024^2*768 = 17.72 GFLOP, 12 of them 212.6, the tied head 2thv = 2*1024*768*50257 = 79.0:
  // 291.6 GFLOP a sample, 6.9 samples in 2e12, so the floor's 8 (its 32 MiB held 4096).
  EXPECT_NEAR(networkCost(parse("gpt2-small")).forwardFlops, 291648307200.0, 1e6);
  EXPECT_EQ(workloadTestSize(parse("gpt2-small")), 8u);
  EXPECT_EQ(workloadTestSize(parse("resnet:image=imagenet:res=4096")), 32u);
  EXPECT_EQ(workloadTestSize(parse("resnet50")), 55u);  // 32 MiB of 602 120-byte samples: size, not FLOPs
}

// The evaluation's batch: 1000 samples where they fit in 256 MiB of activations, else what fits,
// never fewer than the training batch. By hand: the MLP 784-512-512-10 keeps 784 + 2*512, 2*512
// and 10 floats a sample (11 368 bytes): 23 612 fit, so 1000. GPT-2 small at sequence 1024 keeps
// per token and layer 8h + 2f + heads*t = 6144 + 6144 + 12288 floats, 12 layers over 1024 tokens
// 301 989 888, the embeddings' t*h 786 432 and the head's t(2h + v) 53 036 032: 355 812 352 floats,
// 1.42 GB a sample, so it evaluates at its training batch (1000 of them were 50 GB of scores alone).
TEST(WorkloadSpec, TheEvaluationBatchFitsBesideTheTrainingStep) {
  const double mlp = networkCost(parse("mlp", "512,512")).activationBytes;
  EXPECT_DOUBLE_EQ(mlp, 4.0 * (784 + 2 * 512 + 2 * 512 + 10));
  EXPECT_EQ(evalBatchSize(mlp, 64), 1000u);
  const double gpt2 = networkCost(parse("gpt2-small")).activationBytes;
  EXPECT_DOUBLE_EQ(gpt2, 4.0 * 355812352);
  EXPECT_EQ(evalBatchSize(gpt2, 2), 2u);
  EXPECT_EQ(evalBatchSize(gpt2, 1), 1u);
  EXPECT_EQ(evalBatchSize(1e6, 8), 268u);    // 268 435 456 / 1e6
  EXPECT_EQ(evalBatchSize(1e6, 500), 500u);  // never below the training batch
  EXPECT_EQ(evalBatchSize(0, 64), 1000u);
}

}  // namespace
}  // namespace tpb
