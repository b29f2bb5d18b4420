#include "comm/net_iface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/error.h"

namespace tpb {

namespace {

std::string numeric(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  const void* src = sa->sa_family == AF_INET
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  if (!inet_ntop(sa->sa_family, src, buf, sizeof buf)) return {};
  return buf;
}

struct IfaddrsFree {
  void operator()(ifaddrs* p) const { freeifaddrs(p); }
};

std::unique_ptr<ifaddrs, IfaddrsFree> listInterfaces() {
  ifaddrs* list = nullptr;
  TPB_CHECK_ERRNO(getifaddrs(&list), "getifaddrs");
  return std::unique_ptr<ifaddrs, IfaddrsFree>(list);
}

bool isInet(const ifaddrs* a) {
  return a->ifa_addr && (a->ifa_addr->sa_family == AF_INET || a->ifa_addr->sa_family == AF_INET6);
}

// The interface that holds `address` ("" when none does).
std::string interfaceHolding(const std::string& address) {
  const auto list = listInterfaces();
  for (const ifaddrs* a = list.get(); a; a = a->ifa_next)
    if (isInet(a) && numeric(a->ifa_addr) == address) return a->ifa_name;
  return {};
}

}  // namespace

LocalAddress routeTo(const std::string& masterAddr, const std::string& flag) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(masterAddr.c_str(), "9", &hints, &res); rc != 0)
    TPB_THROW(UsageError, flag << " " << masterAddr << ": cannot resolve it (" << gai_strerror(rc) << ")");
  std::string lastError = "no address";
  LocalAddress out;
  for (const addrinfo* ai = res; ai && out.address.empty(); ai = ai->ai_next) {
    const int s = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::connect(s, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(s, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      out.address = numeric(reinterpret_cast<const sockaddr*>(&local));
    } else {
      lastError = std::strerror(errno);
    }
    close(s);
  }
  freeaddrinfo(res);
  if (out.address.empty())
    TPB_THROW(UsageError, flag << " " << masterAddr << ": this host has no route to it (" << lastError << ")");
  out.iface = interfaceHolding(out.address);
  return out;
}

LocalAddress interfaceAddress(const std::string& name, const std::string& flag) {
  const auto list = listInterfaces();
  std::vector<std::string> names;
  std::string v6;
  bool exists = false, up = false;
  for (const ifaddrs* a = list.get(); a; a = a->ifa_next) {
    if (std::find(names.begin(), names.end(), a->ifa_name) == names.end()) names.push_back(a->ifa_name);
    if (name != a->ifa_name) continue;
    exists = true;
    if (!(a->ifa_flags & IFF_UP)) continue;
    up = true;
    if (!isInet(a)) continue;
    if (a->ifa_addr->sa_family == AF_INET) return {name, numeric(a->ifa_addr)};
    if (v6.empty()) v6 = numeric(a->ifa_addr);
  }
  if (!v6.empty()) return {name, v6};
  if (!exists) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    TPB_THROW(UsageError, flag << " " << name << ": no such interface on this host (it has: " << all << ")");
  }
  if (!up) TPB_THROW(UsageError, flag << " " << name << ": the interface is down");
  TPB_THROW(UsageError, flag << " " << name << ": the interface has no IPv4 or IPv6 address");
}

LocalAddress bindAddress(const std::string& masterAddr, const std::string& iface) {
  if (!iface.empty()) return interfaceAddress(iface, "--iface");
  // PyTorch takes a comma list there (one Gloo device each); a tpbench rank binds one: the first.
  if (const char* env = std::getenv("GLOO_SOCKET_IFNAME"); env && *env) {
    const std::string first = std::string(env).substr(0, std::string(env).find(','));
    return interfaceAddress(first, "GLOO_SOCKET_IFNAME");
  }
  return routeTo(masterAddr);
}

std::string thisHostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

}  // namespace tpb
