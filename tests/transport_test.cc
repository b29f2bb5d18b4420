// Transport semantics: ordering, sizes around the shm ring capacity, concurrent send+recv,
// size mismatches and timeouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

#include "comm/shm/shm_transport.h"
#include "common/error.h"
#include "common/run_id.h"
#include "tests/thread_world.h"

namespace tpb {
namespace {

class TransportTest : public testing::TestWithParam<std::string> {};

std::vector<std::uint8_t> pattern(std::size_t n, int seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i * 31 + seed * 7) & 0xff);
  return v;
}

TEST_P(TransportTest, MessagesArriveInOrderAtEverySize) {
  // Sizes straddle the 64-byte padding and the default 2 MiB shm ring (wrap-around).
  const std::vector<std::size_t> sizes = {1, 63, 64, 65, 4095, 256 << 10, (2 << 20) - 3, (5 << 20) + 17};
  test::runThreads(GetParam(), 2, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    for (int round = 0; round < 2; ++round)
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (t.rank() == 0) {
          auto v = pattern(sizes[i], static_cast<int>(i) + round);
          t.send(1, v.data(), v.size());
        } else {
          std::vector<std::uint8_t> got(sizes[i]);
          t.recv(0, got.data(), got.size());
          ASSERT_EQ(got, pattern(sizes[i], static_cast<int>(i) + round)) << "size " << sizes[i];
        }
      }
  });
}

TEST_P(TransportTest, SendRecvExchangesLargeBuffersWithoutDeadlock) {
  // Both ranks send 9 MiB at once: more than a shm ring holds, so this only finishes if sends
  // and receives progress together.
  const std::size_t n = (9 << 20) + 5;
  test::runThreads(GetParam(), 2, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    const int peer = 1 - t.rank();
    auto out = pattern(n, t.rank());
    std::vector<std::uint8_t> in(n);
    t.sendRecv(peer, out.data(), n, peer, in.data(), n);
    ASSERT_EQ(in, pattern(n, peer));
  });
}

TEST_P(TransportTest, RecvReduceAddsIntoDestination) {
  const std::size_t count = 300001;
  test::runThreads(GetParam(), 3, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    std::vector<float> mine(count);
    std::iota(mine.begin(), mine.end(), static_cast<float>(t.rank()));
    if (t.rank() == 0) {
      auto a = t.irecvReduce(1, mine.data(), count);
      a->wait();
      t.irecvReduce(2, mine.data(), count)->wait();
      for (std::size_t i = 0; i < count; i += 997)
        ASSERT_EQ(mine[i], 3.0f * i + 3.0f) << "element " << i;
    } else {
      t.send(0, mine.data(), count * sizeof(float));
    }
  });
}

TEST_P(TransportTest, BarrierSeparatesPhases) {
  std::atomic<int> arrived{0};
  test::runThreads(GetParam(), 5, [&](CommContext& ctx) {
    for (int round = 1; round <= 3; ++round) {
      arrived.fetch_add(1);
      ctx.transport.barrier();
      ASSERT_GE(arrived.load(), 5 * round);
      ctx.transport.barrier();
    }
  });
}

