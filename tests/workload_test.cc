// Tests for workload/: deterministic model init, flat gradient/parameter storage, the synthetic
// and MNIST datasets (including malformed files), DistributedSampler's semantics and the
// union-of-batches property the strategies rely on, evaluation, and that the default MLP
// actually learns the synthetic data.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "workload/dataset.h"
#include "workload/evaluate.h"
#include "workload/model.h"
#include "workload/sampler.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using Indices = std::vector<std::int64_t>;

// Asserts that f() throws tpb::UsageError whose message contains every one of `needles`.
template <typename F>
void expectUsageError(F&& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected tpb::UsageError";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

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

// ---- synthetic dataset -------------------------------------------------------------------------

TEST(Synthetic, DeterministicAndPrefixStable) {
  const auto a = makeSynthetic(1000, 300, 11);
  const auto b = makeSynthetic(1000, 300, 11);
  const auto c = makeSynthetic(1000, 300, 12);
  const auto small = makeSynthetic(100, 30, 11);
  EXPECT_TRUE(torch::equal(a.train.images, b.train.images));
  EXPECT_TRUE(torch::equal(a.train.labels, b.train.labels));
  EXPECT_TRUE(torch::equal(a.test.images, b.test.images));
  EXPECT_TRUE(torch::equal(a.test.labels, b.test.labels));
  EXPECT_FALSE(torch::equal(a.train.images, c.train.images));
  EXPECT_FALSE(torch::equal(a.train.images.narrow(0, 0, 300), a.test.images));
  EXPECT_TRUE(torch::equal(small.train.images, a.train.images.narrow(0, 0, 100)));
  EXPECT_TRUE(torch::equal(small.test.labels, a.test.labels.narrow(0, 0, 30)));
  // Generation is split across threads by sample; the bits must not depend on the split.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = makeSynthetic(3000, 10, 11);
  at::set_num_threads(3);
  const auto three = makeSynthetic(3000, 10, 11);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one.train.images, three.train.images));
  EXPECT_TRUE(torch::equal(one.train.images.narrow(0, 0, 1000), a.train.images));
}

TEST(Synthetic, GoldenValuesPinTheGenerator) {
  // The generator uses only integer arithmetic and fixed-order float operations, so these bits
  // are the same on every machine; a change here changes every synthetic result.
  const auto d = makeSynthetic(4, 1, 1);
  const std::int64_t* l = d.train.labels.data_ptr<std::int64_t>();
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a over the float bits
  const auto* bytes = reinterpret_cast<const unsigned char*>(d.train.images.data_ptr<float>());
  for (std::size_t i = 0; i < 4 * 784 * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  std::printf("golden: labels %lld %lld %lld %lld, hash %llu\n", (long long)l[0], (long long)l[1],
              (long long)l[2], (long long)l[3], (unsigned long long)hash);
  EXPECT_EQ(std::vector<std::int64_t>(l, l + 4), (std::vector<std::int64_t>{5, 9, 1, 5}));
  EXPECT_EQ(hash, 7578452967165161311ull);
  // Model init likewise: first weights of fc0 for seed 1.
  auto m = makeModel(ModelConfig{}, 1);
  const float* w = orderedParameters(m)[0].data_ptr<float>();
  std::printf("golden: fc0.weight %.9g %.9g\n", w[0], w[1]);
  EXPECT_EQ(w[0], 0.0208311304f);
  EXPECT_EQ(w[1], 0.0179711934f);
}

TEST(Synthetic, FullSizeShapesRangeAndBalance) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto s = loadDataset("synthetic", 0, 1);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("synthetic 60000+10000 generated in %.3f s\n", secs);
  EXPECT_EQ(s.name, "synthetic");
  EXPECT_EQ(s.train.images.sizes().vec(), (std::vector<std::int64_t>{60000, 784}));
  EXPECT_EQ(s.test.images.sizes().vec(), (std::vector<std::int64_t>{10000, 784}));
  EXPECT_EQ(s.train.size(), 60000u);
  EXPECT_EQ(s.test.size(), 10000u);
  EXPECT_EQ(s.train.images.scalar_type(), torch::kFloat32);
  EXPECT_EQ(s.train.labels.scalar_type(), torch::kInt64);
  EXPECT_TRUE(s.train.images.is_contiguous());
  for (const Dataset* d : {&s.train, &s.test}) {
    EXPECT_GE(d->labels.min().item<std::int64_t>(), 0);
    EXPECT_LE(d->labels.max().item<std::int64_t>(), 9);
    // MNIST's normalised range: (0 - 0.1307)/0.3081 .. (1 - 0.1307)/0.3081.
    EXPECT_GE(d->images.min().item<float>(), -0.4243f);
    EXPECT_LE(d->images.max().item<float>(), 2.8216f);
    const auto counts = torch::bincount(d->labels, {}, 10);
    const double expected = static_cast<double>(d->size()) / 10.0;
    for (int c = 0; c < 10; ++c) EXPECT_NEAR(counts[c].item<double>(), expected, 0.08 * expected) << c;
  }
  EXPECT_NEAR(s.train.images.mean().item<double>(), 0.5, 0.5);  // roughly MNIST-like scale
}

