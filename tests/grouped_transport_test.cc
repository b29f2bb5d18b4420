// The grouped transport keeps NCCL's semantics (comm/grouped/grouped_transport.h): posts wait
// for a wait or flush, a send waits for its receive's group, and each rank runs one group at a
// time. Each property is shown against shm, where the same program behaves the other way, so
// these tests fail if the transport turned eager.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/error.h"
#include "tests/thread_world.h"

namespace tpb {
namespace {

using namespace std::chrono_literals;

// Both ranks send one byte and only then receive. shm buffers the send and returns; under
// NCCL's semantics each send waits for a receive the peer has not posted, so both wait forever,
// which the transport's timeout turns into an error naming a peer.
void sendThenReceive(const std::string& transport) {
  test::runThreads(
      transport, 2,
      [](CommContext& ctx) {
        char out = 1, in = 0;
        const int peer = 1 - ctx.rank();
        ctx.transport.send(peer, &out, 1);
        ctx.transport.recv(peer, &in, 1);
      },
      1000ms);
}

TEST(GroupedTransport, ASendWaitsForItsReceive) {
  EXPECT_NO_THROW(sendThenReceive("shm"));
  try {
    sendThenReceive("grouped");
    FAIL() << "both ranks sent before receiving and the grouped transport let them";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("rank"), std::string::npos) << e.what();
  }
}

// A posted send moves nothing until a wait or flush() launches it: rank 1's receive cannot
// finish while rank 0 holds its send unlaunched, and finishes once rank 0 flushes.
bool receivedBeforeFlush(const std::string& transport) {
  std::atomic<bool> received{false}, early{false};
  test::runThreads(transport, 2, [&](CommContext& ctx) {
    int v = 7;
    if (ctx.rank() == 0) {
      auto r = ctx.transport.isend(1, &v, sizeof v);
      std::this_thread::sleep_for(300ms);  // long enough for an eager send to arrive
      early = received.load();
      ctx.transport.flush();
      r->wait();
    } else {
      int got = 0;
      ctx.transport.recv(0, &got, sizeof got);
      EXPECT_EQ(got, 7);
      received = true;
    }
  });
  EXPECT_TRUE(received.load());
  return early.load();
}

TEST(GroupedTransport, PostsWaitForAFlush) {
  EXPECT_TRUE(receivedBeforeFlush("shm"));
  EXPECT_FALSE(receivedBeforeFlush("grouped"));
}

// One group at a time per rank: rank 0 launches a send to rank 1, then a receive from rank 2.
// Rank 2's send needs that receive running, which waits behind the send to rank 1, and rank 1
// posts its receive only after rank 2's send has finished: a cycle under NCCL's semantics, a
// plain sequence on shm.
void streamOrderCycle(const std::string& transport) {
  std::atomic<bool> sentByTwo{false};
  test::runThreads(
      transport, 3,
      [&](CommContext& ctx) {
        char b = 1;
        Transport& t = ctx.transport;
        if (ctx.rank() == 0) {
          auto s = t.isend(1, &b, 1);
          t.flush();
          t.recv(2, &b, 1);
          s->wait();
        } else if (ctx.rank() == 2) {
          t.send(0, &b, 1);
          sentByTwo = true;
        } else {
          const auto deadline = std::chrono::steady_clock::now() + 3s;
          while (!sentByTwo && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
          t.recv(0, &b, 1);
        }
      },
      1000ms);
}

TEST(GroupedTransport, EachRankRunsOneGroupAtATime) {
  EXPECT_NO_THROW(streamOrderCycle("shm"));
  EXPECT_THROW(streamOrderCycle("grouped"), TimeoutError);
}

// A group's operations progress together, as NCCL's do. Rank 1's one group sends X, receives Y
// and sends Z, where rank 0 sends Y only after receiving X, and receives Z in its second group:
// Z's receiver starts only once X has arrived, so the group must move X while it waits to hear
// that Z's receive is running. (The parameter server's chunks at 1 MiB take this shape.) The
// messages are larger than shm moves in one step, so X needs progress to arrive.
TEST(GroupedTransport, AGroupMovesEveryOperationWhileItWaits) {
  const std::size_t n = 1u << 20;
  test::runThreads(
      "grouped", 2,
      [&](CommContext& ctx) {
        Transport& t = ctx.transport;
        std::vector<char> x(n, 'x'), y(n, 'y'), z(n, 'z'), in(n);
        if (ctx.rank() == 1) {
          auto sx = t.isend(0, x.data(), n);
          auto ry = t.irecv(0, in.data(), n);
          auto sz = t.isend(0, z.data(), n);
          ry->wait();
          sx->wait();
          sz->wait();
          EXPECT_EQ(in, y);
        } else {
          t.recv(1, in.data(), n);
          EXPECT_EQ(in, x);
          auto sy = t.isend(1, y.data(), n);
          t.recv(1, in.data(), n);
          sy->wait();
          EXPECT_EQ(in, z);
        }
      },
      2000ms);
}

}  // namespace
}  // namespace tpb
