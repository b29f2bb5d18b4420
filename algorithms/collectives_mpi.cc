// `mpi` library baselines for the collectives beyond allreduce (allreduce_mpi.cc has allreduce):
// MPI_Bcast, MPI_Reduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall and
// MPI_Send/MPI_Recv ping-pong, on the run's own MPI communicator (algorithms/mpi_group.h), so
// they share nothing with tpbench's transports and their traffic is not counted. Ranks must be
// processes an MPI launcher started (needsMpiLauncher); host memory only.
//
// Placement follows nccl-tests (worker/collective_job.cc), mapped onto MPI's rules, which forbid
// aliased send and receive buffers: in-place reduce at the root and in-place allgather pass
// MPI_IN_PLACE; in-place reduce_scatter passes MPI_IN_PLACE too, which leaves the rank's sum at
// the start of the buffer, and then moves it to the rank's block (a copy of 1/N of the input,
// inside the timed call). Like MPI_Allreduce, these block inside MPI: a stuck peer is caught by
// the launcher's --timeout, not the communication timeout.
#ifdef TPB_HAVE_MPI

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>

#include "algorithms/mpi_group.h"
#include "common/error.h"
#include "core/registry.h"

namespace tpb {

namespace {

// MPI counts are int: ops on one whole buffer go as consecutive pieces of at most this many.
constexpr std::size_t kPiece = std::size_t(1) << 30;

// One MPI call (or a few) per run(); with one rank, or nothing to move, `alone` does what the op
// means for N = 1.
class MpiCollective final : public Collective {
 public:
  using Call = std::function<void(MPI_Comm)>;
  MpiCollective(CommContext& ctx, const CollectiveArgs& a, const char* who, Call call)
      : who_(who), call_(std::move(call)), args_(a) {
    if (ctx.size() > 1 && a.count > 0) comm_ = mpiGroup(ctx, who);
  }
  void run() override {
    if (comm_ == MPI_COMM_NULL) {
      if (args_.send != args_.recv && args_.recv && args_.send) copyFloats(Device::Cpu, args_.recv, args_.send, args_.count);
      return;
    }
    mpi::checkThread(who_);
    call_(comm_);
  }
  bool barrier() override { return mpiBarrier(comm_, who_); }

