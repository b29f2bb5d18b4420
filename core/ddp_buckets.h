// core/ddp_buckets.h — how ddp cuts the gradients into buckets: PyTorch's rule
// (compute_bucket_assignment_by_size, as its Reducer rebuilds the buckets after the first
// iteration, in backward order). Parameters are taken in reverse order (the order backward
// produces their gradients); each joins the open bucket, which closes once it holds at least its
// limit: firstBytes for the first bucket (PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB,
// whatever the cap), capBytes (--bucket_mb) for every later one. The last bucket takes what is
// left. Header-only and LibTorch-free, so tests check the rule on sizes alone, and the step model
// (cost_model/step_model.h) cuts its buckets as ddp does.
#pragma once

#include <cstddef>
#include <vector>

namespace tpb {

inline constexpr double kDdpFirstBucketBytes = 1024.0 * 1024.0;

// Bucket b holds parameters [first[b], end) where end is first[b-1] (params.size() for b = 0):
// bucket 0 ends with the last parameter. `bytes[i]` is parameter i's gradient size.
inline std::vector<std::size_t> ddpBucketFirsts(const std::vector<double>& bytes, double capBytes,
                                                double firstBytes = kDdpFirstBucketBytes) {
  std::vector<std::size_t> firsts;
  std::size_t begin = bytes.size();
  while (begin > 0) {
    const double limit = firsts.empty() ? firstBytes : capBytes;
    std::size_t first = begin;
    double held = 0;
    while (first > 0 && held < limit) held += bytes[--first];
    firsts.push_back(first);
    begin = first;
  }
  return firsts;
}

}  // namespace tpb
