// workload/dataset.cc — synthetic data generation and the MNIST IDX reader (see dataset.h).
#include "workload/dataset.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <vector>

#include "common/error.h"
#include "workload/idx.h"
#include "workload/sampler.h"

// Bit-identical results on every machine need each float operation rounded as written, never
// fused into a multiply-add: GCC does not contract in ISO mode (-std=c++17, as tpbench builds);
// clang contracts by default where FMA exists (e.g. -march=native), so tell it not to.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tpb {
namespace {

constexpr int kSide = kMnistSide;
constexpr int kPixels = kMnistPixels;
constexpr int kClasses = kMnistClasses;
constexpr float kMnistMean = 0.1307f;
constexpr float kMnistStd = 0.3081f;

// ---- synthetic -----------------------------------------------------------------------------------

// Shape of the synthetic problem (documented in dataset.h; change both together).
struct SynthShape {
  int latent = 16;            // latent dimensions
  int styles = 4;             // modes per class
  float protoScale = 1.5f;    // std of prototype coordinates
  float latentNoise = 0.5f;   // std of a sample around its prototype
  float projScale = 0.25f;    // std of projection entries
  float pixelNoise = 0.35f;   // std of per-pixel noise (intensity units)
  float centreBias = 0.35f;   // intensity bias at the image centre ...
  float biasFalloff = 0.9f;   // ... minus this times (distance / 13.5)^2
  float labelNoise = 0.03f;   // probability that the label is redrawn uniformly
};

// N(0,1) approximated by Irwin–Hall: four 16-bit uniforms summed, centred and scaled to unit
// variance. Integer arithmetic plus one float multiply: the same bits on every platform.
inline float gauss(SplitMix64& g) {
  const std::uint64_t x = g.next();
  const std::int64_t s = static_cast<std::int64_t>((x & 0xFFFF) + ((x >> 16) & 0xFFFF) + ((x >> 32) & 0xFFFF) + (x >> 48));
  // Sum of four U{0..65535}: mean 131070, variance 4 * (65536^2 - 1) / 12.
  constexpr float kScale = 2.6428997921303014e-05f;
  return static_cast<float>(s - 131070) * kScale;
}

// Two coarser N(0,1) approximations from one draw (each the sum of four 8-bit uniforms): the
// per-pixel noise, where 55 million draws for the full dataset make the halving worth it.
inline void gauss2(SplitMix64& g, float& a, float& b) {
  const std::uint64_t x = g.next();
  const auto sa = static_cast<std::int32_t>((x & 0xFF) + ((x >> 8) & 0xFF) + ((x >> 16) & 0xFF) + ((x >> 24) & 0xFF));
  const auto sb = static_cast<std::int32_t>(((x >> 32) & 0xFF) + ((x >> 40) & 0xFF) + ((x >> 48) & 0xFF) + (x >> 56));
  // Sum of four U{0..255}: mean 510, variance 4 * (256^2 - 1) / 12.
  constexpr float kScale = 0.006765875086793228f;
  a = static_cast<float>(sa - 510) * kScale;
  b = static_cast<float>(sb - 510) * kScale;
}

struct SynthModel {
  SynthShape shape;
  std::vector<float> protos;  // [classes][styles][latent]
  std::vector<float> proj;    // [latent][784], row l contiguous so A z vectorises over pixels
  std::vector<float> bias;    // [784]
};

SynthModel buildSynthModel(std::uint64_t seed) {
  SynthModel m;
  const SynthShape& s = m.shape;
  SplitMix64 g(mixSeed(seed, 0x53594E54 /* "SYNT" */, 0));
  m.protos.resize(static_cast<std::size_t>(kClasses) * s.styles * s.latent);
  for (float& v : m.protos) v = s.protoScale * gauss(g);
  m.proj.resize(static_cast<std::size_t>(s.latent) * kPixels);
  for (float& v : m.proj) v = s.projScale * gauss(g);
  m.bias.resize(kPixels);
  for (int y = 0; y < kSide; ++y) {
    for (int x = 0; x < kSide; ++x) {
      const float dx = static_cast<float>(x) - 13.5f, dy = static_cast<float>(y) - 13.5f;
      const float r2 = (dx * dx + dy * dy) / (13.5f * 13.5f);
      m.bias[static_cast<std::size_t>(y * kSide + x)] = s.centreBias - s.biasFalloff * r2;
    }
  }
  return m;
}

// Fills `n` samples of split `splitId` (0 train, 1 test) into images [n,784] / labels [n].
Dataset generateSplit(const SynthModel& m, std::uint64_t seed, int splitId, std::size_t n) {
  const SynthShape& s = m.shape;
  Dataset d;
  d.images = torch::empty({static_cast<std::int64_t>(n), kPixels}, torch::kFloat32);
  d.labels = torch::empty({static_cast<std::int64_t>(n)}, torch::kInt64);
  float* img = d.images.data_ptr<float>();
  std::int64_t* lab = d.labels.data_ptr<std::int64_t>();
  // Samples are independent streams, so any split of the work gives the same bits.
  at::parallel_for(0, static_cast<std::int64_t>(n), 512, [&](std::int64_t first, std::int64_t last) {
    std::vector<float> z(static_cast<std::size_t>(s.latent));
    std::array<float, kPixels> v{};
    std::array<float, kPixels> noise{};
    for (auto i = static_cast<std::size_t>(first); i < static_cast<std::size_t>(last); ++i) {
      // One stream per sample: sample i is the same however many are generated.
      SplitMix64 g(mixSeed(seed, 0x5350 + static_cast<std::uint64_t>(splitId), i));
      const auto label = static_cast<int>(g.below(kClasses));
      const auto style = static_cast<int>(g.below(static_cast<std::uint64_t>(s.styles)));
      const float* mu = &m.protos[(static_cast<std::size_t>(label) * s.styles + style) * s.latent];
      for (int l = 0; l < s.latent; ++l) z[l] = mu[l] + s.latentNoise * gauss(g);
      std::copy(m.bias.begin(), m.bias.end(), v.begin());
      for (int l = 0; l < s.latent; ++l) {
        const float* a = &m.proj[static_cast<std::size_t>(l) * kPixels];
        const float zl = z[l];
        for (int j = 0; j < kPixels; ++j) v[j] += a[j] * zl;
      }
      // Ambiguous samples (like MNIST's badly written digits) cap the achievable accuracy.
      const bool relabel = g.uniform() < s.labelNoise;
      const auto shown = relabel ? static_cast<int>(g.below(kClasses)) : label;
      float* out = img + i * kPixels;
      static_assert(kPixels % 2 == 0, "pixel noise comes in pairs");
      for (int j = 0; j < kPixels; j += 2) gauss2(g, noise[j], noise[j + 1]);
      for (int j = 0; j < kPixels; ++j) {
        const float p = std::min(1.0f, std::max(0.0f, v[j] + s.pixelNoise * noise[j]));
        out[j] = (p - kMnistMean) / kMnistStd;
      }
      lab[i] = shown;
    }
  });
  return d;
}

// ---- MNIST IDX ---------------------------------------------------------------------------------

// The checked bytes of one split (workload/idx.h) as tensors.
Dataset readIdxPair(const std::string& dir, const std::string& prefix) {
  const MnistPair p = readMnistPair(dir, prefix);
  const auto n = static_cast<std::int64_t>(p.images.count);
  Dataset d;
  d.images = torch::empty({n, kPixels}, torch::kFloat32);
  d.labels = torch::empty({n}, torch::kInt64);
  float* out = d.images.data_ptr<float>();
  for (std::size_t i = 0; i < p.images.body.size(); ++i)
    out[i] = (static_cast<float>(p.images.body[i]) / 255.0f - kMnistMean) / kMnistStd;
  std::int64_t* lo = d.labels.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < p.labels.body.size(); ++i) lo[i] = p.labels.body[i];
  return d;
}

