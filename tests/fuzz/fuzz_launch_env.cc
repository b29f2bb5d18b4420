// Fuzz target: the launcher environment a rank reads (worker/launch_env.h: torchrun's, Open
// MPI's, MPICH's and Slurm's variables, host lists and tasks-per-node included). The input is
// the environment, one NAME=VALUE a line. A refusal must name a variable: one of those given,
// or the one it starts with ("WORLD_SIZE is not set ..."). An accepted environment must agree
// with itself (rank below the world size, ...), and every value, read as a Slurm host list or
// tasks-per-node form, must expand to at most kMaxSlurmHosts entries or be refused.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "common/error.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/launch_env.h"

namespace {

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "tpb fuzz: launch env: %s\n", what);
  std::abort();
}

// The variable's name a message starts with after its "[file:line] " (capitals, digits, '_'),
// or "".
std::string leadingVariable(const char* what) {
  static const std::regex named(R"(^(\[[^\]]*\] )?([A-Z][A-Z0-9_]*[A-Z0-9])( |=|:))");
  std::cmatch m;
  return std::regex_search(what, m, named) ? m[2].str() : std::string();
}

void checkJob(const tpb::LaunchEnv& e) {
  if (e.worldSize < 1 || e.rank < 0 || e.rank >= e.worldSize) bug("rank outside the world");
  if (e.localWorldSize < 1 || e.localWorldSize > e.worldSize) bug("local world size outside 1..world size");
  if (e.localRank < 0 || e.localRank >= e.localWorldSize) bug("local rank outside the node");
  if (e.nodes < 0 || (e.nodes > 0 && e.nodeRank >= e.nodes)) bug("node rank outside the nodes");
  if (e.nodeList.size() > tpb::kMaxSlurmHosts) bug("node list beyond its bound");
  if (e.masterPort != -1 && (e.masterPort < 1 || e.masterPort > 65535)) bug("master port out of range");
  const int port = tpb::defaultMasterPort(e);
  if (port < 1 || port > 65535) bug("default port out of range");
}

template <typename Expand>
void checkBounded(Expand expand, const std::string& value) {
  try {
    if (expand(value).size() > tpb::kMaxSlurmHosts) bug("a Slurm form expanded beyond its bound");
  } catch (const tpb::UsageError&) {
  }
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
    if (const auto found = tpb::detectLaunchEnv(env)) checkJob(*found);
  } catch (const tpb::UsageError& e) {
    names.push_back(leadingVariable(e.what()));
    tpb::fuzz::checkRefusal(e.what(), names);
  }
  for (const auto& [name, value] : env) {
    checkBounded(tpb::expandSlurmHostList, value);
    checkBounded(tpb::expandSlurmTasksPerNode, value);
  }
  return 0;
}
