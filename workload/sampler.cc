// workload/sampler.cc — DistributedSampler, the shuffle behind it, and batch gathering.
#include "workload/sampler.h"

#include <torch/torch.h>

#include <numeric>

#include "common/error.h"
#include "workload/dataset.h"

namespace tpb {

std::uint64_t SplitMix64::below(std::uint64_t bound) {
  // Lemire, "Fast random integer generation in an interval" (2019): the high word of x*bound is
  // uniform in [0, bound) once the few low words that would bias it are rejected.
  unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
  auto low = static_cast<std::uint64_t>(m);
  if (low < bound) {
    const std::uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(next()) * bound;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

std::uint64_t mixSeed(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  SplitMix64 g(a);
  std::uint64_t h = g.next() ^ (b * 0xD1B54A32D192ED03ull);
  SplitMix64 g2(h);
  h = g2.next() ^ (c * 0x8CB92BA72F3D8DD7ull);
  SplitMix64 g3(h);
  return g3.next();
}

std::vector<std::int64_t> shuffledOrder(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), std::int64_t{0});
  // Seeded by seed+epoch, as torch's DistributedSampler seeds its generator.
  SplitMix64 g(mixSeed(seed + epoch, 0x5A3D1E5));
  for (std::size_t i = n; i > 1; --i) {
    const std::size_t j = g.below(i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

DistributedSampler::DistributedSampler(std::size_t datasetSize, int numReplicas, int rank,
                                       bool shuffle, std::uint64_t seed)
    : size_(datasetSize), replicas_(numReplicas), rank_(rank), shuffle_(shuffle), seed_(seed) {
  if (numReplicas < 1) TPB_THROW(UsageError, "sampler: number of replicas must be >= 1, got " << numReplicas);
  if (rank < 0 || rank >= numReplicas) {
    TPB_THROW(UsageError, "sampler: rank " << rank << " out of range [0, " << numReplicas << ")");
  }
}

std::size_t DistributedSampler::numSamples() const {
  const auto n = static_cast<std::size_t>(replicas_);
  return (size_ + n - 1) / n;
}

std::vector<std::int64_t> DistributedSampler::indices() const {
  std::vector<std::int64_t> order;
  if (shuffle_) {
    order = shuffledOrder(size_, seed_, epoch_);
  } else {
    order.resize(size_);
    std::iota(order.begin(), order.end(), std::int64_t{0});
  }
  const std::size_t n = static_cast<std::size_t>(replicas_);
  const std::size_t per = numSamples();
  std::vector<std::int64_t> mine;
  mine.reserve(per);
  if (size_ == 0) return mine;
  // Position p of the padded order is order[p % size] (padding repeats from the start, as often
  // as needed when size < N); this rank takes positions rank, rank+N, ...
  for (std::size_t k = 0; k < per; ++k) {
    const std::size_t p = static_cast<std::size_t>(rank_) + k * n;
    mine.push_back(order[p % size_]);
  }
  return mine;
}

torch::Tensor epochIndexTensor(const std::vector<std::int64_t>& indices, std::size_t datasetSize,
                               torch::Device device) {
  const auto n = static_cast<std::int64_t>(datasetSize);
  for (std::int64_t i : indices)
    TPB_CHECK(i >= 0 && i < n, "sample index " << i << " outside dataset of " << n);
  auto t = torch::from_blob(const_cast<std::int64_t*>(indices.data()),
                            {static_cast<std::int64_t>(indices.size())}, torch::kInt64);
  // from_blob does not own the memory: a CPU result must be a copy, a device one is.
  return device.is_cpu() ? t.clone() : t.to(device);
}

Batch gatherBatch(const Dataset& data, const torch::Tensor& order, std::size_t begin, std::size_t end) {
  TPB_CHECK(begin <= end && end <= static_cast<std::size_t>(order.numel()),
            "batch range [" << begin << ", " << end << ") outside " << order.numel() << " indices");
  const auto rows = order.narrow(0, static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end - begin))
                        .to(data.images.device());
  return Batch{data.images.index_select(0, rows), data.labels.index_select(0, rows)};
}

Batch gatherBatch(const Dataset& data, const std::vector<std::int64_t>& indices,
                  std::size_t begin, std::size_t end) {
  TPB_CHECK(begin <= end && end <= indices.size(),
            "batch range [" << begin << ", " << end << ") outside " << indices.size() << " indices");
  const std::vector<std::int64_t> slice(indices.begin() + static_cast<std::ptrdiff_t>(begin),
                                        indices.begin() + static_cast<std::ptrdiff_t>(end));
  return gatherBatch(data, epochIndexTensor(slice, data.size(), data.images.device()), 0, slice.size());
}

}  // namespace tpb
