#include "record/change_points.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "common/error.h"

namespace tpb {
namespace {

struct Segment {
  std::size_t begin = 0, end = 0;  // [begin, end)
};

struct Split {
  double q = -1;       // -1: no split of at least minSize each side
  std::size_t at = 0;  // global index of the first value of the right piece
};

// The split of z[s.begin, s.end) with the largest Q over every t and right end k (X = [begin,
// t), Y = [t, k)), from three tables of the segment's distances d(i, j) = |v_i - v_j|^exponent,
// so that each (t, k) costs O(1) and the segment O(n^2) time and memory:
//   C[i][k] = sum_{j<k} d(i, j)              (row prefix sums)
//   S[t][k] = sum_{i<t} C[i][k]              (between(t, k) = S[t][k] - S[t][t])
//   W[a][b] = sum_{a<=j<l<b} d(j, l)         (within [a, b) = W[a][b-1] + C[b-1][b-1] - C[b-1][a])
Split bestSplit(const std::vector<double>& z, Segment s, std::size_t minSize, double exponent) {
  Split best;
  const std::size_t n = s.end - s.begin;
  if (n < 2 * minSize) return best;
  const double* v = z.data() + s.begin;
  const std::size_t w = n + 1;
  std::vector<double> C(n * w, 0.0), S(w * w, 0.0), W(w * w, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 1; k <= n; ++k) C[i * w + k] = C[i * w + k - 1] + std::pow(std::fabs(v[i] - v[k - 1]), exponent);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t k = 0; k <= n; ++k) S[(t + 1) * w + k] = S[t * w + k] + C[t * w + k];
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b <= n; ++b)
      W[a * w + b] = W[a * w + b - 1] + C[(b - 1) * w + (b - 1)] - C[(b - 1) * w + a];
  for (std::size_t t = minSize; t + minSize <= n; ++t) {
    const double m = static_cast<double>(t);
    const double withinX = W[t] / (m * (m - 1) / 2);  // W[0][t], as a mean
    for (std::size_t k = t + minSize; k <= n; ++k) {
      const double q = static_cast<double>(k - t);
      const double between = S[t * w + k] - S[t * w + t];
      const double e = 2 * between / (m * q) - withinX - W[t * w + k] / (q * (q - 1) / 2);
      const double stat = m * q / (m + q) * e;
      if (stat > best.q) best = {stat, s.begin + t};
    }
  }
  return best;
}

// The best split over all segments, and which segment it is in.
std::pair<Split, std::size_t> bestOverSegments(const std::vector<double>& z, const std::vector<Segment>& segs,
                                               std::size_t minSize, double exponent) {
  Split best;
  std::size_t which = 0;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const Split s = bestSplit(z, segs[i], minSize, exponent);
    if (s.q > best.q) best = s, which = i;
  }
  return {best, which};
}

double meanOf(const std::vector<double>& z, std::size_t begin, std::size_t end) {
  double sum = 0;
  for (std::size_t i = begin; i < end; ++i) sum += z[i];
  return sum / static_cast<double>(end - begin);
}

}  // namespace

std::vector<ChangePoint> eDivisive(const std::vector<double>& z, const ChangePointOptions& opt) {
  if (!(opt.alpha > 0 && opt.alpha < 1)) TPB_THROW(Error, "eDivisive: alpha must be in (0, 1), got " << opt.alpha);
  if (opt.permutations < 1) TPB_THROW(Error, "eDivisive: permutations must be >= 1, got " << opt.permutations);
  if (opt.minSize < 2) TPB_THROW(Error, "eDivisive: minSize must be >= 2, got " << opt.minSize);
  if (!(opt.exponent > 0 && opt.exponent < 2)) TPB_THROW(Error, "eDivisive: exponent must be in (0, 2), got " << opt.exponent);
  for (double x : z)
    if (!std::isfinite(x)) TPB_THROW(Error, "eDivisive: the series holds a value that is not finite");

  std::vector<Segment> segs = {{0, z.size()}};
  std::vector<ChangePoint> found;
  std::mt19937_64 rng(opt.seed);
  std::vector<double> shuffled;
  for (;;) {
    const auto [split, which] = bestOverSegments(z, segs, opt.minSize, opt.exponent);
    if (split.q < 0) break;
    // Once this many shufflings reach the observed Q, p >= alpha whatever the rest do.
    const int enough = static_cast<int>(std::ceil(opt.alpha * (opt.permutations + 1) - 1 - 1e-9));
    int asLarge = 0;
    for (int r = 0; r < opt.permutations && asLarge < std::max(enough, 1); ++r) {
      shuffled = z;
      for (const Segment& s : segs)
        std::shuffle(shuffled.begin() + static_cast<std::ptrdiff_t>(s.begin),
                     shuffled.begin() + static_cast<std::ptrdiff_t>(s.end), rng);
      asLarge += bestOverSegments(shuffled, segs, opt.minSize, opt.exponent).first.q >= split.q;
    }
    const double p = (1.0 + asLarge) / (1.0 + opt.permutations);
    if (p >= opt.alpha) break;
    ChangePoint cp;
    cp.index = split.at;
    cp.q = split.q;
    cp.p = p;
    found.push_back(cp);
    const Segment s = segs[which];
    segs[which] = {s.begin, split.at};
    segs.insert(segs.begin() + static_cast<std::ptrdiff_t>(which) + 1, Segment{split.at, s.end});
  }
  std::sort(found.begin(), found.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  // Each change point's levels: the means of the final segments either side of it.
  for (std::size_t i = 0; i < found.size(); ++i) {
    const std::size_t from = i == 0 ? 0 : found[i - 1].index;
    const std::size_t to = i + 1 < found.size() ? found[i + 1].index : z.size();
    found[i].before = meanOf(z, from, found[i].index);
    found[i].after = meanOf(z, found[i].index, to);
  }
  return found;
}

}  // namespace tpb
