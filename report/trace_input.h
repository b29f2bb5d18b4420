// report/trace_input.h — the report's view of trace files (`--trace FILE` of run and sweep,
// record/trace_file.h): each traced run with its spans per rank and track, one representative
// training step of it, and how much of its communication ran hidden behind computation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpb::report {

struct TraceSpan {
  std::string name, cat;  // cat: step, compute, comm, wait, optimizer, eval
  int rank = 0;
  bool commTrack = false;  // drawn beside the host thread (ddp's bucket allreduces)
  double beginUs = 0, endUs = 0;
  std::string argKey;  // "micro", "bucket", "peer", "step" or ""
  long long arg = -1;
};

struct TracedRun {
  std::string file, label, strategy;
  int n = 0;
  nlohmann::json config;
  std::vector<TraceSpan> spans;  // in file order
  int ranks() const;
};

// Reads trace files. Throws tpb::UsageError naming the file and the field when one cannot be
// read or is not a tpbench trace (schema "tpbench.trace/1").
std::vector<TracedRun> loadTraces(const std::vector<std::string>& paths);

// One training step of a run: the middle step of the run (steady state, away from the first
// step's warm-up), from the earliest start of that step on any rank to its latest end. Each
// rank contributes the host spans inside its own step span and the comm-track spans launched
// during it (not the tail of its previous step, where the ranks are out of step).
struct StepWindow {
  long long step = -1;  // -1: the run has no step spans
  double beginUs = 0, endUs = 0;
  std::vector<TraceSpan> spans;  // every non-step span that overlaps the window
};
StepWindow representativeStep(const TracedRun& r);

// Communication against computation over the whole run, per step, mean over ranks:
//   asyncUs    time some comm-track span was in flight (their union: concurrent buckets count
//              once): communication that runs beside the host thread (ddp's bucket
//              allreduces, from launch in a backward hook to the library's completion);
//   hiddenUs   the part of it that overlaps a compute span (forward, backward) of the same
//              rank's host thread: communication hidden behind computation;
//   exposedUs  the host thread's own communication and wait spans (ddp: waiting for the
//              buckets; ring_all_reduce: the whole blocking allreduce): what the step pays.
struct Overlap {
  long long steps = 0;                  // step spans of rank 0
  double asyncUs = 0, hiddenUs = 0, exposedUs = 0;
  double asyncPerStep = 0;              // comm-track spans per step and rank (ddp: buckets)
  double hiddenFraction() const { return asyncUs > 0 ? hiddenUs / asyncUs : 0; }
};
Overlap overlapOf(const TracedRun& r);

}  // namespace tpb::report
