// record/stats.h — the statistics tpbench reports: a five-number-ish summary of repeated
// timings, and the Mann-Whitney U test that `compare` uses to tell a real change from noise
// (google/benchmark's compare.py does the same: relative change plus a U test over repetitions).
#pragma once

#include <cstddef>
#include <vector>

namespace tpb {

struct Summary {
  std::size_t n = 0;
  double median = 0;  // even n: the mean of the two middle values
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (divides by n-1); 0 when n < 2
  // Nearest-rank percentiles: the ceil(q n)-th smallest value, one of the inputs (with 20 values
  // p90 is the 18th and p99 the largest: a tail needs 100 iterations before p99 is not the max).
  double p90 = 0, p99 = 0;
  double cv() const { return mean > 0 ? stddev / mean : 0; }  // coefficient of variation
};

// The ceil(q n)-th smallest of xs (q in (0, 1]); empty: 0. NaN throws tpb::Error.
double nearestRank(std::vector<double> xs, double q);

// Empty input gives n = 0 and zeros everywhere. NaN in the input throws tpb::Error.
Summary summarize(std::vector<double> xs);

struct MannWhitney {
  double u = 0;  // U of the first sample: R_a - n_a(n_a+1)/2 (scipy's `statistic`)
  double p = 1;  // two-sided p-value
};

// Two-sided Mann-Whitney U test of a against b; ranks of tied values are averaged. The p-value
// follows scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method="auto"):
//  * exact when there are no ties and min(n_a, n_b) <= 8: p = 2 * P(U >= max(U_a, U_b)) under
//    the null distribution of U (counted exactly), capped at 1. One difference from scipy: when
//    n_a * n_b > 1e6 the normal approximation is used instead, to bound the memory used.
//  * otherwise the normal approximation with tie correction and continuity correction:
//      mu = n_a n_b / 2
//      sigma^2 = n_a n_b / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1)))   (t: size of each tie group)
//      z = (max(U_a, U_b) - mu - 0.5) / sigma,   p = 2 * (1 - Phi(z)), capped at 1.
// Degenerate inputs give p = 1 (no evidence of a difference): either sample empty (u = 0), or
// every value tied (sigma = 0). NaN in either sample throws tpb::Error.
MannWhitney mannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);

struct SignedRank {
  std::size_t n = 0;  // the nonzero differences ranked
  double wPlus = 0;   // the sum of the ranks of the positive differences
  double p = 1;       // one-sided p-value: the differences lean positive
};

// One-sided Wilcoxon signed-rank test that the paired differences d lean positive (for
// `compare --paired`: the log of NEW's time over BASE's, one per round). Zero differences are
// dropped (scipy's zero_method="wilcox"); ranks of tied |d| are averaged.
//  * exact when n <= 50: p = P(W+ >= observed) over the 2^n equally likely sign assignments of
//    the ranks (midranks where |d| ties: the permutation distribution given the ranks; scipy
//    uses the normal approximation there), counted by the number of assignments per rank sum;
//  * beyond 50 the normal approximation with tie and continuity correction:
//      mu = n(n+1)/4,  sigma^2 = n(n+1)(2n+1)/24 - sum(t^3 - t)/48,
//      z = (W+ - mu - 0.5) / sigma,  p = 1 - Phi(z).
// No nonzero difference gives p = 1. NaN throws tpb::Error.
SignedRank signedRankGreater(const std::vector<double>& d);

}  // namespace tpb
