#include "harness/external_job.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"
#include "comm/net_iface.h"
#include "common/run_id.h"
#include "common/text_escape.h"
#include "worker/point_sync.h"

namespace tpb {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

std::string thisHost() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

// Ends this rank at once with exit 1: the launcher sees a failed rank and ends the job.
[[noreturn]] void endRank(int rank, const std::string& why) {
  std::fprintf(stderr, "rank %d: %s\n", rank, why.c_str());
  std::fflush(nullptr);
  std::_Exit(1);
}

}  // namespace

void checkLayoutFlags(const LaunchEnv& env, std::optional<int> nnodes, std::optional<int> nodeRank,
                      std::optional<int> nprocPerNode) {
  const std::string by = " (this process is rank " + std::to_string(env.rank) + " of " +
                         std::to_string(env.worldSize) + " started by " + env.launcher + ")";
  if (nnodes && env.nodes > 0 && *nnodes != env.nodes)
    TPB_THROW(UsageError, "--nnodes " << *nnodes << " disagrees with the " << env.nodes << " nodes of the job" << by);
  if (nodeRank && env.nodeRank >= 0 && *nodeRank != env.nodeRank)
    TPB_THROW(UsageError, "--node_rank " << *nodeRank << " disagrees with this node's index " << env.nodeRank << by);
  if (nprocPerNode && *nprocPerNode != env.localWorldSize)
    TPB_THROW(UsageError, "--nproc_per_node " << *nprocPerNode << " disagrees with the " << env.localWorldSize
                                              << " ranks the launcher started on this node" << by);
}

std::string externalDefaultRanks(const std::string& command, int worldSize) {
  const std::string w = std::to_string(worldSize);
  if (command == "run" || worldSize == 1) return w;
  return (command == "allreduce" || command == "collective" ? "2.." : "1..") + w;
}

std::unique_ptr<ExternalJob> ExternalJob::fromEnvironment() {
  const std::optional<LaunchEnv> env = detectLaunchEnv(environmentMap());
  return env ? std::unique_ptr<ExternalJob>(new ExternalJob(*env)) : nullptr;
}

ExternalJob::ExternalJob(LaunchEnv env) : env_(std::move(env)) {
  masterAddr_ = env_.masterAddr;
  masterFrom_ = env_.masterFrom.empty() ? "MASTER_ADDR" : env_.masterFrom;
  masterPort_ = env_.masterPort > 0 ? env_.masterPort : defaultMasterPort(env_);
  prefix_ = "tpb/job/" + env_.jobKey + "/";
}

void ExternalJob::overrideMaster(const std::string& addr, int port) {
  if (!addr.empty()) {
    masterAddr_ = addr;
    masterFrom_ = "--master_addr";
  }
  if (port > 0) masterPort_ = port;
}

std::unique_ptr<Store> ExternalJob::connectStore(std::chrono::milliseconds timeout) const {
  const auto port = static_cast<std::uint16_t>(masterPort_);
  return env_.agentStore ? Store::connectTorchrunAgent(masterAddr_, port, timeout)
                         : Store::connect(masterAddr_, port, timeout);
}

LocalAddress ExternalJob::checkMaster() const {
  if (masterAddr_.empty())
    TPB_THROW(UsageError, "MASTER_ADDR: " << env_.launcher << " over several nodes names no rendezvous host: set "
                                          << "MASTER_ADDR (mpirun -x MASTER_ADDR=HOST) or give --master_addr");
  return routeTo(masterAddr_, masterFrom_);
}

std::int64_t ExternalJob::count(Store& s, const std::string& name) { return s.add(key(name), 0); }

