// comm/store.h — rendezvous key/value store at MASTER_ADDR / MASTER_PORT, as torchrun's, carrying
// shm segment names, Gloo's pair addresses and NCCL's unique id. The server is tpbench's own
// (comm/store_server.h): it listens on the host's address alone, not on every interface as
// LibTorch 1.13's TCPStore server does, and admits only clients holding the job's secret.
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
  // A client of the store torchrun's agent hosts (c10d's TCPStore, its wire, no secret).
  static std::unique_ptr<Store> connectTorchrunAgent(const std::string& host, std::uint16_t port,
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
  // The server's address as this client reached it ("" for a local store), and whether it is
  // tpbench's own (comm/store_server.h, behind the job's secret) rather than torchrun's agent's.
  const std::string& host() const;
  bool ownProtocol() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The job's secret, from TPB_JOB_SECRET (--secret_file puts it there): every store server asks
// its clients to prove they hold it, and every client asks the server the same. Empty: unset.
inline constexpr char kJobSecretVar[] = "TPB_JOB_SECRET";
std::string jobSecret();
// tpbench's own launcher on one host: a random secret for this job unless one is set, in this
// process's environment, which its ranks inherit and other users cannot read.
void makeJobSecretIfUnset();

}  // namespace tpb
