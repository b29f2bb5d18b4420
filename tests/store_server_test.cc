// tests/store_server_test.cc — tpbench's own rendezvous store (comm/store_server.h) and its
// client: the HMAC it authenticates with against published test vectors, every operation c10d's
// users need, the secret (a client without it, or a stranger speaking the wire, gets in nowhere),
// and the caps that keep a hostile client from making the server hold unbounded memory; the
// handshake from both sides (a server that cannot prove the secret, a recorded answer replayed).
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <mutex>
#include <vector>

#include "comm/hmac_sha256.h"
#include "comm/store_client.h"
#include "comm/store_server.h"
#include "comm/store_wire.h"

namespace tpb {
namespace {

using namespace std::chrono_literals;

std::vector<std::uint8_t> bytes(const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); }
std::string str(const std::vector<std::uint8_t>& v) { return std::string(v.begin(), v.end()); }

c10::intrusive_ptr<StoreClient> client(const StoreServer& s, const std::string& secret) {
  return c10::make_intrusive<StoreClient>(s.address(), s.port(), secret, 5s);
}

// FIPS 180-4 examples (NIST's "abc", the empty string, the 448-bit message, a million 'a') and
// RFC 4231 test cases 1, 2 and 6 (the last with a key longer than a block).
TEST(StoreHmac, Sha256AndHmacMatchThePublishedTestVectors) {
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(hex(hmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(hmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex(hmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  Digest a = sha256("x"), b = a;
  EXPECT_TRUE(sameDigest(a, b));
  b[31] ^= 1;
  EXPECT_FALSE(sameDigest(a, b));
}

TEST(StoreServer, ServesEveryOperationC10dUses) {
  StoreServer server("127.0.0.1", 0, "s3cret");
  EXPECT_EQ(server.address(), "127.0.0.1");
  auto a = client(server, "s3cret"), b = client(server, "s3cret");
  a->set("k", bytes("v"));
  EXPECT_EQ(str(b->get("k")), "v");
  EXPECT_TRUE(b->check({"k"}));
  EXPECT_FALSE(b->check({"k", "missing"}));
  EXPECT_EQ(a->add("n", 3), 3);
  EXPECT_EQ(b->add("n", -5), -2);
  EXPECT_EQ(str(a->compareSet("k", bytes("other"), bytes("w"))), "v");  // no match: unchanged
  EXPECT_EQ(str(a->compareSet("k", bytes("v"), bytes("w"))), "w");
  EXPECT_EQ(str(a->compareSet("new", {}, bytes("x"))), "x");  // missing, expected empty: created
  EXPECT_EQ(b->getNumKeys(), 3);
  EXPECT_TRUE(b->deleteKey("new"));
  EXPECT_FALSE(b->deleteKey("new"));
  // get and wait block until another client sets the key; past the timeout they throw.
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    a->set("late", bytes("here"));
  });
  EXPECT_EQ(str(b->get("late")), "here");
  later.join();
  b->wait({"k", "late"});
  EXPECT_THROW(b->wait({"never"}, 100ms), std::exception);
  EXPECT_THROW(b->add("k", 1), std::exception);  // "w" is not a number
  EXPECT_EQ(str(b->get("k")), "w");               // and the connection is still good after a refusal
}

// The case: on main the rendezvous store admitted anyone who could reach its port.
TEST(StoreServer, AClientWithoutTheSecretIsRefusedAndCannotSetAKey) {
  StoreServer server("127.0.0.1", 0, "the-job-secret");
  EXPECT_THROW(client(server, "a-wrong-secret"), std::exception);
  EXPECT_THROW(client(server, ""), std::exception);
  // A stranger who skips the handshake and sends a set request straight away.
  const int fd = wire::connectTo(server.address(), server.port(), wire::Clock::now() + 5s);
  std::string hello(wire::kHelloSize + wire::kNonceSize, '\0');
  ASSERT_TRUE(wire::readExact(fd, hello.data(), hello.size(), wire::Clock::now() + 5s));
  for (int i = 0; i < 4; ++i) wire::sendMessage(fd, {"s", "stolen", "value"}, wire::Clock::now() + 5s);
  char reply = 0;
  EXPECT_TRUE(!wire::readExact(fd, &reply, 1, wire::Clock::now() + 5s) || reply == wire::kRejected);
  close(fd);
  // A client that holds the secret but talks to a server with another one refuses it too.
  StoreServer impostor("127.0.0.1", 0, "");
  EXPECT_THROW(client(impostor, "the-job-secret"), std::exception);
  auto good = client(server, "the-job-secret");
  EXPECT_FALSE(good->check({"stolen"}));
  EXPECT_EQ(good->getNumKeys(), 0);
}

TEST(StoreServer, CapsOnSizesAndCountsRefuseWhatWouldExceedThem) {
  StoreLimits limits;
  limits.maxKeyBytes = 16;
  limits.maxValueBytes = 64;
  limits.maxKeys = 3;
  limits.maxTotalBytes = 100;
  StoreServer server("127.0.0.1", 0, "k", limits);
  auto c = client(server, "k");
  EXPECT_THROW(c->set(std::string(17, 'k'), bytes("v")), std::exception);
  EXPECT_THROW(c->set("k", bytes(std::string(65, 'v'))), std::exception);
  c->set("a", bytes(std::string(40, 'v')));
  c->set("b", bytes(std::string(40, 'v')));
  EXPECT_THROW(c->set("c", bytes(std::string(40, 'v'))), std::exception);  // 123 bytes > 100
  c->set("a", bytes(std::string(10, 'v')));                                // replacing frees its bytes
  c->set("c", bytes(std::string(40, 'v')));
  EXPECT_THROW(c->set("d", bytes("v")), std::exception);  // a fourth key
  EXPECT_EQ(c->getNumKeys(), 3);
  // A frame that announces more than any request can hold ends the connection before the
  // server reserves it; other clients go on.
  auto raw = client(server, "k");  // a genuine client, then a forged frame on a raw socket of its own
  const int fd = wire::connectTo(server.address(), server.port(), wire::Clock::now() + 5s);
  std::string hello(wire::kHelloSize + wire::kNonceSize, '\0');
  ASSERT_TRUE(wire::readExact(fd, hello.data(), hello.size(), wire::Clock::now() + 5s));
  const std::string cn = wire::randomBytes(wire::kNonceSize);
  const std::string answer = cn + wire::proof("k", "client", hello.substr(wire::kHelloSize), cn);
  ASSERT_TRUE(wire::writeAll(fd, answer.data(), answer.size(), wire::Clock::now() + 5s));
  std::string accepted(1 + wire::kNonceSize, '\0');
  ASSERT_TRUE(wire::readExact(fd, accepted.data(), accepted.size(), wire::Clock::now() + 5s));
  const unsigned char huge[] = {0, 0, 0, 3, 0, 0, 0, 1, 's', 0, 0, 0, 1, 'x', 0xff, 0xff, 0xff, 0xff};
  ASSERT_TRUE(wire::writeAll(fd, huge, sizeof huge, wire::Clock::now() + 5s));
  char byte = 0;
  EXPECT_FALSE(wire::readExact(fd, &byte, 1, wire::Clock::now() + 5s));  // closed, nothing sent
  close(fd);
  EXPECT_EQ(raw->getNumKeys(), 3);
}

TEST(StoreServer, AConnectionThatNeverAnswersTheChallengeIsClosed) {
  StoreLimits limits;
  limits.handshakeTimeout = 200ms;
  StoreServer server("127.0.0.1", 0, "k", limits);
  const int fd = wire::connectTo(server.address(), server.port(), wire::Clock::now() + 5s);
  std::string hello(wire::kHelloSize + wire::kNonceSize, '\0');
  ASSERT_TRUE(wire::readExact(fd, hello.data(), hello.size(), wire::Clock::now() + 5s));
  char byte = 0;
  EXPECT_FALSE(wire::readExact(fd, &byte, 1, wire::Clock::now() + 5s));  // closed by the server
  close(fd);
}

// A local process without the secret opens 1100 connections in a burst and holds them, more than
// the store's connection slots, while the job's ranks connect and work: the ranks are served
// (the oldest unproven connections make room for new ones, and a rank pushed out in its
// handshake connects again). Before, the 1025th connection on was closed unanswered and a rank
// failed with "did not greet".
TEST(StoreServer, AFloodOfStrangersLeavesTheRanksServed) {
  StoreServer server("127.0.0.1", 0, "job-secret");
  std::vector<int> flood;
  std::atomic<bool> stop{false};
  std::mutex floodM;
  const auto floodOnce = [&](int n) {
    for (int i = 0; i < n && !stop; ++i) {
      const int fd = wire::connectTo(server.address(), server.port(), wire::Clock::now() + 5s);
      std::lock_guard<std::mutex> lock(floodM);
      flood.push_back(fd);
    }
  };
  floodOnce(1100);  // the slots are full of strangers before any rank arrives
  std::thread more([&] { floodOnce(1100); });  // and strangers keep coming while the ranks work
  std::vector<std::thread> ranks;
  std::atomic<int> served{0};
  std::vector<std::string> errors(2);
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      try {
        auto c = client(server, "job-secret");
        c->set("rank" + std::to_string(r), bytes("up"));
        c->wait({"rank0", "rank1"});
        if (str(c->get(r == 0 ? "rank1" : "rank0")) == "up") ++served;
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  stop = true;
  more.join();
  EXPECT_EQ(served.load(), 2) << errors[0] << " | " << errors[1];
  for (int fd : flood) close(fd);
}

// Runs /usr/bin/python3 ARGS with the job's secret in its environment, as torch_ddp's children get
// it; returns its output, and its exit status in `status`.
std::string runPython(const std::string& args, const std::string& secret, int& status) {
  const std::string cmd = "TPB_JOB_SECRET='" + secret + "' PYTHONDONTWRITEBYTECODE=1 GLOO_SOCKET_IFNAME=lo " +
                          "timeout -s KILL 120 /usr/bin/python3 " + args + " 2>&1 </dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[256];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  status = p ? pclose(p) : -1;
  return out;
}

std::string where(const StoreServer& s) { return s.address() + " " + std::to_string(s.port()); }

// scripts/tpb_store.py, the client torch_ddp's children use across hosts: it passes the C++
// server's challenge with the job's secret, sets and reads keys the C++ client sees, and with
// another secret is refused before any key is set.
TEST(StoreServer, ThePythonClientOfTorchDdpsChildrenHoldsTheSecretOrGetsNothing) {
  StoreServer server("127.0.0.1", 0, "the-job-secret");
  auto cpp = client(server, "the-job-secret");
  cpp->set("from-cpp", bytes("cpp"));
  cpp->add("n", 40);
  const std::string code =
      "-c \"import os, sys; sys.path.insert(0, '" TPB_SOURCE_DIR "/scripts'); import tpb_store\n"
      "c = tpb_store.Connection(sys.argv[1], int(sys.argv[2]), os.environ['TPB_JOB_SECRET'], 5)\n"
      "c.call([b's', b'from-python', b'py'])\n"
      "print(c.call([b'g', b'from-cpp', b'5000'], 5000)[0].decode(), c.call([b'a', b'n', b'2'])[0].decode())\" ";
  int status = -1;
  const std::string out = runPython(code + where(server), "the-job-secret", status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "cpp 42\n");
  EXPECT_EQ(str(cpp->get("from-python")), "py");
  EXPECT_TRUE(cpp->deleteKey("from-python"));
  const std::string refused = runPython(code + where(server), "a-wrong-secret", status);
  EXPECT_NE(status, 0);
  EXPECT_NE(refused.find("refused this process"), std::string::npos) << refused;
  EXPECT_FALSE(cpp->check({"from-python"}));
}

// The same client as a torch.distributed.Store under PyTorch's ProcessGroupGloo, as
// scripts/torch_ddp.py uses it: two processes meet in the C++ server and all-reduce (1 + 2).
TEST(StoreServer, TwoPythonProcessesMeetThroughItInAGlooProcessGroup) {
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch.distributed";
  StoreServer server("127.0.0.1", 0, "the-job-secret");
  int status = -1;
  const std::string out = runPython(std::string(TPB_SOURCE_DIR "/tests/tpb_store_gloo.py ") + where(server) +
                                        " " TPB_SOURCE_DIR "/scripts",
                                    "the-job-secret", status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "3\n");
}

// ---- the handshake's other half: the client checks the server, and nothing can be replayed -------

// A one-connection server that speaks the handshake's first half as a store does (hello, a fresh
// nonce), reads the client's nonce and proof, and answers kAccepted with whatever `reply` makes of
// the two nonces: a stand-in for a store that does not hold the secret, or replays what it heard.
class FakeStore {
 public:
  using Reply = std::function<std::string(const std::string& serverNonce, const std::string& clientNonce)>;
  explicit FakeStore(Reply reply) : reply_(std::move(reply)) {
    listenFd_ = wire::listenOn("127.0.0.1", 0, address_, port_);
    thread_ = std::thread([this] {
      const int fd = ::accept(listenFd_, nullptr, nullptr);
      if (fd < 0) return;
      const auto deadline = wire::Clock::now() + 5s;
      const std::string nonce = wire::randomBytes(wire::kNonceSize);
      const std::string hello = std::string(wire::kHello, wire::kHelloSize) + nonce;
      std::string answer(2 * wire::kNonceSize, '\0');
      if (wire::writeAll(fd, hello.data(), hello.size(), deadline) &&
          wire::readExact(fd, answer.data(), answer.size(), deadline)) {
        clientNonce_ = answer.substr(0, wire::kNonceSize);
        clientProof_ = answer.substr(wire::kNonceSize);
        const std::string out = std::string(1, wire::kAccepted) + reply_(nonce, clientNonce_);
        wire::writeAll(fd, out.data(), out.size(), deadline);
        char byte = 0;
        wire::readExact(fd, &byte, 1, deadline);  // until the client closes
      }
      close(fd);
    });
  }
  ~FakeStore() {
    shutdown(listenFd_, SHUT_RDWR);
    finish();
    close(listenFd_);
  }
  // Waits for the exchange to end; clientNonce_ and clientProof_ are then the client's.
  void finish() {
    if (thread_.joinable()) thread_.join();
  }
  c10::intrusive_ptr<StoreClient> connect(const std::string& secret) {
    return c10::make_intrusive<StoreClient>(address_, port_, secret, 5s);
  }
  std::string clientNonce_, clientProof_;  // what the client sent (read after finish())

 private:
  Reply reply_;
  int listenFd_ = -1;
  std::string address_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

std::string whyRefused(FakeStore& store, const std::string& secret) {
  try {
    store.connect(secret);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The control first: a fake that proves the secret is taken, so the refusals below are the proof's.
// Then a server that says yes without the secret (random bytes), one that reflects the client's
// own proof back, one under another secret and one that replays the reply of an earlier exchange
// (another client nonce): the client refuses each, naming the store's failure to prove itself.
TEST(StoreHandshake, TheClientRefusesAServerThatDoesNotProveTheSecret) {
  const std::string secret = "the-job-secret";
  {
    FakeStore honest([&](const std::string& sn, const std::string& cn) { return wire::proof(secret, "server", sn, cn); });
    EXPECT_EQ(whyRefused(honest, secret), "");
  }
  const std::string unproven = "did not prove it holds the job secret";
  FakeStore random([](const std::string&, const std::string&) { return wire::randomBytes(wire::kNonceSize); });
  EXPECT_NE(whyRefused(random, secret).find(unproven), std::string::npos);
  FakeStore mirror([&](const std::string& sn, const std::string& cn) { return wire::proof(secret, "client", sn, cn); });
  EXPECT_NE(whyRefused(mirror, secret).find(unproven), std::string::npos);
  FakeStore other([](const std::string& sn, const std::string& cn) { return wire::proof("another", "server", sn, cn); });
  EXPECT_NE(whyRefused(other, secret).find(unproven), std::string::npos);
  // The reply a genuine store gave an earlier client, replayed: right secret, wrong client nonce.
  const std::string earlierClientNonce = wire::randomBytes(wire::kNonceSize);
  FakeStore replay([&](const std::string& sn, const std::string&) {
    return wire::proof(secret, "server", sn, earlierClientNonce);
  });
  EXPECT_NE(whyRefused(replay, secret).find(unproven), std::string::npos);
  replay.finish();
  EXPECT_EQ(replay.clientNonce_.size(), wire::kNonceSize);
  EXPECT_NE(replay.clientNonce_, earlierClientNonce);
}

// The server's half: every connection gets a fresh nonce, so an answer recorded from one
// exchange (a genuine client's nonce and proof) is worthless on the next. A store whose nonce
// were fixed would let a listener on the wire in with a recording.
TEST(StoreHandshake, AClientsRecordedAnswerCannotBeReplayedToTheServer) {
  const std::string secret = "the-job-secret";
  StoreServer server("127.0.0.1", 0, secret);
  const auto deadline = [] { return wire::Clock::now() + 5s; };
  auto greet = [&](int fd) {
    std::string hello(wire::kHelloSize + wire::kNonceSize, '\0');
    EXPECT_TRUE(wire::readExact(fd, hello.data(), hello.size(), deadline()));
    return hello.substr(wire::kHelloSize);
  };
  // The recorded exchange: a client that holds the secret, accepted.
  const int first = wire::connectTo(server.address(), server.port(), deadline());
  const std::string nonce1 = greet(first);
  const std::string cn = wire::randomBytes(wire::kNonceSize);
  const std::string recorded = cn + wire::proof(secret, "client", nonce1, cn);
  ASSERT_TRUE(wire::writeAll(first, recorded.data(), recorded.size(), deadline()));
  char reply = 0;
  ASSERT_TRUE(wire::readExact(first, &reply, 1, deadline()));
  EXPECT_EQ(reply, wire::kAccepted);
  close(first);
  // The replay, on a new connection.
  const int second = wire::connectTo(server.address(), server.port(), deadline());
  const std::string nonce2 = greet(second);
  EXPECT_NE(nonce2, nonce1);
  ASSERT_TRUE(wire::writeAll(second, recorded.data(), recorded.size(), deadline()));
  reply = 0;
  const bool answered = wire::readExact(second, &reply, 1, deadline());
  EXPECT_TRUE(!answered || reply == wire::kRejected) << "the replayed answer was accepted";
  for (int i = 0; i < 2; ++i) wire::sendMessage(second, {"s", "replayed", "value"}, deadline());
  close(second);
  auto good = client(server, secret);
  EXPECT_FALSE(good->check({"replayed"}));
}

}  // namespace
}  // namespace tpb
