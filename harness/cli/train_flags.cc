#include "harness/cli/train_flags.h"

#include "harness/cli/cli_checks.h"
#include "workload/model.h"

namespace tpb::cli {

void addTrainFlags(CLI::App* cmd, TrainFlags& f) {
  cmd->add_option("--epochs", f.epochs, "Epochs per run")->capture_default_str();
  cmd->add_option("--dataset", f.dataset, "synthetic (MNIST-shaped, generated) or mnist:DIR (IDX files, plain or .gz)")
      ->capture_default_str();
  cmd->add_option("--hidden", f.hidden, "Hidden layer widths of the MLP 784-...-10")->capture_default_str();
  cmd->add_option("--lr", f.lr, "SGD learning rate")->capture_default_str();
  cmd->add_option("--momentum", f.momentum, "SGD momentum")->capture_default_str();
  cmd->add_option("--seed", f.seed, "Seed of weights, data and sample order")->capture_default_str()->check(unsignedNumber());
  cmd->add_option("--bucket_mb", f.bucketMb, "ddp: gradient bucket size in MiB")->capture_default_str();
  cmd->add_option("--test_size", f.testSize, "Evaluate on the first K test samples (0: all; at most the test set's size)")
      ->capture_default_str()
      ->check(unsignedNumber());
  cmd->add_option("--device", f.device,
                  "cpu, cuda (rank r on cuda:LOCAL_RANK; data_parallel on cuda:0..N-1) or auto (cuda when "
                  "this build has CUDA and NCCL and a GPU is visible)")
      ->capture_default_str();
  cmd->add_option("--transport", f.transport,
                  "P2P transport of the from-scratch strategies: shm (default on one node), gloo or mpi (ranks "
                  "started by mpirun) on cpu, nccl (the default) on cuda");
  cmd->add_option("--library", f.library,
                  "allreduce strategy: the library allreduce that averages the gradients: gloo, mpi (ranks started "
                  "by mpirun) or nccl (default: the device's, gloo on cpu and nccl on cuda)");
  cmd->add_option("--launcher", f.launcher,
                  "Who starts each point's ranks: tpbench (forks them) or mpirun (Open MPI's, one node). Default: "
                  "tpbench, and mpirun for points that need MPI (--transport mpi, --library mpi)");
  cmd->add_option("--timeout", f.timeout, "Seconds one run may take before its ranks are stopped")
      ->capture_default_str();
  cmd->add_option("--max_steps", f.maxSteps, "Stop each run after this many optimizer steps (-1: no limit; 0 is refused)")
      ->capture_default_str();
}

TrainConfig baseConfig(const TrainFlags& f) {
  TrainConfig c;
  c.epochs = f.epochs;
  c.dataset = f.dataset;
  c.model.hidden = parseHidden("--hidden", f.hidden);
  c.lr = f.lr;
  c.momentum = f.momentum;
  c.seed = f.seed;
  c.bucketMb = f.bucketMb;
  c.testSize = f.testSize;
  c.maxSteps = f.maxSteps;
  c.library = f.library;
  return c;
}

void applyRunOptions(const TrainFlags& f, TrainRunOptions& o) {
  o.device = f.device;
  o.transport = f.transport;
  o.out = f.out;
  o.timeout = std::chrono::seconds(f.timeout);
  o.launcher = f.launcher;
}

}  // namespace tpb::cli
