// harness/external_job.h — `tpbench run|sweep|allreduce` started as one rank of a job by
// torchrun, Slurm's srun or mpirun (worker/launch_env.h tells which). Every rank runs the same
// command; this is how they agree with each other without a launcher of tpbench's own:
//
//   refuse  a rank whose input checks fail (flags, files, the master's address: all checked
//           before anything waits on the job) exits 2 at once; the first rank of each node
//           prints the line. The launcher ends the other ranks (torchrun, mpirun, srun -K);
//           a rank it does not end gives up at --rendezvous_timeout.
//   join    rank 0 hosts the rendezvous store at the master's address (a client of torchrun's
//           agent store instead when TORCHELASTIC_USE_AGENT_STORE says it hosts one); every
//           rank posts its host name; rank 0 answers with the layout and a run id, waiting
//           at most --rendezvous_timeout for them all.
//   points  a point of N ranks runs on ranks 0..N-1 in-process over a communicator of its own
//           (store keys and shm names per point); the other ranks wait at the point's barrier.
//   watch   while a point runs, a watchdog thread on every rank polls the store over its own
//           connection. A failure another rank posted, a store that went away (rank 0 ended)
//           or the point outliving --timeout ends this process with exit 1 at once; rank 0
//           first records the failed point with the failing rank and its reason. Across hosts
//           the watchdogs also beat: rank 0 fails the point on a rank silent for
//           --heartbeat_timeout, and a rank whose store has not answered that long leaves.
//   leave   rank 0 keeps the store up until every other rank has said goodbye (bounded).
//
// Signals keep their default action here: the launcher's SIGTERM ends a rank at once, and the
// results file already holds the point in flight as failed (harness/point_driver.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/net_iface.h"
#include "comm/store.h"
#include "record/records.h"
#include "worker/launch_env.h"

namespace tpb {

// Explicit layout flags of `run` under an external launcher: each must agree with what the
// launcher set up (nullopt: not given), else UsageError naming the flag and the variable.
void checkLayoutFlags(const LaunchEnv& env, std::optional<int> nnodes, std::optional<int> nodeRank,
                      std::optional<int> nprocPerNode);

// The default --n_gpus text under an external launcher of `worldSize` ranks: `run` uses them
// all ("W"), `sweep` every count ("1..W"), `allreduce` and `collective` every count from 2 ("2..W").
std::string externalDefaultRanks(const std::string& command, int worldSize);

class ExternalJob {
 public:
  // The job this process is a rank of, read from the environment; nullptr when it is not one
  // (tpbench launches its own ranks). A malformed environment throws UsageError. main decides
  // this once and hands the job down (the runners' options, PointDriverOptions).
  static std::unique_ptr<ExternalJob> fromEnvironment();

  const LaunchEnv& env() const { return env_; }
  int rank() const { return env_.rank; }
  int worldSize() const { return env_.worldSize; }

  // Explicit flags win over the environment (run's --master_addr / --master_port).
  void overrideMaster(const std::string& addr, int port);
  // Before anything waits on the job: the master's address is given, resolves and has a route
  // from this host, else UsageError naming where it came from (MASTER_ADDR, a Slurm node list or
  // --master_addr). Returns the local address this host reaches it from.
  LocalAddress checkMaster() const;
  void setTimeout(std::chrono::milliseconds t) { timeout_ = t; }
  // How long join waits to reach the store and for every rank to arrive (--rendezvous_timeout).
  void setRendezvousTimeout(std::chrono::milliseconds t) { rendezvous_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // Across hosts: how long a rank may go without a heartbeat, and the store without answering
  // the watchdog, before the point fails (worker/point_sync.h).
  void setHeartbeatTimeout(std::chrono::milliseconds t) { heartbeat_ = t; }

  // Joins the job once this rank's input checks passed (a rank that refuses its input exits 2
  // at once instead, and the launcher ends the others). Waits at most the rendezvous timeout to
  // reach the store and, on rank 0, for every rank: then Error naming the timeout.
  void join();
  bool joined() const { return store_ != nullptr; }

  Store& store() { return *store_; }
  // Another connection to the job's store: torchrun's agent's (c10d's wire) or rank 0's (ours).
  std::unique_ptr<Store> connectStore(std::chrono::milliseconds timeout) const;
  const std::string& masterAddr() const { return masterAddr_; }
  std::uint16_t masterPort() const { return static_cast<std::uint16_t>(masterPort_); }
  const std::string& runId() const { return runId_; }
  // Host name of each rank (after join).
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Of ranks 0..n-1: how many share rank r's host, and r's index among them.
  int localSizeOf(int r, int n) const;
  int localRankOf(int r, int n) const;
  // Of ranks 0..n-1: distinct hosts, and the most ranks on one of them.
  int nodesOf(int n) const;
  int maxLocalSizeOf(int n) const;
  // meta.launcher / nodes / ranks_per_node / hosts of the whole job.
  void describe(Meta& m) const;

  // Rank 0's `value` under `name`, on every rank (rank 0 decides what only it can see: which
  // points its results file already holds).
  std::string fromRank0(const std::string& name, const std::string& value);

  // Waits until every rank has arrived at `name` (polling the store; the watchdog bounds it).
  void barrier(const std::string& name);

  // Posts `what` as the failure of point `point` (the first one posted is the one reported)
  // and returns the first posted message (this one or an earlier rank's).
  std::string postFailure(const std::string& point, const std::string& what);
  // The first failure posted for `point`, if any (non-blocking).
  std::optional<std::string> postedFailure(const std::string& point);

  // Polls point `point` on its own store connection until stop(): see the header comment.
  // `record` (rank 0) saves the point as failed with the reason before the process exits.
  class Watchdog {
   public:
    Watchdog(ExternalJob& job, std::string point, std::function<void(const std::string&)> record);
    ~Watchdog();  // stop()
    // Stops watching; returns once the thread is gone (never, when it is ending the process).
    void stop();

   private:
    struct State;
    std::shared_ptr<State> state_;
  };

  // A rank other than 0 that posted a failure: waits (bounded) until rank 0 has recorded it,
  // before exiting makes the launcher stop rank 0 too.
  void awaitRecorded();

  // The end: non-zero ranks say goodbye; rank 0, when it hosts the store, waits (bounded) until
  // every other rank has, so that none loses the store in the middle of its last request. A
  // failure recorded by rank 0 is acknowledged here to the rank that posted it.
  void leave();

 private:
  explicit ExternalJob(LaunchEnv env);
  std::string key(const std::string& name) const { return prefix_ + name; }
  std::int64_t count(Store& s, const std::string& name);
  // Polls until counter `name` reaches `target` or the deadline passes (TimeoutError naming `flag`).
  void waitCount(const std::string& name, std::int64_t target, std::chrono::milliseconds limit,
                 const char* flag = "--timeout");

  LaunchEnv env_;
  std::string masterAddr_;
  std::string masterFrom_;  // where masterAddr_ came from, for messages
  int masterPort_ = 0;
  std::chrono::milliseconds timeout_{std::chrono::minutes(5)};
  std::chrono::milliseconds rendezvous_{std::chrono::minutes(5)};
  std::chrono::milliseconds heartbeat_{std::chrono::seconds(10)};
  std::string prefix_;
  std::unique_ptr<Store> store_;
  std::string runId_;
  std::vector<std::string> hosts_;
  bool left_ = false;
  bool failed_ = false;  // a failure was posted from this rank
};

}  // namespace tpb
