// Tests for workload/'s model side: deterministic init, flat gradient/parameter storage,
// evaluation, and that the default MLP actually learns the synthetic data.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/file_util.h"
#include "workload/dataset.h"
#include "workload/evaluate.h"
#include "workload/model.h"
#include "workload/sampler.h"

namespace tpb {
namespace {

using test::expectUsageError;

bool sameParams(Mlp& a, Mlp& b) {
  auto pa = orderedParameters(a), pb = orderedParameters(b);
  if (pa.size() != pb.size()) return false;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    if (!pa[i].sizes().equals(pb[i].sizes()) || !torch::equal(pa[i], pb[i])) return false;
  }
  return true;
}

torch::Tensor catGrads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> g;
  for (const auto& p : params) g.push_back(p.grad().reshape({-1}));
  return torch::cat(g);
}

torch::Tensor catValues(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> v;
  for (const auto& p : params) v.push_back(p.detach().reshape({-1}));
  return torch::cat(v);
}

// A small fixed batch for the flat-storage tests.
struct SmallProblem {
  torch::Tensor x = torch::linspace(-1.0, 1.0, 8 * 784).reshape({8, 784});
  torch::Tensor y = torch::tensor({0, 1, 2, 3, 4, 5, 6, 9}, torch::kInt64);
  torch::Tensor loss(Mlp& m) const { return torch::nn::functional::cross_entropy(m->forward(x), y); }
};

// ---- model -------------------------------------------------------------------------------------

TEST(SplitMix64, MatchesReferenceStream) {
  // First outputs of Vigna's reference splitmix64.c seeded with 1234567.
  SplitMix64 g(1234567);
  EXPECT_EQ(g.next(), 6457827717110365317ull);
  EXPECT_EQ(g.next(), 3203168211198807973ull);
  EXPECT_EQ(g.next(), 9817491932198370423ull);
  EXPECT_EQ(g.next(), 4593380528125082431ull);
  EXPECT_EQ(g.next(), 16408922859458223821ull);
  SplitMix64 h(1);
  for (int i = 0; i < 10000; ++i) {
    EXPECT_LT(h.below(7), 7u);
    const float u = h.uniform();
    EXPECT_TRUE(u >= 0.0f && u < 1.0f);
  }
}

TEST(ParseHidden, AcceptsCommaSeparatedWidths) {
  EXPECT_EQ(parseHidden("--hidden", "512,512"), (std::vector<int>{512, 512}));
  EXPECT_EQ(parseHidden("--hidden", "1024,1024,1024"), (std::vector<int>{1024, 1024, 1024}));
  EXPECT_EQ(parseHidden("--hidden", "7"), (std::vector<int>{7}));
}

TEST(ParseHidden, RejectsBadInputNamingTheFlag) {
  for (const std::string bad : {"", ",", "512,", ",512", "512,,512", "0", "512,0", "-1", "a", "5 12",
                                "512x", "99999999999"}) {
    expectUsageError([&] { parseHidden("--hidden", bad); }, {"--hidden", "'" + bad + "'"});
  }
}

