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
//
// A failure anywhere ends the point everywhere within about a second: the rank whose job throws
// posts it; a launcher posts the death of one of its ranks (signal, exit) and its own timeout or
// interrupt; every launcher polls the key and stops its ranks, and on several nodes every rank
// also runs a FailureWatch, so ranks started by another launcher (torchrun) stop too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace tpb {

class Store;

// How long the ranks of a point wait for each other (--rendezvous_timeout's default): long enough
// to start the nodes by hand one after another, far below a run's --timeout.
constexpr std::chrono::seconds kDefaultRendezvousTimeout{300};

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

// A thread with a store connection of its own (the main thread may be blocked inside the
// store for minutes) that polls for a failure posted by another rank. When one comes it prints
// "error: stopping: <failure>" to stderr and ends the process with exit code 1 at once: the
// point is lost anyway, and a rank blocked in a receive from a dead peer would otherwise wait
// for its whole timeout.
class FailureWatch {
 public:
  FailureWatch(const std::string& masterAddr, std::uint16_t port, std::string prefix, int rank,
               std::chrono::milliseconds connectTimeout,
               std::chrono::milliseconds period = std::chrono::milliseconds(200));
  ~FailureWatch();
  FailureWatch(const FailureWatch&) = delete;
  FailureWatch& operator=(const FailureWatch&) = delete;

 private:
  std::unique_ptr<Store> store_;
  std::string prefix_;
  int rank_;
  std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tpb
