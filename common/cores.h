// common/cores.h — how many cores this process may run on.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tpb {

// Cores this process may run on (sched_getaffinity), else the machine's (hardware_concurrency);
// 0 when neither is known. Ranks inherit the mask, so this is what a point's ranks share.
inline unsigned availableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  // A mask wider than cpu_set_t (over 1024 CPUs) fails with EINVAL: fall back to the total.
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  return std::thread::hardware_concurrency();
}

// This process's affinity mask as a list of CPU numbers ("0,1,3"), for ranks to tell each other
// where they may run; "" when it cannot be read.
inline std::string affinityList() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
  }
  return out;
}

// The CPUs a list in the kernel's format names ("0-3,8,10-11"; affinityList()'s too), in its
// order; empty when the text is not such a list.
inline std::vector<int> parseCpuList(const std::string& text) {
  std::vector<int> cpus;
  auto number = [](const std::string& t) {
    if (t.empty() || t.size() > 5 || t.find_first_not_of("0123456789") != std::string::npos) return -1L;
    const long v = std::strtol(t.c_str(), nullptr, 10);
    return v < CPU_SETSIZE ? v : -1L;
  };
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const std::size_t dash = item.find('-');
    const long lo = number(item.substr(0, dash));
    const long hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (lo < 0 || hi < lo) return {};
    for (long c = lo; c <= hi; ++c) cpus.push_back(static_cast<int>(c));
    at = end + 1;
  }
  return cpus;
}

// How many distinct CPUs the lists name together: the cores a group of ranks shares, whether each
// may run anywhere or is bound to one. 0 when any list is empty or not a list of CPU numbers.
inline unsigned distinctCpus(const std::vector<std::string>& lists) {
  std::set<int> cpus;
  for (const std::string& list : lists) {
    const std::vector<int> these = parseCpuList(list);
    if (these.empty()) return 0;
    cpus.insert(these.begin(), these.end());
  }
  return static_cast<unsigned>(cpus.size());
}

// The CPU this process is bound to when its affinity mask holds exactly one, else -1 (it may run
// on several, or the mask cannot be read).
inline int boundCpu() {
  const std::vector<int> cpus = parseCpuList(affinityList());
  return cpus.size() == 1 ? cpus[0] : -1;
}

}  // namespace tpb
