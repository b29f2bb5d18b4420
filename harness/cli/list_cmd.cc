#include <iostream>

#include "comm/transports.h"
#include "harness/cli/commands.h"
#include "harness/registry.h"

namespace tpb::cli {

namespace {
int list() {
  std::cout << "allreduce algorithms (tpbench allreduce --algos):\n";
  for (const auto& a : allreduceAlgos()) {
    const std::string why = a.unsupported(Device::Cpu);
    std::cout << "  " << a.name << std::string(a.name.size() < 14 ? 14 - a.name.size() : 1, ' ') << "["
              << a.origin << "] " << a.description << (why.empty() ? "" : "  (cpu: " + why + ")") << "\n";
  }
  std::cout << "\ntransports (--transport):\n";
  for (const auto& t : transports())
    std::cout << "  " << t.name << std::string(t.name.size() < 14 ? 14 - t.name.size() : 1, ' ')
              << t.description << "\n";
  std::cout << "\ndevices: cpu (GPU support is not compiled into this build)\n";
  return 0;
}
}  // namespace

void addList(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("list", "List the algorithms, strategies and transports this build supports");
  cmd->callback([&action] { action = list; });
}

}  // namespace tpb::cli
