// harness/loopback_bind.cc — a preload library (libtpb_loopback_bind.so) that tpbench's
// --launcher mpirun puts into mpirun's environment (LD_PRELOAD). Open MPI 4.1's mpirun binds its
// out-of-band listener to the wildcard address, 0.0.0.0 and [::], whatever oob_tcp_if_include
// says (orte/mca/oob/tcp/oob_tcp_listener.c binds INADDR_ANY and in6addr_any; the MCA settings
// only choose which addresses it advertises), so no command-line setting keeps it off the
// host's other networks. This turns every wildcard bind() of the process into the same bind on
// loopback (127.0.0.1, ::1); any other bind passes unchanged. Only used on one host, where every
// peer is local.
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace {

using BindFn = int (*)(int, const sockaddr*, socklen_t);

BindFn realBind() {
  static const BindFn real = reinterpret_cast<BindFn>(dlsym(RTLD_NEXT, "bind"));
  return real;
}

}  // namespace

extern "C" int bind(int fd, const sockaddr* addr, socklen_t len) {
  if (addr && addr->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    sockaddr_in a;
    std::memcpy(&a, addr, sizeof a);
    if (a.sin_addr.s_addr == htonl(INADDR_ANY)) {
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return realBind()(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    }
  } else if (addr && addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    sockaddr_in6 a;
    std::memcpy(&a, addr, sizeof a);
    if (IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr)) {
      a.sin6_addr = in6addr_loopback;
      return realBind()(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    }
  }
  return realBind()(fd, addr, len);
}
