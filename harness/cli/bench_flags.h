// harness/cli/bench_flags.h — the flags `allreduce` and `collective` share, and their conversion
// into CollectiveBenchOptions (no logic beyond parsing).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "harness/collective_bench.h"

namespace tpb::cli {

// The defaults of --n_gpus and --bytes where they are not given, by command and device. On the
// CPU every rank is a process sharing the cores, so they are sized for about a minute on two
// cores: `allreduce` N = 2..4 and 4K..16M; `collective`, whose seven ops launch 22 points per N,
// N = 2 and 4K..1M:x4. On GPUs, nccl-tests' wider ranges: N = 2..8 (at most the GPUs visible,
// `visibleGpus`) and 4K..64M (collective: 4K..64M:x4).
struct BenchDefaults {
  std::string nGpus, bytes;
};
BenchDefaults benchDefaults(const std::string& command, bool cuda, int visibleGpus);

struct BenchFlags {
  std::string algos;
  std::string nGpus, bytes;  // the command's CPU defaults (benchDefaults); benchOptions picks by --device
  int iters = 20, warmup = 5;
  std::string timing = kPerCallTiming;
  bool noCheck = false;
  std::string transport, device = "cpu", out, launcher, bind = "none";
  int timeout = 300;
  bool overwrite = false;
};

// Adds every shared flag but --algos (its help differs), with `cmd`'s CPU defaults in f.
void addBenchFlags(CLI::App* cmd, BenchFlags& f);
// Fills every field but ops, algos, root and inPlace, after refusing empty values. `external`:
// the job this process is one rank of, nullptr when tpbench launches its own ranks.
CollectiveBenchOptions benchOptions(const CLI::App* cmd, const BenchFlags& f, const std::string& commandLine,
                                   ExternalJob* external);

}  // namespace tpb::cli
