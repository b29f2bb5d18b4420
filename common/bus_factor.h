// common/bus_factor.h — nccl-tests' bus-bandwidth factors, in one place for the collectives'
// table (core/collective.cc) and the cost model's projections (cost_model/). busbw = algbw x
// factor(N), so that a collective's busbw compares with the link's speed at any N: allreduce
// 2(N-1)/N; allgather, reduce_scatter and alltoall (N-1)/N; every other op (broadcast, reduce,
// sendrecv) 1. At N = 1 nothing crosses a link: 0.
#pragma once

#include <string>

namespace tpb {

using BusFactor = double (*)(int n);

namespace bus_factor_detail {
inline double allreduce(int n) { return n <= 1 ? 0.0 : 2.0 * (n - 1) / n; }
inline double blocks(int n) { return n <= 1 ? 0.0 : static_cast<double>(n - 1) / n; }
inline double one(int n) { return n <= 1 ? 0.0 : 1.0; }
}  // namespace bus_factor_detail

inline BusFactor busFactorOf(const std::string& op) {
  if (op == "allreduce") return bus_factor_detail::allreduce;
  if (op == "allgather" || op == "reduce_scatter" || op == "alltoall") return bus_factor_detail::blocks;
  return bus_factor_detail::one;
}

}  // namespace tpb
