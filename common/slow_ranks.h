// common/slow_ranks.h — --slow_ranks, the straggler experiment: "R:F[,R:F...]" makes rank R's
// compute F times as long (1 < F <= 100), so that a run has a known straggler to find. Below
// every layer: the checks before launch and the training step read it alike.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.h"

namespace tpb {

// Each rank's factor (1 where the text names it not); throws UsageError naming --slow_ranks.
inline std::vector<double> slowFactors(const std::string& text, int ranks) {
  std::vector<double> f(static_cast<std::size_t>(ranks > 0 ? ranks : 0), 1.0);
  if (text.empty()) return f;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const std::size_t colon = item.find(':');
    const auto refuse = [&](const std::string& why) {
      TPB_THROW(UsageError, "--slow_ranks: '" << item << "': " << why << " (give RANK:FACTOR[,RANK:FACTOR], e.g. 1:1.5)");
    };
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) refuse("not RANK:FACTOR");
    const std::string rankText = item.substr(0, colon), factorText = item.substr(colon + 1);
    if (rankText.size() > 5 || rankText.find_first_not_of("0123456789") != std::string::npos ||
        (rankText.size() > 1 && rankText[0] == '0'))
      refuse("the rank is not a number");
    const int rank = std::atoi(rankText.c_str());
    if (rank >= ranks) refuse("rank " + rankText + " is not one of the " + std::to_string(ranks) + " ranks");
    if (factorText.find_first_not_of("0123456789.") != std::string::npos || factorText.front() == '.' ||
        std::count(factorText.begin(), factorText.end(), '.') > 1)
      refuse("the factor is not a decimal number");
    const double factor = std::strtod(factorText.c_str(), nullptr);
    if (!(factor > 1 && factor <= 100)) refuse("the factor must be above 1 and at most 100");
    if (f[static_cast<std::size_t>(rank)] != 1.0) refuse("rank " + rankText + " is named twice");
    f[static_cast<std::size_t>(rank)] = factor;
    at = end + 1;
  }
  return f;
}

}  // namespace tpb
