// comm/store.h — rendezvous key/value store. Backed by c10d's TCPStore so that tpbench workers
// rendezvous exactly like torchrun's (MASTER_ADDR / MASTER_PORT), and the same store carries
// shm segment names, Gloo's pair addresses and NCCL's unique id.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tpb {

class Store {
 public:
  // The server side, hosted by the launcher. port 0 picks a free port; port() tells which.
  static std::unique_ptr<Store> serve(const std::string& host, std::uint16_t port,
                                      std::chrono::milliseconds timeout);
  // A client, as every worker is.
  static std::unique_ptr<Store> connect(const std::string& host, std::uint16_t port,
                                        std::chrono::milliseconds timeout);
  // An in-process store (tests, single-process jobs).
  static std::unique_ptr<Store> local();

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  void set(const std::string& key, const std::string& value);
  // Blocks until the key exists (throws tpb::TimeoutError after the store's timeout).
  std::string get(const std::string& key);
  std::int64_t add(const std::string& key, std::int64_t delta);
  // Whether the key exists now; never blocks (a watcher polls with it).
  bool check(const std::string& key);
  // The limit of every later blocking call (get, and the waits inside Gloo's and NCCL's setup).
  void setTimeout(std::chrono::milliseconds timeout);
  std::uint16_t port() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpb
