// tpbench entry point: parses the command line, runs the chosen subcommand, and maps errors to
// exit codes: 0 ok, 1 failure, 2 bad usage, 3 regression found (compare).
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "comm/transports.h"
#include "common/build_info.h"
#include "common/crash_report.h"
#include "common/error.h"
#include "common/out_file.h"
#include "common/text_escape.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/external_job.h"

namespace {

// Under torchrun, srun or mpirun every rank refuses the same input at once: the first rank of
// each node says so (one line on one node; a node whose input alone is bad is heard too). A
// malformed environment leaves `job` null: every rank says so.
bool quietRank(const tpb::ExternalJob* job) { return job && job->rank() != 0 && job->env().localRank != 0; }

// `run`, `sweep`, `allreduce` and `collective` may be one rank of a torchrun, srun or mpirun job.
bool rankCommand(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string sub = argv[1];
  return sub == "run" || sub == "sweep" || sub == "allreduce" || sub == "collective";
}

// The command line's action and its exit status (main's, with a crash report around it).
int runCommand(int argc, char** argv) {
  std::string commandLine;
  for (int i = 0; i < argc; ++i) commandLine += (i ? " " : "") + std::string(argv[i]);

  // The launch mode, decided here once and passed down: the job this process is one rank of
  // (`external`), or none, and tpbench launches its own ranks. A malformed environment is
  // refused once the command line has parsed (a parse error comes first, as does --help).
  std::unique_ptr<tpb::ExternalJob> external;
  std::exception_ptr badEnvironment;
  if (rankCommand(argc, argv)) {
    try {
      external = tpb::ExternalJob::fromEnvironment();
    } catch (...) {
      badEnvironment = std::current_exception();
    }
  }

  CLI::App app{"tpbench: measure and compare how data-parallel training synchronises gradients"};
  app.set_version_flag("--version", std::string("tpbench ") + tpb::build_info::kVersion);
  app.require_subcommand(1);
  tpb::cli::Action action;
  tpb::cli::addAllreduce(app, action, commandLine, external.get());
  tpb::cli::addCollective(app, action, commandLine, external.get());
  tpb::cli::addRun(app, action, commandLine, external.get());
  tpb::cli::addSweep(app, action, commandLine, external.get());
  tpb::cli::addReport(app, action);
  tpb::cli::addCompare(app, action);
  tpb::cli::addHistory(app, action);
  tpb::cli::addModel(app, action);
  tpb::cli::addPredict(app, action, commandLine);
  tpb::cli::addImport(app, action);
  tpb::cli::addList(app, action);
  tpb::cli::addWorker(app, action);
  tpb::cli::checkNumberOptions(app);

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      std::cerr << "tpbench: unknown command '" << tpb::printable(tpb::shortened(argv[1], 200)) << "' (see --help)" << std::endl;
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A flag the command does not take: named, with the nearest one it does take.
    std::string text;
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      const std::vector<CLI::App*> parsed = app.get_subcommands();
      const std::vector<std::string> args(argv + 1, argv + argc);
      text = tpb::cli::unknownFlagsText(parsed.empty() ? app : *parsed.front(), args);
    }
    if (text.empty()) text = tpb::cli::parseErrorText(e);
    if (!quietRank(external.get()))
      std::cerr << "tpbench: " << tpb::printable(tpb::shortened(text)) << " (see --help)" << std::endl;
    return 2;
  }
  try {
    if (badEnvironment) std::rethrow_exception(badEnvironment);
    const int rc = action ? action() : 2;
    // One rank of an external job may have used MPI (the mpi transport or allreduce under
    // mpirun): finalize it after a clean command, as mpirun expects of its ranks.
    if (rc == 0 && external) tpb::finishCommProcess();
    return rc;
  } catch (const tpb::UsageError& e) {
    // Bad input is the user's to fix: the "[file:line] " of the check that caught it is noise.
    std::string msg = e.what();
    if (msg.rfind('[', 0) == 0 && msg.find("] ") != std::string::npos) msg.erase(0, msg.find("] ") + 2);
    tpb::removeCreatedDirectories();  // nothing a refused command created remains
    // Messages quote names from files and flags: printed, they must not drive the terminal.
    if (!quietRank(external.get())) std::cerr << "tpbench: " << tpb::printable(tpb::shortened(msg)) << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tpbench: error: " << tpb::printable(tpb::shortened(e.what())) << std::endl;
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  tpb::installCrashReport();
  const int rc = runCommand(argc, argv);
  tpb::markMainReturned();
  return rc;
}
