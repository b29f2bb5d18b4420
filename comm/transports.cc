#include "comm/transports.h"

#include "comm/gloo/gloo_transport.h"
#include "comm/grouped/grouped_transport.h"
#include "comm/shm/shm_transport.h"
#include "common/error.h"

#ifdef TPB_HAVE_NCCL
#include "comm/nccl/nccl_transport.h"
#endif
#ifdef TPB_HAVE_MPI
#include "comm/mpi/mpi_runtime.h"
#include "comm/mpi/mpi_transport.h"
#endif

namespace tpb {

const std::vector<TransportInfo>& transports() {
  static const std::vector<TransportInfo> table = {
      {"shm", "POSIX shared memory between the ranks of one node (from scratch)",
       [](Device device, int size, int localSize) -> std::string {
         if (device != Device::Cpu) return "shm moves host memory only";
         if (localSize != size) return "shm needs every rank on one node; use gloo across nodes";
         return {};
       },
       [](const TransportArgs& a) -> std::unique_ptr<Transport> {
         return std::make_unique<ShmTransport>(a.store, a.runId, a.rank, a.size, a.timeout);
       },
       [](const std::string& runId, int worldSize) { ShmTransport::removeSegments(runId, worldSize); }},
      {"grouped",
       "shm run under NCCL's group semantics (posts deferred to a wait or flush, one group at a time per rank, "
       "sends wait for their receive): shows on the CPU how a schedule would run over nccl",
       [](Device device, int size, int localSize) -> std::string {
         if (device != Device::Cpu) return "grouped moves host memory only";
         if (localSize != size) return "grouped needs every rank on one node";
         return {};
       },
       [](const TransportArgs& a) -> std::unique_ptr<Transport> {
         return std::make_unique<GroupedTransport>(a.store, a.runId, a.rank, a.size, a.timeout);
       },
       [](const std::string& runId, int worldSize) {
         ShmTransport::removeSegments(GroupedTransport::dataRunId(runId), worldSize);
         ShmTransport::removeSegments(GroupedTransport::controlRunId(runId), worldSize);
       }},
      {"gloo", "Gloo TCP pairs through c10d ProcessGroupGloo send/recv (any number of nodes)",
       [](Device device, int, int) -> std::string {
         return device == Device::Cpu ? std::string() : std::string("gloo moves host memory only");
       },
       [](const TransportArgs& a) -> std::unique_ptr<Transport> {
         return std::make_unique<GlooTransport>(a.store, "gloo/" + a.runId + "/", a.host, a.rank,
                                                a.size, a.timeout);
       },
       nullptr},
#ifdef TPB_HAVE_MPI
      // Registered only where MPI was compiled in; its ranks are started through mpirun.
      {"mpi", "MPI_Isend/MPI_Irecv between ranks started by mpirun (tpbench --launcher mpirun, or mpirun around tpbench)",
       [](Device device, int, int) -> std::string {
         return device == Device::Cpu ? std::string() : std::string("mpi moves host memory only");
       },
       [](const TransportArgs& a) -> std::unique_ptr<Transport> {
         return std::make_unique<MpiTransport>(a.rank, a.size, a.timeout);
       },
       nullptr, /*needsMpiLauncher=*/true},
#endif
#ifdef TPB_HAVE_NCCL
      // Registered only where NCCL was compiled in, so `tpbench list` shows what can run.
      {"nccl", "NCCL ncclSend/ncclRecv between GPUs, one GPU per rank (cuda:LOCAL_RANK; cuda:0 if it sees one)",
       [](Device device, int, int) -> std::string {
         return device == Device::Cuda ? std::string()
                                       : std::string("nccl moves GPU memory only; use --device cuda");
       },
       [](const TransportArgs& a) -> std::unique_ptr<Transport> {
         return std::make_unique<NcclTransport>(a.store, a.runId, a.rank, a.size,
                                                a.localRank < 0 ? a.rank : a.localRank, a.timeout);
       },
       nullptr},
#endif
  };
  return table;
}

const TransportInfo& findTransport(const std::string& name) {
  std::string names;
  for (const auto& t : transports()) {
    if (t.name == name) return t;
    names += (names.empty() ? "" : ", ") + t.name;
  }
  TPB_THROW(UsageError, "--transport: unknown transport '" << name << "' (this build has: " << names << ")");
}

std::string defaultTransport(Device device, int size, int localSize) {
  if (device == Device::Cuda) return "nccl";
  return localSize == size ? "shm" : "gloo";
}

void startCommProcess() {
#ifdef TPB_HAVE_MPI
  mpi::initialize();
#endif
}

void finishCommProcess() {
#ifdef TPB_HAVE_MPI
  mpi::finalize();
#endif
}

}  // namespace tpb
