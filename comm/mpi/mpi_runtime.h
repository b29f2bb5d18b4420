// comm/mpi/mpi_runtime.h — MPI's process-wide state, shared by the mpi transport and the MPI
// allreduce baseline: initialised at most once per process, only in a process that an MPI
// launcher (mpirun, mpiexec) started, and finalised only after a clean job.
//
// Thread level: MPI_THREAD_FUNNELED, or SINGLE with TPB_MPI_THREAD=single (comm/mpi/
// thread_level.h). Every MPI call tpbench makes comes from the thread that initialised MPI (the
// worker's main thread, which runs the job); the other threads in a rank (the heartbeat, c10d's
// store and Gloo's workers, autograd on a GPU) never call MPI. A higher level would make OpenMPI
// lock around every call for nothing. checkThread() turns a call from another thread into an
// error instead of undefined behaviour.
//
// Ending: MPI_Finalize is collective (OpenMPI's waits for every rank of the job), so a rank that
// failed must not call it: it would wait for a peer that is dead or stuck. A failing rank exits
// non-zero without finalising, and mpirun then ends every rank of the job (its default on a
// non-zero exit), which is how the survivors of a failure leave. MPI_Abort would do the same
// with a signal and a banner; exiting keeps the rank's own error line and exit code.
#pragma once

// The C API only: mpi.h would otherwise pull in the deprecated C++ bindings (libmpi_cxx).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <string>

namespace tpb::mpi {

// "" when this process was started by an MPI launcher (OpenMPI's OMPI_COMM_WORLD_SIZE, PMIx's
// PMIX_RANK, MPICH's PMI_SIZE are set), else a sentence saying MPI needs one.
std::string notUnderMpiLauncher();

// MPI_Init_thread(MPI_THREAD_FUNNELED, or the level TPB_MPI_THREAD names) on the first call
// (throws tpb::Error outside an MPI launcher, or when the library cannot give that level); later
// calls only check the thread.
// Errors on MPI_COMM_WORLD are returned, not fatal, so they become exceptions.
void initialize();

// MPI_Finalize, when initialize() ran and MPI is not finalised yet; communicators made by
// makeComm must be freed before. Collective: call it only after a clean job (see above).
void finalize();

// A communicator of world ranks 0..size-1 (MPI_Comm_create_group: collective over those ranks
// only, so under a launcher with more ranks a point can use the first `size`). Checks that this
// process is world rank `rank`, since tpbench's rank r must be MPI's rank r. Errors on it are
// returned. `who` names the user in errors.
MPI_Comm makeComm(int rank, int size, const char* who);
// MPI_Comm_free; nothing when `*comm` is MPI_COMM_NULL or MPI is finalised. Never throws.
void freeComm(MPI_Comm* comm) noexcept;

// Throws tpb::Error naming `who` unless called from the thread that initialised MPI.
void checkThread(const char* who);

// MPI_Error_string of `code`.
std::string errorText(int code);

}  // namespace tpb::mpi

// TPB_MPI_CHECK(MPI_Isend(...)): throws tpb::Error with the call and MPI's error text.
#define TPB_MPI_CHECK(call)                                                                   \
  do {                                                                                        \
    const int tpb_mpi_rc_ = (call);                                                           \
    if (tpb_mpi_rc_ != MPI_SUCCESS)                                                           \
      TPB_THROW(::tpb::Error, #call << " failed: " << ::tpb::mpi::errorText(tpb_mpi_rc_));    \
  } while (0)
