#include "record/stragglers.h"

#include <cmath>
#include <map>
#include <vector>

#include "record/stats.h"

namespace tpb {

std::optional<Straggler> stragglerOf(const RunRecord& run) {
  std::map<int, std::vector<double>> ratios;  // rank -> its ratio in each epoch it straggled
  int withTimes = 0;
  for (const EpochRecord& e : run.epochs) {
    if (!e.ranks) continue;
    const std::vector<double>& c = e.ranks->computeS;
    std::vector<int> computing;
    for (int r = 0; r < static_cast<int>(c.size()); ++r)
      if (std::isfinite(c[r]) && c[r] > 0) computing.push_back(r);
    if (computing.size() < 2) continue;
    ++withTimes;
    int slowest = computing.front();
    for (int r : computing)
      if (c[r] > c[slowest]) slowest = r;
    std::vector<double> others;
    for (int r : computing)
      if (r != slowest) others.push_back(c[r]);
    const double ratio = c[slowest] / summarize(others).median;
    if (ratio >= kStragglerRatio) ratios[slowest].push_back(ratio);
  }
  std::optional<Straggler> best;
  for (const auto& [rank, rs] : ratios) {
    // Named only where it straggled in more than half of the epochs: one slow epoch is noise.
    if (2 * static_cast<int>(rs.size()) <= withTimes) continue;
    if (!best || static_cast<int>(rs.size()) > best->epochs)
      best = Straggler{rank, static_cast<int>(rs.size()), withTimes, summarize(rs).median};
  }
  return best;
}

}  // namespace tpb
