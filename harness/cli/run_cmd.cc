#include <memory>

#include "common/error.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/cli/train_flags.h"
#include "core/registry.h"
#include "harness/external_job.h"

namespace tpb::cli {

void addRun(CLI::App& app, Action& action, const std::string& commandLine, ExternalJob* external) {
  struct Args {
    TrainFlags f;
    std::string strategy = "ring_all_reduce";
    int nGpus = 2, batch = 64;
    std::size_t trainSize = 0;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "run", "Train once with one strategy and print a line per epoch (time, samples/s, loss, accuracy, comm share)");
  cmd->add_option("--strategy", a->strategy,
                  "One of " + strategyChoices() + " (`tpbench list` says what each does and where it runs)")
      ->capture_default_str();
  cmd->add_option("--n_gpus", a->nGpus,
                  "Devices (ranks on CPU; data_parallel: replicas in one process); under torchrun, srun or "
                  "mpirun: the job's world size")
      ->capture_default_str();
  cmd->add_option("--batch_size", a->batch, "Batch size per device")->capture_default_str();
  cmd->add_option("--train_size", a->trainSize, "Use the first K training samples (0: all; at most the dataset's size)")
      ->capture_default_str();
  cmd->add_option("--workload", a->f.workload, workloadHelp())->capture_default_str();
  cmd->add_option("--bucket_mb", a->f.bucketMb, "ddp, torch_ddp: gradient bucket size in MiB")->capture_default_str();
  cmd->add_option("--out", a->f.out, "Write the run to this results JSON");
  addTrainFlags(cmd, a->f);
  cmd->callback([&action, a, cmd, commandLine, external] {
    action = [a, cmd, commandLine, external] {
      TrainRunOptions o;
      o.external = external;
      applyRunOptions(cmd, a->f, o);
      o.command = commandLine;
      o.resumable = false;  // run has no --resume: an existing --out is replaced with --overwrite only
      o.everyPointMustRun = true;  // one point: skipping it would run nothing
      if (external && !cmd->count("--n_gpus"))
        a->nGpus = std::stoi(externalDefaultRanks("run", external->worldSize()));
      TrainPoint p;
      p.cfg = baseConfig(a->f);
      const TrainStrategy& s = findStrategy("--strategy", a->strategy);
      p.cfg.strategy = s.name;
      p.cfg.nGpus = a->nGpus;
      p.cfg.batchSize = a->batch;
      p.cfg.trainSize = a->trainSize;
      o.points.push_back(p);
      checkTrainRun(o);
      if (std::string why = s.unsupportedAnywhere(a->nGpus); !why.empty())
        TPB_THROW(UsageError, "--strategy " << a->strategy << " with --n_gpus " << a->nGpus << ": " << why);
      if (std::string why = s.unsupportedConfig(p.cfg); !why.empty())
        TPB_THROW(UsageError, why << " (--strategy " << s.name << ")");
      return runTraining(o);
    };
  });
}

}  // namespace tpb::cli
