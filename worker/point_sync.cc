#include "worker/point_sync.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm/store.h"
#include "common/error.h"

namespace tpb {

using nlohmann::json;

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

FailureWatch::FailureWatch(const std::string& masterAddr, std::uint16_t port, std::string prefix, int rank,
                           std::chrono::milliseconds connectTimeout, std::chrono::milliseconds period)
    : store_(Store::connect(masterAddr, port, connectTimeout)),
      prefix_(std::move(prefix)),
      rank_(rank),
      period_(period) {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      std::optional<RankFailure> f;
      try {
        f = postedFailure(*store_, prefix_);
      } catch (const std::exception&) {
        return;  // the store is gone (node 0 ended): the transports report what follows
      }
      if (f && f->rank != rank_) {
        std::fprintf(stderr, "error: stopping: %s\n", f->text(true).c_str());
        std::fflush(stderr);
        std::_Exit(1);
      }
      lock.lock();
      cv_.wait_for(lock, period_, [this] { return stop_; });
    }
  });
}

FailureWatch::~FailureWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tpb