TEST(Synthetic, TrainSizeKeepsTheFirstSamples) {
  const auto all = makeSynthetic(5000, 10, 3);
  const auto s = loadDataset("synthetic", 5000, 3);
  EXPECT_EQ(s.train.size(), 5000u);
  EXPECT_EQ(s.test.size(), 10000u);
  EXPECT_TRUE(torch::equal(s.train.images, all.train.images));
  EXPECT_TRUE(torch::equal(s.test.images.narrow(0, 0, 10), all.test.images));
  expectUsageError([] { loadDataset("synthetic", 60001, 3); }, {"60001", "60000"});
}

TEST(Dataset, UnknownSpecListsAcceptedForms) {
  for (const std::string spec : {"", "cifar", "mnist", "mnist:", "Synthetic"}) {
    expectUsageError([&] { loadDataset(spec, 0, 1); }, {"'" + spec + "'", "synthetic", "mnist:DIR"});
  }
}

// ---- MNIST IDX -------------------------------------------------------------------------------

std::vector<unsigned char> be32(std::uint32_t v) {
  return {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
          static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
}

std::vector<unsigned char> idxImages(std::uint32_t n, std::uint32_t seedByte, std::uint32_t rows = 28,
                                     std::uint32_t magic = 2051) {
  std::vector<unsigned char> b;
  for (auto v : {magic, n, rows, 28u}) {
    auto w = be32(v);
    b.insert(b.end(), w.begin(), w.end());
  }
  for (std::uint32_t i = 0; i < n * rows * 28; ++i) b.push_back(static_cast<unsigned char>((i * 7 + seedByte) % 256));
  return b;
}

std::vector<unsigned char> idxLabels(const std::vector<unsigned char>& labels, std::uint32_t magic = 2049) {
  std::vector<unsigned char> b;
  for (auto v : {magic, static_cast<std::uint32_t>(labels.size())}) {
    auto w = be32(v);
    b.insert(b.end(), w.begin(), w.end());
  }
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

void writePlain(const fs::path& p, const std::vector<unsigned char>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void writeGz(const fs::path& p, const std::vector<unsigned char>& b) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, b.data(), static_cast<unsigned>(b.size())), static_cast<int>(b.size()));
  gzclose(f);
}

class MnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpb_mnist_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a valid 5-train / 3-test set, gzipped or plain; individual files can be replaced.
  void writeValid(bool gz) {
    auto w = [&](const std::string& name, const std::vector<unsigned char>& b) {
      if (gz) writeGz(dir_ / (name + ".gz"), b); else writePlain(dir_ / name, b);
    };
    w("train-images-idx3-ubyte", idxImages(5, 1));
    w("train-labels-idx1-ubyte", idxLabels(trainLabels_));
    w("t10k-images-idx3-ubyte", idxImages(3, 2));
    w("t10k-labels-idx1-ubyte", idxLabels(testLabels_));
  }

  void expectValues(const Dataset& d, std::uint32_t n, std::uint32_t seedByte,
                    const std::vector<unsigned char>& labels) {
    ASSERT_EQ(d.images.sizes().vec(), (std::vector<std::int64_t>{n, 784}));
    ASSERT_EQ(d.labels.sizes().vec(), (std::vector<std::int64_t>{n}));
    const float* x = d.images.data_ptr<float>();
    for (std::uint32_t i = 0; i < n * 784; ++i) {
      const float raw = static_cast<float>((i * 7 + seedByte) % 256);
      ASSERT_NEAR(x[i], (raw / 255.0f - 0.1307f) / 0.3081f, 1e-6f) << i;
    }
    for (std::uint32_t i = 0; i < n; ++i) EXPECT_EQ(d.labels[i].item<std::int64_t>(), labels[i]);
  }

  std::string spec() const { return "mnist:" + dir_.string(); }

  fs::path dir_;
  std::vector<unsigned char> trainLabels_ = {3, 1, 4, 1, 5};
  std::vector<unsigned char> testLabels_ = {9, 2, 6};
};

TEST_F(MnistTest, ReadsPlainFiles) {
  writeValid(false);
  const auto s = loadDataset(spec(), 0, 1);
  EXPECT_EQ(s.name, "mnist");
  expectValues(s.train, 5, 1, trainLabels_);
  expectValues(s.test, 3, 2, testLabels_);
  EXPECT_NEAR(s.train.images.min().item<float>(), -0.1307f / 0.3081f, 1e-6f);  // byte 0
  EXPECT_NEAR(s.train.images.max().item<float>(), (1.0f - 0.1307f) / 0.3081f, 1e-6f);  // byte 255
}

TEST_F(MnistTest, ReadsGzippedFilesAndTrainSize) {
  writeValid(true);
  const auto s = loadDataset(spec(), 0, 1);
  expectValues(s.train, 5, 1, trainLabels_);
  expectValues(s.test, 3, 2, testLabels_);
  const auto k = loadDataset(spec(), 3, 1);
  expectValues(k.train, 3, 1, trainLabels_);
  EXPECT_EQ(k.test.size(), 3u);
  expectUsageError([&] { loadDataset(spec(), 6, 1); }, {"6", "5"});
}

TEST_F(MnistTest, MissingFileNamesIt) {
  writeValid(false);
  fs::remove(dir_ / "t10k-labels-idx1-ubyte");
  expectUsageError([&] { loadDataset(spec(), 0, 1); },
                   {(dir_ / "t10k-labels-idx1-ubyte").string(), "t10k-labels-idx1-ubyte.gz"});
  expectUsageError([&] { loadDataset("mnist:/nonexistent/dir", 0, 1); }, {"/nonexistent/dir/train-images-idx3-ubyte"});
}

