// comm/store_server.h — tpbench's own rendezvous store server: a small threaded TCP key/value
// server (set, get, add, check, wait, compareSet, deleteKey, getNumKeys) that listens on one
// address only and serves only clients that prove they hold the job's secret
// (comm/store_wire.h). It replaces c10d's TCPStore server, which under LibTorch 1.13 listens on
// every interface and serves anyone. Its client is comm/store_client.h.
//
// Nothing a client sends can make it hold unbounded memory: a connection that has not answered
// the challenge is closed after handshakeTimeout, or sooner when maxPending newer ones wait,
// and can send nothing else; connections, key and
// value sizes, keys per request, the number of keys and their total size are all capped, and a
// request over a cap is refused (Status::Refused, with the reason) or, when the frame itself is
// too large, ends the connection before anything is read into memory.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tpb {

struct StoreLimits {
  std::size_t maxKeyBytes = 4096;
  std::size_t maxValueBytes = std::size_t(4) << 20;
  std::size_t maxKeys = std::size_t(1) << 20;
  std::size_t maxTotalBytes = std::size_t(512) << 20;
  std::size_t maxKeysPerRequest = 1024;
  std::size_t maxConnections = 1024;
  // Connections that have not yet proved they hold the secret: at most this many at once. A new
  // one beyond it pushes the oldest out (its handshake fails; a client of the job retries), so a
  // flood of strangers can hold neither the job's ranks out nor the connection slots.
  std::size_t maxPending = 64;
  std::chrono::milliseconds handshakeTimeout{10000};
};

class StoreServer {
 public:
  // Listens on host:port (port 0: a free one). The secret may be empty: then any client that
  // speaks the protocol gets in (an external launcher on one host, where no secret was given).
  StoreServer(const std::string& host, std::uint16_t port, std::string secret, StoreLimits limits = {});
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  std::uint16_t port() const { return port_; }
  const std::string& address() const { return address_; }  // numeric, as bound

 private:
  struct Conn {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
    // kPending until the handshake proves the secret (kAuthed) or the connection is pushed out
    // (kEvicted): one compare-and-swap decides, so a rank that got in is never pushed out.
    enum State : int { kPending, kAuthed, kEvicted };
    std::atomic<int> state{kPending};
    std::uint64_t order = 0;  // accepted as the order-th connection: the oldest goes first
  };
  using Reply = std::vector<std::string>;

  void acceptLoop();
  void reap(bool all);
  void serve(Conn& c);
  bool handshake(Conn& c);
  Reply handle(const std::vector<std::string>& request);
  Reply set(const std::string& key, const std::string& value);
  Reply waitFor(const std::vector<std::string>& keys, const std::string& timeoutMs, bool returnValue);
  Reply add(const std::string& key, const std::string& delta);
  Reply compareSet(const std::string& key, const std::string& expected, const std::string& desired);
  std::string refusal(const std::string& key, std::size_t valueBytes) const;  // under m_
  void put(const std::string& key, const std::string& value);                 // under m_

  const std::string secret_;
  const StoreLimits limits_;
  int listenFd_ = -1;
  int wake_[2] = {-1, -1};  // written on shutdown: wakes the accept loop
  std::string address_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};

  std::mutex m_;  // the data
  std::condition_variable changed_;
  std::map<std::string, std::string> data_;
  std::size_t totalBytes_ = 0;

  std::mutex connsM_;
  std::list<std::unique_ptr<Conn>> conns_;
  std::uint64_t accepted_ = 0;
  std::thread acceptThread_;
};

}  // namespace tpb
