// report/trace_input.h — the report's view of trace files (`--trace FILE` of run and sweep,
// record/trace_file.h): each traced run with its spans per rank and track, one representative
// training step of it, and how much of its communication ran hidden behind computation.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpb::report {

struct TraceSpan {
  std::string name, cat;  // cat: step, compute, comm, wait, optimizer, eval
  int rank = 0;
  // 0 the host thread; 1 its communication track (ddp's bucket allreduces); on CUDA 2 LibTorch's
  // GPU stream and 3 the nccl transport's (record/trace_file.h).
  int track = 0;
  bool onHost() const { return track == 0; }
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
// rank contributes the host spans inside its own step span and the spans of its other tracks
// (communication, GPU streams) that began during it (not the tail of its previous step, where
// the ranks are out of step).
struct StepWindow {
  long long step = -1;  // -1: the run has no step spans
  double beginUs = 0, endUs = 0;
  std::vector<TraceSpan> spans;  // every non-step span that overlaps the window
};
StepWindow representativeStep(const TracedRun& r);

// Communication against computation over the whole run, per step, mean over ranks. Where the
// run has spans on the nccl transport's GPU stream (a CUDA run with --trace), the GPU tracks are
// compared; elsewhere the host's:
//   asyncUs    time some communication ran beside the computation (the union of a rank's spans
//              on the communication track, or on the nccl stream: concurrent buckets count
//              once); ddp's bucket allreduces, from launch in a backward hook to completion;
//   hiddenUs   the part of it that overlaps a compute span (forward, backward) of the same rank
//              on the host thread, or on LibTorch's GPU stream: communication hidden behind
//              computation;
//   exposedUs  the host thread's own communication and wait spans (ddp: waiting for the
//              buckets; ring_all_reduce: the whole blocking allreduce): what the step pays.
struct Overlap {
  long long steps = 0;                  // step spans of rank 0
  double asyncUs = 0, hiddenUs = 0, exposedUs = 0;
  double asyncPerStep = 0;              // such spans per step and rank (ddp: buckets)
  bool gpu = false;                     // measured on the GPU streams
  // HTA's overlap per rank: computation during communication over communication, where
  // communication is every span of it (beside the host and, on the host track, blocking), each
  // rank on its own clock. In rank order; none where a rank communicated nothing.
  struct Rank {
    int rank = 0;
    double commUs = 0, computeDuringCommUs = 0;
    double fraction() const { return commUs > 0 ? computeDuringCommUs / commUs : NAN; }
  };
  std::vector<Rank> ranks;
  // hiddenUs / asyncUs; NaN when nothing ran beside the computation (no denominator).
  double hiddenFraction() const { return asyncUs > 0 ? hiddenUs / asyncUs : NAN; }
  // Why hiddenFraction() has no value ("" when it has one).
  std::string noHiddenFraction() const;
};
Overlap overlapOf(const TracedRun& r);

}  // namespace tpb::report