TEST_P(TransportTest, WaitingOnAnAbsentPeerTimesOut) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(test::runThreads(
                   GetParam(), 2,
                   [&](CommContext& ctx) {
                     if (ctx.rank() == 1) {
                       float x = 0;
                       ctx.transport.recv(0, &x, sizeof x);  // rank 0 never sends
                     }
                   },
                   std::chrono::milliseconds(500)),
               Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

INSTANTIATE_TEST_SUITE_P(Cpu, TransportTest, testing::ValuesIn(test::cpuTransports()));

TEST(ShmTransport, SizeMismatchIsAnErrorNotCorruption) {
  try {
    test::runThreads("shm", 2, [&](CommContext& ctx) {
      std::vector<char> buf(100);
      if (ctx.rank() == 0) ctx.transport.send(1, buf.data(), 100);
      else ctx.transport.recv(0, buf.data(), 64);
    }, std::chrono::milliseconds(2000));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sent 100 bytes"), std::string::npos) << e.what();
  }
}

// Forwarding: rank 0 sends, rank 1 forwards (adding its own values, or copying) to rank 2.
// Sizes straddle the ring capacity and its wrap-around; rank 1 also keeps what it forwarded.
TEST(ShmTransport, ForwardingReducesOrCopiesWhileItSendsOn) {
  const std::vector<std::size_t> counts = {1, 15, 16, 17, 300001, (3u << 20) / 4 + 5};
  auto value = [](int rank, std::size_t i) { return static_cast<float>((i * 7 + rank * 13) % 1000); };
  for (bool reduce : {true, false}) {
    SCOPED_TRACE(reduce ? "irecvReduceSend" : "irecvCopySend");
    test::runThreads("shm", 3, [&](CommContext& ctx) {
      Transport& t = ctx.transport;
      ASSERT_GT(t.fusedForwardLimit(), 0u);
      for (std::size_t count : counts) {
        std::vector<float> mine(count), got(count, -1.0f);
        for (std::size_t i = 0; i < count; ++i) mine[i] = value(t.rank(), i);
        auto expect = [&](std::size_t i) { return value(0, i) + (reduce ? value(1, i) : 0.0f); };
        if (t.rank() == 0) {
          t.send(1, mine.data(), count * sizeof(float));
        } else if (t.rank() == 1) {
          auto q = reduce ? t.irecvReduceSend(0, mine.data(), got.data(), count, 2)
                          : t.irecvCopySend(0, got.data(), count, 2);
          q->wait();
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count; ++i) wrong += got[i] != expect(i);
          EXPECT_EQ(wrong, 0u) << "kept values, count " << count;
          if (reduce) {
            for (std::size_t i = 0; i < count; ++i) wrong += mine[i] != value(1, i);
            EXPECT_EQ(wrong, 0u) << "the addend changed, count " << count;
          }
        } else {
          t.recv(1, got.data(), count * sizeof(float));
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count; ++i) wrong += got[i] != expect(i);
          EXPECT_EQ(wrong, 0u) << "forwarded values, count " << count;
        }
      }
    });
  }
}

// Two ranks forwarding to each other at once (from == to), keeping in place (keep == local):
// the ring allreduce's N=2 pattern, at the largest message fusedForwardLimit() allows (a larger
// first send could not finish before the peer's forward, queued behind its own, drains it).
TEST(ShmTransport, ForwardingBothWaysInPlace) {
  test::runThreads("shm", 2, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    const int peer = 1 - t.rank();
    const std::size_t count = t.fusedForwardLimit() / sizeof(float) - 3;
    ASSERT_GT(count, 200000u);
    std::vector<float> first(count, static_cast<float>(t.rank() + 1)), acc(count, 10.0f), last(count);
    auto s = t.isend(peer, first.data(), count * sizeof(float));
    auto f = t.irecvReduceSend(peer, acc.data(), acc.data(), count, peer);
    auto r = t.irecv(peer, last.data(), count * sizeof(float));
    s->wait();
    f->wait();
    r->wait();
    const float kept = 10.0f + static_cast<float>(peer + 1), theirs = 10.0f + static_cast<float>(t.rank() + 1);
    EXPECT_EQ(std::count(acc.begin(), acc.end(), kept), static_cast<std::ptrdiff_t>(count));
    EXPECT_EQ(std::count(last.begin(), last.end(), theirs), static_cast<std::ptrdiff_t>(count));
  });
}

TEST(ShmTransport, ForwardingSizeMismatchIsAnError) {
  EXPECT_THROW(test::runThreads("shm", 3, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    std::vector<float> v(64, 1.0f);
    if (t.rank() == 0) t.send(1, v.data(), 64 * sizeof(float));
    if (t.rank() == 1) t.irecvCopySend(0, v.data(), 32, 2)->wait();
  }, std::chrono::seconds(5)), Error);
}

// Two shm ranks as threads, built with `options` (runThreads takes the transport's defaults).
void runShmPair(const ShmOptions& options, const std::function<void(ShmTransport&)>& body,
                std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  test::runThreadsWith(
      2,
      [&](Store& store, const std::string& runId, int r) {
        return std::make_unique<ShmTransport>(store, runId, r, 2, timeout, options);
      },
      [&](CommContext& ctx) { body(static_cast<ShmTransport&>(ctx.transport)); });
}

