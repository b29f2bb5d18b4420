// common/cpu_clock.h — the calling thread's CPU time: what a step's compute cost this rank's core,
// apart from the time it waited for one. Below every layer.
#pragma once

#include <time.h>

namespace tpb {

// Seconds of CPU time the calling thread has used (user and system), CLOCK_THREAD_CPUTIME_ID.
inline double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace tpb