TEST(Model, ShapesOrderAndCount) {
  auto m = makeModel(ModelConfig{}, 1);
  auto p = orderedParameters(m);
  ASSERT_EQ(p.size(), 6u);
  const std::vector<std::vector<std::int64_t>> shapes = {{512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}};
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p[i].sizes().vec(), shapes[i]) << i;
  const auto named = m->named_parameters();
  EXPECT_EQ(named.keys(), (std::vector<std::string>{"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias",
                                                    "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(parameterCount(m), 784u * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
  EXPECT_EQ(parameterCount(p), parameterCount(m));
  auto out = m->forward(torch::zeros({3, 784}));
  EXPECT_EQ(out.sizes().vec(), (std::vector<std::int64_t>{3, 10}));

  auto deep = makeModel(ModelConfig{20, {8, 6, 4}, 3}, 1);
  EXPECT_EQ(orderedParameters(deep).size(), 8u);
  EXPECT_EQ(parameterCount(deep), 20u * 8 + 8 + 8 * 6 + 6 + 6 * 4 + 4 + 4 * 3 + 3);
  EXPECT_THROW(makeModel(ModelConfig{784, {512, 0}, 10}, 1), UsageError);
}

TEST(Model, InitIsDeterministicPerSeed) {
  auto a = makeModel(ModelConfig{}, 42);
  torch::manual_seed(12345);  // LibTorch's global generator must not matter
  auto b = makeModel(ModelConfig{}, 42);
  auto c = makeModel(ModelConfig{}, 43);
  EXPECT_TRUE(sameParams(a, b));
  EXPECT_FALSE(sameParams(a, c));
  for (const auto& p : orderedParameters(c)) EXPECT_FALSE(torch::equal(p, torch::zeros_like(p)));
}

TEST(Model, InitFollowsPyTorchLinearDistribution) {
  auto m = makeModel(ModelConfig{}, 3);
  auto p = orderedParameters(m);
  const std::vector<double> fanIn = {784, 784, 512, 512, 512, 512};
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double bound = 1.0 / std::sqrt(fanIn[i]);
    const double maxAbs = p[i].abs().max().item<double>();
    EXPECT_LE(maxAbs, bound) << i;
    if (p[i].numel() > 1000) {
      EXPECT_GT(maxAbs, 0.99 * bound) << i;
      // U(-b, b): mean 0, std b / sqrt(3).
      EXPECT_NEAR(p[i].mean().item<double>(), 0.0, 0.02 * bound) << i;
      EXPECT_NEAR(p[i].std().item<double>(), bound / std::sqrt(3.0), 0.02 * bound) << i;
    }
  }
}

// ---- FlatGrads / FlatParams --------------------------------------------------------------------

TEST(FlatGrads, BackwardAccumulatesIntoTheFlatBuffer) {
  SmallProblem prob;
  auto ref = makeModel(ModelConfig{}, 5);
  prob.loss(ref).backward();
  const auto refGrads = catGrads(orderedParameters(ref));

  auto m = makeModel(ModelConfig{}, 5);
  auto params = orderedParameters(m);
  FlatGrads fg(params);
  ASSERT_EQ(fg.count(), parameterCount(params));
  EXPECT_EQ(fg.flat().numel(), static_cast<std::int64_t>(fg.count()));
  EXPECT_TRUE(torch::equal(fg.flat(), torch::zeros_like(fg.flat())));

  prob.loss(m).backward();
  const float* base = fg.data();
  for (std::size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(params[i].grad().defined());
    EXPECT_EQ(params[i].grad().data_ptr<float>(), base + fg.offset(i)) << i;
    EXPECT_EQ(params[i].grad().sizes(), params[i].sizes());
  }
  EXPECT_EQ(fg.offset(params.size() - 1) + static_cast<std::size_t>(params.back().numel()), fg.count());
  EXPECT_TRUE(fg.attached());
  EXPECT_TRUE(torch::equal(fg.flat(), catGrads(params)));
  EXPECT_TRUE(torch::equal(fg.flat(), refGrads));  // 0 + g == g exactly
  EXPECT_GT(fg.flat().abs().sum().item<double>(), 0.0);

  // Same memory: writing the buffer is visible through the grads.
  fg.data()[fg.offset(2)] = 123.0f;
  EXPECT_EQ(params[2].grad().view({-1})[0].item<float>(), 123.0f);

  // zero() then backward again gives the same values, in the same memory.
  fg.zero();
  EXPECT_TRUE(torch::equal(fg.flat(), torch::zeros_like(fg.flat())));
  for (const auto& p : params) EXPECT_TRUE(torch::equal(p.grad(), torch::zeros_like(p)));
  prob.loss(m).backward();
  EXPECT_TRUE(fg.attached());
  EXPECT_TRUE(torch::equal(fg.flat(), refGrads));

  // Without zero(), a second backward accumulates in place.
  prob.loss(m).backward();
  EXPECT_TRUE(fg.attached());
  EXPECT_TRUE(torch::allclose(fg.flat(), 2 * refGrads));
}

TEST(FlatGrads, SurvivesOptimizerZeroGradAndSteps) {
  SmallProblem prob;
  auto m = makeModel(ModelConfig{}, 6);
  auto params = orderedParameters(m);
  FlatGrads fg(params);
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.1));
  prob.loss(m).backward();
  opt.step();
  EXPECT_TRUE(fg.attached());
  // Optimizer::zero_grad() detaches the grads in place (LibTorch 1.13) or resets them to
  // undefined (2.x default); either way zero() restores the aliasing.
  EXPECT_NO_THROW(opt.zero_grad());
  fg.zero();
  EXPECT_TRUE(fg.attached());
  EXPECT_TRUE(torch::equal(fg.flat(), torch::zeros_like(fg.flat())));
  // Something replacing a grad with a fresh tensor is repaired by zero() too.
  params[0].mutable_grad() = torch::ones_like(params[0]);
  EXPECT_FALSE(fg.attached());
  fg.zero();
  EXPECT_TRUE(fg.attached());
  prob.loss(m).backward();
  EXPECT_TRUE(torch::equal(fg.flat(), catGrads(params)));
}

