#include "worker/worker.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sys/prctl.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "comm/transports.h"
#include "common/descriptors.h"
#include "common/error.h"
#include "common/run_id.h"
#include "record/results.h"
#include "worker/allreduce_job.h"
#include "worker/train_job.h"

namespace tpb {

namespace {

int envInt(const char* name, bool required, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    if (required)
      TPB_THROW(Error, name << " is not set: a worker is started by `tpbench` (or torchrun) with "
                               "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT");
    return fallback;
  }
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20) TPB_THROW(Error, name << "='" << v << "' is not a valid number");
  return static_cast<int>(x);
}

}  // namespace

WorkerEnv WorkerEnv::fromEnvironment() {
  WorkerEnv e;
  // Started by mpirun (--launcher mpirun): Open MPI's names stand in for torchrun's.
  const bool ompi = !std::getenv("RANK") && std::getenv("OMPI_COMM_WORLD_RANK");
  e.rank = envInt(ompi ? "OMPI_COMM_WORLD_RANK" : "RANK", true, 0);
  e.worldSize = envInt(ompi ? "OMPI_COMM_WORLD_SIZE" : "WORLD_SIZE", true, 1);
  e.localRank = envInt(ompi ? "OMPI_COMM_WORLD_LOCAL_RANK" : "LOCAL_RANK", false, e.rank);
  e.localWorldSize = envInt(ompi ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "LOCAL_WORLD_SIZE", false, e.worldSize);
  const char* addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr) TPB_THROW(Error, "MASTER_ADDR is not set");
  e.masterAddr = addr;
  e.masterPort = static_cast<std::uint16_t>(envInt("MASTER_PORT", true, 0));
  if (const char* id = std::getenv("TPB_RUN_ID")) e.runId = id;
  TPB_CHECK(e.rank < e.worldSize, "RANK " << e.rank << " is not below WORLD_SIZE " << e.worldSize);
  return e;
}

const std::map<std::string, JobFn>& jobKinds() {
  static const std::map<std::string, JobFn> table = {
      {"allreduce", allreduceJob},
      {"train", trainJob},
  };
  return table;
}

nlohmann::json readJsonFile(const std::string& path) {
  try {
    return readJsonBounded(path);
  } catch (const UsageError& e) {
    // Not the user's input: a job or result file that cannot be read is a failure (exit 1).
    TPB_THROW(Error, e.what());
  }
}

// Pins OpenBLAS to one thread when the worker was not started by tpbench's launcher (which sets
// OPENBLAS_NUM_THREADS=1), e.g. under torchrun. Looked up at run time: the BLAS behind
// libblas.so.3 is chosen by the system, and may not be OpenBLAS at all.
void pinBlasThreads() {
  using SetThreads = void (*)(int);
  if (auto* f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(1);
}

int workerMain(const std::string& jobPath) {
  try {
    // One intra-op thread per rank: on CPU each rank stands for one device.
    at::set_num_threads(1);
    pinBlasThreads();
    const nlohmann::json job = readJsonFile(jobPath);
    const std::string kind = job.value("kind", "");
    const auto it = jobKinds().find(kind);
    if (it == jobKinds().end()) TPB_THROW(Error, "job file " << jobPath << ": unknown kind '" << kind << "'");

    // A rank that mpirun started dies with it, as ours die with tpbench's launcher.
    if (std::getenv("OMPI_COMM_WORLD_RANK")) prctl(PR_SET_PDEATHSIG, SIGKILL);
    Worker w;
    w.env = WorkerEnv::fromEnvironment();
    const auto timeout = std::chrono::milliseconds(job.value("comm_timeout_ms", 60000));
    w.store = Store::connect(w.env.masterAddr, w.env.masterPort, timeout);
    if (w.env.runId.empty()) {
      // Under torchrun nobody handed out a run id: rank 0 makes one and publishes it.
      if (w.env.rank == 0) w.store->set("tpb/run_id", makeRunId());
      w.env.runId = w.store->get("tpb/run_id");
    }
    // The launcher resolved --device (auto included) before writing the job.
    const std::string deviceText = job.value("device", "cpu");
    if (deviceText != "cpu" && deviceText != "cuda")
      TPB_THROW(Error, "job file " << jobPath << ": device '" << deviceText << "' is not cpu or cuda");
    const Device device = deviceText == "cuda" ? Device::Cuda : Device::Cpu;
    const std::string transportName = job.value("transport", "shm");
    TransportArgs args{*w.store, w.env.runId, w.env.masterAddr, w.env.rank, w.env.worldSize,
                       w.env.localWorldSize, device, timeout, w.env.localRank};
    const TransportInfo& info = findTransport(transportName);
    if (std::string why = info.unsupported(device, w.env.worldSize, w.env.localWorldSize); !why.empty())
      TPB_THROW(Error, "transport " << transportName << ": " << why);
    w.transport = info.make(args);
    markDescriptorsCloseOnExec();  // what the transport's library opened (Gloo: epoll, sockets)
    w.comm = std::make_unique<CommContext>(CommContext{*w.transport, *w.store, w.env.masterAddr, w.env.runId, {}});
    it->second(w, job);
    // Only after a clean job, and once the communicators are gone: MPI_Finalize waits for every rank.
    w.comm.reset();
    w.transport.reset();
    finishCommProcess();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace tpb
