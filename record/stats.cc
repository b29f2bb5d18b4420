#include "record/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "common/error.h"

namespace tpb {
namespace {

// Beyond this many possible U values (n_a * n_b) the exact tail is not counted (memory: one
// double per value); the normal approximation is used instead.
constexpr double kExactMaxCells = 1e6;

bool anyNan(const std::vector<double>& xs) {
  return std::any_of(xs.begin(), xs.end(), [](double x) { return std::isnan(x); });
}

// P(U >= u) for the U statistic of samples of sizes n1, n2 without ties, counted exactly.
// Under the null hypothesis every choice of which k = min(n1, n2) of the N = n1 + n2 ranks belong
// to the smaller sample is equally likely, and the number of choices with U = v is the
// coefficient of q^v in the Gaussian binomial
//   [N choose k]_q = prod_{i=1..k} (1 - q^(N-k+i)) / (1 - q^i).
// The distribution is symmetric, so P(U >= u) = P(U <= n1 n2 - u): only coefficients up to
// lim = n1 n2 - u are needed, and the product is evaluated as power series truncated there
// (multiplying by 1 - q^a and dividing by 1 - q^i are each one pass), O(k * lim) in all.
double exactUpperTail(std::size_t n1, std::size_t n2, double u) {
  const std::size_t k = std::min(n1, n2);
  const std::size_t total = n1 + n2;
  const double lowerLimit = static_cast<double>(n1) * static_cast<double>(n2) - u;
  if (lowerLimit < 0) return 0.0;
  const auto lim = static_cast<std::size_t>(std::floor(lowerLimit + 1e-9));
  std::vector<double> c(lim + 1, 0.0);
  c[0] = 1.0;
  for (std::size_t i = 1; i <= k; ++i) {
    const std::size_t a = total - k + i;
    for (std::size_t v = lim; v >= a; --v) c[v] -= c[v - a];
    for (std::size_t v = i; v <= lim; ++v) c[v] += c[v - i];
  }
  double count = 0;
  for (double w : c) count += w;
  double subsets = 1;  // C(total, k)
  for (std::size_t j = 1; j <= k; ++j) {
    subsets = subsets * static_cast<double>(total - k + j) / static_cast<double>(j);
  }
  return count / subsets;
}

}  // namespace

namespace {
// The 0-based index of the ceil(q n)-th smallest of n sorted values (at least the first). The
// small tolerance keeps q n that is an integer in exact arithmetic (0.9 x 20 = 18) from rounding
// up to the next rank.
std::size_t rankIndex(std::size_t n, double q) {
  const double r = std::ceil(q * static_cast<double>(n) - 1e-9);
  return static_cast<std::size_t>(std::clamp(r, 1.0, static_cast<double>(n))) - 1;
}
}  // namespace

double nearestRank(std::vector<double> xs, double q) {
  TPB_CHECK(q > 0 && q <= 1, "nearestRank: q must be in (0, 1], got " << q);
  if (xs.empty()) return 0;
  if (anyNan(xs)) TPB_THROW(Error, "nearestRank: the input contains NaN");
  std::sort(xs.begin(), xs.end());
  return xs[rankIndex(xs.size(), q)];
}

Summary summarize(std::vector<double> xs) {
  Summary s;
  if (xs.empty()) return s;
  if (anyNan(xs)) TPB_THROW(Error, "summarize: the input contains NaN");
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  s.n = n;
  s.min = xs.front();
  s.max = xs.back();
  s.median = n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2.0;
  s.mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(n);
  s.p90 = xs[rankIndex(n, 0.90)];
  s.p99 = xs[rankIndex(n, 0.99)];
  if (n >= 2) {
    double ss = 0;
    for (double x : xs) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(n - 1));
  }
  return s;
}

