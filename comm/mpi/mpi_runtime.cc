#include "comm/mpi/mpi_runtime.h"

#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/mpi/thread_level.h"
#include "common/error.h"

namespace tpb::mpi {

namespace {

// Set once by initialize(); read by checkThread() on every post.
std::once_flag gInitOnce;
std::thread::id gMpiThread;
bool gInitializedHere = false;

bool finalized() {
  int done = 0;
  MPI_Finalized(&done);
  return done != 0;
}

}  // namespace

std::string notUnderMpiLauncher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    const char* v = std::getenv(var);
    if (v && *v) return {};
  }
  return "MPI needs ranks started by mpirun (or mpiexec); this process was not (no OMPI_COMM_WORLD_SIZE, "
         "PMIX_RANK or PMI_SIZE): use tpbench's --launcher mpirun, or start tpbench under mpirun";
}

std::string errorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(len));
}

void initialize() {
  std::call_once(gInitOnce, [] {
    int already = 0;
    MPI_Initialized(&already);
    if (!already) {
      if (std::string why = notUnderMpiLauncher(); !why.empty()) TPB_THROW(Error, why);
      const MpiThreadLevel level = mpiThreadLevelFromEnv();
      const int wanted = level == MpiThreadLevel::Single ? MPI_THREAD_SINGLE : MPI_THREAD_FUNNELED;
      int provided = MPI_THREAD_SINGLE;
      const int rc = MPI_Init_thread(nullptr, nullptr, wanted, &provided);
      if (rc != MPI_SUCCESS) TPB_THROW(Error, "MPI_Init_thread failed: " << errorText(rc));
      gInitializedHere = true;
      if (provided < wanted)
        TPB_THROW(Error, "MPI_Init_thread gave thread level " << provided << ", below the " << mpiThreadLevelName(level)
                                                              << " level asked for");
    }
    gMpiThread = std::this_thread::get_id();
    int provided = MPI_THREAD_SINGLE;
    TPB_MPI_CHECK(MPI_Query_thread(&provided));
    setMpiThreadProvided(provided == MPI_THREAD_SINGLE       ? "single"
                         : provided == MPI_THREAD_FUNNELED   ? "funneled"
                         : provided == MPI_THREAD_SERIALIZED ? "serialized"
                                                             : "multiple");
    TPB_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  });
  checkThread("MPI");
}

void finalize() {
  if (!gInitializedHere || finalized()) return;
  MPI_Finalize();
}

void checkThread(const char* who) {
  if (std::this_thread::get_id() != gMpiThread)
    TPB_THROW(Error, who << ": called from a thread other than the one that initialised MPI "
                            "(MPI_THREAD_FUNNELED: every MPI call comes from that thread)");
}

MPI_Comm makeComm(int rank, int size, const char* who) {
  initialize();
  int worldRank = -1, worldSize = 0;
  TPB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &worldRank));
  TPB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &worldSize));
  if (worldRank != rank || size > worldSize)
    TPB_THROW(Error, who << ": tpbench rank " << rank << " of " << size << " is MPI rank " << worldRank << " of "
                         << worldSize << "; ranks 0.." << size - 1 << " must be MPI's first ranks");
  MPI_Group world = MPI_GROUP_NULL, first = MPI_GROUP_NULL;
  TPB_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  const int range[1][3] = {{0, size - 1, 1}};
  const int rc = MPI_Group_range_incl(world, 1, const_cast<int(*)[3]>(range), &first);
  MPI_Group_free(&world);
  if (rc != MPI_SUCCESS) TPB_THROW(Error, who << ": MPI_Group_range_incl failed: " << errorText(rc));
  MPI_Comm comm = MPI_COMM_NULL;
  // One fixed tag: the calls on a rank are sequential, so they never need telling apart.
  const int made = MPI_Comm_create_group(MPI_COMM_WORLD, first, /*tag=*/0, &comm);
  MPI_Group_free(&first);
  if (made != MPI_SUCCESS) TPB_THROW(Error, who << ": MPI_Comm_create_group failed: " << errorText(made));
  const int set = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (set != MPI_SUCCESS) {
    MPI_Comm_free(&comm);
    TPB_THROW(Error, who << ": MPI_Comm_set_errhandler failed: " << errorText(set));
  }
  return comm;
}

void freeComm(MPI_Comm* comm) noexcept {
  if (*comm == MPI_COMM_NULL) return;
  if (!finalized()) MPI_Comm_free(comm);
  *comm = MPI_COMM_NULL;
}

}  // namespace tpb::mpi
