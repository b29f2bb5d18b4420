#include "worker/point_sync.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm/store.h"
#include "common/error.h"
#include "common/text_escape.h"

namespace tpb {

using nlohmann::json;

nlohmann::json sharedPartOfJob(const json& job) {
  json shared = json::object();
  for (const char* key : {"kind", "device", "config", "trace"})
    if (job.contains(key)) shared[key] = job[key];
  return shared;
}

namespace {

std::optional<std::string> differenceAt(const json& here, const json& node0, const std::string& path) {
  auto shown = [](const json& v) { return v.is_null() ? std::string("absent") : v.dump(); };
  if (here.is_object() && node0.is_object()) {
    for (auto it = node0.begin(); it != node0.end(); ++it) {
      const json mine = here.contains(it.key()) ? here[it.key()] : json();
      if (auto d = differenceAt(mine, it.value(), path.empty() ? it.key() : path + "." + it.key())) return d;
    }
    for (auto it = here.begin(); it != here.end(); ++it)
      if (!node0.contains(it.key()))
        return (path.empty() ? it.key() : path + "." + it.key()) + " is " + it.value().dump() + " here, absent on node 0";
    return std::nullopt;
  }
  if (here == node0) return std::nullopt;
  return (path.empty() ? std::string("the job") : path) + " is " + shown(here) + " here, " + shown(node0) + " on node 0";
}

}  // namespace

std::optional<std::string> firstDifference(const json& here, const json& node0) {
  return differenceAt(here, node0, "");
}

std::string pointPrefix(long long point) {
  return point < 0 ? std::string("tpb/") : "tpb/" + std::to_string(point) + "/";
}

std::string RankFailure::text(bool withHost) const {
  std::string s = rank >= 0 ? "rank " + std::to_string(rank) : std::string("the launcher");
  if (withHost) s += " on host " + host + (address.empty() ? "" : " (" + address + ")");
  return s + " " + reason;
}

bool postFailure(Store& store, const std::string& prefix, const RankFailure& f) {
  if (store.add(prefix + "failed", 1) != 1) return false;
  store.set(prefix + "failure",
            json{{"rank", f.rank}, {"host", f.host}, {"address", f.address}, {"reason", f.reason}}.dump());
  return true;
}

bool postFailureAfter(Store& store, const std::string& prefix, const RankFailure& f,
                      std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (store.check(prefix + "failed")) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return postFailure(store, prefix, f);
}

std::optional<RankFailure> postedFailure(Store& store, const std::string& prefix) {
  // The counter goes up before the text is set: wait for the text only when it is on its way.
  if (!store.check(prefix + "failure")) return std::nullopt;
  try {
    const json j = json::parse(store.get(prefix + "failure"));
    RankFailure f;
    f.rank = j.value("rank", -1);
    f.host = j.value("host", "");
    f.address = j.value("address", "");
    f.reason = j.value("reason", "");
    return f;
  } catch (const json::exception& e) {
    TPB_THROW(Error, "rendezvous: the failure posted under " << prefix << " is not JSON: " << e.what());
  }
}

void awaitRanks(Store& store, const std::string& prefix, int rank, int world, const std::string& hostLabel,
                std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  store.set(prefix + "rank/" + std::to_string(rank), hostLabel);
  std::int64_t arrived = store.add(prefix + "arrived", 1);
  const auto deadline = clock::now() + timeout;
  while (arrived < world && clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    arrived = store.add(prefix + "arrived", 0);
  }
  if (arrived >= world) return;
  std::vector<int> missing;
  std::string present;
  for (int r = 0; r < world; ++r) {
    const std::string key = prefix + "rank/" + std::to_string(r);
    if (!store.check(key)) {
      missing.push_back(r);
    } else {
      present += (present.empty() ? "" : ", ") + std::to_string(r) + " on " + store.get(key);
    }
  }
  std::string names;
  for (int r : missing) names += (names.empty() ? "" : ", ") + std::to_string(r);
  TPB_THROW(TimeoutError, "rendezvous: rank" << (missing.size() == 1 ? " " : "s ") << names << " of " << world
                                             << " did not arrive within "
                                             << std::chrono::duration<double>(timeout).count()
                                             << " s (--rendezvous_timeout; is every node started, with the same "
                                                "--master_addr and --master_port?); arrived: "
                                             << present);
}

namespace {

std::int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string seconds(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", std::chrono::duration<double>(d).count());
  return buf;
}

[[noreturn]] void stopProcess(const std::string& why) {
  std::fprintf(stderr, "error: stopping: %s\n", printable(why).c_str());  // may come from another node
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

HeartbeatJudge::HeartbeatJudge(std::string prefix, int self, int world, std::chrono::milliseconds silence,
                               clock::time_point start)
    : prefix_(std::move(prefix)),
      self_(self),
      silence_(silence),
      count_(static_cast<std::size_t>(world), 0),
      movedAt_(static_cast<std::size_t>(world), start) {}

std::optional<int> HeartbeatJudge::lostRank(Store& store, clock::time_point now) {
  for (int r = 0; r < static_cast<int>(count_.size()); ++r) {
    if (r == self_ || count_[r] < 0) continue;  // < 0: it said it is done
    const std::int64_t c = store.add(prefix_ + "beat/" + std::to_string(r), 0);
    if (c != count_[r]) {
      count_[r] = c;
      movedAt_[r] = now;
      continue;
    }
    if (now - movedAt_[r] < silence_) continue;
    if (store.check(prefix_ + "done/" + std::to_string(r))) {
      count_[r] = -1;
      continue;
    }
    return r;
  }
  return std::nullopt;
}

void beat(Store& store, const std::string& prefix, int rank) { store.add(prefix + "beat/" + std::to_string(rank), 1); }

void sayDone(Store& store, const std::string& prefix, int rank) { store.set(prefix + "done/" + std::to_string(rank), "1"); }

RankFailure lostRankFailure(Store& store, const std::string& prefix, int rank, std::chrono::milliseconds silence) {
  RankFailure f;
  f.rank = rank;
  // "host (address)", as awaitRanks registered it.
  const std::string key = prefix + "rank/" + std::to_string(rank);
  const std::string label = store.check(key) ? store.get(key) : std::string("?");
  const auto open = label.rfind(" (");
  f.host = label.substr(0, open);
  if (open != std::string::npos && label.size() > open + 3 && label.back() == ')')
    f.address = label.substr(open + 2, label.size() - open - 3);
  f.reason = lostRankReason(silence);
  return f;
}

std::string lostRankReason(std::chrono::milliseconds silence) {
  return "stopped answering: no heartbeat for " + seconds(silence) +
         " (--heartbeat_timeout); its host is down or cut off, or the rank is frozen";
}

std::string storeSilentReason(const std::string& storeAt, std::chrono::milliseconds silence) {
  return "node 0's rendezvous store at " + storeAt + " has not answered for " + seconds(silence) +
         " (--heartbeat_timeout); node 0 is down or cut off from this host";
}

void StoreCalls::begin() { sinceNs_ = steadyNs(); }

void StoreCalls::end() { sinceNs_ = 0; }

bool StoreCalls::stalledFor(std::chrono::milliseconds limit) const {
  const std::int64_t since = sinceNs_;
  return since != 0 && steadyNs() - since > std::chrono::nanoseconds(limit).count();
}

StallGuard::StallGuard(const StoreCalls& calls, std::chrono::milliseconds limit, std::function<void()> onStall,
                       std::chrono::milliseconds period) {
  thread_ = std::thread([this, &calls, limit, period, onStall = std::move(onStall)] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, period, [this] { return stop_; }))
      if (calls.stalledFor(limit)) onStall();
  });
}

StallGuard::~StallGuard() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

FailureWatch::FailureWatch(const std::string& masterAddr, std::uint16_t port, std::string prefix, int rank, int world,
                           std::chrono::milliseconds connectTimeout, std::chrono::milliseconds silence,
                           std::chrono::milliseconds period)
    : store_(Store::connect(masterAddr, port, connectTimeout)),
      prefix_(std::move(prefix)),
      storeAddress_(masterAddr + ":" + std::to_string(port)),
      rank_(rank),
      world_(world),
      silence_(silence),
      period_(period) {
  thread_ = std::thread([this] {
    std::optional<HeartbeatJudge> judge;
    if (rank_ == 0) judge.emplace(prefix_, rank_, world_, silence_);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      std::optional<RankFailure> f;
      bool lost = false;
      calls_.begin();
      try {
        beat(*store_, prefix_, rank_);
        f = postedFailure(*store_, prefix_);
        if (!f && judge) {
          if (const auto r = judge->lostRank(*store_)) {
            postFailure(*store_, prefix_, lostRankFailure(*store_, prefix_, *r, silence_));
            f = postedFailure(*store_, prefix_);  // this one, or one that came first
            lost = true;
          }
        }
      } catch (const std::exception&) {
        calls_.end();
        return;  // the store is gone (node 0 ended): the transports report what follows
      }
      calls_.end();
      if (f && (lost || f->rank != rank_)) stopProcess(f->text(true));
      lock.lock();
      cv_.wait_for(lock, period_, [this] { return stop_; });
    }
  });
  guard_ = std::make_unique<StallGuard>(calls_, silence_, [this] { stopProcess(storeSilentReason(storeAddress_, silence_)); },
                                        period_);
}

FailureWatch::~FailureWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Beats have stopped: rank 0 must not take this rank for a lost one. The guard still runs.
  calls_.begin();
  try {
    sayDone(*store_, prefix_, rank_);
  } catch (const std::exception&) {
  }
  calls_.end();
  guard_.reset();
}

}  // namespace tpb