void ExternalJob::waitCount(const std::string& name, std::int64_t target, std::chrono::milliseconds limit,
                            const char* flag) {
  const auto deadline = clock_type::now() + limit;
  auto pause = std::chrono::milliseconds(1);
  while (count(*store_, name) < target) {
    if (clock_type::now() > deadline)
      TPB_THROW(TimeoutError, "waited " << limit.count() / 1000 << " s for all " << env_.worldSize
                                        << " ranks at '" << name << "' (" << flag << ")");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

void ExternalJob::join() {
  TPB_CHECK(!store_, "joined twice");
  const std::string local = checkMaster().address;
  // Over several nodes rank 0's store is reachable from their network, and on one node too
  // where MASTER_ADDR is not a loopback address (an environment without LOCAL_WORLD_SIZE reads
  // as one node): only the secret's holders may join (torchrun's agent store is torchrun's, with
  // its own rules).
  const bool loopback = local.rfind("127.", 0) == 0 || local == "::1";
  const bool severalNodes = env_.localWorldSize < env_.worldSize;
  if (!env_.agentStore && (severalNodes || !loopback) && jobSecret().empty()) {
    const std::string why = severalNodes ? env_.launcher + " over several nodes"
                                         : "rank 0's store would listen on " + local + ", beyond this host";
    TPB_THROW(UsageError, kJobSecretVar << ": " << why << ": set " << kJobSecretVar
                                        << " to the same secret on every node, or give --secret_file FILE (mode 600)");
  }
  // Rank 0 hosts the store unless torchrun's agent already does at that port. The store's
  // timeout is the rendezvous's until every rank has arrived, then --timeout's.
  const bool host = env_.rank == 0 && !env_.agentStore;
  const auto port = static_cast<std::uint16_t>(masterPort_);
  try {
    store_ = host ? Store::serve(masterAddr_, port, rendezvous_) : connectStore(rendezvous_);
  } catch (const Error& e) {
    if (host && env_.masterPort <= 0 && masterPort_ == defaultMasterPort(env_))
      TPB_THROW(Error, e.what() << " (the port derived from " << env_.launcher << "'s job id; export another free one "
                                << "as MASTER_PORT)");
    if (host) throw;
    TPB_THROW(Error, "rank 0's store at " << masterAddr_ << ":" << port << " was not reachable within "
                                          << rendezvous_.count() / 1000
                                          << " s (--rendezvous_timeout; rank 0 may have refused its input): " << e.what());
  }
  store_->set(key("hello/" + std::to_string(env_.rank)), json{{"host", thisHost()}}.dump());
  store_->add(key("hello"), 1);
  json welcome;
  if (env_.rank == 0) {
    waitCount("hello", env_.worldSize, rendezvous_, "--rendezvous_timeout");
    json hosts = json::array();
    for (int r = 0; r < env_.worldSize; ++r)
      hosts.push_back(json::parse(store_->get(key("hello/" + std::to_string(r)))).at("host"));
    welcome = {{"hosts", hosts}, {"run_id", makeRunId()}};
    store_->set(key("welcome"), welcome.dump());
  } else {
    welcome = json::parse(store_->get(key("welcome")));
  }
  store_->setTimeout(timeout_);
  hosts_ = welcome.at("hosts").get<std::vector<std::string>>();
  runId_ = welcome.at("run_id").get<std::string>();
}

int ExternalJob::localSizeOf(int r, int n) const {
  return static_cast<int>(std::count(hosts_.begin(), hosts_.begin() + n, hosts_[r]));
}

int ExternalJob::localRankOf(int r, int n) const {
  return static_cast<int>(std::count(hosts_.begin(), hosts_.begin() + std::min(r, n), hosts_[r]));
}

int ExternalJob::nodesOf(int n) const {
  std::vector<std::string> h(hosts_.begin(), hosts_.begin() + n);
  std::sort(h.begin(), h.end());
  return static_cast<int>(std::unique(h.begin(), h.end()) - h.begin());
}

int ExternalJob::maxLocalSizeOf(int n) const {
  int most = 0;
  for (int r = 0; r < n; ++r) most = std::max(most, localSizeOf(r, n));
  return most;
}

void ExternalJob::describe(Meta& m) const {
  m.launcher = env_.launcher;
  std::vector<std::string> nodes;  // in the order of their first rank
  std::map<std::string, long long> perNode;
  for (const auto& h : hosts_) {
    if (perNode[h]++ == 0) nodes.push_back(h);
  }
  m.nodes = static_cast<long long>(nodes.size());
  bool even = !perNode.empty();
  for (const auto& [h, n] : perNode) even = even && n == perNode.begin()->second;
  if (even) m.ranksPerNode = perNode.begin()->second;
  m.hosts = nodes;
  m.worldSize = env_.worldSize;
}

std::string ExternalJob::fromRank0(const std::string& name, const std::string& value) {
  if (env_.rank == 0) {
    store_->set(key("from0/" + name), value);
    return value;
  }
  return store_->get(key("from0/" + name));
}

void ExternalJob::barrier(const std::string& name) {
  store_->add(key(name), 1);
  // The watchdog ends the process on a failure; this bound is the last resort.
  waitCount(name, env_.worldSize, timeout_ + std::chrono::minutes(1));
}

std::string ExternalJob::postFailure(const std::string& point, const std::string& what) {
  failed_ = true;
  if (store_->add(key(point + "/fail/claim"), 1) == 1) {
    store_->set(key(point + "/fail/what"), what);
    store_->set(key("failed_point"), point);
  }
  store_->add(key(point + "/fail/posted"), 1);
  return store_->get(key(point + "/fail/what"));
}

std::optional<std::string> ExternalJob::postedFailure(const std::string& point) {
  if (count(*store_, point + "/fail/posted") == 0) return std::nullopt;
  return store_->get(key(point + "/fail/what"));
}

// ---- the watchdog ------------------------------------------------------------------------------

struct ExternalJob::Watchdog::State {
  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
  // The heartbeat (jobs over several hosts): the watch connection, which stop() uses to say this
  // rank is done, and the guard of the watch thread's requests.
  bool beats = false;
  int rank = -1;
  std::shared_ptr<Store> watch;
  std::string beatPrefix;
  StoreCalls calls;
  std::unique_ptr<StallGuard> guard;
};

ExternalJob::Watchdog::Watchdog(ExternalJob& job, std::string point,
                                std::function<void(const std::string&)> record)
    : state_(std::make_shared<State>()) {
  // Its own connection: the main thread may be blocked inside a store call of its own.
  std::shared_ptr<Store> watch = job.connectStore(std::chrono::seconds(30));
  const auto deadline = clock_type::now() + job.timeout_;
  const std::string posted = job.key(point + "/fail/posted"), whatKey = job.key(point + "/fail/what");
  const int rank = job.rank();
  const auto limitS = std::chrono::duration_cast<std::chrono::seconds>(job.timeout_).count();
  // Across hosts every rank beats and rank 0 judges (worker/point_sync.h): a host lost without
  // closing its connections would otherwise be noticed only at --timeout.
  state_->beats = job.nodesOf(job.worldSize()) > 1;
  state_->watch = watch;
  state_->rank = rank;
  state_->beatPrefix = job.key(point + "/");
  std::optional<HeartbeatJudge> judge;
  if (state_->beats && rank == 0) judge.emplace(state_->beatPrefix, 0, job.worldSize(), job.heartbeat_);
  const std::chrono::milliseconds silence = job.heartbeat_;
  state_->thread = std::thread([s = state_, watch, deadline, posted, whatKey, rank, limitS, point, judge, silence,
                                hosts = job.hosts_, claim = job.key(point + "/fail/claim"),
                                failedKey = job.key("failed_point"), recorded = job.key("recorded"),
                                record = std::move(record)]() mutable {
    // Posts `why` unless a failure came first; returns the first one.
    auto claimFirst = [&](const std::string& why) {
      if (watch->add(claim, 1) == 1) {
        watch->set(whatKey, why);
        watch->set(failedKey, point);
      }
      watch->add(posted, 1);
      return watch->get(whatKey);
    };
    std::unique_lock<std::mutex> lock(s->m);
    while (!s->cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return s->stop; })) {
      // Still holding the lock: stop() waits while this rank records and ends.
      std::string why;
      s->calls.begin();
      try {
        if (s->beats) beat(*watch, s->beatPrefix, rank);
        if (watch->add(posted, 0) > 0) {
          why = watch->get(whatKey);
        } else if (clock_type::now() > deadline) {
          why = claimFirst("timed out after " + std::to_string(limitS) + " s (--timeout), noticed by rank " +
                           std::to_string(rank));
        } else if (judge) {
          if (const auto r = judge->lostRank(*watch)) {
            const std::string host = *r < static_cast<int>(hosts.size()) ? hosts[*r] : std::string("?");
            why = claimFirst(RankFailure{*r, host, "", lostRankReason(silence)}.text(true));
          }
        }
      } catch (const std::exception& e) {
        why = "the rendezvous store went away (rank 0 or the launcher's agent ended): " + std::string(e.what());
      }
      s->calls.end();
      if (why.empty()) continue;
      if (record) {
        try {
          record(why);
          watch->add(recorded, 1);  // the rank that posted it may leave now
        } catch (const std::exception& e) {
          std::fprintf(stderr, "rank %d: could not record the failed point: %s\n", rank, printable(e.what()).c_str());
        }
      }
      endRank(rank, "leaving: " + why);
    }
  });
  if (!state_->beats) return;
  const std::string storeAt = job.masterAddr_ + ":" + std::to_string(job.masterPort_);
  state_->guard = std::make_unique<StallGuard>(state_->calls, silence, [rank, silence, storeAt] {
    endRank(rank, "leaving: " + storeSilentReason(storeAt, silence));
  });
}

