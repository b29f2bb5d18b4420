// algorithms/mpi_group.h — one MPI communicator per run (world ranks 0..N-1), shared by every MPI
// library baseline of that run and freed with its CommContext, as gloo_group.h is for Gloo.
// Compiled only where MPI is.
#pragma once

#ifdef TPB_HAVE_MPI

#include "comm/mpi/mpi_runtime.h"
#include "core/comm_context.h"

namespace tpb {

// The run's communicator for library collectives; `who` names the user in errors.
MPI_Comm mpiGroup(CommContext& ctx, const char* who);

// MPI_Barrier on `comm` (what a library collective's Collective::barrier() does); false, with
// nothing done, where the collective has no communicator (one rank, or nothing to move).
bool mpiBarrier(MPI_Comm comm, const char* who);

}  // namespace tpb

#endif  // TPB_HAVE_MPI
