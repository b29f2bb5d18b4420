#include <memory>

#include "harness/allreduce_bench.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/range.h"
#include "core/registry.h"

namespace tpb::cli {

void addAllreduce(CLI::App& app, Action& action, const std::string& commandLine) {
  struct Args {
    std::string algos = "ring,param_server,library";
    std::string nGpus = "2..8";
    std::string bytes = "4K..64M";
    int iters = 20, warmup = 5;
    bool noCheck = false;
    std::string transport, device = "cpu", out, launcher;
    int timeout = 300;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "allreduce",
      "Benchmark allreduce algorithms like nccl-tests: time per size (median/min/max over iterations, "
      "slowest rank), algbw, busbw = algbw*2(N-1)/N, and an exact verification pass. At most 10000 "
      "measurements (algos x n_gpus x bytes); repeated values in a list (ring,ring; 4K,4K; 2..4,4) count once.");
  cmd->add_option("--algos", a->algos,
                  "Comma list of algorithms: ring, param_server (from scratch), gloo, mpi, nccl (the libraries'), "
                  "library (the device's: gloo on cpu, nccl on cuda), or 'all' that can run here (see `tpbench list`)")
      ->capture_default_str();
  cmd->add_option("--n_gpus", a->nGpus, "Ranks per run: 4, 1..8, 2..8:x2 or 1,2,4,8")->capture_default_str();
  cmd->add_option("--bytes", a->bytes, "Message sizes, whole float32 elements (multiples of 4): 4K..64M (x2 steps), 1M..64M:x4 or 1M,16M")
      ->capture_default_str();
  cmd->add_option("--iters", a->iters, "Timed iterations per size")->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "Untimed iterations before timing")->capture_default_str();
  cmd->add_flag("--no-check", a->noCheck, "Skip the untimed verification pass (default: check)");
  cmd->add_option("--transport", a->transport,
                  "P2P transport for from-scratch algorithms: shm (default on one CPU node), gloo, mpi (ranks "
                  "started by mpirun), or nccl (the default and only one on cuda)");
  cmd->add_option("--device", a->device,
                  "cpu, cuda (one GPU per rank, cuda:LOCAL_RANK) or auto (cuda when a GPU is visible "
                  "in a CUDA+NCCL build, else cpu)")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Write results JSON here (rewritten after every point)");
  cmd->add_option("--timeout", a->timeout, "Seconds one (algorithm, N) point may take before its ranks are stopped")
      ->capture_default_str();
  cmd->add_option("--launcher", a->launcher,
                  "Who starts each point's ranks: tpbench (forks them) or mpirun (Open MPI's, one node). Default: "
                  "tpbench, and mpirun for points that need MPI (--algos mpi, --transport mpi)");
  cmd->callback([&action, a, cmd, commandLine] {
    action = [a, cmd, commandLine] {
      checkGivenNotEmpty(cmd, "--out", a->out);
      checkGivenNotEmpty(cmd, "--transport", a->transport);
      checkGivenNotEmpty(cmd, "--launcher", a->launcher);
      AllreduceBenchOptions o;
      o.allAlgos = a->algos == "all";
      if (!o.allAlgos) o.algos = withoutDuplicates(splitList(a->algos));
      o.nGpus = parseIntRange("--n_gpus", a->nGpus, 1, 64);
      o.bytes = parseByteRange("--bytes", a->bytes, 4, std::size_t(1) << 34);
      o.iters = a->iters;
      o.warmup = a->warmup;
      o.check = !a->noCheck;
      o.transport = a->transport;
      o.device = a->device;
      o.out = a->out;
      o.timeout = std::chrono::seconds(a->timeout);
      o.launcher = a->launcher;
      o.command = commandLine;
      checkAllreduceRun(o);
      return runAllreduceBench(o);
    };
  });
}

}  // namespace tpb::cli
