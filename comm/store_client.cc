#include "comm/store_client.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "comm/store_wire.h"
#include "common/error.h"

namespace tpb {
namespace {

using wire::Clock;
using wire::Op;
using wire::Status;

// How long the server may hold a waiting request: c10d's kNoTimeout (0) is the server's cap.
std::chrono::milliseconds serverWait(std::chrono::milliseconds timeout) {
  return timeout.count() == 0 ? std::chrono::hours(24) : timeout;
}

std::string op(Op o) { return std::string(1, static_cast<char>(o)); }
std::string str(const std::vector<std::uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<std::uint8_t> bytes(const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); }

// Proves to the server on fd that this end holds `secret`, and checks the server's proof. False
// where the server closed the connection before answering (a store pushes out the oldest
// connections still in their handshake when strangers flood it): the caller connects again.
bool introduce(int fd, const std::string& secret, const std::string& where, Clock::time_point deadline) {
  std::string hello(wire::kHelloSize + wire::kNonceSize, '\0');
  if (!wire::readExact(fd, hello.data(), hello.size(), deadline)) return false;
  if (hello.compare(0, wire::kHelloSize, wire::kHello) != 0)
    TPB_THROW(Error, "the rendezvous store at " << where << " did not greet (not a tpbench store)");
  const std::string serverNonce = hello.substr(wire::kHelloSize);
  const std::string clientNonce = wire::randomBytes(wire::kNonceSize);
  const std::string answer = clientNonce + wire::proof(secret, "client", serverNonce, clientNonce);
  std::string reply(1 + wire::kNonceSize, '\0');
  if (!wire::writeAll(fd, answer.data(), answer.size(), deadline) || !wire::readExact(fd, reply.data(), 1, deadline))
    return false;
  if (reply[0] != wire::kAccepted)
    TPB_THROW(Error, "the rendezvous store at " << where << " refused this process: its job secret differs "
                                                << "(TPB_JOB_SECRET or --secret_file must be the same on every node)");
  if (!wire::readExact(fd, reply.data() + 1, wire::kNonceSize, deadline) ||
      reply.substr(1) != wire::proof(secret, "server", serverNonce, clientNonce))
    TPB_THROW(Error, "the rendezvous store at " << where << " did not prove it holds the job secret");
  return true;
}

}  // namespace

StoreClient::StoreClient(const std::string& host, std::uint16_t port, const std::string& secret,
                         std::chrono::milliseconds timeout)
    : c10d::Store(timeout), host_(host), secret_(secret), port_(port) {
  const auto deadline = Clock::now() + timeout;
  const std::string where = host + ":" + std::to_string(port);
  for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
    fd_ = wire::connectTo(host, port, deadline);
    bool in = false;
    try {
      in = introduce(fd_, secret, where, deadline);
    } catch (...) {
      close(fd_);
      fd_ = -1;
      throw;
    }
    if (in) return;
    close(fd_);
    fd_ = -1;
    if (Clock::now() + pause >= deadline)
      TPB_THROW(Error, "the rendezvous store at " << where << " did not greet (not a tpbench store, or it closed "
                                                  << "every connection until the timeout)");
    std::this_thread::sleep_for(pause);
  }
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) close(fd_);
}

c10::intrusive_ptr<c10d::Store> StoreClient::clone() {
  return c10::make_intrusive<StoreClient>(host_, port_, secret_, timeout_);
}

// Sends one request and reads its reply. The server answers a waiting request itself when
// `serverWait` passes, so this end waits that long plus twice the store's timeout for an answer:
// a caller that watches its requests (worker/point_sync.h: a request unanswered for the timeout
// means node 0 is lost) sees the stall before the request gives up. A connection that failed
// once is closed, and every later request fails at once.
std::vector<std::string> StoreClient::call(std::vector<std::string> request, std::chrono::milliseconds serverWait) {
  std::lock_guard<std::mutex> lock(m_);
  const std::string where = host_ + ":" + std::to_string(port_);
  if (fd_ < 0) TPB_THROW(Error, "the connection to the rendezvous store at " << where << " was lost earlier");
  // A zero timeout is c10d's kNoTimeout: wait as long as it takes.
  const auto patience = serverWait + 2 * timeout_;
  const auto deadline = timeout_.count() == 0 ? Clock::time_point::max() : Clock::now() + patience;
  std::vector<std::string> reply;
  wire::ReadResult r = wire::ReadResult::Closed;
  if (wire::sendMessage(fd_, request, deadline)) r = wire::readMessage(fd_, reply, std::size_t(64) << 20, 4, deadline);
  if (r != wire::ReadResult::Ok || reply[0].size() != 1) {
    close(fd_);
    fd_ = -1;
    if (r == wire::ReadResult::Timeout)
      TPB_THROW(TimeoutError, "the rendezvous store at " << where << " did not answer within "
                                                         << std::chrono::duration_cast<std::chrono::seconds>(patience).count() << " s");
    TPB_THROW(Error, "the rendezvous store at " << where << " closed the connection");
  }
  const auto s = static_cast<Status>(reply[0][0]);
  if (s == Status::Timeout)
    TPB_THROW(TimeoutError, "rendezvous store: keys not set within " << serverWait.count() << " ms");
  if (s != Status::Ok) TPB_THROW(Error, "the rendezvous store refused a request: " << (reply.size() > 1 ? reply[1] : "?"));
  return reply;
}

// A request whose reply is one value.
std::string StoreClient::one(std::vector<std::string> request) {
  auto reply = call(std::move(request), std::chrono::milliseconds(0));
  TPB_CHECK(reply.size() == 2, "the rendezvous store sent " << reply.size() - 1 << " values for one");
  return reply[1];
}

void StoreClient::set(const std::string& key, const std::vector<std::uint8_t>& value) {
  call({op(Op::Set), key, str(value)}, std::chrono::milliseconds(0));
}

std::vector<std::uint8_t> StoreClient::compareSet(const std::string& key, const std::vector<std::uint8_t>& expected,
                                                  const std::vector<std::uint8_t>& desired) {
  return bytes(one({op(Op::CompareSet), key, str(expected), str(desired)}));
}

std::vector<std::uint8_t> StoreClient::get(const std::string& key) {
  auto reply = call({op(Op::Get), key, std::to_string(timeout_.count())}, serverWait(timeout_));
  TPB_CHECK(reply.size() == 2, "the rendezvous store sent no value");
  return bytes(reply[1]);
}

namespace {
// A number the store answered; a reply that is not one ends the call with the reason.
std::int64_t numberOf(const std::string& reply, const char* what) {
  long long v = 0;
  if (!wire::parseDecimal(reply, true, v))
    TPB_THROW(Error, "the rendezvous store answered " << what << " with something other than a number");
  return v;
}
}  // namespace

std::int64_t StoreClient::add(const std::string& key, std::int64_t value) {
  return numberOf(one({op(Op::Add), key, std::to_string(value)}), "add");
}

bool StoreClient::deleteKey(const std::string& key) { return one({op(Op::Delete), key}) == "1"; }

bool StoreClient::check(const std::vector<std::string>& keys) {
  std::vector<std::string> request{op(Op::Check)};
  request.insert(request.end(), keys.begin(), keys.end());
  return one(std::move(request)) == "1";
}

std::int64_t StoreClient::getNumKeys() { return numberOf(one({op(Op::NumKeys)}), "getNumKeys"); }

void StoreClient::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void StoreClient::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::vector<std::string> request{op(Op::Wait), std::to_string(timeout.count())};
  request.insert(request.end(), keys.begin(), keys.end());
  call(std::move(request), serverWait(timeout));
}

}  // namespace tpb
