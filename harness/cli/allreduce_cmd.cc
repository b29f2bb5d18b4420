#include <memory>

#include "common/bus_factor.h"
#include "core/registry.h"
#include "harness/cli/bench_flags.h"
#include "harness/cli/commands.h"
#include "harness/input_checks.h"
#include "harness/range.h"

namespace tpb::cli {

void addAllreduce(CLI::App& app, Action& action, const std::string& commandLine, ExternalJob* external) {
  auto f = std::make_shared<BenchFlags>();
  f->algos = "ring,param_server,library";
  auto* cmd = app.add_subcommand(
      "allreduce",
      "Benchmark allreduce algorithms like nccl-tests: time per size (median/min/max over iterations, "
      "slowest rank), algbw, busbw = algbw x " + std::string(busFactorKindOf("allreduce").formula) +
          ", exact traffic per rank, and an exact verification pass. "
      "In place; `tpbench collective --op allreduce` measures out of place too. At most 10000 "
      "measurements (algos x n_gpus x bytes); repeated values in a list (ring,ring; 4K,4K; 2..4,4) count once. "
      "After the tables: the fastest algorithm per N and size, the others' time as a multiple of its "
      "('a \u2248 b' where their min-max ranges overlap: within noise). The defaults on cpu (ring, param_server "
      "and library; N = 2..4; 4K..16M) finish in about a minute on two cores; on cuda N = 2..8 (at most the GPUs "
      "visible) and 4K..64M.");
  cmd->add_option("--algos", f->algos,
                  "Comma list of algorithms: ring, halving_doubling, param_server (from scratch), gloo, mpi, nccl "
                  "(the libraries'), library (the device's: gloo on cpu, nccl on cuda), or 'all' that can run here "
                  "(see `tpbench list`)")
      ->capture_default_str();
  addBenchFlags(cmd, *f);
  cmd->callback([&action, f, cmd, commandLine, external] {
    action = [f, cmd, commandLine, external] {
      CollectiveBenchOptions o = benchOptions(cmd, *f, commandLine, external);
      o.allAlgos = f->algos == "all";
      if (!o.allAlgos) o.algos = withoutDuplicates(splitList(f->algos));
      checkCollectiveRun(o);
      return runCollectiveBench(o);
    };
  });
}

}  // namespace tpb::cli
