// common/run_id.h — the id that names one launch's shared resources (shm segments, store keys).
// Made by the launcher (harness/launch.cc), or by rank 0 of a worker started by another
// launcher (worker/worker.cc), so it lives below both.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>

namespace tpb {

// A fresh id for a run: unique across concurrent launches on one machine.
inline std::string makeRunId() {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d-%08x", static_cast<int>(getpid()), rd());
  return buf;
}

}  // namespace tpb