// A pipeline stage sends its activations and computes the next micro-batch without calling
// the transport. With single copy the receiver reads the message meanwhile; through the ring
// only what the ring took at isend arrives, and the rest waits for the sender's next call.
TEST(ShmTransport, ASingleCopySendArrivesWhileItsSenderComputes) {
  const std::size_t bytes = 8u << 20;  // four rings' worth
  const auto computes = std::chrono::milliseconds(1500);
  for (bool single : {true, false}) {
    SCOPED_TRACE(single ? "single copy" : "through the ring");
    ShmOptions o;
    o.singleCopy = single;
    std::atomic<bool> sent{false};
    double arrivedS = -1;
    runShmPair(o, [&](ShmTransport& t) {
      if (single && !t.singleCopyTo(1 - t.rank())) GTEST_SKIP() << "this kernel refuses process_vm_readv between ranks";
      EXPECT_EQ(t.singleCopyTo(1 - t.rank()), single);
      if (t.rank() == 0) {
        auto v = pattern(bytes, 3);
        auto req = t.isend(1, v.data(), bytes);
        const auto start = std::chrono::steady_clock::now();
        sent = true;
        std::this_thread::sleep_until(start + computes);  // computing: no transport call
        req->wait();
      } else {
        std::vector<std::uint8_t> got(bytes);
        while (!sent) std::this_thread::yield();
        const auto start = std::chrono::steady_clock::now();
        t.recv(0, got.data(), bytes);
        arrivedS = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_EQ(got, pattern(bytes, 3));
      }
    });
    if (single) EXPECT_LT(arrivedS, 0.5 * computes.count() / 1000.0) << "the receiver waited for the sender";
    else EXPECT_GT(arrivedS, 0.5 * computes.count() / 1000.0) << "the ring held the whole message?";
  }
}

// Single-copy and ring messages posted back to back to one peer arrive in order, whole, and
// the small ones do not wait for the large ones before them to be read; a reduce reads too.
TEST(ShmTransport, SingleCopyAndRingMessagesKeepTheirOrder) {
  const std::vector<std::size_t> sizes = {3u << 20, 100, (1u << 20) + 64, 64, 6u << 20, 1};
  runShmPair({}, [&](ShmTransport& t) {
    if (!t.singleCopyTo(1 - t.rank())) GTEST_SKIP() << "this kernel refuses process_vm_readv between ranks";
    ASSERT_EQ(t.singleCopyMin(), 1u << 20);
    if (t.rank() == 0) {
      std::vector<std::vector<std::uint8_t>> out;
      for (std::size_t i = 0; i < sizes.size(); ++i) out.push_back(pattern(sizes[i], static_cast<int>(i)));
      std::vector<std::unique_ptr<Request>> reqs;
      for (auto& v : out) reqs.push_back(t.isend(1, v.data(), v.size()));
      std::vector<float> ones((2u << 20) / sizeof(float), 1.0f);
      reqs.push_back(t.isend(1, ones.data(), ones.size() * sizeof(float)));
      for (auto& r : reqs) r->wait();
    } else {
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::vector<std::uint8_t> got(sizes[i]);
        t.recv(0, got.data(), got.size());
        ASSERT_EQ(got, pattern(sizes[i], static_cast<int>(i))) << "message " << i << " of " << sizes[i] << " bytes";
      }
      std::vector<float> acc((2u << 20) / sizeof(float), 2.0f);
      t.irecvReduce(0, acc.data(), acc.size())->wait();
      EXPECT_EQ(std::count(acc.begin(), acc.end(), 3.0f), static_cast<std::ptrdiff_t>(acc.size()));
    }
  });
}

// The receiver names the mismatch; the sender, whose message is never read, times out.
TEST(ShmTransport, ASingleCopySizeMismatchIsAnError) {
  runShmPair({}, [&](ShmTransport& t) {
    std::vector<char> buf(4u << 20);
    if (t.rank() == 0) {
      EXPECT_THROW(t.send(1, buf.data(), buf.size()), TimeoutError);
      return;
    }
    try {
      t.recv(0, buf.data(), 2u << 20);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sent 4194304 bytes"), std::string::npos) << e.what();
    }
  }, std::chrono::milliseconds(2000));
}

