// worker/point_sync.h — what the ranks of one point, and the launchers of every node, share
// through the rendezvous store besides the transports' own keys: who has arrived, and the first
// failure.
//
// Keys live under the point's prefix ("tpb/<point>/"), so one store can serve a whole sweep over
// several nodes: a late rank of point k never reads point k+1's keys.
//   <prefix>rank/<r>   "host (address)" of rank r, set when it arrives
//   <prefix>arrived    how many ranks have arrived (an add counter)
//   <prefix>failed     how many failures were posted (an add counter: the first poster wins)
//   <prefix>failure    the first failure, JSON {rank, host, address, reason}
//   <prefix>beat/<r>   rank r's heartbeat (an add counter its watch thread bumps every period)
//   <prefix>done/<r>   set when rank r's job has ended and it stops beating
//   <prefix>job        node 0's job for the point (its shared part), which the others compare
//
// A failure anywhere ends the point everywhere within about a second: the rank whose job throws
// posts it; a launcher posts the death of one of its ranks (signal, exit) and its own timeout or
// interrupt; every launcher polls the key and stops its ranks, and on several nodes every rank
// also runs a FailureWatch, so ranks started by another launcher (torchrun) stop too.
//
// A host that vanishes without closing its connections (power, a cut cable, a frozen machine)
// sends nothing at all: no process exits, no socket closes, and the transports would wait for
// their whole --timeout. So on several hosts every rank's watch also beats, rank 0's watch judges
// the others' beats (HeartbeatJudge), and every watch guards its own side: a store that has not
// answered for the heartbeat timeout means node 0, which hosts it, is gone or cut off.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tpb {

class Store;

// How long the ranks of a point wait for each other (--rendezvous_timeout's default): long enough
// to start the nodes by hand one after another, far below a run's --timeout.
constexpr std::chrono::seconds kDefaultRendezvousTimeout{300};
// How long a rank may go without a heartbeat, and the store without answering, before the point
// is failed (--heartbeat_timeout's default): many periods of the watch's 200 ms, so that a
// loaded host is not taken for a lost one, and still seconds rather than the --timeout.
constexpr std::chrono::seconds kDefaultHeartbeatTimeout{10};

// "tpb/<point>/"; a negative point (a job file without one) gives "tpb/".
std::string pointPrefix(long long point);

struct RankFailure {
  int rank = -1;  // -1: the launcher itself (its timeout, an interrupt)
  std::string host, address;
  std::string reason;  // e.g. "was killed by signal 9 (SIGKILL)", "failed: <message>"
  // "rank 3 on host b (10.0.0.2) was killed by ..."; without the host part when !withHost.
  std::string text(bool withHost) const;
};

// Posts `f` unless a failure is there already; returns whether this one was the first.
bool postFailure(Store& store, const std::string& prefix, const RankFailure& f);
// A rank's own error is often the echo of another's death (a peer's socket closed under it),
// which that rank's launcher posts within milliseconds: wait up to `grace` for a failure to
// appear before posting `f`, so the cause, not its echo, is what every node records.
bool postFailureAfter(Store& store, const std::string& prefix, const RankFailure& f,
                      std::chrono::milliseconds grace);
// The first failure posted, if any (never blocks for long: the key is checked first).
std::optional<RankFailure> postedFailure(Store& store, const std::string& prefix);

// Registers rank `rank` as arrived and waits until all `world` ranks have. After `timeout`
// throws TimeoutError naming the ranks that did not arrive and those that did, with their hosts.
void awaitRanks(Store& store, const std::string& prefix, int rank, int world, const std::string& hostLabel,
                std::chrono::milliseconds timeout);

// Every node runs the same command, so every node's job for a point is the same but for what is
// its own (scratch paths, timeouts, where checkpoints go). The part that must agree: kind,
// device, config, trace.
nlohmann::json sharedPartOfJob(const nlohmann::json& job);
// The first place where `here` and `node0` differ, as "config.epochs is 2 here, 1 on node 0";
// nullopt when they agree.
std::optional<std::string> firstDifference(const nlohmann::json& here, const nlohmann::json& node0);

