#include "harness/cli/train_flags.h"

#include <optional>

#include "core/registry.h"
#include "harness/cli/cli_checks.h"
#include "harness/external_job.h"
#include "workload/train_config.h"

namespace tpb::cli {

void addTrainFlags(CLI::App* cmd, TrainFlags& f) {
  forEachSetting(
      [cmd](const SettingInfo& info, auto& value) {
        if (info.flag == SettingInfo::Flag::Shared)
          cmd->add_option(std::string("--") + info.key, value, info.help)->capture_default_str();
      },
      static_cast<TrainSettings&>(f));
  cmd->add_option("--device", f.device,
                  "cpu, cuda (rank r on cuda:LOCAL_RANK, or cuda:0 when it sees one GPU; data_parallel on "
                  "cuda:0..N-1) or auto (cuda when "
                  "this build has CUDA and NCCL and a GPU is visible)")
      ->capture_default_str();
  cmd->add_option("--transport", f.transport,
                  "P2P transport of the from-scratch strategies: shm (default on one node), gloo, mpi (ranks "
                  "started by mpirun) or grouped (shm under NCCL's group semantics) on cpu, nccl (the default) "
                  "on cuda");
  cmd->add_option("--launcher", f.launcher,
                  "Who starts each point's ranks: tpbench (forks them) or mpirun (Open MPI's, one node). Default: "
                  "tpbench, and mpirun for points that need MPI (--transport mpi, --library mpi)");
  addBindFlag(cmd, f.bind);
  cmd->add_option("--timeout", f.timeout, "Seconds one run may take before its ranks are stopped")
      ->capture_default_str();
  cmd->add_option("--nnodes", f.nnodes, "Nodes in the launch (torchrun's meaning); start the same command on each")
      ->capture_default_str();
  cmd->add_option("--node_rank", f.nodeRank, "This node's index (node 0 hosts the store, writes --out, prints the table)")
      ->capture_default_str();
  cmd->add_option("--nproc_per_node", f.nprocPerNode, "Ranks on this node (default: all of --n_gpus)");
  cmd->add_option("--master_addr", f.masterAddr,
                  "Address of node 0's rendezvous store (an address of node 0; under torchrun, srun or mpirun: "
                  "wins over MASTER_ADDR)")
      ->capture_default_str();
  cmd->add_option("--master_port", f.masterPort,
                  "Port of node 0's rendezvous store, 1..65535 and free on node 0 (0: pick one; one node only; "
                  "under torchrun, srun or mpirun: wins over MASTER_PORT)")
      ->capture_default_str();
  cmd->add_option("--rendezvous_timeout", f.rendezvousTimeout,
                  "Seconds the ranks of a point wait for each other (and another node for node 0's store); "
                  "then the point fails naming the ranks missing")
      ->capture_default_str();
  cmd->add_option("--heartbeat_timeout", f.heartbeatTimeout,
                  "Several nodes: seconds without a heartbeat from a rank, or an answer from node 0's store, "
                  "before the point fails naming the rank or node 0 (a host lost without closing its connections)")
      ->capture_default_str();
  cmd->add_option("--iface", f.iface,
                  "Network interface this node's ranks bind to (sets GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME "
                  "for them; default: GLOO_SOCKET_IFNAME, else the interface that routes to --master_addr)");
  cmd->add_option("--secret_file", f.secretFile,
                  "File holding the job's secret (mode 600; default: TPB_JOB_SECRET): node 0's store admits only "
                  "processes that prove they hold it. Required with several nodes, the same on every node; one "
                  "node makes a random one");
  cmd->add_option("--save_dir", f.saveDir,
                  "Write a checkpoint after every epoch to DIR/<strategy>-n<N>-epoch-<k>.pt (atomically; "
                  "torch.load reads it)");
  cmd->add_flag("--overwrite", f.overwrite,
                "Replace the tpbench results file at --out (and the trace at --trace) when one is there; without "
                "it an existing one is refused. A file tpbench did not write is never replaced");
  cmd->add_option("--trace", f.trace,
                  "Write every run's per-rank timeline to FILE (Chrome trace-event JSON: open it in Perfetto or "
                  "chrome://tracing; `tpbench report --trace FILE` draws one step per strategy)");
}

std::string workloadHelp() {
  return "What each run trains: mlp (the default: 784-(--hidden)-10 on --dataset), resnet, gpt or bert, sized by "
         "KEY=VALUE (resnet:depth=18:image=cifar, gpt:layers=4:hidden=256:seq=128), or a published preset: "
         "resnet18, resnet50, bert-base, bert-large, gpt2-small, gpt2-medium (res= or seq= may cut a preset's "
         "input on the CPU; docs/workloads.md lists every key)";
}

std::string canonicalWorkload(const std::string& text, const std::string& hidden) {
  return workloadText(parseWorkload("--workload", text, hidden));
}

std::string strategyChoices() {
  std::string out;
  for (const auto& s : trainStrategies()) {
    out += (out.empty() ? "" : ", ") + s.name;
    for (const auto& a : s.aliases) out += " (or " + a + ")";
  }
  return out;
}

TrainConfig baseConfig(const TrainFlags& f) {
  TrainConfig c;
  static_cast<TrainSettings&>(c) = f;
  c.hidden = hiddenText(parseHidden("--hidden", f.hidden));  // checked, and recorded as 512,512
  c.workload = canonicalWorkload(f.workload, c.hidden);       // checked, and recorded in full
  c.saveDir = f.saveDir;
  return c;
}

void applyRunOptions(CLI::App* cmd, const TrainFlags& f, TrainRunOptions& o) {
  checkGivenNotEmpty(cmd, "--out", f.out);
  checkGivenNotEmpty(cmd, "--transport", f.transport);
  checkGivenNotEmpty(cmd, "--iface", f.iface);
  checkGivenNotEmpty(cmd, "--library", f.library);
  checkGivenNotEmpty(cmd, "--launcher", f.launcher);
  checkGivenNotEmpty(cmd, "--trace", f.trace);
  checkInt("--master_port", f.masterPort, 0, 65535);
  checkInt("--rendezvous_timeout", f.rendezvousTimeout, 1);
  checkInt("--heartbeat_timeout", f.heartbeatTimeout, 1);
  checkGivenNotEmpty(cmd, "--secret_file", f.secretFile);
  if (!f.secretFile.empty()) useSecretFile("--secret_file", f.secretFile);
  o.device = f.device;
  o.transport = f.transport;
  o.out = f.out;
  o.trace = f.trace;
  o.overwrite = f.overwrite;
  o.timeout = std::chrono::seconds(f.timeout);
  o.launcher = f.launcher;
  o.bind = f.bind;
  o.rendezvousTimeout = std::chrono::seconds(f.rendezvousTimeout);
  o.heartbeatTimeout = std::chrono::seconds(f.heartbeatTimeout);
  o.iface = f.iface;
  if (ExternalJob* ext = o.external) {
    // One rank of torchrun's, srun's or mpirun's job: the launcher made the layout, and the
    // layout flags, where given, must agree with it; --master_addr/--master_port win over the
    // environment's.
    auto given = [cmd](const std::string& flag, int v) { return cmd->count(flag) ? std::optional<int>(v) : std::nullopt; };
    checkLayoutFlags(ext->env(), given("--nnodes", f.nnodes), given("--node_rank", f.nodeRank),
                     given("--nproc_per_node", f.nprocPerNode));
    ext->overrideMaster(cmd->count("--master_addr") ? f.masterAddr : "", f.masterPort);
    ext->checkMaster();  // now, not after the checks of every other rank wait on it
    return;
  }
  o.nnodes = f.nnodes;
  o.nodeRank = f.nodeRank;
  o.nprocPerNode = f.nprocPerNode;
  o.masterAddr = f.masterAddr;
  o.masterPort = static_cast<std::uint16_t>(f.masterPort);
}

}  // namespace tpb::cli
