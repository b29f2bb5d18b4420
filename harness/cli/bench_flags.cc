#include "harness/cli/bench_flags.h"

#include <algorithm>

#include "comm/cuda/devices.h"
#include "harness/cli/cli_checks.h"
#include "harness/device_choice.h"
#include "harness/external_job.h"
#include "harness/range.h"

namespace tpb::cli {

BenchDefaults benchDefaults(const std::string& command, bool cuda, int visibleGpus) {
  const bool collective = command == "collective";
  if (!cuda) return collective ? BenchDefaults{"2", "4K..1M:x4"} : BenchDefaults{"2..4", "4K..16M"};
  const int most = std::min(8, visibleGpus);
  return {most > 2 ? "2.." + std::to_string(most) : "2", collective ? "4K..64M:x4" : "4K..64M"};
}

void addBenchFlags(CLI::App* cmd, BenchFlags& f) {
  const BenchDefaults cpu = benchDefaults(cmd->get_name(), false, 0);
  f.nGpus = cpu.nGpus;
  f.bytes = cpu.bytes;
  cmd->add_option("--n_gpus", f.nGpus,
                  "Ranks per run: 4, 1..8, 2..8:x2 or 1,2,4,8 (default: " + cpu.nGpus +
                      " on cpu; 2..8 on cuda, at most the GPUs visible; under torchrun, srun or mpirun: 2..W)");
  cmd->add_option("--bytes", f.bytes,
                  "Message sizes, whole float32 elements (multiples of 4): 4K..64M (x2 steps), 1M..64M:x4 or 1M,16M "
                  "(default: " + cpu.bytes + " on cpu, " + benchDefaults(cmd->get_name(), true, 8).bytes +
                      " on cuda)");
  cmd->add_option("--iters", f.iters, "Timed iterations per size")->capture_default_str();
  cmd->add_option("--warmup", f.warmup, "Untimed iterations before timing")->capture_default_str();
  cmd->add_option("--timing", f.timing,
                  "per_call: each timed iteration starts from a barrier, MPI_Barrier for mpi (its time is the slowest rank's); "
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
  addBindFlag(cmd, f.bind);
}

CollectiveBenchOptions benchOptions(const CLI::App* cmd, const BenchFlags& f, const std::string& commandLine,
                                   ExternalJob* external) {
  checkGivenNotEmpty(cmd, "--out", f.out);
  checkGivenNotEmpty(cmd, "--transport", f.transport);
  checkGivenNotEmpty(cmd, "--launcher", f.launcher);
  CollectiveBenchOptions o;
  o.external = external;
  std::string nGpus = f.nGpus, bytes = f.bytes;
  // Not given: the device's defaults (the CPU's are the flags' own).
  const bool cuda = f.device == "cuda" || (f.device == "auto" && chooseDevice("auto", 1) == Device::Cuda);
  if (cuda) {
    const BenchDefaults gpu = benchDefaults(cmd->get_name(), true, visibleCudaDevices());
    if (!cmd->count("--n_gpus")) nGpus = gpu.nGpus;
    if (!cmd->count("--bytes")) bytes = gpu.bytes;
  }
  if (external) {
    external->checkMaster();  // now, not once the rendezvous waits on it
    if (!cmd->count("--n_gpus")) nGpus = externalDefaultRanks(cmd->get_name(), external->worldSize());
  }
  o.nGpus = parseIntRange("--n_gpus", nGpus, 1, 64);
  o.bytes = parseByteRange("--bytes", bytes, 4, std::size_t(1) << 34);
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
  o.bind = f.bind;
  o.command = commandLine;
  return o;
}

}  // namespace tpb::cli