void keepFirst(Dataset& d, std::size_t k, const std::string& what) {
  if (k == 0) return;
  if (k > d.size()) {
    TPB_THROW(UsageError, "--train_size " << k << " exceeds the " << d.size() << " training samples of " << what);
  }
  d.images = d.images.narrow(0, 0, static_cast<std::int64_t>(k)).contiguous();
  d.labels = d.labels.narrow(0, 0, static_cast<std::int64_t>(k)).contiguous();
}

}  // namespace

DataSplit makeSynthetic(std::size_t nTrain, std::size_t nTest, std::uint64_t seed) {
  const SynthModel m = buildSynthModel(seed);
  DataSplit s;
  s.train = generateSplit(m, seed, 0, nTrain);
  s.test = generateSplit(m, seed, 1, nTest);
  s.name = "synthetic";
  return s;
}

DataSplit loadMnist(const std::string& dir, std::size_t trainSize) {
  DataSplit s;
  s.train = readIdxPair(dir, "train");
  s.test = readIdxPair(dir, "t10k");
  keepFirst(s.train, trainSize, "mnist:" + dir);
  s.name = "mnist";
  return s;
}

DataSplit loadDataset(const std::string& spec, std::size_t trainSize, std::uint64_t seed) {
  if (spec == "synthetic") {
    if (trainSize > kSyntheticTrainSize) {
      TPB_THROW(UsageError, "--train_size " << trainSize << " exceeds the " << kSyntheticTrainSize
                                            << " training samples of synthetic");
    }
    return makeSynthetic(trainSize == 0 ? kSyntheticTrainSize : trainSize, kSyntheticTestSize, seed);
  }
  const std::string prefix = "mnist:";
  if (spec.compare(0, prefix.size(), prefix) == 0 && spec.size() > prefix.size()) {
    return loadMnist(spec.substr(prefix.size()), trainSize);
  }
  TPB_THROW(UsageError, "--dataset: unknown dataset '" << spec
                                                       << "' (expected 'synthetic' or 'mnist:DIR', DIR holding the MNIST IDX files)");
}

}  // namespace tpb
