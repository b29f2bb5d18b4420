// core/algo_cost.h — what a collective algorithm's entry states about its cost without running
// it: the α-β formula that `tpbench model` fits and projects with (cost_model/), and, for a
// from-scratch algorithm, its exact per-rank traffic, which tests/traffic_test.cc compares with
// what the transport counted. Both are written beside the algorithm, in the file that registers
// it; the shapes several algorithms share (a library collective is modelled as the textbook
// algorithm it most likely runs) are here. LibTorch-free.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "comm/transport.h"

namespace tpb {

// T = steps·α + bytesFactor·S·β at N ranks: α per step (a message hop), β per byte over one
// link, S the op's buffer size. steps and bytesFactor count the critical path.
struct Cost {
  double steps = 0, bytesFactor = 0;
};

struct CostFormula {
  std::string text;        // "2(N-1)α + 2(N-1)/N·S·β"
  std::string assumption;  // "" when the formula is the algorithm's own, else what it is modelled as
  Cost (*at)(int n) = nullptr;
};

// Exactly what `rank` of `n` sends and receives (bytes and non-empty messages) in one run of
// `count` elements (the op's count, already rounded), rooted at `root` where the op has one,
// posted in chunks of `chunkBytes`.
using ExactTraffic = Traffic (*)(int n, int rank, int root, std::size_t count, std::size_t chunkBytes);

inline int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// The shapes more than one entry states. `assumption` says what a library collective is taken
// for; it is empty for the from-scratch algorithm of that shape.
inline CostFormula ringAllreduceCost(std::string assumption = "") {
  return {"2(N-1)α + 2(N-1)/N·S·β", std::move(assumption),
          [](int n) { return Cost{2.0 * (n - 1), 2.0 * (n - 1) / n}; }};
}
// N-1 steps, each moving one block of S/N: ring allgather and reduce-scatter, pairwise alltoall.
inline CostFormula blockStepsCost(std::string assumption = "") {
  return {"(N-1)α + (N-1)/N·S·β", std::move(assumption),
          [](int n) { return Cost{1.0 * (n - 1), (n - 1) / static_cast<double>(n)}; }};
}
// ceil(log2 N) rounds of the whole buffer: broadcast and reduce.
inline CostFormula binomialTreeCost(std::string assumption = "") {
  return {"ceil(log2 N)·(α + S·β)", std::move(assumption), [](int n) {
            const double k = ceilLog2(n);
            return Cost{k, k};
          }};
}
inline CostFormula roundTripCost() {
  return {"2(α + S·β) (a round trip)", "", [](int) { return Cost{2, 2}; }};
}

}  // namespace tpb
