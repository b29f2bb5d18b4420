// `mpi` allreduce baseline: MPI_Allreduce(MPI_IN_PLACE, MPI_FLOAT, MPI_SUM), the library's own
// tuned collective, on a communicator of its own (ranks 0..N-1, made once per run and shared by
// every size), so it shares nothing with tpbench's transports; the mpi transport may or may not
// be the one the run uses. Needs ranks started by an MPI launcher: the launcher starts them
// through mpirun for this algorithm. Compiled, and registered, only where MPI is.
//
// The call blocks inside MPI, so unlike the transports' waits it is not under the communication
// timeout: a rank that dies ends the whole job through mpirun, and a stuck one is stopped by the
// launcher's --timeout. (MPI_Iallreduce polled under a timeout would measure OpenMPI's
// non-blocking collectives, a different implementation from the one users call.)
#ifdef TPB_HAVE_MPI

#include <algorithm>
#include <climits>

#include "algorithms/mpi_group.h"
#include "comm/mpi/mpi_runtime.h"
#include "common/error.h"
#include "core/registry.h"

namespace tpb {

namespace {

class MpiAllreduce final : public Allreduce {
 public:
  MpiAllreduce(CommContext& ctx, float* buf, std::size_t count) : buf_(buf), count_(count) {
    if (ctx.size() > 1 && count > 0) comm_ = mpiGroup(ctx, "mpi allreduce");
  }

  void run() override {
    if (comm_ == MPI_COMM_NULL) return;
    mpi::checkThread("mpi allreduce");
    // MPI counts are int: a larger buffer goes as consecutive pieces.
    constexpr std::size_t kPiece = std::size_t(1) << 30;
    for (std::size_t off = 0; off < count_; off += kPiece) {
      const int n = static_cast<int>(std::min(kPiece, count_ - off));
      TPB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf_ + off, n, MPI_FLOAT, MPI_SUM, comm_));
    }
  }
  bool barrier() override { return mpiBarrier(comm_, "mpi allreduce"); }

 private:
  float* buf_;
  std::size_t count_;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

AllreduceAlgo mpiAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "mpi";
  a.origin = Origin::Library;
  a.description = "MPI_Allreduce in place (OpenMPI's tuned collective), ranks started by mpirun";
  a.order = 4;
  a.color = "#e377c2";
  a.needsMpiLauncher = true;
  a.carrier = [](Device) { return std::string(kCarrierMpi); };
  a.unsupported = [](Device d) {
    return d == Device::Cpu ? std::string() : std::string("mpi reduces host memory here; use nccl on cuda");
  };
  a.make = [](CommContext& ctx, float* buf, std::size_t count) -> std::unique_ptr<Allreduce> {
    return std::make_unique<MpiAllreduce>(ctx, buf, count);
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(mpiAllreduceAlgo);

}  // namespace tpb

#endif  // TPB_HAVE_MPI
