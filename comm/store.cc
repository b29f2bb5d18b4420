#include "comm/store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <type_traits>
#include <utility>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/store_c10d.h"
#include "common/descriptors.h"
#include "common/error.h"

namespace tpb {

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

namespace {

// A TCP socket bound to host:port (port 0: a free one) and listening, close-on-exec; -1 when
// one cannot be made. `bound` gets its port.
[[maybe_unused]] int listenOn(const std::string& host, std::uint16_t port, std::uint16_t& bound) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (const addrinfo* ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 2048) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      close(fd);
      fd = -1;
      continue;
    }
    bound = ntohs(local.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&local)->sin_port
                                             : reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
  }
  freeaddrinfo(res);
  return fd;
}

// LibTorch 2.x's server takes a listening socket its caller bound (TCPStoreOptions::
// masterListenFd): there the store listens on `host` alone (127.0.0.1 on one node). 1.13 has no
// such option, and its server binds the wildcard address (README: several hosts, the store).
template <typename O, typename = void>
struct HasListenFd : std::false_type {};
template <typename O>
struct HasListenFd<O, std::void_t<decltype(std::declval<O&>().masterListenFd)>> : std::true_type {};

template <typename O>
int bindServerTo(O& o, const std::string& host) {
  if constexpr (HasListenFd<O>::value) {
    std::uint16_t bound = 0;
    const int fd = listenOn(host, o.port, bound);
    if (fd >= 0) {
      o.masterListenFd = fd;
      o.port = bound;
    }
    return fd;
  } else {
    return -1;
  }
}

std::unique_ptr<Store::Impl> makeTcp(const std::string& host, std::uint16_t port, bool server,
                                     std::chrono::milliseconds timeout) {
  auto options = [&] {
    c10d::TCPStoreOptions o;
    o.port = port;
    o.isServer = server;
    o.waitWorkers = false;
    o.timeout = timeout;
    return o;
  };
  auto impl = std::make_unique<Store::Impl>();
  try {
    c10::intrusive_ptr<c10d::TCPStore> tcp;
    c10d::TCPStoreOptions o = options();
    const int fd = server ? bindServerTo(o, host) : -1;
    try {
      tcp = c10::make_intrusive<c10d::TCPStore>(host, o);
    } catch (const std::exception&) {
      if (fd < 0) throw;
      // The server refused our socket: fall back to its own (wildcard) one.
      if (fcntl(fd, F_GETFD) != -1) close(fd);
      tcp = c10::make_intrusive<c10d::TCPStore>(host, options());
    }
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

bool Store::check(const std::string& key) { return impl_->store->check({key}); }

void Store::setTimeout(std::chrono::milliseconds timeout) { impl_->store->setTimeout(timeout); }

std::uint16_t Store::port() const { return impl_->port; }

}  // namespace tpb
