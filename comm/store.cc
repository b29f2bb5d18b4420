#include "comm/store.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/store_c10d.h"
#include "common/descriptors.h"
#include "common/error.h"

namespace tpb {

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

namespace {
std::unique_ptr<Store::Impl> makeTcp(const std::string& host, std::uint16_t port, bool server,
                                     std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = port;
  o.isServer = server;
  o.waitWorkers = false;
  o.timeout = timeout;
  auto impl = std::make_unique<Store::Impl>();
  try {
    auto tcp = c10::make_intrusive<c10d::TCPStore>(host, o);
    impl->port = tcp->getPort();
    impl->store = tcp;
    markDescriptorsCloseOnExec();  // the daemons' wake-up pipes (c10d opens them inheritable)
  } catch (const std::exception& e) {
    TPB_THROW(Error, "rendezvous store at " << host << ":" << port << " ("
                                           << (server ? "serve" : "connect")
                                           << ") failed: " << e.what());
  }
  return impl;
}
}  // namespace

std::unique_ptr<Store> Store::serve(const std::string& host, std::uint16_t port,
                                    std::chrono::milliseconds timeout) {
  return std::unique_ptr<Store>(new Store(makeTcp(host, port, true, timeout)));
}

std::unique_ptr<Store> Store::connect(const std::string& host, std::uint16_t port,
                                      std::chrono::milliseconds timeout) {
  return std::unique_ptr<Store>(new Store(makeTcp(host, port, false, timeout)));
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

std::uint16_t Store::port() const { return impl_->port; }

}  // namespace tpb
