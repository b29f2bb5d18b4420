#include <iostream>

#include "comm/cuda/devices.h"
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
  std::cout << "\ndevices (--device):\n  cpu\n";
  if (!ncclCompiled()) {
    std::cout << "  cuda          not in this build ("
              << (cudaCompiled() ? "CUDA found, NCCL not" : cudaUnavailableReason()) << ")\n";
  } else if (const int gpus = visibleCudaDevices(); gpus == 0) {
    std::cout << "  cuda          compiled, but no GPU is visible here (" << cudaUnavailableReason() << ")\n";
  } else {
    const auto names = cudaDeviceNames();
    std::cout << "  cuda          " << gpus << " GPU" << (gpus == 1 ? "" : "s") << ":";
    for (std::size_t i = 0; i < names.size(); ++i) std::cout << (i ? ", " : " ") << names[i];
    std::cout << " (allreduce only; training runs on cpu)\n";
  }
  return 0;
}
}  // namespace

void addList(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("list", "List the algorithms, strategies and transports this build supports");
  cmd->callback([&action] { action = list; });
}

}  // namespace tpb::cli
