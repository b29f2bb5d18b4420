#include <iostream>
#include <memory>

#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/import.h"
#include "record/nccl_tests.h"

namespace tpb::cli {

void addImport(CLI::App& app, Action& action) {
  auto o = std::make_shared<ImportOptions>();
  auto* cmd = app.add_subcommand(
      "import",
      "Read nccl-tests' results (its text output, or its -J JSON file) into a tpbench results file, as points "
      "of algo and origin nccl-tests that report, compare and model read beside tpbench's own. Rows of another "
      "element type than float, another reduction than sum, and tests tpbench has no op for are left out and "
      "counted; a row whose time, algbw and busbw disagree is refused");
  cmd->add_option("FILES", o->files, "nccl-tests output files (text or JSON)")->required();
  cmd->add_option("--out", o->out, "Write the results JSON here")->required();
  std::string ops;
  for (const auto& op : ncclTestsOps()) ops += (ops.empty() ? "" : ", ") + op;
  cmd->add_option("--op", o->op,
                  "The test the files ran, where they do not say (older nccl-tests print no 'Collective test "
                  "starting' line): " + ops);
  cmd->add_flag("--overwrite", o->overwrite,
                "Replace the tpbench results file at --out when one is there (without it an existing one is "
                "refused; a file tpbench did not write is never replaced)");
  cmd->callback([&action, o, cmd] {
    action = [o, cmd] {
      checkGivenNotEmpty(cmd, "--out", o->out);
      checkGivenNotEmpty(cmd, "--op", o->op);
      return runImport(*o, std::cout);
    };
  });
}

}  // namespace tpb::cli
