#include <iostream>
#include <memory>

#include "common/error.h"
#include "common/train_settings.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/import.h"
#include "record/nccl_tests.h"
#include "record/reference_busbw.h"

namespace tpb::cli {

void addImport(CLI::App& app, Action& action) {
  auto o = std::make_shared<ImportOptions>();
  auto* cmd = app.add_subcommand(
      "import",
      "Read nccl-tests' or rccl-tests' results (its text output as printed, pasted or prefixed by a launcher, "
      "of any version; nccl-tests' -J JSON file; or rccl-tests' JSON lines, -Z json) into a tpbench results file, as points of algo and origin "
      "nccl-tests (rccl-tests) that report, compare and model read beside tpbench's own. Element types and "
      "reductions are kept and recorded; sendrecv is recorded as sendrecv_shift (one shift, not tpbench's "
      "round trip); tests tpbench has no op for and rows cut short are left out and counted; a row whose time, "
      "algbw and busbw disagree is refused. Prints each allreduce curve's plateau busbw against the published "
      "figure for its platform (docs/reports.md)");
  cmd->add_option("FILES", o->files, "nccl-tests output files (text or JSON)")->required();
  cmd->add_option("--out", o->out, "Write the results JSON here")->required();
  std::string ops;
  for (const auto& op : ncclTestsOps()) ops += (ops.empty() ? "" : ", ") + op;
  cmd->add_option("--op", o->op,
                  "The test the files ran, where they do not say (older nccl-tests print no 'Collective test "
                  "starting' line): " + ops);
  cmd->add_option("--ranks", o->ranks,
                  "The rank count, where a log prints no Rank lines and its busbw / algbw cannot tell it "
                  "(broadcast, reduce; many ranks); it overrides what the log says");
  cmd->add_option("--library", o->library, "nccl or rccl, where a log does not say which library ran it");
  cmd->add_option("--nics", o->nicsPerNode, "NICs per node, for the verdict of a curve across nodes");
  std::string nics;
  for (const auto& k : referenceNicKinds()) nics += (nics.empty() ? "" : ", ") + k;
  cmd->add_option("--nic", o->nic, "The NICs' kind, for the verdict across nodes: " + nics);
  cmd->add_flag("--overwrite", o->overwrite,
                "Replace the tpbench results file at --out when one is there (without it an existing one is "
                "refused; a file tpbench did not write is never replaced)");
  cmd->callback([&action, o, cmd] {
    action = [o, cmd] {
      checkGivenNotEmpty(cmd, "--out", o->out);
      checkGivenNotEmpty(cmd, "--op", o->op);
      checkGivenNotEmpty(cmd, "--library", o->library);
      checkGivenNotEmpty(cmd, "--nic", o->nic);
      // 0 means "not given" inside; given, it is refused as the range the message names.
      if (cmd->count("--ranks") && o->ranks < 1) TPB_THROW(UsageError, "--ranks: a rank count from 1 to " << kMaxRanks);
      if (cmd->count("--nics") && o->nicsPerNode < 1) TPB_THROW(UsageError, "--nics: a NIC count per node from 1 to 64");
      return runImport(*o, std::cout);
    };
  });
}

}  // namespace tpb::cli
