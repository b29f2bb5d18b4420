// harness/allreduce_bench.h — `tpbench allreduce`, the nccl-tests-style collective benchmark.
//
// Per (algorithm, N) the launcher starts N ranks once; inside, for every message size the
// algorithm is set up (untimed), warmed up, timed over --iters iterations — each iteration
// starts from a barrier and its time is the slowest rank's — and finally verified in an
// untimed pass against exact expected sums (--check).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace tpb {

struct AllreduceBenchOptions {
  std::vector<std::string> algos;
  // --algos all: `algos` is replaced by every registered algorithm that can run here (on the
  // device, and with mpirun where one needs it), leaving out entries that stand for another
  // (library), so nothing runs twice.
  bool allAlgos = false;
  std::vector<long long> nGpus;
  std::vector<std::size_t> bytes;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  std::string transport;  // empty: the default for the device
  std::string device = "cpu";  // cpu, cuda or auto (resolved before launch: harness/device_choice.h)
  std::string out;        // results file; empty: none
  std::chrono::seconds timeout{300};
  std::string launcher;   // --launcher: "", "tpbench" or "mpirun" (harness/mpirun.h)
  std::string command;    // recorded in meta
  bool memcpyReference = true;
};

// Validates (throws UsageError), runs every point, prints tables. Returns 0 when every point
// ran and verified, 1 otherwise; an interrupt returns 130 after saving what finished.
int runAllreduceBench(const AllreduceBenchOptions& opt);

}  // namespace tpb