TEST(GlooTransport, DoesNotForward) {
  test::runThreads("gloo", 2, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    EXPECT_EQ(t.fusedForwardLimit(), 0u);
    float x = 0;
    EXPECT_THROW(t.irecvCopySend(1 - t.rank(), &x, 1, 1 - t.rank()), Error);
  });
}

// Once a peer has gone, every later send or receive to it fails naming the peer's rank: gloo
// throws the first at the wait and, the pair now broken, the next ones already where they are
// posted. Ranks on one host share its address, so the address in gloo's own message is not enough.
TEST(GlooTransport, APeerThatLeftIsNamedByRankAtWaitAndAtPost) {
  auto store = Store::local();
  const std::string runId = makeRunId();
  std::atomic<bool> gone{false};
  std::vector<std::string> errors;
  std::thread peer([&] {
    auto t = findTransport("gloo").make(TransportArgs{*store, runId, "127.0.0.1", 1, 2, 2, Device::Cpu,
                                                      std::chrono::seconds(10)});
    float x = 1;
    t->send(0, &x, sizeof x);
    t.reset();  // closes its sockets: rank 0 sees the pair fail
    gone = true;
  });
  auto t = findTransport("gloo").make(TransportArgs{*store, runId, "127.0.0.1", 0, 2, 2, Device::Cpu,
                                                    std::chrono::seconds(10)});
  float x = 0;
  t->recv(1, &x, sizeof x);
  peer.join();
  ASSERT_TRUE(gone);
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      if (attempt % 2 == 0) t->recv(1, &x, sizeof x);
      else t->send(1, &x, sizeof x);
      ADD_FAILURE() << "attempt " << attempt << " with rank 1 gone did not fail";
    } catch (const std::exception& e) {  // gloo's own errors are no tpb::Error
      errors.push_back(e.what());
    }
  }
  for (const std::string& e : errors) EXPECT_NE(e.find("rank 1 failed"), std::string::npos) << e;
}

TEST(ShmTransport, NoSegmentNameSurvivesSetup) {
  std::string runId;
  test::runThreads("shm", 3, [&](CommContext& ctx) {
    if (ctx.rank() == 0) runId = ctx.runId;
    ctx.transport.barrier();
    for (int r = 0; r < 3; ++r) {
      const std::string path = "/dev/shm" + ShmTransport::segmentName(ctx.runId, r);
      EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " still exists after setup";
    }
  });
}

// What a point killed during shm setup leaves (the names exist until every rank has attached):
// the transport's cleanup capability, which the launcher calls after every launch, removes them.
// Transports with nothing to clean up have no cleanup.
TEST(TransportCapabilities, ShmCleanupRemovesTheNamesAKilledPointLeaves) {
  const std::string runId = makeRunId() + "-cleanup";
  const int world = 3;
  for (int r = 0; r < world; ++r) {
    const int fd = shm_open(ShmTransport::segmentName(runId, r).c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    close(fd);
  }
  auto exists = [&](int r) { return access(("/dev/shm" + ShmTransport::segmentName(runId, r)).c_str(), F_OK) == 0; };
  ASSERT_TRUE(exists(0));
  const TransportInfo& shm = findTransport("shm");
  ASSERT_TRUE(shm.cleanup) << "shm must offer a cleanup";
  shm.cleanup(runId, world);
  for (int r = 0; r < world; ++r) EXPECT_FALSE(exists(r)) << "rank " << r << "'s segment survived the cleanup";
  shm.cleanup(runId, world);  // nothing left: still fine
  EXPECT_FALSE(findTransport("gloo").cleanup) << "gloo leaves nothing on the node";
}

// The timer capability: CPU transports time with the steady clock, around the calls.
TEST(TransportCapabilities, CpuTransportsTimeWithTheSteadyClock) {
  for (const std::string name : {"shm", "gloo"}) {
    test::runThreads(name, 1, [&](CommContext& ctx) {
      const auto timer = ctx.transport.makeTimer();
      EXPECT_STREQ(timer->method(), "steady_clock");
      timer->start();
      usleep(20000);
      const double us = timer->stopUs();
      EXPECT_GE(us, 20000.0);
      EXPECT_LT(us, 2e6);
    });
  }
}

}  // namespace
}  // namespace tpb
