// harness/point_driver.h — the one per-point loop every launching subcommand shares (`run`,
// `sweep`, `allreduce`), nccl-tests' "one driver, a small table per collective" idea: the driver
// owns what every point does the same way, the runners keep only what differs (the job's
// content, building records; what they print goes through harness/console_report.h).
//
// Per point it prints "[k/total] <what> (elapsed n s, ETA n s)", writes the job file into its scratch
// directory, fills the LaunchSpec (layout, ports, run id, timeout, the transport's cleanup),
// launches, and reads what rank 0 wrote to the result file. The scratch directory is made once
// and removed when the driver goes, on every exit path (errors and interrupts included).
// Constructing a driver installs the launcher's signal handling (harness/launch.h).
//
// Several nodes: node 0's driver hosts one rendezvous store for the whole sweep at
// --master_addr:--master_port, the others join it (waiting up to --rendezvous_timeout), and
// every point's keys live under "tpb/<k>/" (worker/point_sync.h), k being the point's index,
// the same on every node because every node runs the same command. Each driver registers its
// node's host name and address there (nodeHosts()).
//
// Under an external launcher (harness/external_job.h: torchrun, srun, mpirun) the same driver
// joins the job instead: the constructor joins, run() runs the point in-process on ranks
// 0..ranks-1 while the others wait at the point's barrier, and only rank 0 (the reporter)
// prints progress and reads the result. Before a point starts, rank 0's `record` saves it as
// failed, so a job the launcher tears down mid-point leaves that in the results file; the real
// outcome replaces it when the point ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/launch.h"
#include "worker/point_sync.h"

namespace tpb {

class ExternalJob;
class Store;

struct PointDriverOptions {
  std::size_t total = 0;  // points in the sweep, skipped ones included: "[k/total]" and the ETA
  std::chrono::seconds timeout{300};  // a launch's limit, also the ranks' communication timeout
  // Layout, torchrun's names; one node by default.
  int nnodes = 1, nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  std::uint16_t masterPort = 0;  // 0 on one node: a free port
  // How long the ranks of a point (and, on another node, this launcher) wait for the others.
  std::chrono::seconds rendezvousTimeout = kDefaultRendezvousTimeout;
  // Several nodes: how long a rank may go without a heartbeat, and node 0's store without
  // answering, before the point fails (worker/point_sync.h).
  std::chrono::seconds heartbeatTimeout = kDefaultHeartbeatTimeout;
  // The interface the ranks bind to (--iface): GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME for
  // them. Empty: the one that reaches --master_addr (comm/net_iface.h).
  std::string iface;
  // --launcher: "" (tpbench's own, mpirun for points that need it), "tpbench" or "mpirun". The
  // runners check it against every point before launching anything (chooseMpirun).
  std::string launcher;
  // --bind core: each rank on a core of its own (LaunchSpec::bindCores), recorded in meta.bind.
  bool bindCores = false;
  // The job this process is one rank of (harness/external_job.h), from the runner's options;
  // nullptr: the driver launches each point's ranks itself.
  ExternalJob* external = nullptr;
};

// The ETA: `left` more points at the mean of the `measured` launched points' own times (their
// sum `measuredS`), so that what comes before the first point (probes, meta) and skipped points
// do not count; none before a point was measured.
std::optional<double> remainingS(double measuredS, std::size_t measured, std::size_t left);

// Saves the point in flight as failed with `error` and what rank 0 of the point had written
// so far (`partial`, an empty object when nothing): rank 0 under an external launcher.
using FailureRecorder = std::function<void(const std::string& error, const nlohmann::json& partial)>;

struct Meta;

struct PointOutcome {
  LaunchResult launch;
  nlohmann::json result;   // what rank 0 wrote; an empty object when it wrote nothing
  std::string resultPath;  // names the file in errors (JsonIn)
  // A job with "trace": true: rank 0's trace fragment (worker/trace_gather.h), null when the
  // point wrote none (it failed, or this is not its reporter).
  nlohmann::json trace;
};

// What in a point over `transport` needs ranks started by mpirun: `other` when not empty
// ("--algos mpi"), else "--transport NAME" when the transport does, else "".
std::string needsMpiLauncher(const std::string& transport, const std::string& other = "");

class PointDriver {
 public:
  explicit PointDriver(PointDriverOptions opt);
  ~PointDriver();  // removes the scratch directory
  PointDriver(const PointDriver&) = delete;
  PointDriver& operator=(const PointDriver&) = delete;

  // True once SIGINT, SIGTERM or SIGHUP arrived: start no more points.
  bool interrupted() const;
  // Another node than 0: why node 0 is lost (its store stopped answering during a point), else
  // empty. The sweep cannot go on from this node then: the runners stop and exit 1.
  const std::string& lostNodeZero() const;
  // The job this driver joined, or nullptr when it launches its own ranks.
  ExternalJob* external() const { return external_; }
  // Prints progress and tables and writes results: always under tpbench's own launcher; rank 0
  // only under an external one.
  bool reporter() const;
  // meta.launcher, nodes, ranks_per_node, hosts.
  void describe(Meta& m) const;
  // Counts a point that is not launched (skipped, already done) and prints "[k/total] <what>".
  void skip(const std::string& what);
  // What only the leader can see (node 0, or rank 0 under an external launcher: which points its
  // results file already holds), the same on every node and rank: the leader's `value` under
  // `name`. On one node this is `value`. Another node that cannot reach node 0's store keeps its
  // own `value`; its point then fails at the rendezvous, as any would.
  std::string fromLeader(const std::string& name, const std::string& value);
  // Counts and launches one point of `procsPerNode` ranks per node over `transport` (under an
  // external launcher: runs it on ranks 0..ranks-1). `job` is the kind-specific part; the
  // driver adds transport, result_path, job_path and comm_timeout_ms, and trace_path when the
  // job says "trace": true. An external job's first
  // failed point ends the command on every rank: the runner records it and stops. `needsMpi`
  // names what in the point needs ranks started by mpirun besides the transport ("--algos
  // mpi"), or is empty.
  PointOutcome run(const std::string& what, nlohmann::json job, const std::string& transport,
                   int procsPerNode, int ranks = 0, const FailureRecorder& record = {},
                   const std::string& needsMpi = "");
  // Under an external mpirun, initialises MPI on this rank when `used` (some point of the command
  // uses MPI): Open MPI's MPI_Init waits for every rank of the job, also those a point leaves
  // idle, so every rank does it once, after all have joined. Nothing otherwise.
  void prepareMpi(bool used);
  // Several nodes: [{"node_rank", "host", "address"}] of the nodes that joined so far (results
  // meta.node_hosts); one node: [] .
  nlohmann::json nodeHosts();

 private:
  // Several nodes: hosts or joins the sweep's store on first use; throws Error when node 0's
  // cannot be reached within the rendezvous timeout.
  Store& sharedStore();

  PointOutcome runExternal(const nlohmann::json& job, const std::string& transport, int ranks,
                           const FailureRecorder& record);

  PointDriverOptions opt_;
  ExternalJob* external_ = nullptr;
  std::unique_ptr<Store> store_;
  std::string host_, address_;
  std::string lost_;  // lostNodeZero()
  // Several nodes: node 0 publishes the shared part of this point's job, another node compares
  // its own; a difference (or no word from node 0 within the store's timeout) is posted as this
  // node's failure of the point and returned.
  std::optional<std::string> agreeWithNodeZero(const nlohmann::json& job, const LaunchSpec& spec);
  std::string dir_;
  std::size_t index_ = 0, launched_ = 0;
  double launchedS_ = 0;  // the launched points' own times, summed (not the time between them)
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tpb
