#include <memory>

#include "common/error.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/cli/train_flags.h"
#include "core/registry.h"

namespace tpb::cli {

void addRun(CLI::App& app, Action& action, const std::string& commandLine) {
  struct Args {
    TrainFlags f;
    std::string strategy = "ring_all_reduce";
    int nGpus = 2, batch = 64;
    std::size_t trainSize = 0;
    int nnodes = 1, nodeRank = 0, nprocPerNode = 0;
    std::string masterAddr = "127.0.0.1";
    int masterPort = 0;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "run", "Train once with one strategy and print a line per epoch (time, samples/s, loss, accuracy, comm share)");
  cmd->add_option("--strategy", a->strategy,
                  "single, param_server (N=1: the server trains alone), ring_all_reduce, allreduce, ddp "
                  "(= ring_all_reduce_builtin), data_parallel (= param_server_builtin), model_parallel, pipeline (N stages of "
                  "the MLP; the global batch is --batch_size)")
      ->capture_default_str();
  cmd->add_option("--n_gpus", a->nGpus, "Devices (ranks on CPU; data_parallel: replicas in one process)")
      ->capture_default_str();
  cmd->add_option("--batch_size", a->batch, "Batch size per device")->capture_default_str();
  cmd->add_option("--train_size", a->trainSize, "Use the first K training samples (0: all; at most the dataset's size)")
      ->capture_default_str()
      ->check(unsignedNumber());
  cmd->add_option("--out", a->f.out, "Write the run to this results JSON");
  addTrainFlags(cmd, a->f);
  cmd->add_option("--nnodes", a->nnodes, "Nodes in the launch (torchrun's meaning)")->capture_default_str();
  cmd->add_option("--node_rank", a->nodeRank, "This node's index")->capture_default_str();
  cmd->add_option("--nproc_per_node", a->nprocPerNode, "Ranks on this node (default: all of --n_gpus)");
  cmd->add_option("--master_addr", a->masterAddr, "Address of node 0's rendezvous store")->capture_default_str();
  cmd->add_option("--master_port", a->masterPort,
                  "Port of node 0's rendezvous store, 1..65535 and free on node 0 (0: pick one; one node only)")
      ->capture_default_str();
  cmd->callback([&action, a, cmd, commandLine] {
    action = [a, cmd, commandLine] {
      checkGivenNotEmpty(cmd, "--out", a->f.out);
      checkGivenNotEmpty(cmd, "--transport", a->f.transport);
      checkInt("--master_port", a->masterPort, 0, 65535);
      TrainRunOptions o;
      applyRunOptions(a->f, o);
      o.command = commandLine;
      o.nnodes = a->nnodes;
      o.nodeRank = a->nodeRank;
      o.nprocPerNode = a->nprocPerNode;
      o.masterAddr = a->masterAddr;
      o.masterPort = static_cast<std::uint16_t>(a->masterPort);
      TrainPoint p;
      p.cfg = baseConfig(a->f);
      p.cfg.strategy = findStrategy("--strategy", a->strategy).name;
      p.cfg.nGpus = a->nGpus;
      p.cfg.batchSize = a->batch;
      p.cfg.trainSize = a->trainSize;
      o.points.push_back(p);
      checkTrainRun(o);
      const TrainStrategy& s = findStrategy("--strategy", a->strategy);
      if (std::string why = s.unsupported(Device::Cpu, a->nGpus); !why.empty())
        TPB_THROW(UsageError, "--strategy " << a->strategy << " with --n_gpus " << a->nGpus << ": " << why);
      if (std::string why = s.unsupportedConfig(p.cfg); !why.empty())
        TPB_THROW(UsageError, why << " (--strategy " << s.name << ")");
      return runTraining(o);
    };
  });
}

}  // namespace tpb::cli
