#include "harness/cli/bench_flags.h"

#include "harness/cli/cli_checks.h"
#include "harness/external_job.h"
#include "harness/range.h"

namespace tpb::cli {

void addBenchFlags(CLI::App* cmd, BenchFlags& f) {
  cmd->add_option("--n_gpus", f.nGpus, "Ranks per run: 4, 1..8, 2..8:x2 or 1,2,4,8 (under torchrun, srun or mpirun: 2..W)")->capture_default_str();
  cmd->add_option("--bytes", f.bytes,
                  "Message sizes, whole float32 elements (multiples of 4): 4K..64M (x2 steps), 1M..64M:x4 or 1M,16M")
      ->capture_default_str();
  cmd->add_option("--iters", f.iters, "Timed iterations per size")->capture_default_str();
  cmd->add_option("--warmup", f.warmup, "Untimed iterations before timing")->capture_default_str();
  cmd->add_option("--timing", f.timing,
                  "per_call: each timed iteration starts from a barrier (its time is the slowest rank's); "
                  "back_to_back: one barrier, then the iterations follow each other as IMB times them")
      ->capture_default_str();
  cmd->add_flag("--no_check", f.noCheck, "Skip the untimed verification pass (default: check)");
  cmd->add_flag("--no-check", f.noCheck)->group("");  // the older spelling, hidden
  cmd->add_option("--transport", f.transport,
                  "P2P transport for from-scratch algorithms: shm (default on one CPU node), gloo, mpi (ranks "
                  "started by mpirun), grouped (shm under NCCL's group semantics), or nccl (the default and "
                  "only one on cuda)");
  cmd->add_option("--device", f.device,
                  "cpu, cuda (one GPU per rank, cuda:LOCAL_RANK, or cuda:0 when it sees one) or auto (cuda when "
                  "a GPU is visible "
                  "in a CUDA+NCCL build, else cpu)")
      ->capture_default_str();
  cmd->add_option("--out", f.out, "Write results JSON here (rewritten after every point)");
  cmd->add_flag("--overwrite", f.overwrite,
                "Replace the tpbench results file at --out when one is there (without it an existing one is "
                "refused; a file tpbench did not write is never replaced)");
  cmd->add_option("--timeout", f.timeout, "Seconds one (algorithm, N) point may take before its ranks are stopped")
      ->capture_default_str();
  cmd->add_option("--launcher", f.launcher,
                  "Who starts each point's ranks: tpbench (forks them) or mpirun (Open MPI's, one node). Default: "
                  "tpbench, and mpirun for points that need MPI (--algos mpi, --transport mpi)");
}

AllreduceBenchOptions benchOptions(const CLI::App* cmd, const BenchFlags& f, const std::string& commandLine,
                                   ExternalJob* external) {
  checkGivenNotEmpty(cmd, "--out", f.out);
  checkGivenNotEmpty(cmd, "--transport", f.transport);
  checkGivenNotEmpty(cmd, "--launcher", f.launcher);
  AllreduceBenchOptions o;
  o.external = external;
  std::string nGpus = f.nGpus;
  if (external) {
    external->checkMaster();  // now, not once the rendezvous waits on it
    if (!cmd->count("--n_gpus")) nGpus = externalDefaultRanks(cmd->get_name(), external->worldSize());
  }
  o.nGpus = parseIntRange("--n_gpus", nGpus, 1, 64);
  o.bytes = parseByteRange("--bytes", f.bytes, 4, std::size_t(1) << 34);
  o.iters = f.iters;
  o.warmup = f.warmup;
  o.timing = f.timing;
  o.check = !f.noCheck;
  o.transport = f.transport;
  o.device = f.device;
  o.out = f.out;
  o.overwrite = f.overwrite;
  o.timeout = std::chrono::seconds(f.timeout);
  o.launcher = f.launcher;
  o.command = commandLine;
  return o;
}

}  // namespace tpb::cli
