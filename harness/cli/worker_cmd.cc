#include "harness/cli/commands.h"
#include "worker/worker.h"

namespace tpb::cli {

void addWorker(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "worker", "Internal: one rank of a launch. Started by tpbench itself (or by torchrun with "
                "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT set).");
  auto job = std::make_shared<std::string>();
  cmd->add_option("--job", *job, "Job description (JSON) written by the launcher")->required();
  cmd->callback([&action, job] { action = [job] { return workerMain(*job); }; });
}

}  // namespace tpb::cli
