#include "comm/store.h"

#include <cstdlib>
#include <utility>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/hmac_sha256.h"
#include "comm/store_c10d.h"
#include "comm/store_client.h"
#include "comm/store_server.h"
#include "comm/store_wire.h"
#include "common/descriptors.h"
#include "common/error.h"

namespace tpb {

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

namespace {

// The client of torchrun's agent store, which is c10d's TCPStore and speaks its wire.
std::unique_ptr<Store::Impl> tcpStoreClient(const std::string& host, std::uint16_t port,
                                            std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = port;
  o.isServer = false;
  o.waitWorkers = false;
  o.timeout = timeout;
  auto impl = std::make_unique<Store::Impl>();
  try {
    auto tcp = c10::make_intrusive<c10d::TCPStore>(host, o);
    impl->port = tcp->getPort();
    impl->host = host;
    impl->store = tcp;
    markDescriptorsCloseOnExec();  // the client's wake-up pipes (c10d opens them inheritable)
  } catch (const std::exception& e) {
    TPB_THROW(Error, "torchrun's rendezvous store at " << host << ":" << port << " (connect) failed: " << e.what());
  }
  return impl;
}

std::unique_ptr<Store::Impl> ownStoreClient(const std::string& host, std::uint16_t port,
                                            std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Store::Impl>();
  try {
    impl->store = c10::make_intrusive<StoreClient>(host, port, jobSecret(), timeout);
  } catch (const std::exception& e) {
    TPB_THROW(Error, "rendezvous store at " << host << ":" << port << " (connect) failed: " << e.what());
  }
  impl->port = port;
  impl->host = host;
  impl->own = true;
  return impl;
}

}  // namespace

std::string jobSecret() {
  const char* s = std::getenv(kJobSecretVar);
  return s ? s : "";
}

void makeJobSecretIfUnset() {
  if (!jobSecret().empty()) return;
  const Digest d = sha256(wire::randomBytes(32));
  TPB_CHECK_ERRNO(setenv(kJobSecretVar, hex(d).c_str(), 0), "setenv " << kJobSecretVar);
}

std::unique_ptr<Store> Store::serve(const std::string& host, std::uint16_t port,
                                    std::chrono::milliseconds timeout) {
  std::shared_ptr<StoreServer> server;
  try {
    server = std::make_shared<StoreServer>(host, port, jobSecret());
  } catch (const std::exception& e) {
    TPB_THROW(Error, "rendezvous store at " << host << ":" << port << " (serve) failed: " << e.what());
  }
  // The server's own process is a client like the others, through the address it bound.
  auto impl = ownStoreClient(server->address(), server->port(), timeout);
  impl->server = std::move(server);
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

std::unique_ptr<Store> Store::connect(const std::string& host, std::uint16_t port,
                                      std::chrono::milliseconds timeout) {
  return std::unique_ptr<Store>(new Store(ownStoreClient(host, port, timeout)));
}

std::unique_ptr<Store> Store::connectTorchrunAgent(const std::string& host, std::uint16_t port,
                                                   std::chrono::milliseconds timeout) {
  return std::unique_ptr<Store>(new Store(tcpStoreClient(host, port, timeout)));
}

std::unique_ptr<Store> Store::local() {
  auto impl = std::make_unique<Impl>();
  impl->store = c10::make_intrusive<c10d::HashStore>();
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

void Store::set(const std::string& key, const std::string& value) {
  impl_->store->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
}

std::string Store::get(const std::string& key) {
  try {
    auto v = impl_->store->get(key);
    return std::string(v.begin(), v.end());
  } catch (const std::exception& e) {
    TPB_THROW(TimeoutError, "rendezvous: waiting for key '" << key << "': " << e.what());
  }
}

std::int64_t Store::add(const std::string& key, std::int64_t delta) {
  return impl_->store->add(key, delta);
}

bool Store::check(const std::string& key) { return impl_->store->check({key}); }

void Store::setTimeout(std::chrono::milliseconds timeout) { impl_->store->setTimeout(timeout); }

std::uint16_t Store::port() const { return impl_->port; }

const std::string& Store::host() const { return impl_->host; }

bool Store::ownProtocol() const { return impl_->own; }

}  // namespace tpb
