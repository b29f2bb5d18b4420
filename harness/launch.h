// harness/launch.h — starts one OS process per rank (like torch.multiprocessing.spawn / torchrun)
// and watches them until all finish, one fails, or the timeout passes.
//
// Each rank is `<this binary> <workerArgs...>` with torchrun's environment: RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (plus TPB_RUN_ID). Node 0's launcher
// hosts the rendezvous store (c10d TCPStore) for the whole launch. Every line a rank prints is
// forwarded with a "[rank r] " prefix (stdout to stdout, stderr to stderr).
//
// With `viaMpirun` the launcher starts one `mpirun -np N ... <this binary> <workerArgs...>` instead
// (harness/mpirun.h): mpirun starts the ranks, with the same MASTER_ADDR, MASTER_PORT and
// TPB_RUN_ID, and the worker takes its rank from Open MPI's variables.
//
// Failure handling: if a rank exits non-zero, dies by a signal, or the launch outlives its
// timeout, the other ranks get SIGTERM, then SIGKILL after a grace period; all are reaped, so
// no zombie or orphan is left (workers also carry PR_SET_PDEATHSIG, so even a launcher killed
// with SIGKILL takes its workers with it).
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/machine_load.h"

namespace tpb {

class Store;

struct LaunchSpec {
  int nprocPerNode = 1;
  int nnodes = 1;
  int nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  std::uint16_t masterPort = 0;  // 0 on node 0: pick a free port
  std::vector<std::string> workerArgs;
  std::vector<std::pair<std::string, std::string>> extraEnv;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds grace{std::chrono::seconds(2)};
  std::string runId;  // empty: one is made up
  // Hand the run id to the workers (TPB_RUN_ID). Off for multi-node launches, whose launchers
  // cannot agree on one: the workers then agree through the store.
  bool shareRunId = true;
  // Start the ranks through mpirun (one node only; harness/mpirun.h).
  bool viaMpirun = false;
  // --bind core: local rank r runs on one CPU only, the r-th of placementOrder() (modulo their
  // count: ranks beyond the cores share them in turn), as mpirun's --map-by core --bind-to core;
  // under mpirun, those options. Off: every rank may run on every core of the mask, and mpirun is given
  // --bind-to none, so that tpbench's ranks and mpirun's are placed alike.
  bool bindCores = false;
  // Runs after every rank has been reaped, whatever happened (e.g. removes shm names).
  std::function<void(const std::string& runId, int worldSize)> cleanup;
  // Several nodes: the store the whole sweep shares (PointDriver hosts it on node 0 and joins it
  // elsewhere) instead of one of this launch's own, and this point's key prefix there
  // (worker/point_sync.h). The launch then posts its own ranks' failures, its timeout and an
  // interrupt there, polls for the other nodes' failures and stops its ranks on one, and records
  // the first failure posted as the point's error, so every node records the same one. All of
  // that goes through a thread and a store connection of the launch's own, so that a lost node 0
  // (a request unanswered for heartbeatTimeout) is noticed rather than waited on.
  Store* sharedStore = nullptr;
  std::string pointPrefix;
  std::string host, address;  // this node's name and address, for the failures it posts
  // Several nodes: a store request unanswered this long means node 0 is lost (storeLost).
  std::chrono::milliseconds heartbeatTimeout{std::chrono::seconds(10)};
};

struct RankExit {
  int rank = -1;  // -1: mpirun itself (viaMpirun)
  int pid = -1;
  int exitCode = -1;  // when exited normally
  int signal = 0;     // when killed by a signal
  bool killedByLauncher = false;
  std::string lastError;  // last non-empty line the rank wrote to stderr
};

struct LaunchResult {
  bool ok = false;
  bool timedOut = false;
  bool interrupted = false;  // the launcher got SIGINT/SIGTERM/SIGHUP
  // Several nodes: node 0's store stopped answering (node 0 down or cut off). The ranks were
  // stopped; nothing more can be agreed with the other nodes, so the caller's sweep ends here.
  bool storeLost = false;
  std::string error;         // one line: which rank failed first and why
  std::vector<RankExit> ranks;
  double wallSeconds = 0;
  std::string runId;
  // What else ran on this node's CPUs over the launch (harness/machine_load.h); its `ranks` is
  // the launch's processes here, which the caller corrects where one process computes on several
  // cores (data_parallel). Absent where /proc/stat cannot be read.
  std::optional<MachineLoad> machine;
};

LaunchResult launch(const LaunchSpec& spec);

// The CPUs of this process's affinity mask in the order bindCores gives them to local ranks: the
// first hardware thread of each core, then the others (so that two ranks share a core only when
// every core has one). Local rank r gets the r-th, modulo their count.
std::vector<int> placementOrder();

// Installs SIGINT/SIGTERM/SIGHUP handlers that make a running launch() stop its ranks and return
// with `interrupted` set; interruptRequested() tells callers (sweeps) to stop starting points.
// Also ignores SIGPIPE (writes to a closed pipe fail with EPIPE instead). Ranks start with all
// four at their defaults.
void installInterruptHandlers();
bool interruptRequested();

}  // namespace tpb
