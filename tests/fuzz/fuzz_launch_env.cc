// Fuzz target: the launcher environment a rank reads (worker/launch_env.h: torchrun's, Open
// MPI's, MPICH's and Slurm's variables, host lists and tasks-per-node included). The input is
// the environment, one NAME=VALUE a line; a refusal must name a variable: one of those given,
// or the one it starts with ("WORLD_SIZE is not set ...").
#include <algorithm>
#include <regex>

#include "common/error.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/launch_env.h"

namespace {

// The variable's name a message starts with after its "[file:line] " (capitals, digits, '_'),
// or "".
std::string leadingVariable(const char* what) {
  static const std::regex named(R"(^(\[[^\]]*\] )?([A-Z][A-Z0-9_]*[A-Z0-9])( |=|:))");
  std::cmatch m;
  return std::regex_search(what, m, named) ? m[2].str() : std::string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tpb::EnvMap env;
  std::vector<std::string> names;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    const auto end = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    names.emplace_back(line.substr(0, eq));
    env[names.back()] = std::string(line.substr(eq + 1));
  }
  try {
    if (const auto found = tpb::detectLaunchEnv(env)) (void)tpb::defaultMasterPort(*found);
  } catch (const tpb::UsageError& e) {
    names.push_back(leadingVariable(e.what()));
    tpb::fuzz::checkRefusal(e.what(), names);
  }
  return 0;
}
