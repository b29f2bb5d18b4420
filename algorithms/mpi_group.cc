#ifdef TPB_HAVE_MPI

#include "algorithms/mpi_group.h"

#include <memory>

#include "common/error.h"

namespace tpb {

MPI_Comm mpiGroup(CommContext& ctx, const char* who) {
  auto& slot = ctx.shared["mpi_group"];
  if (!slot) {
    auto comm = std::shared_ptr<MPI_Comm>(new MPI_Comm(MPI_COMM_NULL), [](MPI_Comm* c) {
      mpi::freeComm(c);
      delete c;
    });
    *comm = mpi::makeComm(ctx.rank(), ctx.size(), who);
    slot = comm;
  }
  return *std::static_pointer_cast<MPI_Comm>(slot);
}

bool mpiBarrier(MPI_Comm comm, const char* who) {
  if (comm == MPI_COMM_NULL) return false;
  mpi::checkThread(who);
  TPB_MPI_CHECK(MPI_Barrier(comm));
  return true;
}

}  // namespace tpb

#endif  // TPB_HAVE_MPI