TEST(FlatParams, ParametersLiveInTheFlatBuffer) {
  SmallProblem prob;
  auto ref = makeModel(ModelConfig{}, 7);
  auto m = makeModel(ModelConfig{}, 7);
  auto params = orderedParameters(m);
  const auto before = catValues(params);
  FlatParams fp(params);
  ASSERT_EQ(fp.count(), parameterCount(params));
  EXPECT_TRUE(fp.attached());
  EXPECT_TRUE(torch::equal(fp.flat(), before));
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].data_ptr<float>(), fp.data() + fp.offset(i)) << i;
    EXPECT_TRUE(params[i].requires_grad());
    EXPECT_TRUE(params[i].is_leaf());
  }
  // The module's own handles see the buffer too (set_data keeps the TensorImpl).
  EXPECT_EQ(m->named_parameters()["fc1.weight"].data_ptr<float>(), fp.data() + fp.offset(2));

  // Training with flat parameters (and flat grads) gives the same result as without.
  FlatGrads fg(params);
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.05));
  torch::optim::SGD refOpt(ref->parameters(), torch::optim::SGDOptions(0.05));
  for (int step = 0; step < 3; ++step) {
    fg.zero();
    prob.loss(m).backward();
    opt.step();
    refOpt.zero_grad();
    prob.loss(ref).backward();
    refOpt.step();
  }
  EXPECT_TRUE(fp.attached());
  EXPECT_TRUE(sameParams(m, ref));
  EXPECT_TRUE(torch::equal(fp.flat(), catValues(orderedParameters(ref))));

  // Writing the buffer (as a parameter server's broadcast would) changes the model.
  const auto logitsBefore = m->forward(prob.x).detach();
  {
    torch::NoGradGuard noGrad;
    fp.flat().mul_(0.5f);
  }
  EXPECT_TRUE(torch::equal(params[0], orderedParameters(ref)[0] * 0.5f));
  EXPECT_FALSE(torch::equal(m->forward(prob.x).detach(), logitsBefore));
}

// ---- evaluate ------------------------------------------------------------------------------------

TEST(Evaluate, HandMadeCase) {
  // One linear layer with identity weights: logits are the inputs.
  auto m = makeModel(ModelConfig{2, {}, 2}, 0);
  {
    torch::NoGradGuard noGrad;
    auto p = orderedParameters(m);
    p[0].copy_(torch::eye(2));
    p[1].zero_();
  }
  Dataset d{torch::tensor({2.0f, 0.0f, 0.0f, 3.0f, 1.0f, 0.0f}).reshape({3, 2}),
            torch::tensor({0, 1, 1}, torch::kInt64)};
  const double l0 = std::log(std::exp(2.0) + 1.0) - 2.0;
  const double l1 = std::log(1.0 + std::exp(3.0)) - 3.0;
  const double l2 = std::log(std::exp(1.0) + 1.0) - 0.0;
  for (std::size_t batch : {1u, 2u, 1000u}) {
    const auto r = evaluate(*m, d, batch);
    EXPECT_NEAR(r.accuracy, 2.0 / 3.0, 1e-12) << batch;
    EXPECT_NEAR(r.loss, (l0 + l1 + l2) / 3.0, 1e-6) << batch;
  }
  EXPECT_THROW(evaluate(*m, Dataset{torch::zeros({0, 2}), torch::zeros({0}, torch::kInt64)}), Error);
}

// ---- learnability ------------------------------------------------------------------------------

TEST(Learnability, DefaultMlpLearnsSyntheticInThreeEpochs) {
  // What every tpbench run does, at a size that fits a unit test: 8192 training samples,
  // batch 64, plain SGD lr 0.01, 3 epochs, one thread (about 2 s on an idle core).
  at::set_num_threads(1);
  const auto t0 = std::chrono::steady_clock::now();
  const auto data = loadDataset("synthetic", 8192, 1);
  const Dataset& test = data.test;  // all 10000: evaluation is cheap next to training
  auto model = makeModel(ModelConfig{}, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  FlatGrads grads(orderedParameters(model));
  DistributedSampler sampler(data.train.size(), 1, 0, true, 1);
  const double chance = evaluate(*model, test).accuracy;
  double early = 0.0;
  int step = 0;
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    sampler.setEpoch(epoch);
    const auto idx = sampler.indices();
    for (std::size_t b = 0; b + 64 <= idx.size(); b += 64) {
      const auto batch = gatherBatch(data.train, idx, b, b + 64);
      grads.zero();
      torch::nn::functional::cross_entropy(model->forward(batch.images), batch.labels).backward();
      opt.step();
      if (++step == 20) early = evaluate(*model, test).accuracy;
    }
  }
  const auto result = evaluate(*model, test);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("learnability: accuracy %.4f at start, %.4f after 20 steps, %.4f after 3 epochs "
              "(loss %.4f), %.1f s\n", chance, early, result.accuracy, result.loss, secs);
  RecordProperty("accuracy", std::to_string(result.accuracy));
  RecordProperty("seconds", std::to_string(secs));
  EXPECT_LT(chance, 0.3);
  EXPECT_LT(early, 0.9);  // not trivially easy
  EXPECT_GE(result.accuracy, 0.90);
}

}  // namespace
}  // namespace tpb
