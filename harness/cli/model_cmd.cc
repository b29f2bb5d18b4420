#include <iostream>
#include <memory>

#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "cost_model/alpha_beta.h"
#include "cost_model/model_report.h"

namespace tpb::cli {

void addModel(CLI::App& app, Action& action) {
  auto o = std::make_shared<model::ModelOptions>();
  auto* cmd = app.add_subcommand(
      "model",
      "Fit the alpha-beta cost model to collective results (per op, algorithm, transport, device, N): "
      "alpha, beta and the fit's error, a leave-one-out check (fit on the smaller N, predict the largest), "
      "crossover sizes, and projections from published link figures. Output says what is measured and "
      "what is projected; a fit above 25 % error is marked UNTRUSTED, and each crossover is checked against "
      "the measured medians and the sizes measured.");
  cmd->add_option("FILES", o->files, "Results JSON files with collective points (tpbench allreduce/collective)")
      ->required();
  cmd->add_option("--out", o->out, "Write the model as JSON here");
  cmd->add_flag("--overwrite", o->overwrite,
                "Replace the tpbench model at --out when one is there (without it an existing one is refused; a "
                "file tpbench did not write is never replaced)");
  cmd->add_flag("--allow_busy", o->allowBusy,
                "Fit a CPU group whose smallest sizes sit flat at 1 ms or more (a scheduler tick's wait, refused "
                "without it), marked TICKS and untrusted");
  cmd->add_option("--link", o->link, "Project onto one link preset: " + model::linkNames() + " (default: all)");
  cmd->callback([&action, o, cmd] {
    action = [o, cmd] {
      checkGivenNotEmpty(cmd, "--out", o->out);
      checkGivenNotEmpty(cmd, "--link", o->link);
      model::runModel(*o, std::cout);
      return 0;
    };
  });
}

}  // namespace tpb::cli
