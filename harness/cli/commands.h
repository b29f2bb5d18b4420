// harness/cli/commands.h — one function per subcommand file; each adds its subcommand to the
// app and binds it to a harness entry point. The CLI layer parses and converts, nothing else.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace tpb::cli {

// A subcommand's action, run after parsing; returns the exit code.
using Action = std::function<int()>;

void addAllreduce(CLI::App& app, Action& action, const std::string& commandLine);
void addCollective(CLI::App& app, Action& action, const std::string& commandLine);
void addModel(CLI::App& app, Action& action);
void addList(CLI::App& app, Action& action);
void addRun(CLI::App& app, Action& action, const std::string& commandLine);
void addSweep(CLI::App& app, Action& action, const std::string& commandLine);
void addWorker(CLI::App& app, Action& action);
void addCompare(CLI::App& app, Action& action);
void addReport(CLI::App& app, Action& action);

}  // namespace tpb::cli
