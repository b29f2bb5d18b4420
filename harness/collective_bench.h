// harness/collective_bench.h — `tpbench allreduce` and `tpbench collective`, the nccl-tests-style
// collective benchmark (allreduce is the collective benchmark with --op allreduce, in place).
//
// Per (op, algorithm, N) the launcher starts N ranks once; inside, for every message size the
// algorithm is set up (untimed), warmed up, timed over --iters iterations — each iteration
// starts from a barrier (--timing per_call) or follows the previous one (back_to_back), and its
// time is the slowest rank's — and finally verified in an untimed pass against exact expected
// sums (--check).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "record/records.h"

namespace tpb {

class ExternalJob;

struct CollectiveBenchOptions {
  std::vector<std::string> ops{"allreduce"};  // core/collective.h
  // Algorithm names. With one op each must be one of its algorithms; with several, each must be
  // an algorithm of at least one op, and every op runs those of them it has (none: refused).
  std::vector<std::string> algos;
  // --algos all: `algos` is replaced, for each op, by every registered algorithm that can run
  // here (on the device, and with mpirun where one needs it), leaving out entries that stand for
  // another (library), so nothing runs twice.
  bool allAlgos = false;
  int root = 0;                    // rooted ops (broadcast, reduce)
  std::vector<bool> inPlace{true};  // placements to measure: in place, out of place or both
  std::vector<long long> nGpus;
  std::vector<std::size_t> bytes;
  int iters = 20;
  int warmup = 5;
  // --timing: kPerCallTiming (each iteration from a barrier, its time the slowest rank's) or
  // kBackToBackTiming (one barrier, then the iterations one after another, as IMB times).
  std::string timing = kPerCallTiming;
  bool check = true;
  std::string transport;  // empty: the default for the device
  std::string device = "cpu";  // cpu, cuda or auto (resolved before launch: harness/device_choice.h)
  std::string out;        // results file; empty: none
  bool overwrite = false; // --overwrite: replace an existing results file instead of refusing
  std::chrono::seconds timeout{300};
  std::string launcher;   // --launcher: "", "tpbench" or "mpirun" (harness/mpirun.h)
  std::string bind = "none";  // --bind: "none" or "core" (LaunchSpec::bindCores)
  std::string command;    // recorded in meta
  bool memcpyReference = true;
  // The job this process is one rank of (torchrun, srun, mpirun; main decides it from the
  // environment); nullptr: tpbench's own launcher starts the ranks.
  ExternalJob* external = nullptr;
};

// The algorithms of `op` among opt.algos, in the order given (throws UsageError as above).
std::vector<std::string> algosFor(const CollectiveBenchOptions& opt, const std::string& op);

// Validates (throws UsageError), runs every point, prints tables. Returns 0 when every point
// ran and verified, 1 otherwise; an interrupt returns 130 after saving what finished.
int runCollectiveBench(const CollectiveBenchOptions& opt);

}  // namespace tpb
