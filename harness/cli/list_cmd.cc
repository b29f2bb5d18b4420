#include <iostream>

#include "comm/cuda/devices.h"
#include "comm/transports.h"
#include "harness/cli/commands.h"
#include "core/registry.h"

namespace tpb::cli {

namespace {

std::string column(const std::string& name) {
  return "  " + name + std::string(name.size() < 16 ? 16 - name.size() : 1, ' ');
}

// "" when `why(device)` is empty on both devices, else the devices it cannot run on and why.
template <typename Why>
std::string limits(const Why& why) {
  std::string out;
  for (Device d : {Device::Cpu, Device::Cuda}) {
    if (const std::string w = why(d); !w.empty()) out += std::string("  (") + deviceName(d) + ": " + w + ")";
  }
  return out;
}

// What the registry says `d` cannot run (at N = 1, as the lists above show it), by name.
std::string exceptOn(Device d) {
  std::vector<std::string> names;
  for (const auto& a : allreduceAlgos())
    if (!a.unsupported(d).empty()) names.push_back(a.name);
  for (const auto& c : collectiveAlgos())
    if (c.op != "allreduce" && !c.unsupported(d).empty()) names.push_back(c.name + " (" + c.op + ")");
  for (const auto& s : trainStrategies())
    if (!s.unsupported(d, 1).empty()) names.push_back(s.name);
  if (names.empty()) return "every algorithm and strategy";
  std::string out = "every algorithm and strategy but";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : " ") + names[i];
  return out + " (why: above)";
}

int list() {
  std::cout << "allreduce algorithms (tpbench allreduce --algos):\n";
  for (const auto& a : allreduceAlgos())
    std::cout << column(a.name) << "[" << originName(a.origin) << "] " << a.description << limits(a.unsupported) << "\n";
  std::cout << "\ncollectives (tpbench collective --op OP --algos; allreduce lists the algorithms above):\n";
  for (const auto& op : collectiveOps()) {
    std::cout << column(op.name) << op.description << "\n";
    for (const auto& c : collectiveAlgos())
      if (c.op == op.name && c.op != "allreduce")
        std::cout << column("  " + c.name) << "[" << originName(c.origin) << "] " << c.description
                  << limits(c.unsupported) << "\n";
  }
  std::cout << "\ntraining strategies (tpbench run --strategy, sweep --strategies):\n";
  for (const auto& s : trainStrategies()) {
    std::cout << column(s.name) << "[" << originName(s.origin) << "] " << s.description
              << limits([&s](Device d) { return s.unsupported(d, 1); });
    if (!s.aliases.empty()) {
      std::cout << "  (also:";
      for (const auto& a : s.aliases) std::cout << " " << a;
      std::cout << ")";
    }
    std::cout << "\n";
  }
  std::cout << "\ntransports (--transport):\n";
  for (const auto& t : transports()) std::cout << column(t.name) << t.description << "\n";
  std::cout << "\ndevices (--device):\n" << column("cpu") << exceptOn(Device::Cpu) << "\n";
  if (!ncclCompiled()) {
    std::cout << column("cuda") << "not in this build ("
              << (cudaCompiled() ? "CUDA found, NCCL not" : cudaUnavailableReason()) << ")\n";
  } else if (const int gpus = visibleCudaDevices(); gpus == 0) {
    std::cout << column("cuda") << "compiled, but no GPU is visible here (" << cudaUnavailableReason() << ")\n";
  } else {
    const auto names = cudaDeviceNames();
    std::cout << column("cuda") << gpus << " GPU" << (gpus == 1 ? "" : "s") << ":";
    for (std::size_t i = 0; i < names.size(); ++i) std::cout << (i ? ", " : " ") << names[i];
    std::cout << "\n";
  }
  return 0;
}
}  // namespace

void addList(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("list", "List the algorithms, strategies and transports this build supports");
  cmd->callback([&action] { action = list; });
}

}  // namespace tpb::cli
