// harness/cli/commands.h — one function per subcommand file; each adds its subcommand to the
// app and binds it to a harness entry point. The CLI layer parses and converts, nothing else.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace tpb {
class ExternalJob;
}

namespace tpb::cli {

// A subcommand's action, run after parsing; returns the exit code.
using Action = std::function<int()>;

// The commands that launch ranks take the launch mode main decided from the environment:
// `external` is the job this process is one rank of (torchrun, srun, mpirun), nullptr when
// tpbench launches its own ranks. They pass it on in their runner's options.
void addAllreduce(CLI::App& app, Action& action, const std::string& commandLine, ExternalJob* external);
void addCollective(CLI::App& app, Action& action, const std::string& commandLine, ExternalJob* external);
void addModel(CLI::App& app, Action& action);
void addList(CLI::App& app, Action& action);
void addRun(CLI::App& app, Action& action, const std::string& commandLine, ExternalJob* external);
void addSweep(CLI::App& app, Action& action, const std::string& commandLine, ExternalJob* external);
void addWorker(CLI::App& app, Action& action);
void addCompare(CLI::App& app, Action& action);
void addReport(CLI::App& app, Action& action);
void addImport(CLI::App& app, Action& action);
void addHistory(CLI::App& app, Action& action);
void addPredict(CLI::App& app, Action& action, const std::string& commandLine);

}  // namespace tpb::cli
