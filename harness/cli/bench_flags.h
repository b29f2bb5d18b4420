// harness/cli/bench_flags.h — the flags `allreduce` and `collective` share, and their conversion
// into AllreduceBenchOptions (no logic beyond parsing).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "harness/allreduce_bench.h"

namespace tpb::cli {

struct BenchFlags {
  std::string algos;
  std::string nGpus = "2..8";
  std::string bytes = "4K..64M";
  int iters = 20, warmup = 5;
  std::string timing = "per_call";
  bool noCheck = false;
  std::string transport, device = "cpu", out, launcher;
  int timeout = 300;
  bool overwrite = false;
};

// Adds every shared flag but --algos (its help differs).
void addBenchFlags(CLI::App* cmd, BenchFlags& f);
// Fills every field but ops, algos, root and inPlace, after refusing empty values. `external`:
// the job this process is one rank of, nullptr when tpbench launches its own ranks.
AllreduceBenchOptions benchOptions(const CLI::App* cmd, const BenchFlags& f, const std::string& commandLine,
                                   ExternalJob* external);

}  // namespace tpb::cli
