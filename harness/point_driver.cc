#include "harness/point_driver.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>

#include "algorithms/allreduce_ring.h"
#include "comm/mpi/thread_level.h"
#include "comm/net_iface.h"
#include "comm/shm/shm_transport.h"
#include "comm/store.h"
#include "comm/transports.h"
#include "common/error.h"
#include "common/text_escape.h"
#include "harness/console_report.h"
#include "harness/external_job.h"
#include "harness/meta.h"
#include "record/records.h"
#include "harness/mpirun.h"
#include "record/results.h"
#include "worker/point_sync.h"
#include "worker/worker.h"

namespace tpb {

using nlohmann::json;

namespace {

std::string makeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tpbench.XXXXXX";
  if (!mkdtemp(tmpl.data())) TPB_THROW(Error, "mkdtemp(" << tmpl << "): " << std::strerror(errno));
  return tmpl;
}

}  // namespace

PointDriver::PointDriver(PointDriverOptions opt)
    : opt_(std::move(opt)), start_(std::chrono::steady_clock::now()) {
  external_ = opt_.external;
  if (external_) {
    // This process is a rank: signals keep their default action (the launcher's SIGTERM ends it),
    // a closed pipe fails a write instead of killing; threads as any rank's.
    signal(SIGPIPE, SIG_IGN);
    startRankProcess();
  } else {
    installInterruptHandlers();
  }
  if (external_ && !opt_.launcher.empty())
    TPB_THROW(UsageError, "--launcher: this process is already one rank of a job "
                              << external_->env().launcher << " started; it launches nothing");
  if (external_) {
    // Before the scratch directory: a rank that never arrives throws out of here.
    external_->setTimeout(opt_.timeout);
    external_->setRendezvousTimeout(opt_.rendezvousTimeout);
    external_->setHeartbeatTimeout(opt_.heartbeatTimeout);
    external_->join();
  }
  dir_ = makeTempDir();
  if (opt_.nnodes > 1) {
    host_ = thisHostName();
    address_ = bindAddress(opt_.masterAddr, opt_.iface).address;
  }
}

Store& PointDriver::sharedStore() {
  if (store_) return *store_;
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(opt_.rendezvousTimeout);
  if (opt_.nodeRank == 0) {
    store_ = Store::serve(opt_.masterAddr, opt_.masterPort, wait);
  } else {
    try {
      store_ = Store::connect(opt_.masterAddr, opt_.masterPort, wait);
    } catch (const std::exception& e) {
      TPB_THROW(Error, "rendezvous: node 0's store at " << opt_.masterAddr << ":" << opt_.masterPort
                                                        << " was not reachable within " << opt_.rendezvousTimeout.count()
                                                        << " s (--rendezvous_timeout): " << e.what());
    }
  }
  store_->set("tpb/node/" + std::to_string(opt_.nodeRank),
              json{{"node_rank", opt_.nodeRank}, {"host", host_}, {"address", address_}}.dump());
  return *store_;
}

json PointDriver::nodeHosts() {
  json nodes = json::array();
  if (!store_) return nodes;
  for (int n = 0; n < opt_.nnodes; ++n) {
    const std::string key = "tpb/node/" + std::to_string(n);
    try {
      if (store_->check(key)) nodes.push_back(json::parse(store_->get(key)));
    } catch (const std::exception&) {
      // a node's entry that cannot be read is left out, not the point
    }
  }
  return nodes;
}

