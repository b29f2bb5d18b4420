// tpbench entry point: parses the command line, runs the chosen subcommand, and maps errors to
// exit codes: 0 ok, 1 failure, 2 bad usage, 3 regression found (compare).
#include <iostream>
#include <string>

#include "common/error.h"
#include "harness/cli/commands.h"

#ifndef TPB_VERSION
#define TPB_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  std::string commandLine;
  for (int i = 0; i < argc; ++i) commandLine += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{"tpbench: measure and compare how data-parallel training synchronises gradients"};
  app.set_version_flag("--version", std::string("tpbench ") + TPB_VERSION);
  app.require_subcommand(1);
  tpb::cli::Action action;
  tpb::cli::addAllreduce(app, action, commandLine);
  tpb::cli::addCollective(app, action, commandLine);
  tpb::cli::addRun(app, action, commandLine);
  tpb::cli::addSweep(app, action, commandLine);
  tpb::cli::addReport(app, action);
  tpb::cli::addCompare(app, action);
  tpb::cli::addModel(app, action);
  tpb::cli::addList(app, action);
  tpb::cli::addWorker(app, action);

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      std::cerr << "tpbench: unknown command '" << argv[1] << "' (see --help)" << std::endl;
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
    std::cerr << "tpbench: " << e.what() << " (see --help)" << std::endl;
    return 2;
  }
  try {
    return action ? action() : 2;
  } catch (const tpb::UsageError& e) {
    // Bad input is the user's to fix: the "[file:line] " of the check that caught it is noise.
    std::string msg = e.what();
    if (msg.rfind('[', 0) == 0 && msg.find("] ") != std::string::npos) msg.erase(0, msg.find("] ") + 2);
    std::cerr << "tpbench: " << msg << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tpbench: error: " << e.what() << std::endl;
    return 1;
  }
}
