// comm/store_wire.h — the wire of tpbench's own rendezvous store (comm/store_server.h, and its
// client comm/store_client.h): framed messages, the challenge-response both ends run first, and
// the sockets. No torch here, so the server and its tests stand alone.
//
// A message is a list of byte strings: u32 count, then per string a u32 length and the bytes
// (big-endian). A request's first string is its Op, a reply's first its Status. Every read is
// bounded before anything is allocated, so a peer cannot make the other end reserve memory by
// announcing a large size.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tpb::wire {

using Clock = std::chrono::steady_clock;

enum class Op : char { Set = 's', Get = 'g', Add = 'a', Check = 'c', Wait = 'w', CompareSet = 'x', Delete = 'd', NumKeys = 'n' };
enum class Status : char { Ok = 'k', Timeout = 't', Refused = 'r' };

enum class ReadResult { Ok, Closed, Timeout, TooLarge };

bool sendMessage(int fd, const std::vector<std::string>& parts, Clock::time_point deadline);
ReadResult readMessage(int fd, std::vector<std::string>& parts, std::size_t maxBytes, std::size_t maxParts,
                       Clock::time_point deadline);
bool readExact(int fd, void* buf, std::size_t n, Clock::time_point deadline);
bool writeAll(int fd, const void* buf, std::size_t n, Clock::time_point deadline);

// The handshake. The server sends kHello and a random nonce; the client answers with a nonce of
// its own and proof("client", ...) under the job's secret; the server replies kAccepted and
// proof("server", ...), or kRejected and closes. Both ends thus show they hold the secret without
// sending it, and a recorded exchange cannot be replayed (fresh nonces every time).
inline constexpr char kHello[] = "TPBSTORE1";  // 9 bytes on the wire, no terminator
inline constexpr std::size_t kHelloSize = sizeof kHello - 1;
inline constexpr std::size_t kNonceSize = 32;
inline constexpr char kAccepted = 'Y', kRejected = 'N';
std::string randomBytes(std::size_t n);
std::string proof(const std::string& secret, const std::string& role, const std::string& serverNonce,
                  const std::string& clientNonce);

// A listening TCP socket on host:port (port 0: a free one), close-on-exec; throws when none can
// be made. `bound` gets the numeric address and the port it got.
int listenOn(const std::string& host, std::uint16_t port, std::string& boundAddress, std::uint16_t& boundPort);
// A connected TCP socket to host:port, retried until the deadline (the server may start later);
// throws with the last error after it.
int connectTo(const std::string& host, std::uint16_t port, Clock::time_point deadline);

// A decimal integer of at most 18 digits (so it cannot overflow), a leading '-' allowed when
// `negative`, nothing else; false otherwise. Both ends read the store's numbers with it.
bool parseDecimal(const std::string& s, bool negative, long long& out);

}  // namespace tpb::wire