// Rank 0's reading of the other ranks' heartbeats. A rank is lost when its counter has not
// moved for `silence` and it has not said it is done; the clock of each rank starts at
// construction (every rank is past the rendezvous by then), so a rank that never beats at all is
// lost too.
class HeartbeatJudge {
 public:
  using clock = std::chrono::steady_clock;
  HeartbeatJudge(std::string prefix, int self, int world, std::chrono::milliseconds silence,
                 clock::time_point start = clock::now());
  // One look at every other rank's counter at time `now`: the first lost rank, if any.
  std::optional<int> lostRank(Store& store, clock::time_point now = clock::now());

 private:
  std::string prefix_;
  int self_;
  std::chrono::milliseconds silence_;
  std::vector<std::int64_t> count_;
  std::vector<clock::time_point> movedAt_;
};

// This rank's heartbeat, and that it has ended (it stops beating then).
void beat(Store& store, const std::string& prefix, int rank);
void sayDone(Store& store, const std::string& prefix, int rank);
// The failure rank 0 posts for a lost rank: its host and address as it registered them at the
// rendezvous (awaitRanks).
RankFailure lostRankFailure(Store& store, const std::string& prefix, int rank, std::chrono::milliseconds silence);
// "stopped answering: no heartbeat for 10 s (--heartbeat_timeout); ..." (the failure's reason).
std::string lostRankReason(std::chrono::milliseconds silence);
// "node 0's rendezvous store at <storeAt> has not answered for 10 s (--heartbeat_timeout); ...":
// why a rank or a launcher of another node stops.
std::string storeSilentReason(const std::string& storeAt, std::chrono::milliseconds silence);

// When the store requests of one thread began, for another thread to read. LibTorch 1.13's
// TCPStore client has no timeout on add or check, so a request to a store whose host vanished
// without closing the connection is never answered: one under way for longer than the heartbeat
// timeout is how the store's loss shows.
class StoreCalls {
 public:
  void begin();  // before a batch of requests
  void end();    // after it, answered or failed
  // Whether a batch has been under way for longer than `limit`.
  bool stalledFor(std::chrono::milliseconds limit) const;

 private:
  std::atomic<std::int64_t> sinceNs_{0};  // steady clock at begin(); 0: none under way
};

// A thread that calls `onStall` (which ends the process) once `calls` has a batch under way for
// longer than `limit`, looking every `period`, until destroyed.
class StallGuard {
 public:
  StallGuard(const StoreCalls& calls, std::chrono::milliseconds limit, std::function<void()> onStall,
             std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~StallGuard();
  StallGuard(const StallGuard&) = delete;
  StallGuard& operator=(const StallGuard&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// A thread with a store connection of its own (the main thread may be blocked inside the
// store for minutes) that polls for a failure posted by another rank. When one comes it prints
// "error: stopping: <failure>" to stderr and ends the process with exit code 1 at once: the
// point is lost anyway, and a rank blocked in a receive from a dead peer would otherwise wait
// for its whole timeout.
//
// Each poll also beats; on rank 0 it judges the others' beats and posts a lost rank's failure,
// then stops the same way. A StallGuard watches the first thread: when the store has not
// answered it for `silence`, it stops the process saying that node 0's store is gone. The
// destructor says this rank is done.
class FailureWatch {
 public:
  FailureWatch(const std::string& masterAddr, std::uint16_t port, std::string prefix, int rank, int world,
               std::chrono::milliseconds connectTimeout, std::chrono::milliseconds silence,
               std::chrono::milliseconds period = std::chrono::milliseconds(200));
  ~FailureWatch();
  FailureWatch(const FailureWatch&) = delete;
  FailureWatch& operator=(const FailureWatch&) = delete;

 private:
  std::unique_ptr<Store> store_;
  std::string prefix_, storeAddress_;
  int rank_, world_;
  std::chrono::milliseconds silence_, period_;
  StoreCalls calls_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::unique_ptr<StallGuard> guard_;
};

}  // namespace tpb
