#include "comm/mpi/thread_level.h"

#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace tpb {

MpiThreadLevel mpiThreadLevelFromEnv() {
  const char* v = std::getenv("TPB_MPI_THREAD");
  if (!v || !*v || std::strcmp(v, "funneled") == 0) return MpiThreadLevel::Funneled;
  if (std::strcmp(v, "single") == 0) return MpiThreadLevel::Single;
  TPB_THROW(UsageError, "TPB_MPI_THREAD: must be funneled or single, got '" << v << "'");
}

namespace {
const char* gProvided = nullptr;
}  // namespace

const char* mpiThreadProvided() { return gProvided; }

void setMpiThreadProvided(const char* name) { gProvided = name; }

const char* mpiThreadLevelName(MpiThreadLevel level) {
  return level == MpiThreadLevel::Single ? "single" : "funneled";
}

}  // namespace tpb
