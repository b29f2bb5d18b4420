// workload/sampler.h — which samples each rank trains on, with the semantics of PyTorch's
// torch.utils.data.DistributedSampler (drop_last=False), plus batch gathering and the PRNG the
// workload layer uses.
//
// Why these semantics: the order is a permutation fixed by seed+epoch alone, padded to a multiple
// of N by repeating from its start, and rank r takes positions r, r+N, r+2N, ... Consequently the
// N ranks' k-th batches of size B together hold exactly the samples of the k-th batch of size N*B
// of the single-process order — which is what lets every strategy be checked against
// single-device training at the global batch.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpb {

struct Dataset;

// SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast, well-mixed PRNG defined entirely with
// 64-bit integer arithmetic, so its stream is the same on every platform and compiler — unlike
// std::mt19937's distributions or LibTorch's generators. Used for the sampler's shuffle, the
// synthetic dataset and model initialisation.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 random bits (exact in float).
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform integer in [0, bound), unbiased (Lemire's multiply-and-reject). bound > 0.
  std::uint64_t below(std::uint64_t bound);

 private:
  std::uint64_t state_;
};

// Mixes several words into one seed (so stream k of seed s is unrelated to stream k+1).
std::uint64_t mixSeed(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0);

class DistributedSampler {
 public:
  // numReplicas >= 1, 0 <= rank < numReplicas; otherwise tpb::UsageError.
  DistributedSampler(std::size_t datasetSize, int numReplicas, int rank, bool shuffle,
                     std::uint64_t seed);

  // Like DistributedSampler.set_epoch: the shuffle of epoch e is a function of seed+e only.
  void setEpoch(std::uint64_t epoch) { epoch_ = epoch; }
  std::uint64_t epoch() const { return epoch_; }

  // This rank's sample indices for the current epoch, numSamples() of them.
  std::vector<std::int64_t> indices() const;
  // ceil(datasetSize / numReplicas).
  std::size_t numSamples() const;

 private:
  std::size_t size_;
  int replicas_;
  int rank_;
  bool shuffle_;
  std::uint64_t seed_;
  std::uint64_t epoch_ = 0;
};

// The permutation of 0..n-1 used for (seed, epoch): Fisher-Yates driven by SplitMix64.
std::vector<std::int64_t> shuffledOrder(std::size_t n, std::uint64_t seed, std::uint64_t epoch);

struct Batch {
  torch::Tensor images;  // [end-begin, features] float32, on the dataset's device
  torch::Tensor labels;  // [end-begin] int64
};

// `indices` (an epoch's sample order) as an int64 tensor on `device`, so that a training loop
// uploads it once per epoch and gathers every batch where the data is (no host round trip per
// step). Checks every index is within a dataset of `datasetSize` samples (tpb::Error).
torch::Tensor epochIndexTensor(const std::vector<std::int64_t>& indices, std::size_t datasetSize,
                               torch::Device device);

// Gathers samples order[begin, end) of `data` (index_select, on the data's device). `order` may
// live on another device; its values are trusted (epochIndexTensor checked them). Throws
// tpb::Error if the range is out of bounds.
Batch gatherBatch(const Dataset& data, const torch::Tensor& order, std::size_t begin, std::size_t end);
// The same from a host vector; also checks the gathered indices.
Batch gatherBatch(const Dataset& data, const std::vector<std::int64_t>& indices,
                  std::size_t begin, std::size_t end);

}  // namespace tpb
