#include <algorithm>
#include <memory>

#include "common/decimal.h"
#include "common/error.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/cli/train_flags.h"
#include "harness/range.h"
#include "core/registry.h"
#include "harness/external_job.h"

namespace tpb::cli {

void addSweep(CLI::App& app, Action& action, const std::string& commandLine, ExternalJob* external) {
  // Defaults sized for a first try: every strategy at N = 2 on 4096 samples for one epoch takes
  // about a minute on two cores. Scripts and make targets give every value they depend on.
  struct Args {
    TrainFlags f = [] {
      TrainFlags quick;
      quick.epochs = 1;
      return quick;
    }();
    std::string strategies = "all", nGpus = "2", batch = "64", trainSize = "4096", workloads = "mlp", buckets = "25";
    int repeat = 1;
    bool resume = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "Train every combination of workload x strategies x n_gpus x batch_size x train_size (x bucket_mb for "
      "ddp and torch_ddp) (x repeat), at most 10000 "
      "points; points a strategy cannot run are recorded as skipped. Repeated values in a list (ddp,ddp; "
      "1..4,2; an alias and its name) count once, so no point runs twice. The results file is rewritten "
      "after every point. The defaults (every strategy, N = 2, 4096 samples, 1 epoch) finish in about a "
      "minute on two cores; e.g. --n_gpus 1..4 --train_size 0 --epochs 3 trains on the whole set.");
  cmd->add_option("--strategies", a->strategies, "all, or a comma list of: " + strategyChoices())->capture_default_str();
  cmd->add_option("--n_gpus", a->nGpus, "Devices: 1..8, 1,2,4 or 2..8:x2 (under torchrun, srun or mpirun: 1..W)")->capture_default_str();
  cmd->add_option("--batch_size", a->batch, "Per-device batch sizes: 32,64,128")->capture_default_str();
  cmd->add_option("--train_size", a->trainSize,
                  "Training-set sizes, e.g. 6000,15000,60000 (0: all; at most the dataset's size)")
      ->capture_default_str();
  cmd->add_option("--workload", a->workloads, "A comma list of workloads. " + workloadHelp())->capture_default_str();
  cmd->add_option("--bucket_mb", a->buckets,
                  "ddp, torch_ddp: gradient bucket sizes in MiB, e.g. 1,5,25,100 (other strategies run once, at the "
                  "first)")
      ->capture_default_str();
  cmd->add_option("--repeat", a->repeat, "Runs of every point (timing statistics need >= 5)")->capture_default_str();
  cmd->add_option("--out", a->f.out, "Results JSON (required on node 0, which alone writes it)");
  cmd->add_flag("--resume", a->resume, "Keep the points already in --out (and go on in the --trace file) and run only the missing or failed "
                "ones; without --resume or --overwrite an existing --out is refused");
  addTrainFlags(cmd, a->f);
  cmd->callback([&action, a, cmd, commandLine, external] {
    action = [a, cmd, commandLine, external] {
      checkGivenNotEmpty(cmd, "--out", a->f.out);
      if (a->f.out.empty() && a->f.nodeRank == 0)
        TPB_THROW(UsageError, "--out: required (node 0 writes the results there)");
      checkInt("--repeat", a->repeat, 1);
      std::vector<std::string> names;
      if (a->strategies == "all") {
        names = strategyNames();
      } else {
        for (const auto& item : splitList(a->strategies)) names.push_back(findStrategy("--strategies", item).name);
        if (names.empty()) TPB_THROW(UsageError, "--strategies: no strategy given");
      }
      names = withoutDuplicates(names);
      if (external && !cmd->count("--n_gpus"))
        a->nGpus = externalDefaultRanks("sweep", external->worldSize());
      const auto ns = parseIntRange("--n_gpus", a->nGpus, 1, 64);
      const auto batches = parseIntRange("--batch_size", a->batch, 1, 1 << 20);
      const auto sizes = parseIntRange("--train_size", a->trainSize, 0, 1LL << 40);
      const TrainConfig base = baseConfig(a->f);
      std::vector<std::string> workloads;
      for (const auto& item : splitList(a->workloads)) workloads.push_back(canonicalWorkload(item, base.hidden));
      workloads = withoutDuplicates(workloads);
      if (workloads.empty()) TPB_THROW(UsageError, "--workload: no workload given");
      std::vector<double> buckets;
      for (const auto& item : splitList(a->buckets)) {
        std::string why;
        const auto mb = parseDecimalReal(item, why);
        if (!mb) TPB_THROW(UsageError, "--bucket_mb: '" << item << "' is not a size in MiB: " << why);
        checkSetting("bucket_mb", *mb);
        if (std::find(buckets.begin(), buckets.end(), *mb) == buckets.end()) buckets.push_back(*mb);
      }
      if (buckets.empty()) TPB_THROW(UsageError, "--bucket_mb: no size given");
      checkPointCount("sweep", {{"--strategies", names.size()},
                                {"--n_gpus", ns.size()},
                                {"--batch_size", batches.size()},
                                {"--train_size", sizes.size()},
                                {"--workload", workloads.size()},
                                {"--bucket_mb", buckets.size()},
                                {"--repeat", static_cast<std::size_t>(a->repeat)}});
      TrainRunOptions o;
      o.external = external;
      applyRunOptions(cmd, a->f, o);
      o.command = commandLine;
      o.resume = a->resume;
      for (const auto& w : workloads)
        for (long long size : sizes)
          for (const auto& s : names)
            for (long long n : ns)
              for (long long b : batches)
                for (double mb : buckets) {
                  // A bucket size shapes ddp's and torch_ddp's step only: the others run once.
                  if (mb != buckets.front() && !findStrategy("--strategies", s).bucketed) continue;
                  for (int r = 0; r < a->repeat; ++r) {
                    TrainPoint p;
                    p.cfg = base;
                    p.cfg.workload = w;
                    p.cfg.strategy = s;
                    p.cfg.nGpus = static_cast<int>(n);
                    p.cfg.batchSize = static_cast<int>(b);
                    p.cfg.trainSize = static_cast<std::size_t>(size);
                    p.cfg.bucketMb = mb;
                    p.repeat = r;
                    o.points.push_back(p);
                  }
                }
      checkTrainRun(o);
      return runTraining(o);
    };
  });
}

}  // namespace tpb::cli
