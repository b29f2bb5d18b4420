// libFuzzer target for the launcher environment (worker/launch_env.h): the input is an
// environment, one NAME=VALUE per line, read as torchrun's, Slurm's or MPI's variables; every
// value is also read as a Slurm host list and tasks-per-node form. A refusal is a
// tpb::UsageError; anything else thrown, a crash, a sanitizer finding, a big allocation, or an
// accepted environment whose numbers disagree (rank >= world size, ...) is a bug.
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_launch_env.cc \
//     worker/launch_env.cc -o fuzz_launch_env && ./fuzz_launch_env tests/fuzz/corpus/launch_env
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "worker/launch_env.h"

namespace {

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "fuzz_launch_env: %s\n", what);
  std::abort();
}

tpb::EnvMap parseEnv(const std::string& text) {
  tpb::EnvMap env;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos && eq > 0) env[line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  return env;
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const tpb::EnvMap env = parseEnv(std::string(reinterpret_cast<const char*>(data), size));
  try {
    if (const auto e = tpb::detectLaunchEnv(env)) checkJob(*e);
  } catch (const tpb::UsageError&) {
  }
  for (const auto& [name, value] : env) {
    try {
      if (tpb::expandSlurmHostList(value).size() > tpb::kMaxSlurmHosts) bug("host list beyond its bound");
    } catch (const tpb::UsageError&) {
    }
    try {
      if (tpb::expandSlurmTasksPerNode(value).size() > tpb::kMaxSlurmHosts) bug("tasks per node beyond its bound");
    } catch (const tpb::UsageError&) {
    }
  }
  return 0;
}
