#include <iostream>
#include <memory>

#include "cost_model/alpha_beta.h"
#include "cost_model/step_model.h"
#include "common/error.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/step_prediction.h"

namespace tpb::cli {

void addPredict(CLI::App& app, Action& action, const std::string& commandLine) {
  auto o = std::make_shared<PredictOptions>();
  o->command = commandLine;
  auto* cmd = app.add_subcommand(
      "predict",
      "Predict a data-parallel training step on N ranks from one rank's step measured here (alone, and for each N "
      "beside N-1 replicas as the run's other ranks): forward, each gradient's ready time in backward and the "
      "optimizer of --workload at --batch_size; or built from its FLOPs on a --gpu preset. The allreduce's "
      "alpha-beta is fitted across N from --collectives (tpbench allreduce results) or taken from --link presets. "
      "Prints per N and bucket size the step, its communication, what stays exposed, the scaling efficiency "
      "and the best bucket (ddp's buckets overlap backward; ring_all_reduce and allreduce reduce after it); for a "
      "pipeline of --n_gpus stages, the step from one micro-batch's step measured here, its stages' shares and the "
      "micro-batches' slots, with its bubble.");
  cmd->add_option("--workload", o->workload, "What is trained (as tpbench run --workload)")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "The MLP's hidden widths")->capture_default_str();
  cmd->add_option("--batch_size", o->batchSize, "Per-rank batch")->capture_default_str();
  cmd->add_option("--strategy", o->strategy, "ddp, ring_all_reduce, allreduce or pipeline (--n_gpus stages)")
      ->capture_default_str();
  cmd->add_option("--microbatches", o->microbatches, "pipeline: micro-batches per step to predict (default 4)")
      ->delimiter(',');
  cmd->add_option("--n_gpus", o->ns, "Rank counts to predict")->delimiter(',')->capture_default_str();
  cmd->add_option("--bucket_mb", o->bucketMb, "ddp's bucket caps to predict, MiB")->delimiter(',')->capture_default_str();
  cmd->add_option("--collectives", o->collectives, "Results files with in-place allreduce points on the CPU to fit from")
      ->delimiter(',');
  cmd->add_option("--algo", o->algo, "The allreduce algorithm fitted (default: ddp and allreduce library, ring_all_reduce ring)");
  cmd->add_option("--link", o->link, "Instead of --collectives, a link preset (ring allreduce): " + model::linkNames());
  cmd->add_option("--inter_link", o->interLink,
                  "With --link: the link between nodes, used above --gpus_per_node ranks: " + model::linkNames());
  cmd->add_option("--gpus_per_node", o->gpusPerNode, "Ranks per node, with --inter_link")->capture_default_str();
  cmd->add_option("--nics_per_node", o->nicsPerNode,
                  "With --inter_link: the network ports of a node, which carry its share of every ring together "
                  "(default: one per GPU)");
  cmd->add_option("--gpu", o->gpu,
                  "With --link: the step from --workload's FLOPs on a GPU preset instead of measured here: " +
                      model::deviceNames());
  cmd->add_option("--mfu", o->mfu, "With --gpu (and needed there): the fraction of its dense peak the workload reaches");
  cmd->add_option("--steps", o->steps, "Steps timed for the profile (at least; and at least 1 s of them)")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Steps run first, untimed")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the weights and data")->capture_default_str();
  cmd->add_option("--out", o->out,
                  "Also write the predictions as records of a results file (predictions[]: tpbench report and "
                  "compare read them)");
  cmd->add_flag("--overwrite", o->overwrite, "Replace the results file at --out when one is there");
  cmd->callback([&action, o, cmd] {
    action = [o, cmd] {
      checkGivenNotEmpty(cmd, "--link", o->link);
      checkGivenNotEmpty(cmd, "--algo", o->algo);
      checkGivenNotEmpty(cmd, "--inter_link", o->interLink);
      o->batchGiven = cmd->count("--batch_size") > 0;
      checkGivenNotEmpty(cmd, "--gpu", o->gpu);
      checkGivenNotEmpty(cmd, "--out", o->out);
      // 0 is "one port per GPU" inside; given, a node has at least one port.
      if (cmd->count("--nics_per_node") && o->nicsPerNode < 1)
        TPB_THROW(UsageError, "--nics_per_node: must be in 1..1024");
      return runPredict(*o, std::cout);
    };
  });
}

}  // namespace tpb::cli