MannWhitney mannWhitneyU(const std::vector<double>& a, const std::vector<double>& b) {
  if (anyNan(a) || anyNan(b)) TPB_THROW(Error, "mannWhitneyU: a sample contains NaN");
  MannWhitney r;
  const std::size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return r;

  // Pool, sort, give each run of equal values the average of the ranks it spans.
  std::vector<std::pair<double, bool>> pooled;  // (value, from a)
  pooled.reserve(n1 + n2);
  for (double x : a) pooled.emplace_back(x, true);
  for (double x : b) pooled.emplace_back(x, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& l, const auto& r) { return l.first < r.first; });
  const std::size_t total = pooled.size();
  double rankSumA = 0, tieTerm = 0;
  bool ties = false;
  for (std::size_t i = 0; i < total;) {
    std::size_t j = i + 1;
    while (j < total && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;  // 1-based
    for (std::size_t q = i; q < j; ++q) {
      if (pooled[q].second) rankSumA += rank;
    }
    if (j - i > 1) {
      ties = true;
      tieTerm += t * t * t - t;
    }
    i = j;
  }

  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2);
  const double dn = dn1 + dn2;
  r.u = rankSumA - dn1 * (dn1 + 1) / 2.0;
  const double uMax = std::max(r.u, dn1 * dn2 - r.u);

  double p = 1.0;
  if (!ties && std::min(n1, n2) <= 8 && dn1 * dn2 <= kExactMaxCells) {
    p = 2.0 * exactUpperTail(n1, n2, uMax);
  } else {
    const double mu = dn1 * dn2 / 2.0;
    const double var = dn1 * dn2 / 12.0 * ((dn + 1) - tieTerm / (dn * (dn - 1)));
    if (var > 0) {
      const double z = (uMax - mu - 0.5) / std::sqrt(var);
      p = std::erfc(z / std::sqrt(2.0));  // = 2 * (1 - Phi(z))
    }
  }
  r.p = std::clamp(p, 0.0, 1.0);
  return r;
}

SignedRank signedRankGreater(const std::vector<double>& d) {
  if (anyNan(d)) TPB_THROW(Error, "signedRankGreater: a difference is NaN");
  std::vector<double> nonzero;
  for (double x : d)
    if (x != 0) nonzero.push_back(x);
  SignedRank r;
  r.n = nonzero.size();
  if (r.n == 0) return r;
  std::sort(nonzero.begin(), nonzero.end(), [](double a, double b) { return std::fabs(a) < std::fabs(b); });
  double tieTerm = 0;
  for (std::size_t i = 0; i < r.n;) {
    std::size_t j = i + 1;
    while (j < r.n && std::fabs(nonzero[j]) == std::fabs(nonzero[i])) ++j;
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t q = i; q < j; ++q)
      if (nonzero[q] > 0) r.wPlus += rank;
    const double t = static_cast<double>(j - i);
    tieTerm += t * t * t - t;
    i = j;
  }
  const double n = static_cast<double>(r.n);
  if (r.n <= 50) {
    // Doubled ranks are whole numbers, midranks of ties included. ways[s]: sign assignments of
    // the first k ranks whose positive doubled ranks sum to s (at most 2^50 < 2^53: exact).
    std::vector<std::size_t> doubled;
    for (std::size_t i = 0; i < r.n;) {
      std::size_t j = i + 1;
      while (j < r.n && std::fabs(nonzero[j]) == std::fabs(nonzero[i])) ++j;
      for (std::size_t q = i; q < j; ++q) doubled.push_back(i + 1 + j);  // 2 x (i+1 + j)/2
      i = j;
    }
    const std::size_t maxSum = r.n * (r.n + 1);
    std::vector<double> ways(maxSum + 1, 0.0);
    ways[0] = 1;
    for (std::size_t d : doubled)
      for (std::size_t s = maxSum; s >= d; --s) ways[s] += ways[s - d];
    double atLeast = 0;
    for (auto s = static_cast<std::size_t>(std::llround(2 * r.wPlus)); s <= maxSum; ++s) atLeast += ways[s];
    r.p = atLeast / std::ldexp(1.0, static_cast<int>(r.n));
  } else {
    const double var = n * (n + 1) * (2 * n + 1) / 24.0 - tieTerm / 48.0;
    if (var > 0) r.p = 0.5 * std::erfc((r.wPlus - n * (n + 1) / 4.0 - 0.5) / std::sqrt(var) / std::sqrt(2.0));
  }
  r.p = std::clamp(r.p, 0.0, 1.0);
  return r;
}

}  // namespace tpb
