// common/cores.h — how many cores this process may run on.
#pragma once

#include <sched.h>

#include <thread>

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

}  // namespace tpb
