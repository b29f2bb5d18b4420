// Tests for workload/'s data side: the synthetic and MNIST datasets (including malformed
// files), and DistributedSampler's semantics with the union-of-batches property the strategies
// rely on.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/file_util.h"
#include "workload/dataset.h"
#include "workload/model.h"
#include "workload/sampler.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using Indices = std::vector<std::int64_t>;

using test::expectUsageError;

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

}  // namespace
}  // namespace tpb
