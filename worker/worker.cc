#include "worker/worker.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <malloc.h>
#include <sys/prctl.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "comm/net_iface.h"
#include "comm/transports.h"
#include "common/descriptors.h"
#include "common/error.h"
#include "common/run_id.h"
#include "common/text_escape.h"
#include "record/results.h"
#include "worker/collective_job.h"
#include "worker/error_text.h"
#include "worker/launch_env.h"
#include "worker/point_sync.h"
#include "worker/train_job.h"

namespace tpb {

WorkerEnv WorkerEnv::fromEnvironment() {
  std::optional<LaunchEnv> found;
  try {
    found = detectLaunchEnv(environmentMap());
  } catch (const UsageError& e) {
    TPB_THROW(Error, e.what());  // inside a rank it is a failure of the launch, not bad input
  }
  if (!found)
    TPB_THROW(Error, "no rank of a job: a worker is started by `tpbench` (or torchrun, srun, mpirun) with "
                     "RANK and WORLD_SIZE (or their launcher's names), MASTER_ADDR and MASTER_PORT");
  WorkerEnv e;
  e.rank = found->rank;
  e.worldSize = found->worldSize;
  e.localRank = found->localRank;
  e.localWorldSize = found->localWorldSize;
  if (found->masterAddr.empty()) TPB_THROW(Error, "MASTER_ADDR is not set");
  e.masterAddr = found->masterAddr;
  e.masterPort = static_cast<std::uint16_t>(found->masterPort > 0 ? found->masterPort : defaultMasterPort(*found));
  if (const char* id = std::getenv("TPB_RUN_ID")) e.runId = id;
  return e;
}

const std::map<std::string, JobFn>& jobKinds() {
  static const std::map<std::string, JobFn> table = {
      {"allreduce", collectiveJob},
      {"collective", collectiveJob},
      {"train", trainJob},
  };
  return table;
}

nlohmann::json readJsonFile(const std::string& path) {
  try {
    return readJsonBounded(path, "job file");
  } catch (const UsageError& e) {
    // Not the user's input: a job or result file that cannot be read is a failure (exit 1).
    TPB_THROW(Error, e.what());
  }
}

namespace {

// Pins OpenBLAS to one thread when the rank was not started by tpbench's launcher (which sets
// OPENBLAS_NUM_THREADS=1), e.g. under torchrun. Looked up at run time: the BLAS behind
// libblas.so.3 is chosen by the system, and may not be OpenBLAS at all.
void pinBlasThreads() {
  using SetThreads = void (*)(int);
  if (auto* f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(1);
}

// Builds w.transport and w.comm for rank w.env over w.store (runRank).
void connectWorker(Worker& w, const nlohmann::json& job, const std::string& jobPath, const std::string& bindHost) {
  const auto timeout = std::chrono::milliseconds(job.value("comm_timeout_ms", 60000));
  // The launcher resolved --device (auto included) before writing the job.
  const std::string deviceText = job.value("device", "cpu");
  if (deviceText != "cpu" && deviceText != "cuda")
    TPB_THROW(Error, "job file " << jobPath << ": device '" << deviceText << "' is not cpu or cuda");
  const Device device = deviceText == "cuda" ? Device::Cuda : Device::Cpu;
  const std::string transportName = job.value("transport", "shm");
  TransportArgs args{*w.store, w.env.runId, bindHost, w.env.rank, w.env.worldSize,
                     w.env.localWorldSize, device, timeout, w.env.localRank};
  const TransportInfo& info = findTransport(transportName);
  if (std::string why = info.unsupported(device, w.env.worldSize, w.env.localWorldSize); !why.empty())
    TPB_THROW(Error, "transport " << transportName << ": " << why);
  w.transport = info.make(args);
  markDescriptorsCloseOnExec();  // what the transport's library opened (Gloo: epoll, sockets)
  w.comm = std::make_unique<CommContext>(CommContext{*w.transport, *w.store, bindHost, w.env.runId, {}});
}

// Keeps freed memory in the process instead of returning it to the kernel after every op. With
// glibc's defaults a training step's large temporaries (a backward's activation gradients, MBs
// each) are unmapped, or trimmed off the heap's top, as soon as they are freed and faulted in
// again, zeroed, on the next step: a small CNN's step took 100 ms in a rank against 40 in
// PyTorch's Python process, and varied 35-140 ms from step to step. Fixed thresholds (which also
// stop glibc's dynamic adjustment) make the next step reuse the memory: the same step then took
// 24 ms, every time. 32 MiB is the largest mmap threshold glibc accepts on 64-bit; a block above
// it is still mapped for itself. Freed memory up to 1 GiB stays with the rank until it exits.
void keepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace

void startRankProcess() {
  at::set_num_threads(1);
  pinBlasThreads();
  keepFreedMemory();
}

void runRank(Worker& w, const JobFn& kind, const nlohmann::json& job, const std::string& jobPath,
             const std::string& bindHost) {
  try {
    connectWorker(w, job, jobPath, bindHost);
    kind(w, job);
  } catch (...) {
    if (w.transport) w.transport->markFailed();
    throw;
  }
  // The users of the transport go first.
  w.comm.reset();
  w.transport.reset();
}

const JobFn& jobKindOf(const nlohmann::json& job, const std::string& jobPath) {
  const std::string kind = job.value("kind", "");
  const auto it = jobKinds().find(kind);
  if (it == jobKinds().end()) TPB_THROW(Error, "job file " << jobPath << ": unknown kind '" << kind << "'");
  return it->second;
}

int workerMain(const std::string& jobPath) {
  Worker w;
  std::string prefix = pointPrefix(-1);
  RankFailure self;  // what this rank posts when its job throws
  try {
    startRankProcess();
    const nlohmann::json job = readJsonFile(jobPath);
    const JobFn& run = jobKindOf(job, jobPath);

    // A rank that mpirun started dies with it, as ours die with tpbench's launcher.
    if (std::getenv("OMPI_COMM_WORLD_RANK")) prctl(PR_SET_PDEATHSIG, SIGKILL);
    w.env = WorkerEnv::fromEnvironment();
    self.rank = w.env.rank;
    self.host = thisHostName();
    // This host's end of the connections: the interface that reaches MASTER_ADDR, or
    // GLOO_SOCKET_IFNAME's (comm/net_iface.h). 127.0.0.1 on one node.
    const LocalAddress local = bindAddress(w.env.masterAddr);
    self.address = local.address;
    const auto timeout = std::chrono::milliseconds(job.value("comm_timeout_ms", 60000));
    const auto rendezvous = std::chrono::milliseconds(job.value("rendezvous_timeout_ms", std::chrono::milliseconds(kDefaultRendezvousTimeout).count()));
    prefix = pointPrefix(job.value("point", -1LL));
    w.store = Store::connect(w.env.masterAddr, w.env.masterPort, rendezvous);
    awaitRanks(*w.store, prefix, w.env.rank, w.env.worldSize, self.host + " (" + self.address + ")", rendezvous);
    w.store->setTimeout(timeout);
    // Across nodes no launcher sees every rank: each rank watches for the others' failures.
    std::unique_ptr<FailureWatch> watch;
    if (w.env.localWorldSize < w.env.worldSize)
      watch = std::make_unique<FailureWatch>(
          w.env.masterAddr, w.env.masterPort, prefix, w.env.rank, w.env.worldSize, rendezvous,
          std::chrono::milliseconds(job.value("heartbeat_timeout_ms",
                                              std::chrono::milliseconds(kDefaultHeartbeatTimeout).count())));
    if (w.env.runId.empty()) {
      // Under torchrun nobody handed out a run id: rank 0 makes one and publishes it.
      if (w.env.rank == 0) w.store->set(prefix + "run_id", makeRunId());
      w.env.runId = w.store->get(prefix + "run_id");
    }
    runRank(w, run, job, jobPath, local.address);
    // Only after a clean job, and once the communicators are gone: MPI_Finalize waits for every rank.
    finishCommProcess();
    return 0;
  } catch (const std::exception& e) {
    // One line: a LibTorch error without its C++ stack dump, an allocation failure as such.
    const std::string why = rankErrorText(e);
    std::cerr << "error: " << printable(why) << std::endl;  // may quote paths and names
    if (w.store) {
      // The first failure of the point wins; the other nodes' launchers and ranks stop on it.
      self.reason = "failed: " + why;
      const bool severalNodes = w.env.localWorldSize < w.env.worldSize;
      try {
        postFailureAfter(*w.store, prefix, self, std::chrono::milliseconds(severalNodes ? 1000 : 0));
      } catch (const std::exception&) {
        // the store is gone too: this rank's launcher reports the exit
      }
    }
    return 1;
  }
}

}  // namespace tpb
