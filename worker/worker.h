// worker/worker.h — what runs inside each rank process (`tpbench worker --job FILE`).
//
// The worker reads torchrun's environment, joins the rendezvous store, builds the transport the
// job names, and runs the job kind named in the job file. It is launched by tpbench's own
// launcher, but works the same under torchrun, Slurm or mpirun as long as those variables and a
// store at MASTER_ADDR:MASTER_PORT exist.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "comm/store.h"
#include "comm/transport.h"
#include "core/allreduce.h"

namespace tpb {

struct WorkerEnv {
  int rank = 0, worldSize = 1, localRank = 0, localWorldSize = 1;
  std::string masterAddr = "127.0.0.1";
  std::uint16_t masterPort = 0;
  std::string runId;  // TPB_RUN_ID; agreed through the store when absent (torchrun)
  static WorkerEnv fromEnvironment();  // throws Error naming a missing/invalid variable
};

struct Worker {
  WorkerEnv env;
  std::unique_ptr<Store> store;
  std::unique_ptr<Transport> transport;
  std::unique_ptr<CommContext> comm;
};

using JobFn = std::function<void(Worker&, const nlohmann::json& job)>;

// Job kinds by name: "allreduce" and "collective" (worker/collective_job.cc), "train" (worker/train_job.cc).
const std::map<std::string, JobFn>& jobKinds();

// Entry point of `tpbench worker`; returns the process exit code.
int workerMain(const std::string& jobPath);

// Builds w.transport and w.comm for rank w.env over w.store, with the job's device, transport
// and comm_timeout_ms: what every rank does before running its job, in `tpbench worker` and in
// a `tpbench run|sweep|allreduce` started as one rank by torchrun, srun or mpirun. The rank's
// sockets bind to `bindHost`: this host's address towards MASTER_ADDR (comm/net_iface.h).
void connectWorker(Worker& w, const nlohmann::json& job, const std::string& jobPath, const std::string& bindHost);

// The job kind's function (Error naming the file when unknown).
const JobFn& jobKindOf(const nlohmann::json& job, const std::string& jobPath);

// Pins OpenBLAS to one thread (looked up at run time: the BLAS is the system's choice).
void pinBlasThreads();

// Reads a JSON file the launcher or rank 0 wrote (a job, a point's result), with the path in any
// error (tpb::Error). Opened close-on-exec, and bounded like a results file.
nlohmann::json readJsonFile(const std::string& path);

}  // namespace tpb
