#include "comm/store_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "comm/hmac_sha256.h"
#include "comm/store_wire.h"
#include "common/error.h"

namespace tpb {
namespace {

using wire::Clock;
using wire::Op;
using wire::Status;

std::string status(Status s) { return std::string(1, static_cast<char>(s)); }

}  // namespace

StoreServer::StoreServer(const std::string& host, std::uint16_t port, std::string secret, StoreLimits limits)
    : secret_(std::move(secret)), limits_(limits) {
  listenFd_ = wire::listenOn(host, port, address_, port_);
  if (pipe2(wake_, O_CLOEXEC) != 0) {
    const int err = errno;
    close(listenFd_);
    TPB_THROW(Error, "store server: pipe: " << std::strerror(err));
  }
  acceptThread_ = std::thread([this] { acceptLoop(); });
}

StoreServer::~StoreServer() {
  stop_ = true;
  const char byte = 0;
  [[maybe_unused]] const ssize_t w = write(wake_[1], &byte, 1);
  acceptThread_.join();
  {
    std::lock_guard<std::mutex> lock(m_);  // a waiter between its check and its wait sees stop_
  }
  changed_.notify_all();
  reap(true);
  close(listenFd_);
  close(wake_[0]);
  close(wake_[1]);
}

// Joins the connections that ended (all of them, first shutting their sockets, when `all`).
void StoreServer::reap(bool all) {
  std::lock_guard<std::mutex> lock(connsM_);
  for (auto it = conns_.begin(); it != conns_.end();) {
    Conn& c = **it;
    if (all) shutdown(c.fd, SHUT_RDWR);
    if (!all && !c.done) {
      ++it;
      continue;
    }
    c.thread.join();
    close(c.fd);
    it = conns_.erase(it);
  }
}

void StoreServer::acceptLoop() {
  while (!stop_) {
    pollfd p[2] = {{listenFd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int n = poll(p, 2, 1000);
    reap(false);
    if (n <= 0 || !(p[0].revents & POLLIN) || stop_) continue;
    const int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(connsM_);
    // The connections still in their handshake; the oldest of them makes room for this one when
    // they are too many (or every slot is taken), so strangers cannot crowd out the job's ranks,
    // whose handshake takes a round trip. Past every slot with none pending, this one is closed.
    std::size_t pending = 0;
    Conn* oldest = nullptr;
    for (const auto& c : conns_)
      if (!c->done && c->state == Conn::kPending) {
        ++pending;
        if (!oldest || c->order < oldest->order) oldest = c.get();
      }
    if (pending >= limits_.maxPending || conns_.size() >= limits_.maxConnections) {
      if (!oldest || conns_.size() >= limits_.maxConnections + limits_.maxPending) {
        close(fd);
        continue;
      }
      int expected = Conn::kPending;
      // Its handshake fails (reap() closes it once its thread ends), unless it got in just now.
      if (oldest->state.compare_exchange_strong(expected, Conn::kEvicted)) shutdown(oldest->fd, SHUT_RDWR);
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->order = ++accepted_;
    Conn& ref = *c;
    c->thread = std::thread([this, &ref] {
      serve(ref);
      // The peer sees the end now; the descriptor is closed by reap(), which joins this thread
      // first, so no other thread can be shutting down a number already reused.
      shutdown(ref.fd, SHUT_RDWR);
      ref.done = true;
    });
    conns_.push_back(std::move(c));
  }
}

bool StoreServer::handshake(Conn& c) {
  const int fd = c.fd;
  const auto deadline = Clock::now() + limits_.handshakeTimeout;
  const std::string nonce = wire::randomBytes(wire::kNonceSize);
  const std::string hello = std::string(wire::kHello, wire::kHelloSize) + nonce;
  if (!wire::writeAll(fd, hello.data(), hello.size(), deadline)) return false;
  std::string answer(2 * wire::kNonceSize, '\0');
  if (!wire::readExact(fd, answer.data(), answer.size(), deadline)) return false;
  const std::string clientNonce = answer.substr(0, wire::kNonceSize);
  Digest got{}, want{};
  const std::string expected = wire::proof(secret_, "client", nonce, clientNonce);
  std::memcpy(got.data(), answer.data() + wire::kNonceSize, got.size());
  std::memcpy(want.data(), expected.data(), want.size());
  if (!sameDigest(got, want)) {
    wire::writeAll(fd, &wire::kRejected, 1, deadline);
    return false;
  }
  int pending = Conn::kPending;
  if (!c.state.compare_exchange_strong(pending, Conn::kAuthed)) return false;  // pushed out meanwhile
  const std::string reply = wire::kAccepted + wire::proof(secret_, "server", nonce, clientNonce);
  return wire::writeAll(fd, reply.data(), reply.size(), deadline);
}

void StoreServer::serve(Conn& c) {
  if (!handshake(c)) return;
  // One request is a key and a value at most (compareSet: two values) with the framing.
  const std::size_t maxBytes =
      std::max(limits_.maxKeyBytes + 2 * limits_.maxValueBytes, limits_.maxKeysPerRequest * limits_.maxKeyBytes) + 64;
  std::vector<std::string> request;
  while (!stop_) {
    const auto r = wire::readMessage(c.fd, request, maxBytes, limits_.maxKeysPerRequest + 2, Clock::time_point::max());
    if (r != wire::ReadResult::Ok) return;  // closed, or a frame over the caps: end the connection
    if (!wire::sendMessage(c.fd, handle(request), Clock::now() + limits_.handshakeTimeout)) return;
  }
}

StoreServer::Reply StoreServer::handle(const std::vector<std::string>& q) {
  const auto bad = [&] { return Reply{status(Status::Refused), "malformed request"}; };
  if (q[0].size() != 1) return bad();
  const auto op = static_cast<Op>(q[0][0]);
  const std::size_t args = q.size() - 1;
  switch (op) {
    case Op::Set:
      return args == 2 ? set(q[1], q[2]) : bad();
    case Op::Get:
      return args == 2 ? waitFor({q[1]}, q[2], true) : bad();
    case Op::Wait:
      return args >= 1 ? waitFor(std::vector<std::string>(q.begin() + 2, q.end()), q[1], false) : bad();
    case Op::Add:
      return args == 2 ? add(q[1], q[2]) : bad();
    case Op::CompareSet:
      return args == 3 ? compareSet(q[1], q[2], q[3]) : bad();
    case Op::Check: {
      std::lock_guard<std::mutex> lock(m_);
      bool all = true;
      for (std::size_t i = 1; i < q.size() && all; ++i) all = data_.count(q[i]) > 0;
      return {status(Status::Ok), all ? "1" : "0"};
    }
    case Op::Delete: {
      if (args != 1) return bad();
      std::lock_guard<std::mutex> lock(m_);
      const auto it = data_.find(q[1]);
      if (it == data_.end()) return {status(Status::Ok), "0"};
      totalBytes_ -= it->first.size() + it->second.size();
      data_.erase(it);
      return {status(Status::Ok), "1"};
    }
    case Op::NumKeys: {
      std::lock_guard<std::mutex> lock(m_);
      return {status(Status::Ok), std::to_string(data_.size())};
    }
  }
  return bad();
}

std::string StoreServer::refusal(const std::string& key, std::size_t valueBytes) const {
  if (key.size() > limits_.maxKeyBytes)
    return "key of " + std::to_string(key.size()) + " bytes (at most " + std::to_string(limits_.maxKeyBytes) + ")";
  if (valueBytes > limits_.maxValueBytes)
    return "value of " + std::to_string(valueBytes) + " bytes (at most " + std::to_string(limits_.maxValueBytes) + ")";
  const auto it = data_.find(key);
  const std::size_t before = it == data_.end() ? 0 : key.size() + it->second.size();
  if (it == data_.end() && data_.size() >= limits_.maxKeys)
    return "the store holds " + std::to_string(data_.size()) + " keys already (at most)";
  if (totalBytes_ - before + key.size() + valueBytes > limits_.maxTotalBytes)
    return "the store would hold more than " + std::to_string(limits_.maxTotalBytes) + " bytes";
  return "";
}

// Stores key = value, counting its bytes; under m_, after refusal() said yes.
void StoreServer::put(const std::string& key, const std::string& value) {
  const auto it = data_.find(key);
  if (it == data_.end()) {
    totalBytes_ += key.size() + value.size();
    data_.emplace(key, value);
  } else {
    totalBytes_ = totalBytes_ - it->second.size() + value.size();
    it->second = value;
  }
  changed_.notify_all();
}

StoreServer::Reply StoreServer::set(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(m_);
  if (const std::string why = refusal(key, value.size()); !why.empty()) return {status(Status::Refused), why};
  put(key, value);
  return {status(Status::Ok)};
}

StoreServer::Reply StoreServer::waitFor(const std::vector<std::string>& keys, const std::string& timeoutMs,
                                        bool returnValue) {
  long long ms = 0;
  if (!wire::parseDecimal(timeoutMs, false, ms)) return {status(Status::Refused), "malformed timeout"};
  // A day at most (0 is c10d's "no timeout"): a waiting request holds this connection's thread.
  const auto deadline = Clock::now() + std::chrono::milliseconds(ms == 0 ? 86400000LL : std::min(ms, 86400000LL));
  std::unique_lock<std::mutex> lock(m_);
  const auto present = [&] {
    for (const std::string& k : keys)
      if (!data_.count(k)) return false;
    return true;
  };
  if (!changed_.wait_until(lock, deadline, [&] { return stop_ || present(); }) || stop_) return {status(Status::Timeout)};
  if (returnValue) return {status(Status::Ok), data_[keys[0]]};
  return {status(Status::Ok)};
}

StoreServer::Reply StoreServer::add(const std::string& key, const std::string& delta) {
  long long d = 0, now = 0;
  if (!wire::parseDecimal(delta, true, d)) return {status(Status::Refused), "malformed number"};
  std::lock_guard<std::mutex> lock(m_);
  const auto it = data_.find(key);
  if (it != data_.end() && !wire::parseDecimal(it->second, true, now))
    return {status(Status::Refused), "key '" + key.substr(0, 200) + "' does not hold a number"};
  const std::string value = std::to_string(now + d);
  if (const std::string why = refusal(key, value.size()); !why.empty()) return {status(Status::Refused), why};
  put(key, value);
  return {status(Status::Ok), value};
}

// c10d's semantics: a missing key is created only when `expected` is empty; the reply is the
// value the key holds afterwards (or `expected`, when the key is missing and stays so).
StoreServer::Reply StoreServer::compareSet(const std::string& key, const std::string& expected,
                                           const std::string& desired) {
  std::lock_guard<std::mutex> lock(m_);
  const auto it = data_.find(key);
  if (it == data_.end() && !expected.empty()) return {status(Status::Ok), expected};
  if (it != data_.end() && it->second != expected) return {status(Status::Ok), it->second};
  if (const std::string why = refusal(key, desired.size()); !why.empty()) return {status(Status::Refused), why};
  put(key, desired);
  return {status(Status::Ok), desired};
}

}  // namespace tpb