PointDriver::~PointDriver() {
  if (external_ && external_->joined()) {
    // Unwinding from an error: tell the other ranks, who would otherwise wait at a barrier.
    if (std::uncaught_exceptions() > 0) {
      try {
        external_->postFailure("end", "rank " + std::to_string(external_->rank()) + " ended with an error");
      } catch (const std::exception&) {
      }
    }
    external_->leave();
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool PointDriver::interrupted() const { return !external_ && interruptRequested(); }

const std::string& PointDriver::lostNodeZero() const { return lost_; }

bool PointDriver::reporter() const { return !external_ || external_->rank() == 0; }

void PointDriver::describe(Meta& m) const {
  m.mpiThread = mpiThreadLevelName(mpiThreadLevelFromEnv());
  m.shmSingleCopy = shmSingleCopyFromEnv();
  m.ringChunkKb = RingAllreduce::chunkKbFromEnv();
  if (external_) {
    external_->describe(m);
    return;
  }
  m.launcher = "tpbench";
  m.bind = opt_.bindCores ? "core" : "none";
  m.nodes = opt_.nnodes;
}

std::string PointDriver::fromLeader(const std::string& name, const std::string& value) {
  if (external_) return external_->fromRank0(name, value);
  if (opt_.nnodes == 1) return value;
  try {
    Store& s = sharedStore();
    const std::string key = "tpb/from0/" + name;
    if (opt_.nodeRank == 0) {
      s.set(key, value);
      return value;
    }
    return s.get(key);
  } catch (const Error&) {
    return value;
  }
}

std::optional<double> remainingS(double measuredS, std::size_t measured, std::size_t left) {
  if (measured == 0) return std::nullopt;
  return measuredS / static_cast<double>(measured) * static_cast<double>(left);
}

void PointDriver::skip(const std::string& what) {
  ++index_;
  if (!reporter()) return;
  ProgressLine line;
  line.k = index_;
  line.total = opt_.total;
  line.what = what;
  printProgress(line);
}

std::string needsMpiLauncher(const std::string& transport, const std::string& other) {
  if (!other.empty()) return other;
  return findTransport(transport).needsMpiLauncher ? "--transport " + transport : std::string();
}

PointOutcome PointDriver::run(const std::string& what, json job, const std::string& transport,
                              int procsPerNode, int ranks, const FailureRecorder& record,
                              const std::string& needsMpi) {
  ++index_;
  const auto now = std::chrono::steady_clock::now();
  if (reporter()) {
    ProgressLine line;
    line.k = index_;
    line.total = opt_.total;
    line.what = what;
    line.ranks = external_ ? 0 : procsPerNode;
    line.cores = availableCores();
    line.elapsedS = std::chrono::duration<double>(now - start_).count();
    line.etaS = remainingS(launchedS_, launched_, opt_.total - index_ + 1);
    printProgress(line);
  }
  // The point's own time, from here to its return: what the ETA extrapolates.
  struct Clock {
    double& total;
    std::chrono::steady_clock::time_point t0;
    ~Clock() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } clock{launchedS_, now};

  PointOutcome out;
  const std::string jobPath = dir_ + "/job.json";
  out.resultPath = dir_ + "/result.json";
  std::remove(out.resultPath.c_str());
  job["transport"] = transport;
  job["result_path"] = out.resultPath;
  job["job_path"] = jobPath;
  job["comm_timeout_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(opt_.timeout).count();
  job["rendezvous_timeout_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(opt_.rendezvousTimeout).count();
  job["heartbeat_timeout_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(opt_.heartbeatTimeout).count();
  job["point"] = index_;
  const std::string tracePath = dir_ + "/trace.json";
  if (job.value("trace", false)) {
    std::remove(tracePath.c_str());
    job["trace_path"] = tracePath;
  }
  // What rank 0 left behind: its result, and its trace where the job asked for one.
  auto collect = [&](PointOutcome& o) {
    if (access(o.resultPath.c_str(), R_OK) == 0) o.result = readJsonFile(o.resultPath);
    if (job.contains("trace_path") && o.launch.ok && access(tracePath.c_str(), R_OK) == 0)
      o.trace = readJsonFile(tracePath);
  };
  writeFileAtomic(jobPath, job.dump());
  if (external_) {
    PointOutcome ext = runExternal(job, transport, ranks > 0 ? ranks : procsPerNode, record);
    ext.resultPath = out.resultPath;
    if (reporter()) collect(ext);
    ++launched_;
    return ext;
  }

  LaunchSpec spec;
  spec.nprocPerNode = procsPerNode;
  spec.nnodes = opt_.nnodes;
  spec.nodeRank = opt_.nodeRank;
  spec.masterAddr = opt_.masterAddr;
  spec.masterPort = opt_.masterPort;
  spec.shareRunId = opt_.nnodes == 1;  // across nodes the ranks agree on one through the store
  spec.workerArgs = {"worker", "--job", jobPath};
  spec.timeout = opt_.timeout;
  spec.cleanup = findTransport(transport).cleanup;
  if (!opt_.iface.empty())
    spec.extraEnv = {{"GLOO_SOCKET_IFNAME", opt_.iface}, {"NCCL_SOCKET_IFNAME", opt_.iface}};
  if (opt_.nnodes > 1) {
    try {
      spec.sharedStore = &sharedStore();
    } catch (const Error& e) {
      // Node 0 never came: this point fails here, the next one tries again.
      ++launched_;
      out.launch.error = e.what();
      out.result = json::object();
      return out;
    }
    spec.pointPrefix = pointPrefix(static_cast<long long>(index_));
    spec.heartbeatTimeout = opt_.heartbeatTimeout;
    spec.host = host_;
    spec.address = address_;
    // Every node must run this very point: node 0 publishes its job, the others compare theirs
    // (another --epochs on one node would otherwise hang or train something else).
    if (auto refused = agreeWithNodeZero(job, spec)) {
      ++launched_;
      out.launch.error = *refused;
      out.result = json::object();
      return out;
    }
  }
  spec.viaMpirun = chooseMpirun(opt_.launcher, needsMpiLauncher(transport, needsMpi), opt_.nnodes);
  spec.bindCores = opt_.bindCores;
  out.launch = launch(spec);
  ++launched_;
  if (out.launch.storeLost) lost_ = out.launch.error;

  out.result = json::object();
  collect(out);
  return out;
}

std::optional<std::string> PointDriver::agreeWithNodeZero(const json& job, const LaunchSpec& spec) {
  Store& store = *spec.sharedStore;
  const json shared = sharedPartOfJob(job);
  try {
    if (opt_.nodeRank == 0) {
      store.set(spec.pointPrefix + "job", shared.dump());
      return std::nullopt;
    }
    const auto difference = firstDifference(shared, json::parse(store.get(spec.pointPrefix + "job")));
    if (!difference) return std::nullopt;
    // Posted as this launcher's failure: node 0 stops its ranks at once instead of waiting for
    // ours at the rendezvous.
    postFailure(store, spec.pointPrefix,
                RankFailure{-1, host_, address_,
                            "runs another point than node 0 (start every node with the same command): " + *difference});
    const auto first = postedFailure(store, spec.pointPrefix);
    return first ? first->text(true) : *difference;
  } catch (const std::exception& e) {
    return std::string("node ") + std::to_string(opt_.nodeRank) + " could not learn node 0's point: " + e.what();
  }
}

void PointDriver::prepareMpi(bool used) {
  if (used && external_ && external_->env().launcher == "mpirun") startCommProcess();
}

PointOutcome PointDriver::runExternal(const json& job, const std::string& transport, int ranks,
                                      const FailureRecorder& record) {
  ExternalJob& ext = *external_;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string point = "p" + std::to_string(index_);
  const int me = ext.rank();
  PointOutcome out;
  out.result = json::object();
  const std::string resultPath = job.value("result_path", std::string());
  // In the file before the point starts: what a launcher's teardown mid-point leaves behind.
  if (record && reporter())
    record("the job ended while this point ran: a rank died or the launcher stopped the job "
           "(its log names the rank)", json::object());
  std::function<void(const std::string&)> onFailure;
  if (record && reporter())
    onFailure = [record, resultPath](const std::string& why) {
      json partial = json::object();
      try {
        if (access(resultPath.c_str(), R_OK) == 0) partial = readJsonFile(resultPath);
      } catch (const std::exception&) {
      }
      record(why, partial);
    };
  auto watchdog = std::make_unique<ExternalJob::Watchdog>(ext, point, onFailure);
  std::string failure;
  // Outlives the catch: a failing rank posts its error before its transport closes, so that
  // the peers' "connection closed" does not come first.
  Worker w;
  if (me < ranks) {
    try {
      w.env.rank = me;
      w.env.worldSize = ranks;
      w.env.localRank = ext.localRankOf(me, ranks);
      w.env.localWorldSize = ext.localSizeOf(me, ranks);
      w.env.masterAddr = ext.masterAddr();
      w.env.runId = ext.runId() + "-" + point;  // store keys and shm names of this point only
      w.store = ext.connectStore(opt_.timeout);
      const std::string jobPath = job.value("job_path", std::string("job"));
      runRank(w, jobKindOf(job, jobPath), job, jobPath, bindAddress(ext.masterAddr()).address);
    } catch (const std::exception& e) {
      failure = "rank " + std::to_string(me) + ": " + e.what();
    }
  }
  if (!failure.empty()) {
    watchdog->stop();
    std::fprintf(stderr, "%s\n", printable(failure).c_str());
    out.launch.error = ext.postFailure(point, failure);
    if (me != 0) ext.awaitRecorded();
  } else {
    // This rank's part is done: runRank closed its communicator; its store goes before the barrier.
    w.store.reset();
    ext.barrier(point + "/done");
    watchdog->stop();
    // Every rank of the point is past it: what the transport left on this node can go.
    if (me < ranks && ext.localRankOf(me, ranks) == 0) {
      if (const auto& cleanup = findTransport(transport).cleanup) cleanup(ext.runId() + "-" + point, ranks);
    }
  }
  out.launch.ok = failure.empty();
  out.launch.runId = ext.runId() + "-" + point;
  out.launch.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace tpb