 private:
  const char* who_;
  Call call_;
  CollectiveArgs args_;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// A per-rank block as an MPI count; larger blocks are refused with the reason.
int blockCount(std::size_t m, const char* who) {
  TPB_CHECK(m <= static_cast<std::size_t>(INT_MAX),
            who << ": a block of " << m << " floats exceeds MPI's int count; use a smaller --bytes");
  return static_cast<int>(m);
}

CollectiveAlgo mpiAlgo(const char* op, const char* description, CollectiveFactory make) {
  CollectiveAlgo a;
  a.op = op;
  a.name = "mpi";
  a.origin = Origin::Library;
  a.description = description;
  a.order = 4;
  a.color = "#e377c2";
  a.needsMpiLauncher = true;
  a.carrier = [](Device) { return std::string(kCarrierMpi); };
  a.unsupported = [](Device d) {
    return d == Device::Cpu ? std::string() : std::string("mpi moves host memory here; use nccl on cuda");
  };
  a.make = std::move(make);
  return a;
}

CollectiveAlgo mpiBroadcast() {
  return mpiAlgo("broadcast", "MPI_Bcast (OpenMPI's tuned collective), ranks started by mpirun",
                 [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
                   const bool root = ctx.rank() == a.root;
                   return std::make_unique<MpiCollective>(ctx, a, "mpi broadcast", [a, root](MPI_Comm c) {
                     if (root) copyFloats(Device::Cpu, a.recv, a.send, a.count);  // nothing in place
                     for (std::size_t off = 0; off < a.count; off += kPiece) {
                       const int n = static_cast<int>(std::min(kPiece, a.count - off));
                       TPB_MPI_CHECK(MPI_Bcast(a.recv + off, n, MPI_FLOAT, a.root, c));
                     }
                   });
                 });
}

CollectiveAlgo mpiReduce() {
  return mpiAlgo("reduce", "MPI_Reduce (sum), ranks started by mpirun",
                 [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
                   const bool root = ctx.rank() == a.root;
                   return std::make_unique<MpiCollective>(ctx, a, "mpi reduce", [a, root](MPI_Comm c) {
                     const bool inPlace = a.send == a.recv;
                     for (std::size_t off = 0; off < a.count; off += kPiece) {
                       const int n = static_cast<int>(std::min(kPiece, a.count - off));
                       // The receive buffer counts at the root only; off it nothing is written.
                       const void* send = root && inPlace ? MPI_IN_PLACE : static_cast<const void*>(a.send + off);
                       void* recv = root ? static_cast<void*>(a.recv + off) : nullptr;
                       TPB_MPI_CHECK(MPI_Reduce(send, recv, n, MPI_FLOAT, MPI_SUM, a.root, c));
                     }
                   });
                 });
}

CollectiveAlgo mpiAllgather() {
  return mpiAlgo("allgather", "MPI_Allgather, ranks started by mpirun",
                 [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
                   const std::size_t m = a.count / static_cast<std::size_t>(ctx.size());
                   const int k = blockCount(m, "mpi allgather");
                   const bool inPlace = a.send == a.recv + static_cast<std::size_t>(ctx.rank()) * m;
                   return std::make_unique<MpiCollective>(ctx, a, "mpi allgather", [a, k, inPlace](MPI_Comm c) {
                     TPB_MPI_CHECK(MPI_Allgather(inPlace ? MPI_IN_PLACE : a.send, k, MPI_FLOAT, a.recv, k, MPI_FLOAT, c));
                   });
                 });
}

CollectiveAlgo mpiReduceScatter() {
  return mpiAlgo("reduce_scatter", "MPI_Reduce_scatter_block (sum), ranks started by mpirun",
                 [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
                   const std::size_t m = a.count / static_cast<std::size_t>(ctx.size());
                   const int k = blockCount(m, "mpi reduce_scatter");
                   const std::size_t mine = static_cast<std::size_t>(ctx.rank()) * m;
                   const bool inPlace = a.recv == a.send + mine;
                   return std::make_unique<MpiCollective>(
                       ctx, a, "mpi reduce_scatter", [a, k, m, mine, inPlace](MPI_Comm c) {
                         if (!inPlace) {
                           TPB_MPI_CHECK(MPI_Reduce_scatter_block(a.send, a.recv, k, MPI_FLOAT, MPI_SUM, c));
                           return;
                         }
                         // MPI_IN_PLACE: the input is the whole buffer, the sum lands in its first block.
                         float* buf = const_cast<float*>(a.send);
                         TPB_MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, k, MPI_FLOAT, MPI_SUM, c));
                         if (mine != 0) std::memmove(buf + mine, buf, m * sizeof(float));
                       });
                 });
}

CollectiveAlgo mpiAlltoall() {
  return mpiAlgo("alltoall", "MPI_Alltoall, ranks started by mpirun",
                 [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
                   const int k = blockCount(a.count / static_cast<std::size_t>(ctx.size()), "mpi alltoall");
                   return std::make_unique<MpiCollective>(ctx, a, "mpi alltoall", [a, k](MPI_Comm c) {
                     TPB_MPI_CHECK(MPI_Alltoall(a.send, k, MPI_FLOAT, a.recv, k, MPI_FLOAT, c));
                   });
                 });
}

// Ping-pong as algorithms/sendrecv_ping_pong.cc: ranks 2k and 2k+1 swap buffers, one after the other.
CollectiveAlgo mpiSendrecv() {
  return mpiAlgo("sendrecv", "MPI_Send/MPI_Recv ping-pong, ranks started by mpirun",
                 [](CommContext& ctx, const CollectiveArgs& a) -> std::unique_ptr<Collective> {
                   const int rank = ctx.rank(), partner = rank ^ 1, n = ctx.size();
                   CollectiveArgs none = a;
                   none.send = none.recv = nullptr;  // N = 1 or the unpaired rank: nothing to copy
                   return std::make_unique<MpiCollective>(
                       ctx, partner < n ? a : none, "mpi sendrecv", [a, rank, partner, n](MPI_Comm c) {
                         if (partner >= n) return;
                         for (std::size_t off = 0; off < a.count; off += kPiece) {
                           const int k = static_cast<int>(std::min(kPiece, a.count - off));
                           if (rank % 2 == 0) {
                             TPB_MPI_CHECK(MPI_Send(a.send + off, k, MPI_FLOAT, partner, 0, c));
                             TPB_MPI_CHECK(MPI_Recv(a.recv + off, k, MPI_FLOAT, partner, 0, c, MPI_STATUS_IGNORE));
                           } else {
                             TPB_MPI_CHECK(MPI_Recv(a.recv + off, k, MPI_FLOAT, partner, 0, c, MPI_STATUS_IGNORE));
                             TPB_MPI_CHECK(MPI_Send(a.send + off, k, MPI_FLOAT, partner, 0, c));
                           }
                         }
                       });
                 });
}

}  // namespace

TPB_REGISTER_COLLECTIVE(mpiBroadcast);
TPB_REGISTER_COLLECTIVE(mpiReduce);
TPB_REGISTER_COLLECTIVE(mpiAllgather);
TPB_REGISTER_COLLECTIVE(mpiReduceScatter);
TPB_REGISTER_COLLECTIVE(mpiAlltoall);
TPB_REGISTER_COLLECTIVE(mpiSendrecv);

}  // namespace tpb

#endif  // TPB_HAVE_MPI
