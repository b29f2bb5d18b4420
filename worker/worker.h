// worker/worker.h — what runs inside each rank process.
//
// A rank starts in one of two ways, and both end in runRank:
//   - `tpbench worker --job FILE` (workerMain), forked by tpbench's own launcher (or started by
//     torchrun, Slurm or mpirun, as long as a store at MASTER_ADDR:MASTER_PORT exists): it reads
//     its place in the job from the environment and meets the others at that store;
//   - `tpbench run|sweep|allreduce|collective` as one rank of torchrun's, srun's or mpirun's job
//     (harness/external_job.h): the job was joined once, and each point gets its place and a
//     store connection from it (PointDriver).
// runRank then builds the transport the job names and runs the job kind named in the job file.
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

// What a process does before it acts as a rank, however it was started: one intra-op thread
// (on CPU each rank stands for one device), OpenBLAS pinned to one thread, and glibc told to keep
// freed memory for the next step instead of returning it to the kernel (worker.cc).
void startRankProcess();

// The one rank entry point. With w.env and w.store set by whoever started the rank, builds
// w.transport and w.comm (the job's device, transport and comm_timeout_ms; sockets bound to
// `bindHost`, this host's address towards the master: comm/net_iface.h), runs `kind`, and closes
// the communicator and the transport, leaving w.store. When anything throws, the transport is
// marked failed, so that it waits for no peer when it goes, but kept: the caller posts the
// failure before the peers see a closed connection. The exception propagates.
void runRank(Worker& w, const JobFn& kind, const nlohmann::json& job, const std::string& jobPath,
             const std::string& bindHost);

// The job kind's function (Error naming the file when unknown).
const JobFn& jobKindOf(const nlohmann::json& job, const std::string& jobPath);

// Reads a JSON file the launcher or rank 0 wrote (a job, a point's result), with the path in any
// error (tpb::Error). Opened close-on-exec, and bounded like a results file.
nlohmann::json readJsonFile(const std::string& path);

}  // namespace tpb
