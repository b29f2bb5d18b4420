// The shm transport's timed path allocates nothing once warm: this binary counts every call of
// the global operator new per thread, and each rank of a thread world posts sends, receives,
// reductions and forwarding ops over shm, first to warm up, then counted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <vector>

#include "comm/transport.h"
#include "tests/thread_world.h"

namespace {
thread_local std::size_t tAllocations = 0;
}  // namespace

// Replaces the global allocation functions for the whole test binary; they only count.
void* operator new(std::size_t n) {
  ++tAllocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// GCC at -O1 takes free() inside a replaced operator delete for a mismatch with the operator new
// at the call site (-Wmismatched-new-delete); the operator new above is malloc's, so it is not one.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace tpb {
namespace {

// One round of every kind of post a ring or a parameter server makes, between ring neighbours.
void exchange(Transport& t, std::vector<float>& a, std::vector<float>& b, std::vector<float>& c) {
  const int next = (t.rank() + 1) % t.size(), prev = (t.rank() + t.size() - 1) % t.size();
  const std::size_t count = a.size();
  t.sendRecv(next, a.data(), count * sizeof(float), prev, b.data(), count * sizeof(float));
  auto s = t.isend(next, a.data(), count * sizeof(float));
  auto r = t.irecvReduce(prev, b.data(), count);
  s->wait();
  r->wait();
  // A one-hop forward: each rank's plain send is what its next rank forwards, and the forwarded
  // sum is what the rank after that receives.
  auto head = t.isend(next, a.data(), count * sizeof(float));
  auto f = t.irecvReduceSend(prev, a.data(), c.data(), count, next);
  auto tail = t.irecv(prev, b.data(), count * sizeof(float));
  head->wait();
  tail->wait();
  f->wait();
}

TEST(ShmTransport, PostingAllocatesNothingOnceWarm) {
  for (std::size_t bytes : {std::size_t(4) << 10, std::size_t(64) << 10}) {
    SCOPED_TRACE(std::to_string(bytes) + " bytes");
    std::vector<std::size_t> counted(3, 1);
    test::runThreads("shm", 3, [&](CommContext& ctx) {
      Transport& t = ctx.transport;
      std::vector<float> a(bytes / sizeof(float), 1.0f), b(a.size()), c(a.size());
      for (int i = 0; i < 20; ++i) exchange(t, a, b, c);
      t.barrier();
      const std::size_t before = tAllocations;
      for (int i = 0; i < 200; ++i) exchange(t, a, b, c);
      counted[t.rank()] = tAllocations - before;
    });
    for (int r = 0; r < 3; ++r) EXPECT_EQ(counted[r], 0u) << "rank " << r << " allocated while posting";
  }
}

// The counter itself works: a plain allocation on this thread is seen.
TEST(ShmTransport, AllocationCounterCountsThisThread) {
  const std::size_t before = tAllocations;
  auto* p = new std::vector<int>(10);
  delete p;
  EXPECT_GE(tAllocations - before, 2u);
}

}  // namespace
}  // namespace tpb
