#include "comm/store_wire.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "comm/hmac_sha256.h"
#include "common/error.h"

namespace tpb::wire {
namespace {

// Waits until fd is ready for `events` or the deadline passes (max(): no deadline).
bool ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    int ms = -1;
    if (deadline != Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      ms = static_cast<int>(std::min<long long>(left, 1 << 30));
    }
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, ms);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

void putU32(std::string& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += char((v >> s) & 0xff);
}

bool readU32(int fd, std::uint32_t& v, Clock::time_point deadline) {
  unsigned char b[4];
  if (!readExact(fd, b, 4, deadline)) return false;
  v = std::uint32_t(b[0]) << 24 | std::uint32_t(b[1]) << 16 | std::uint32_t(b[2]) << 8 | b[3];
  return true;
}

std::string describe(const sockaddr* a) {
  char buf[INET6_ADDRSTRLEN] = {};
  const void* src = a->sa_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a)->sin_addr)
                                            : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  inet_ntop(a->sa_family, src, buf, sizeof buf);
  return buf;
}

std::uint16_t portOf(const sockaddr* a) {
  return ntohs(a->sa_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(a)->sin_port
                                       : reinterpret_cast<const sockaddr_in6*>(a)->sin6_port);
}

addrinfo* resolve(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) TPB_THROW(Error, "cannot resolve '" << host << "': " << gai_strerror(rc));
  return res;
}

}  // namespace

bool readExact(int fd, void* buf, std::size_t n, Clock::time_point deadline) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    if (!ready(fd, POLLIN, deadline)) return false;
    const ssize_t got = recv(fd, p, n, 0);
    if (got == 0) return false;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool writeAll(int fd, const void* buf, std::size_t n, Clock::time_point deadline) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    if (!ready(fd, POLLOUT, deadline)) return false;
    const ssize_t put = send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    p += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

bool sendMessage(int fd, const std::vector<std::string>& parts, Clock::time_point deadline) {
  std::string out;
  putU32(out, static_cast<std::uint32_t>(parts.size()));
  for (const std::string& s : parts) {
    putU32(out, static_cast<std::uint32_t>(s.size()));
    out += s;
  }
  return writeAll(fd, out.data(), out.size(), deadline);
}

ReadResult readMessage(int fd, std::vector<std::string>& parts, std::size_t maxBytes, std::size_t maxParts,
                       Clock::time_point deadline) {
  const auto fail = [&] { return Clock::now() >= deadline ? ReadResult::Timeout : ReadResult::Closed; };
  std::uint32_t count = 0;
  if (!readU32(fd, count, deadline)) return fail();
  if (count == 0 || count > maxParts) return ReadResult::TooLarge;
  parts.assign(count, std::string());
  std::size_t total = 0;
  for (std::string& s : parts) {
    std::uint32_t len = 0;
    if (!readU32(fd, len, deadline)) return fail();
    total += len;
    if (total > maxBytes) return ReadResult::TooLarge;
    s.resize(len);
    if (len > 0 && !readExact(fd, s.data(), len, deadline)) return fail();
  }
  return ReadResult::Ok;
}

std::string randomBytes(std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(out.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    TPB_CHECK_ERRNO(r, "getrandom");
    got += static_cast<std::size_t>(r);
  }
  return out;
}

std::string proof(const std::string& secret, const std::string& role, const std::string& serverNonce,
                  const std::string& clientNonce) {
  const Digest d = hmacSha256(secret, "tpbench store " + role + "\n" + serverNonce + clientNonce);
  return std::string(d.begin(), d.end());
}

int listenOn(const std::string& host, std::uint16_t port, std::string& boundAddress, std::uint16_t& boundPort) {
  addrinfo* res = resolve(host, port);
  std::string lastError = "no address";
  int fd = -1;
  for (const addrinfo* ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      lastError = std::strerror(errno);
      close(fd);
      fd = -1;
      continue;
    }
    boundAddress = describe(reinterpret_cast<sockaddr*>(&local));
    boundPort = portOf(reinterpret_cast<sockaddr*>(&local));
  }
  freeaddrinfo(res);
  if (fd < 0) TPB_THROW(Error, "cannot listen on " << host << ":" << port << ": " << lastError);
  return fd;
}

int connectTo(const std::string& host, std::uint16_t port, Clock::time_point deadline) {
  std::string lastError;
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    addrinfo* res = resolve(host, port);
    for (const addrinfo* ai = res; ai; ai = ai->ai_next) {
      // Non-blocking: a host that drops the SYN would hold a blocking connect() for minutes.
      const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
      if (fd < 0) continue;
      int err = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
      if (err == EINPROGRESS) {
        socklen_t len = sizeof err;
        err = ready(fd, POLLOUT, deadline) ? 0 : ETIMEDOUT;
        if (err == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
      if (err == 0) {
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        freeaddrinfo(res);
        return fd;
      }
      lastError = std::strerror(err);
      close(fd);
    }
    freeaddrinfo(res);
    if (Clock::now() + pause >= deadline)
      TPB_THROW(TimeoutError, "cannot connect to " << host << ":" << port << ": " << lastError);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

bool parseDecimal(const std::string& s, bool negative, long long& out) {
  std::size_t i = negative && !s.empty() && s[0] == '-' ? 1 : 0;
  if (i == s.size() || s.size() - i > 18) return false;
  long long v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = s[0] == '-' ? -v : v;
  return true;
}

}  // namespace tpb::wire
