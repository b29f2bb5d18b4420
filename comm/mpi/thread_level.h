// comm/mpi/thread_level.h — the thread level tpbench asks of MPI_Init_thread, chosen by
// TPB_MPI_THREAD. No MPI here: the launcher checks and records the setting whether or not this
// build has MPI, and passes it to mpirun's ranks.
//
//   funneled (default)  MPI_THREAD_FUNNELED: what the standard asks of a process with threads
//                       besides the one that calls MPI (a rank's heartbeat, c10d's store and
//                       Gloo's workers). Open MPI 4.1 then takes its thread-safe paths: about
//                       0.12 us more per 8 B MPI_Allreduce at N = 2 on the two-core VM
//                       (docs/measurements.md).
//   single              MPI_THREAD_SINGLE, as MPI_Init (IMB and OSU) asks: like for like beside
//                       them. tpbench's other threads never call MPI, which is all Open MPI and
//                       MPICH need in practice, but the standard's SINGLE is one thread.
#pragma once

namespace tpb {

enum class MpiThreadLevel { Funneled, Single };

// The level TPB_MPI_THREAD names (unset or empty: funneled). Anything else throws UsageError
// naming the variable: the launcher calls it before any rank starts.
MpiThreadLevel mpiThreadLevelFromEnv();

// "funneled" or "single": the spelling of TPB_MPI_THREAD and of a results file's meta.mpi_thread.
const char* mpiThreadLevelName(MpiThreadLevel level);

// The level MPI_Query_thread gave this process ("single", "funneled", "serialized",
// "multiple"), set by mpi::initialize(); null where MPI was not initialised. A point that used
// MPI records it.
const char* mpiThreadProvided();
void setMpiThreadProvided(const char* name);

}  // namespace tpb
