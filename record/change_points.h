// record/change_points.h — where a series of measurements (one value per commit, in commit order)
// changed level: E-Divisive with means (Matteson and James, 2014, the method behind MongoDB's and
// Hunter's performance history), for `tpbench history`.
//
// The divergence of two adjacent pieces X = z[a, t) and Y = z[t, k) of a segment [a, b), k <= b,
// is the energy statistic with distance d(x, y) = |x - y|^exponent,
//   Q(t, k) = m n / (m + n) * ( 2/(m n) sum d(x, y) - 1/C(m,2) sum_{i<l} d(x_i, x_l)
//                                                  - 1/C(n,2) sum_{j<l} d(y_j, y_l) ),
// zero in expectation when both pieces come from one distribution (m = t - a, n = k - t). Each
// pass splits, among the current segments, the one whose best (t, k) (at least minSize values in
// each piece) has the largest Q, when a permutation test says so: the same search over
// `permutations` shufflings of the values within each segment, p = (1 + #{shuffled >= observed})
// / (permutations + 1); splitting stops at the first p >= alpha. Deterministic given the seed.
// A segment of n values costs O(n^2) time and memory per search; a split runs it once per
// shuffling, stopped early once enough shufflings reach the observed Q for p >= alpha.
//
// The exponent: the paper allows (0, 2) and its R package defaults to 1; here 0.5, because
// performance histories have outliers (a run that lost its core) and a smaller exponent weighs
// one far value less. On tests/change_points_test.cc's synthetic histories (10 % shifts under 3 %
// noise, one value in 20 an outlier 1.5x) exponent 1 found 0.61-0.73 of the shifts, 0.5 found
// 0.87-0.93 at precision >= 0.92 (docs/reports.md, "History").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpb {

struct ChangePointOptions {
  double alpha = 0.05;       // significance of each split
  int permutations = 199;    // shufflings per split test
  std::size_t minSize = 5;   // values each side of a change point, at least 2
  double exponent = 0.5;     // of the distance, in (0, 2)
  std::uint64_t seed = 1;
};

struct ChangePoint {
  std::size_t index = 0;     // the first value of the new level
  double before = 0, after = 0;  // the means of the segments either side
  double q = 0;              // the divergence Q of the split
  double p = 1;              // its permutation p-value
};

// Change points in order of index. Throws tpb::Error for NaN or infinite values and for
// options out of range (alpha in (0, 1), permutations >= 1, minSize >= 2).
std::vector<ChangePoint> eDivisive(const std::vector<double>& z, const ChangePointOptions& opt = {});

}  // namespace tpb
