// Fuzz target: the launcher environment a rank reads (worker/launch_env.h: torchrun's, Open
// MPI's, MPICH's and Slurm's variables, host lists and tasks-per-node included). The input is
// the environment, one NAME=VALUE a line; a refusal must name one of the variables given.
#include <algorithm>

#include "common/error.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/launch_env.h"

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
    tpb::fuzz::requireNames(e.what(), names);
  }
  return 0;
}