TEST_F(MnistTest, MalformedFilesAreUsageErrorsNamingTheFile) {
  const std::string trImg = "train-images-idx3-ubyte", trLab = "train-labels-idx1-ubyte";
  const std::string teImg = "t10k-images-idx3-ubyte", teLab = "t10k-labels-idx1-ubyte";
  struct Case {
    std::string what, file;
    std::vector<unsigned char> bytes;
    bool gz;
    std::string needle;
  };
  auto truncated = idxImages(5, 1);
  truncated.pop_back();
  auto longer = idxLabels({9, 2, 6});
  longer.push_back(0);
  const std::vector<Case> cases = {
      {"bad image magic", trImg, idxImages(5, 1, 28, 2049), false, "magic"},
      {"bad label magic", teLab, idxLabels({9, 2, 6}, 2051), false, "magic"},
      {"truncated images", trImg, truncated, false, "bytes"},
      {"truncated gz images", trImg, truncated, true, "bytes"},
      {"trailing bytes", teLab, longer, false, "bytes"},
      {"count mismatch", trLab, idxLabels({3, 1, 4, 1}), false, "4 labels"},
      {"wrong dimensions", teImg, idxImages(3, 2, 27), false, "27x28"},
      {"label out of range", trLab, idxLabels({3, 1, 10, 1, 5}), false, "label 10"},
      {"header only", teImg, {0, 0, 8}, false, "too short"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    fs::remove_all(dir_);
    fs::create_directory(dir_);
    writeValid(false);
    fs::remove(dir_ / c.file);
    const fs::path path = c.gz ? dir_ / (c.file + ".gz") : dir_ / c.file;
    if (c.gz) writeGz(path, c.bytes); else writePlain(path, c.bytes);
    expectUsageError([&] { loadDataset(spec(), 0, 1); }, {path.string(), c.needle});
  }

  // A gzip stream cut short.
  fs::remove_all(dir_);
  fs::create_directory(dir_);
  writeValid(true);
  const fs::path gzPath = dir_ / (trImg + ".gz");
  const auto size = fs::file_size(gzPath);
  fs::resize_file(gzPath, size / 2);
  expectUsageError([&] { loadDataset(spec(), 0, 1); }, {gzPath.string()});
}

// ---- sampler -------------------------------------------------------------------------------------

std::vector<std::int64_t> sorted(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::int64_t> iota(std::size_t n) {
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int64_t>(i);
  return v;
}

TEST(Sampler, ShuffleIsAPermutationFixedBySeedAndEpoch) {
  const auto a = shuffledOrder(1000, 5, 0);
  EXPECT_EQ(sorted(a), iota(1000));
  EXPECT_NE(a, iota(1000));
  EXPECT_EQ(a, shuffledOrder(1000, 5, 0));
  EXPECT_NE(a, shuffledOrder(1000, 5, 1));
  EXPECT_NE(a, shuffledOrder(1000, 6, 0));
  EXPECT_TRUE(shuffledOrder(0, 5, 0).empty());
  EXPECT_EQ(shuffledOrder(1, 5, 0), iota(1));

  DistributedSampler s(1000, 1, 0, true, 5);
  EXPECT_EQ(s.indices(), a);
  s.setEpoch(1);
  EXPECT_EQ(s.indices(), shuffledOrder(1000, 5, 1));
  // Every position is equally likely for every element (rough check over many seeds).
  std::vector<int> firstCounts(10, 0);
  for (std::uint64_t seed = 0; seed < 5000; ++seed) firstCounts[shuffledOrder(10, seed, 0)[0]]++;
  for (int c : firstCounts) EXPECT_NEAR(c, 500, 90);
}

TEST(Sampler, RanksTakeStridedPositionsOfThePaddedOrder) {
  // No shuffle: size 10, N 4 -> padded order 0..9,0,1; rank r takes r, r+4, r+8.
  const std::vector<Indices> want = {{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}};
  for (int r = 0; r < 4; ++r) {
    DistributedSampler s(10, 4, r, false, 0);
    EXPECT_EQ(s.numSamples(), 3u);
    EXPECT_EQ(s.indices(), want[static_cast<std::size_t>(r)]) << r;
  }
  // Fewer samples than replicas: padding repeats the order as often as needed.
  for (int r = 0; r < 5; ++r) {
    DistributedSampler s(2, 5, r, false, 0);
    EXPECT_EQ(s.indices(), (Indices{r % 2}));
  }
  EXPECT_TRUE(DistributedSampler(0, 3, 1, true, 0).indices().empty());
}

TEST(Sampler, ShuffledRanksPartitionThePaddedPermutation) {
  for (std::size_t n : {1000u, 1001u, 1003u}) {
    for (int N : {1, 2, 3, 4, 7}) {
      const auto order = shuffledOrder(n, 9, 2);
      std::vector<std::int64_t> all;
      for (int r = 0; r < N; ++r) {
        DistributedSampler s(n, N, r, true, 9);
        s.setEpoch(2);
        const auto idx = s.indices();
        ASSERT_EQ(idx.size(), (n + N - 1) / N);
        ASSERT_EQ(idx.size(), s.numSamples());
        for (std::size_t k = 0; k < idx.size(); ++k) {
          ASSERT_EQ(idx[k], order[(r + k * N) % n]) << "n " << n << " N " << N << " r " << r << " k " << k;
        }
        all.insert(all.end(), idx.begin(), idx.end());
      }
      // Multiset: every sample once, plus the first (padding) ones once more.
      auto want = order;
      want.insert(want.end(), order.begin(), order.begin() + static_cast<std::ptrdiff_t>(all.size() - n));
      EXPECT_EQ(sorted(all), sorted(want)) << "n " << n << " N " << N;
    }
  }
}

TEST(Sampler, RankBatchesTogetherEqualTheGlobalBatch) {
  // The property every strategy's correctness rests on: rank r's k-th batch of size B, over all
  // ranks, is (as a multiset) the k-th batch of size N*B of the single-process order.
  for (std::size_t n : {1000u, 997u}) {
    for (std::uint64_t epoch : {0u, 3u}) {
      DistributedSampler single(n, 1, 0, true, 77);
      single.setEpoch(epoch);
      const auto global = single.indices();
      for (int N : {1, 2, 3, 4}) {
        std::vector<Indices> perRank;
        for (int r = 0; r < N; ++r) {
          DistributedSampler s(n, N, r, true, 77);
          s.setEpoch(epoch);
          perRank.push_back(s.indices());
        }
        for (std::size_t B : {1u, 7u, 64u}) {
          const std::size_t fullBatches = n / (N * B);
          ASSERT_GT(fullBatches, 0u);
          for (std::size_t k = 0; k < fullBatches; ++k) {
            Indices u;
            for (int r = 0; r < N; ++r) {
              const auto& idx = perRank[static_cast<std::size_t>(r)];
              u.insert(u.end(), idx.begin() + static_cast<std::ptrdiff_t>(k * B),
                       idx.begin() + static_cast<std::ptrdiff_t>((k + 1) * B));
            }
            Indices g(global.begin() + static_cast<std::ptrdiff_t>(k * N * B),
                      global.begin() + static_cast<std::ptrdiff_t>((k + 1) * N * B));
            ASSERT_EQ(sorted(u), sorted(g)) << "n " << n << " N " << N << " B " << B << " batch " << k;
          }
        }
      }
    }
  }
}

TEST(Sampler, BadReplicasOrRankAreUsageErrors) {
  EXPECT_THROW(DistributedSampler(10, 0, 0, true, 0), UsageError);
  EXPECT_THROW(DistributedSampler(10, 2, 2, true, 0), UsageError);
  EXPECT_THROW(DistributedSampler(10, 2, -1, true, 0), UsageError);
}

TEST(Sampler, GatherBatchSelectsRows) {
  Dataset d{torch::arange(0, 40, torch::kFloat32).reshape({10, 4}), torch::arange(0, 10, torch::kInt64)};
  const Indices idx = {7, 2, 2, 9, 0};
  const auto b = gatherBatch(d, idx, 1, 4);
  EXPECT_TRUE(torch::equal(b.labels, torch::tensor({2, 2, 9}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(b.images, torch::stack({d.images[2], d.images[2], d.images[9]})));
  EXPECT_EQ(gatherBatch(d, idx, 3, 3).images.size(0), 0);
  EXPECT_THROW(gatherBatch(d, idx, 4, 6), Error);
  EXPECT_THROW(gatherBatch(d, Indices{10}, 0, 1), Error);
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
    const auto r = evaluate(m, d, batch);
    EXPECT_NEAR(r.accuracy, 2.0 / 3.0, 1e-12) << batch;
    EXPECT_NEAR(r.loss, (l0 + l1 + l2) / 3.0, 1e-6) << batch;
  }
  EXPECT_THROW(evaluate(m, Dataset{torch::zeros({0, 2}), torch::zeros({0}, torch::kInt64)}), Error);
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
  const double chance = evaluate(model, test).accuracy;
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
      if (++step == 20) early = evaluate(model, test).accuracy;
    }
  }
  const auto result = evaluate(model, test);
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
