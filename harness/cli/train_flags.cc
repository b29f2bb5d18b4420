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
                  "P2P transport of the from-scratch strategies: shm (default on one node) or gloo on cpu, "
                  "nccl (the default) on cuda");
  cmd->add_option("--timeout", f.timeout, "Seconds one run may take before its ranks are stopped")
      ->capture_default_str();
  cmd->add_option("--max_steps", f.maxSteps, "Stop each run after this many optimizer steps (-1: no limit; 0 is refused)")
      ->capture_default_str();
  cmd->add_option("--microbatches", f.microbatches, "pipeline: micro-batches per step (each batch split into M)")
      ->capture_default_str();
  cmd->add_option("--schedule", f.schedule,
                  "pipeline: gpipe (all forwards, then all backwards, one step) or 1f1b (one forward, one "
                  "backward in turn after warm-up)")
      ->capture_default_str();
  cmd->add_option("--split", f.split,
                  "model_parallel, pipeline: the first layer of stages 1..N-1, e.g. 2,3 (layers numbered from 0; "
                  "default: stages balanced by parameter count)");
  cmd->add_option("--save_dir", f.saveDir,
                  "Write a checkpoint after every epoch to DIR/<strategy>-n<N>-epoch-<k>.pt (atomically; "
                  "torch.load reads it)");
  cmd->add_option("--resume_from", f.resumeFrom,
                  "Continue from this checkpoint: its weights, momentum, epoch and sample order (its settings "
                  "must equal this run's)");
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
  c.microbatches = f.microbatches;
  c.schedule = f.schedule;
  c.split = f.split;
  c.saveDir = f.saveDir;
  c.resumeFrom = f.resumeFrom;
  return c;
}

void applyRunOptions(const TrainFlags& f, TrainRunOptions& o) {
  o.device = f.device;
  o.transport = f.transport;
  o.out = f.out;
  o.timeout = std::chrono::seconds(f.timeout);
}

}  // namespace tpb::cli
