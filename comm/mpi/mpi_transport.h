// comm/mpi/mpi_transport.h — point-to-point over MPI_Isend/MPI_Irecv, for ranks that an MPI
// launcher started (tpbench's --launcher mpirun, or mpirun around tpbench itself). The
// from-scratch ring and parameter server run over it unchanged; on one node OpenMPI moves the
// bytes through its shared-memory transport (vader), across nodes through its network ones.
//
// How the Transport contract maps onto MPI:
//  * FIFO per ordered pair: every message travels on this transport's own communicator (ranks
//    0..size-1, MPI_Comm_create_group) with one tag, and MPI never lets a message overtake an
//    earlier one with the same source, communicator and tag.
//  * Byte counts: a receive checks the size that arrived (MPI_Get_count) against the size it
//    posted; a longer message is MPI_ERR_TRUNCATE. Both are errors naming the peer.
//  * Zero bytes: nothing is posted on either side (DoneRequest).
//  * Messages above kMaxMessage bytes go as several consecutive messages (MPI counts are int);
//    both sides split a size the same way, and FIFO keeps the pieces in order.
//  * Timeouts: wait() polls MPI_Testall (which also drives MPI's progress engine), yielding the
//    core after a short spin so oversubscribed ranks make progress, and throws TimeoutError
//    naming the peer once timeout() passes. A blocking MPI_Wait could not be interrupted.
//  * Threads: MPI_THREAD_FUNNELED (comm/mpi/mpi_runtime.h); posts from another thread throw.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "comm/mpi/mpi_runtime.h"  // mpi.h, C API only
#include "comm/transport.h"

namespace tpb {

class MpiTransport final : public Transport {
 public:
  // Collective over ranks 0..size-1 of MPI_COMM_WORLD; initialises MPI when nothing has yet.
  // Throws tpb::Error when this process was not started by an MPI launcher, or when `rank`
  // is not its MPI world rank.
  MpiTransport(int rank, int size, std::chrono::milliseconds timeout);
  ~MpiTransport() override;

  std::string name() const override { return "mpi"; }
  std::unique_ptr<Request> isend(int peer, const void* buf, std::size_t bytes) override;
  std::unique_ptr<Request> irecv(int peer, void* buf, std::size_t bytes) override;

  // The largest single MPI message; larger posts are split into pieces of this size.
  static constexpr std::size_t kMaxMessage = std::size_t(1) << 30;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace tpb
