// common/bus_factor.h — nccl-tests' bus-bandwidth factors, with the formula each prints, in one
// place for the collectives' table (core/collective.cc), the cost model's projections
// (cost_model/), the commands' --help and the charts' subtitles. busbw = algbw x factor(N), so
// that a collective's busbw compares with the link's speed at any N: allreduce 2(N-1)/N;
// allgather, reduce_scatter and alltoall (N-1)/N; every other op (broadcast, reduce, sendrecv) 1.
// At N = 1 nothing crosses a link: 0.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tpb {

using BusFactor = double (*)(int n);

struct BusFactorKind {
  BusFactor factor;
  const char* formula;  // as --help and the charts print it
};

namespace bus_factor_detail {
inline double allreduce(int n) { return n <= 1 ? 0.0 : 2.0 * (n - 1) / n; }
inline double blocks(int n) { return n <= 1 ? 0.0 : static_cast<double>(n - 1) / n; }
inline double one(int n) { return n <= 1 ? 0.0 : 1.0; }
}  // namespace bus_factor_detail

inline BusFactorKind busFactorKindOf(const std::string& op) {
  if (op == "allreduce") return {bus_factor_detail::allreduce, "2(N-1)/N"};
  if (op == "allgather" || op == "reduce_scatter" || op == "alltoall") return {bus_factor_detail::blocks, "(N-1)/N"};
  return {bus_factor_detail::one, "1"};
}

inline BusFactor busFactorOf(const std::string& op) { return busFactorKindOf(op).factor; }

// The factors of `ops`, grouped by formula in the order the ops come:
// {"allreduce", "broadcast", "allgather", "reduce"} -> "allreduce 2(N-1)/N; broadcast, reduce 1;
// allgather (N-1)/N".
inline std::string busFactorText(const std::vector<std::string>& ops) {
  std::vector<std::pair<std::string, std::string>> groups;  // formula, its ops
  for (const auto& op : ops) {
    const std::string formula = busFactorKindOf(op).formula;
    auto it = groups.begin();
    while (it != groups.end() && it->first != formula) ++it;
    if (it == groups.end()) groups.emplace_back(formula, op);
    else it->second += ", " + op;
  }
  std::string out;
  for (const auto& [formula, names] : groups) out += (out.empty() ? "" : "; ") + names + " " + formula;
  return out;
}

}  // namespace tpb
