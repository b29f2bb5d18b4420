#include "record/stragglers.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "record/stats.h"

namespace tpb {

namespace {

// Which per-rank figure an epoch is judged by.
enum class Measure { Sum, StepWall, StepCpu };

const std::vector<double>* figures(const EpochRecord::RankTimes& t, Measure m) {
  switch (m) {
    case Measure::Sum: return &t.computeS;
    case Measure::StepWall: return t.stepComputeS.size() == t.computeS.size() ? &t.stepComputeS : nullptr;
    case Measure::StepCpu: return t.stepComputeCpuS.size() == t.computeS.size() ? &t.stepComputeCpuS : nullptr;
  }
  return nullptr;
}

// Whether every epoch with per-rank times has the measure.
bool allHave(const RunRecord& run, Measure m) {
  bool any = false;
  for (const EpochRecord& e : run.epochs) {
    if (!e.ranks) continue;
    if (!figures(*e.ranks, m)) return false;
    any = true;
  }
  return any;
}

// The rank whose figure is kStragglerRatio or more over the other computing ranks' median in more
// than half of the epochs with per-rank times (a rank computing nothing, by its epoch sum, is
// never one).
std::optional<Straggler> judge(const RunRecord& run, Measure m) {
  std::map<int, std::vector<double>> ratios;  // rank -> its ratio in each epoch it straggled
  int withTimes = 0;
  for (const EpochRecord& e : run.epochs) {
    if (!e.ranks) continue;
    const std::vector<double>& sums = e.ranks->computeS;
    const std::vector<double>& c = *figures(*e.ranks, m);
    std::vector<int> computing;  // by the epoch's sum: a parameter server's is 0
    for (int r = 0; r < static_cast<int>(c.size()); ++r)
      if (std::isfinite(sums[r]) && sums[r] > 0 && std::isfinite(c[r]) && c[r] > 0) computing.push_back(r);
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
      best = Straggler{rank, false, false, static_cast<int>(rs.size()), withTimes, summarize(rs).median};
  }
  if (best) {
    best->perStep = m != Measure::Sum;
    best->onCpuClock = m == Measure::StepCpu;
  }
  return best;
}

}  // namespace

std::optional<Straggler> stragglerOf(const RunRecord& run) {
  if (allHave(run, Measure::StepCpu)) return judge(run, Measure::StepCpu);
  if (allHave(run, Measure::StepWall)) return judge(run, Measure::StepWall);
  return judge(run, Measure::Sum);
}

std::optional<Straggler> coreWaitOf(const RunRecord& run) {
  if (!allHave(run, Measure::StepCpu) || judge(run, Measure::StepCpu)) return std::nullopt;
  return judge(run, Measure::StepWall);
}

std::string stragglerText(const Straggler& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "rank %d (%s %.2fx the others' median in %d of %d epochs)", s.rank,
                s.onCpuClock ? "median step compute on its CPU clock"
                             : (s.perStep ? "median step compute" : "compute"),
                s.ratio, s.epochs, s.ofEpochs);
  return buf;
}

std::string coreWaitText(const Straggler& s) {
  char buf[192];
  std::snprintf(buf, sizeof buf,
                "rank %d waited for a core (median step compute %.2fx the others' on the wall clock in %d of %d "
                "epochs, not on its CPU clock)",
                s.rank, s.ratio, s.epochs, s.ofEpochs);
  return buf;
}

bool ranksHaveOneRole(const CollectiveRecord& c) {
  // broadcast and reduce have a root, sendrecv's even ranks time the round trip their partner
  // answers, and param_server's rank 0 reduces for all: one of them is slowest by design.
  if (c.op != "allreduce" && c.op != "allgather" && c.op != "reduce_scatter" && c.op != "alltoall") return false;
  return c.algo != "param_server";
}

std::optional<CollectiveStraggler> stragglerOf(const CollectiveRecord& c) {
  if (!c.ranks || c.ranks->slowestIn.size() < 2 || c.iters < 1 || !ranksHaveOneRole(c)) return std::nullopt;
  const auto& counts = c.ranks->slowestIn;
  const auto& medians = c.ranks->medianUs;
  int top = 0;
  for (int r = 1; r < static_cast<int>(counts.size()); ++r)
    if (counts[r] > counts[top]) top = r;
  if (2 * counts[top] <= c.iters) return std::nullopt;
  std::vector<double> others;
  for (int r = 0; r < static_cast<int>(medians.size()); ++r)
    if (r != top && std::isfinite(medians[r])) others.push_back(medians[r]);
  if (others.empty() || !std::isfinite(medians[top])) return std::nullopt;
  const double base = summarize(others).median;
  if (!(base > 0) || medians[top] < kStragglerRatio * base) return std::nullopt;
  return CollectiveStraggler{top, counts[top], c.iters, medians[top] / base};
}

std::string stragglerText(const CollectiveStraggler& s) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "rank %d slowest in %lld of %d iterations, median %.2fx the others'", s.rank, s.slowestIn,
                s.iters, s.ratio);
  return buf;
}

}  // namespace tpb
