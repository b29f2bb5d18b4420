// workload/dataset.h — the training and test data: a deterministic synthetic MNIST look-alike
// (the default: no download, identical in every process) and the real MNIST IDX files.
//
// "synthetic" — MNIST-shaped (60000 train / 10000 test, 784 features, 10 classes), learnable but
// not trivially so, bit-identical for a given seed on every machine because it uses only
// SplitMix64, integer arithmetic and fixed-order float operations (no libm, no LibTorch RNG).
// Construction:
//   - a 16-dimensional latent space; each class c has 4 "styles" (modes) m with prototypes
//     mu[c][m] ~ N(0, 1.5^2 I), so a class is a mixture — not linearly separable by design, the
//     hidden layers have something to do;
//   - a fixed random projection A (784 x 16, entries ~ N(0, 0.25^2)) and a per-pixel bias that is
//     brighter in the centre of the 28x28 image and dark at its border, like a digit;
//   - a sample of class c: pick a style m uniformly, z = mu[c][m] + 0.5 * N(0, I) in latent
//     space, intensity v = clamp(bias + A z + 0.35 * noise, 0, 1) per pixel, then MNIST's
//     normalisation (v - 0.1307) / 0.3081, so values lie in MNIST's range [-0.4242, 2.8215]
//     (about 58% of pixels are background, at the minimum);
//   - labels are uniform over the 10 classes; with probability 0.03 the label is redrawn
//     uniformly ("ambiguous digits"), which caps the achievable accuracy at about 97.3%;
//   - sample i of each split has its own PRNG stream (seed, split, i), so the first K training
//     samples do not depend on how many are generated, nor on how many threads generate them.
//   Gaussians are Irwin–Hall approximations (sums of four uniforms), which keeps generation
//   integer-only and fast (about 0.6 s for all 70000 samples on one core).
//   Measured with the 784-512-512-10 MLP, SGD lr 0.01, seed 1 (tpbench run --strategy single):
//   batch 64 on all 60000 samples: 97.3% test accuracy after each of epochs 1-3 (89.5% after
//   100 steps, 41% after 20); train_size 8192 at batch 128 — the global batch of two ranks at
//   64 — 88.7% / 93.9% / 96.6% after epochs 1 / 2 / 3 (first 2000 test samples).
// "mnist:DIR" — train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
//   t10k-labels-idx1-ubyte in DIR, each plain or gzipped (NAME.gz), read and checked by
//   workload/idx.h (magic numbers, 28x28 images, matching counts, label range, exact lengths,
//   gzip inflated no further than the header implies). Pixels become
//   (x/255 - 0.1307) / 0.3081.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tpb {

struct Dataset {
  torch::Tensor images;  // [n, 784] float32, contiguous
  torch::Tensor labels;  // [n] int64, in [0, 10)
  std::size_t size() const { return labels.defined() ? static_cast<std::size_t>(labels.size(0)) : 0; }
};

struct DataSplit {
  Dataset train, test;
  std::string name;  // "synthetic" or "mnist"
};

// The sizes of "synthetic" (MNIST's).
constexpr std::size_t kSyntheticTrainSize = 60000, kSyntheticTestSize = 10000;

// Loads `spec` ("synthetic" or "mnist:DIR") on the CPU. trainSize K > 0 keeps the first K
// training samples (tpb::UsageError if fewer exist); 0 keeps all. `seed` only affects
// "synthetic". Every problem with the spec or the files is a tpb::UsageError naming the file.
DataSplit loadDataset(const std::string& spec, std::size_t trainSize, std::uint64_t seed);

// The synthetic data alone: the first nTrain training and nTest test samples (see above).
DataSplit makeSynthetic(std::size_t nTrain, std::size_t nTest, std::uint64_t seed);

// Reads MNIST from DIR (see above); trainSize as in loadDataset.
DataSplit loadMnist(const std::string& dir, std::size_t trainSize);

}  // namespace tpb
