// comm/transports.h — the table of Transport implementations this build has, by name. Each
// transport's own file fills its TransportInfo and ends with its registration line, as every
// kind of extension does (core/registry.h):
//
//   TransportInfo shmTransportInfo() { ... }
//   TPB_REGISTER_TRANSPORT(shmTransportInfo);
//
// The transports are their own library, linked whole (CMakeLists.txt), so no registration is
// dropped by the linker; one that needs a missing library (mpi, nccl) is not compiled at all.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/transport.h"

namespace tpb {

class Store;

struct TransportArgs {
  Store& store;
  std::string runId;  // unique per launch
  std::string host;   // address this rank binds to
  int rank;
  int size;
  int localSize;      // ranks on this node
  Device device;
  std::chrono::milliseconds timeout;
  int localRank = -1;  // rank on this node (LOCAL_RANK): picks cuda:localRank; -1 means rank
};

struct TransportInfo {
  std::string name;
  int order = 0;  // display order in `tpbench list` and in messages naming the choices
  std::string description;
  // Empty when usable for this device and layout (world size, ranks on this node), else why
  // not (shown to the user).
  std::function<std::string(Device device, int size, int localSize)> unsupported;
  std::function<std::unique_ptr<Transport>(const TransportArgs&)> make;
  // Removes what a launch of this transport may leave behind on this node when its ranks die
  // without cleaning up (shm: the /dev/shm names of run `runId`). Called by the launcher after
  // every rank has been reaped, whatever happened; empty when there is nothing to remove.
  std::function<void(const std::string& runId, int worldSize)> cleanup;
  // True when its ranks must be processes an MPI launcher started (mpi): the launcher then
  // starts them through mpirun, and refuses up front where it cannot.
  bool needsMpiLauncher = false;
  // True when its transports give symmetric memory (Transport::allocateSymmetric: shm), which
  // algorithms that load and store their peers' buffers need.
  bool symmetricMemory = false;
};

// In display order. Throws tpb::Error when two registered transports share a name.
const std::vector<TransportInfo>& transports();
// Throws UsageError naming the valid choices.
const TransportInfo& findTransport(const std::string& name);
// The default for a device: on CPU shm on one node, gloo across nodes; on CUDA nccl.
std::string defaultTransport(Device device, int size, int localSize);

// Called on every rank of a job an MPI launcher started, before any of its points, when some
// point will use MPI: OpenMPI's MPI_Init waits for every rank of the job, so the ranks a point
// leaves idle must initialise too. Nothing where this build has no MPI.
void startCommProcess();

// Called by a worker whose job finished cleanly, after its transport and communicators are
// gone: lets the libraries behind them shut down together (MPI_Finalize, which is collective).
// A worker that failed does not call it (comm/mpi/mpi_runtime.h says why).
void finishCommProcess();

// Used by TPB_REGISTER_TRANSPORT.
bool registerTransport(TransportInfo (*make)());

}  // namespace tpb

#define TPB_TRANSPORT_CONCAT2(a, b) a##b
#define TPB_TRANSPORT_CONCAT(a, b) TPB_TRANSPORT_CONCAT2(a, b)
#define TPB_REGISTER_TRANSPORT(fn) \
  static const bool TPB_TRANSPORT_CONCAT(tpbRegisteredTransport_, __LINE__) = ::tpb::registerTransport(fn)