void ExternalJob::Watchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->stop = true;
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  if (!state_->guard) return;
  // Beats have stopped: rank 0 must not take this rank for a lost one. The guard still runs.
  state_->calls.begin();
  try {
    sayDone(*state_->watch, state_->beatPrefix, state_->rank);
  } catch (const std::exception&) {
  }
  state_->calls.end();
  state_->guard.reset();
}

ExternalJob::Watchdog::~Watchdog() { stop(); }

void ExternalJob::awaitRecorded() {
  try {
    waitCount("recorded", 1, std::min<std::chrono::milliseconds>(timeout_, std::chrono::seconds(30)));
  } catch (const std::exception&) {
    // Rank 0 ended without recording (the launcher may have stopped it): nothing to wait for.
  }
}

void ExternalJob::leave() {
  if (!store_ || left_) return;
  left_ = true;
  try {
    if (env_.rank != 0) {
      store_->add(key("bye"), 1);
      return;
    }
    // A failure posted by another rank: rank 0 has recorded it by now.
    store_->add(key("recorded"), 1);
    // After a failure the other ranks end without a goodbye: nobody to wait for.
    if (!env_.agentStore && !failed_)
      waitCount("bye", env_.worldSize - 1, std::min<std::chrono::milliseconds>(timeout_, std::chrono::seconds(30)));
  } catch (const std::exception&) {
    // Ranks that ended early (a failure) never say goodbye: nothing more to wait for.
  }
}

}  // namespace tpb
