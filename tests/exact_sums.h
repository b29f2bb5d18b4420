// tests/exact_sums.h — the exact-sum check the allreduce tests share (thread worlds and the mpi
// driver alike): inputs are small integers, distinct per rank and element, so every sum is exact
// in float32 and any difference is an error, not rounding.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "core/allreduce.h"
#include "core/comm_context.h"

namespace tpb::test {

// Rank `rank`'s input at element `i`.
inline float exactInput(int rank, std::size_t i) {
  return static_cast<float>((i * 7919u + static_cast<std::size_t>(rank) * 131u) % 1000u);
}

// Runs one allreduce made by `make` per count on this rank, twice on the same instance (state
// left by one run must not corrupt the next), with a sentinel one past the end. Returns one line
// per failed run ("count 7 rep 1: 3 wrong (first at 2), wrote past the end"); empty: all exact.
inline std::vector<std::string> exactSumFailures(CommContext& ctx, const AllreduceFactory& make,
                                                 const std::vector<std::size_t>& counts) {
  std::vector<std::string> failures;
  for (std::size_t count : counts) {
    std::vector<float> buf(count + 1);
    const float sentinel = -12345.0f;
    buf[count] = sentinel;
    auto fill = [&] {
      for (std::size_t i = 0; i < count; ++i) buf[i] = exactInput(ctx.rank(), i);
    };
    fill();
    auto ar = make(ctx, buf.data(), count);
    for (int rep = 0; rep < 2; ++rep) {
      if (rep == 1) fill();
      ar->run();
      std::size_t wrong = 0, first = count;
      for (std::size_t i = 0; i < count; ++i) {
        float expect = 0;
        for (int r = 0; r < ctx.size(); ++r) expect += exactInput(r, i);
        if (buf[i] != expect && wrong++ == 0) first = i;
      }
      if (wrong == 0 && buf[count] == sentinel) continue;
      std::ostringstream os;
      os << "count " << count << " rep " << rep << ": " << wrong << " wrong";
      if (wrong) os << " (first at " << first << ")";
      if (buf[count] != sentinel) os << ", wrote past the end";
      failures.push_back(os.str());
    }
  }
  return failures;
}

}  // namespace tpb::test
