// Exact traffic accounting: every transport counts what it posts, and every from-scratch
// algorithm moves exactly what the closed form in its registry entry says (written beside the
// algorithm, core/algo_cost.h), per rank, over N in {1,2,3,4,5,8} and awkward counts. A
// from-scratch algorithm whose entry has no closed form fails the suite, so a new one has to
// state its cost.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/registry.h"
#include "algorithms/allreduce_ring.h"
#include "tests/exact_sums.h"
#include "tests/thread_world.h"
#include "tests/train_util.h"

namespace tpb {
namespace {

// An allreduce's closed form, from its registry entry (null where it states none).
ExactTraffic closedFormOf(const std::string& algo) { return findAllreduce("--algos", algo).traffic; }

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

using test::str;

// ---- the transports count --------------------------------------------------------------------

class TransportTraffic : public testing::TestWithParam<std::string> {};

TEST_P(TransportTraffic, CountsPostsNotZeroByteMessages) {
  std::vector<Traffic> seen(2);
  test::runThreads(GetParam(), 2, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    const Traffic start = t.traffic();
    std::vector<char> a(100), b(7);
    if (ctx.rank() == 0) {
      t.send(1, a.data(), 100);
      t.send(1, b.data(), 7);
      t.send(1, a.data(), 0);  // a no-op: not counted
      t.recv(1, b.data(), 7);
    } else {
      t.recv(0, a.data(), 100);
      t.recv(0, b.data(), 7);
      t.recv(0, a.data(), 0);
      t.send(0, b.data(), 7);
    }
    seen[ctx.rank()] = t.traffic() - start;
  });
  EXPECT_EQ(seen[0], (Traffic{107, 7, 2, 1})) << str(seen[0]);
  EXPECT_EQ(seen[1], (Traffic{7, 107, 1, 2})) << str(seen[1]);
}

INSTANTIATE_TEST_SUITE_P(All, TransportTraffic, testing::ValuesIn(test::cpuTransports()));

TEST(ShmTraffic, ForwardingCountsOneReceiveAndOneSend) {
  // 0 -> 1 -> 2: rank 1 forwards with irecvCopySend, then with irecvReduceSend.
  std::vector<Traffic> seen(3);
  test::runThreads("shm", 3, [&](CommContext& ctx) {
    Transport& t = ctx.transport;
    const Traffic start = t.traffic();
    std::vector<float> x(33, 1.0f), y(33);
    if (ctx.rank() == 0) {
      t.send(1, x.data(), 33 * sizeof(float));
      t.send(1, x.data(), 33 * sizeof(float));
    } else if (ctx.rank() == 1) {
      t.irecvCopySend(0, y.data(), 33, 2)->wait();
      t.irecvReduceSend(0, x.data(), nullptr, 33, 2)->wait();
    } else {
      t.recv(1, y.data(), 33 * sizeof(float));
      t.recv(1, y.data(), 33 * sizeof(float));
    }
    seen[ctx.rank()] = t.traffic() - start;
  });
  EXPECT_EQ(seen[0], (Traffic{264, 0, 2, 0})) << str(seen[0]);
  EXPECT_EQ(seen[1], (Traffic{264, 264, 2, 2})) << str(seen[1]);
  EXPECT_EQ(seen[2], (Traffic{0, 264, 0, 2})) << str(seen[2]);
}

// ---- every from-scratch allreduce against its closed form -------------------------------------

struct Case {
  std::string algo, transport;
  int n;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.algo << " over " << c.transport << ", N=" << c.n; }
std::string caseName(const testing::TestParamInfo<Case>& info) {
  return info.param.algo + "_" + info.param.transport + "_N" + std::to_string(info.param.n);
}

std::vector<Case> fromScratchCases() {
  std::vector<Case> cases;
  for (const auto& a : allreduceAlgos()) {
    if (a.origin != Origin::FromScratch) continue;
    for (const std::string& transport : test::cpuTransports())
      for (int n : {1, 2, 3, 4, 5, 8})
        if (!a.needsSymmetricMemory || transport == "shm") cases.push_back({a.name, transport, n});
  }
  return cases;
}

class AllreduceTraffic : public testing::TestWithParam<Case> {};

TEST_P(AllreduceTraffic, MatchesClosedForm) {
  const Case c = GetParam();
  const ExactTraffic form = closedFormOf(c.algo);
  ASSERT_TRUE(form) << c.algo << " is from scratch but its entry has no closed form (traffic)";
  const AllreduceAlgo& algo = findAllreduce("--algos", c.algo);
  const auto& make = algo.makeChunked;
  ASSERT_TRUE(make) << c.algo << " has no makeChunked";
  // 13440 = 16 * 840 floats divides into N aligned segments for every N here: the textbook case.
  const std::vector<std::size_t> counts = {0, 1, 7, 100003, 13440};
  const std::vector<std::size_t> chunks = {256, 4096, 512u << 10};
  std::mutex mu;
  std::vector<std::string> failures;
  test::runThreads(c.transport, c.n, [&](CommContext& ctx) {
    for (std::size_t count : counts)
      for (std::size_t chunk : chunks) {
        test::AlgoBuffer buf(ctx.transport, count, algo.needsSymmetricMemory);
        std::fill(buf.data(), buf.data() + count, 1.0f);
        auto ar = make(ctx, buf.data(), count, chunk);
        const Traffic before = ctx.transport.traffic();
        ar->run();
        const Traffic got = ctx.transport.traffic() - before;
        const Traffic want = form(ctx.size(), ctx.rank(), 0, count, chunk);
        if (got != want) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back("rank " + std::to_string(ctx.rank()) + " count " + std::to_string(count) +
                             " chunk " + std::to_string(chunk) + ": got " + str(got) + "; want " + str(want));
        }
      }
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

INSTANTIATE_TEST_SUITE_P(All, AllreduceTraffic, testing::ValuesIn(fromScratchCases()), caseName);

class CollectiveTraffic : public testing::TestWithParam<Case> {};

TEST_P(CollectiveTraffic, MatchesClosedForm) {
  const Case c = GetParam();  // algo holds "op name"
  const std::string opName = c.algo.substr(0, c.algo.find(' '));
  const CollectiveOp& op = findOp("--op", opName);
  const CollectiveAlgo& algo = findCollective("--algos", opName, c.algo.substr(c.algo.find(' ') + 1));
  ASSERT_TRUE(algo.traffic) << c.algo << " is from scratch but its entry has no closed form (traffic)";
  std::mutex mu;
  std::vector<std::string> failures;
  test::runThreads(c.transport, c.n, [&](CommContext& ctx) {
    const int n = ctx.size();
    for (std::size_t asked : {0, 1, 7, 100003, 13440})
      for (std::size_t chunk : {256, 512 << 10})
        for (int root : {0, n - 1}) {
          const std::size_t count = op.roundCount(asked, n);
          std::vector<float> in(count + 1, 1.0f), out(count + 1);
          CollectiveArgs args;
          args.send = in.data();
          args.recv = out.data();
          args.count = count;
          args.root = root;
          args.chunkBytes = chunk;
          auto coll = algo.make(ctx, args);
          const Traffic before = ctx.transport.traffic();
          coll->run();
          const Traffic got = ctx.transport.traffic() - before;
          const Traffic want = algo.traffic(n, ctx.rank(), root, count, chunk);
          if (got != want) {
            std::lock_guard<std::mutex> lock(mu);
            failures.push_back("rank " + std::to_string(ctx.rank()) + " count " + std::to_string(count) + " chunk " +
                               std::to_string(chunk) + " root " + std::to_string(root) + ": got " + str(got) +
                               "; want " + str(want));
          }
        }
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

std::vector<Case> fromScratchCollectiveCases() {
  std::vector<Case> cases;
  for (const auto& a : collectiveAlgos()) {
    if (a.origin != Origin::FromScratch || a.op == "allreduce") continue;  // allreduce: above
    for (const std::string& transport : test::cpuTransports())
      for (int n : {1, 2, 3, 4, 5, 8}) cases.push_back({a.op + " " + a.name, transport, n});
  }
  return cases;
}

std::string collectiveCaseName(const testing::TestParamInfo<Case>& info) {
  std::string name = info.param.algo;
  for (char& ch : name)
    if (ch == ' ') ch = '_';
  return name + "_" + info.param.transport + "_N" + std::to_string(info.param.n);
}

INSTANTIATE_TEST_SUITE_P(All, CollectiveTraffic, testing::ValuesIn(fromScratchCollectiveCases()), collectiveCaseName);

// The textbook forms, stated independently of the closed forms' segmentation.
TEST(AllreduceTrafficClosedForm, RingIsTwoNMinusOneOverNTimesS) {
  const ExactTraffic ring = closedFormOf("ring"), paramServer = closedFormOf("param_server"),
                     halvingDoubling = closedFormOf("halving_doubling");
  ASSERT_TRUE(ring && paramServer && halvingDoubling);
  const std::size_t count = 13440, bytes = count * sizeof(float);
  for (int n : {2, 3, 4, 5, 8})
    for (int r = 0; r < n; ++r) {
      const Traffic t = ring(n, r, 0, count, 4096);
      EXPECT_EQ(t.bytesSent, 2 * (n - 1) * bytes / n);
      EXPECT_EQ(t.bytesRecv, 2 * (n - 1) * bytes / n);
      EXPECT_EQ(t.msgsSent, 2u * (n - 1) * ceilDiv(count / n, 1024));
    }
  EXPECT_EQ(paramServer(5, 0, 0, count, 4096).bytesRecv, 4 * bytes);
  for (int n : {2, 4, 8})
    for (int r = 0; r < n; ++r) EXPECT_EQ(halvingDoubling(n, r, 0, count, 4096).bytesSent, 2 * (n - 1) * bytes / n);
  EXPECT_EQ(paramServer(5, 3, 0, count, 4096).bytesSent, bytes);
}

// ---- training epochs record what the strategy moved --------------------------------------------

TEST(EpochTraffic, ParamServerMovesTheGradientAndTheWeightsPerStep) {
  const int n = 3;
  TrainConfig cfg = test::smallTrainConfig("param_server", n, 16);
  std::vector<EpochStats> epochs;
  std::size_t params = 0;
  test::runThreads("shm", n, [&](CommContext& ctx) {
    auto r = findStrategy("--strategy", "param_server").run(ctx, cfg, [&](const EpochStats& e) { epochs.push_back(e); });
    if (ctx.rank() == 0) params = r.params.size();
  });
  ASSERT_EQ(epochs.size(), 1u);
  const EpochStats& e = epochs[0];
  ASSERT_EQ(e.rankTraffic.size(), static_cast<std::size_t>(n));
  const std::uint64_t steps = static_cast<std::uint64_t>(cfg.maxSteps), bytes = params * sizeof(float);
  ASSERT_GT(bytes, 0u);
  EXPECT_EQ(e.rankTraffic[0], (Traffic{2 * steps * bytes, 2 * steps * bytes, 2 * steps, 2 * steps}))
      << str(e.rankTraffic[0]);
  for (int r = 1; r < n; ++r)
    EXPECT_EQ(e.rankTraffic[r], (Traffic{steps * bytes, steps * bytes, steps, steps})) << str(e.rankTraffic[r]);
}

TEST(EpochTraffic, RingAllReduceMovesOneRingPerStep) {
  const int n = 3;
  TrainConfig cfg = test::smallTrainConfig("ring_all_reduce", n, 16);
  std::vector<EpochStats> epochs;
  std::size_t params = 0;
  test::runThreads("shm", n, [&](CommContext& ctx) {
    auto r = findStrategy("--strategy", "ring_all_reduce").run(ctx, cfg, [&](const EpochStats& e) { epochs.push_back(e); });
    if (ctx.rank() == 0) params = r.params.size();
  });
  ASSERT_EQ(epochs.size(), 1u);
  ASSERT_EQ(epochs[0].rankTraffic.size(), static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    // The strategy's ring runs at the default chunk (TPB_RING_CHUNK_KB when set).
    const Traffic one = closedFormOf("ring")(n, r, 0, params, RingAllreduce::defaultChunkBytes(Device::Cpu));
    const std::uint64_t k = static_cast<std::uint64_t>(cfg.maxSteps);
    const Traffic want{k * one.bytesSent, k * one.bytesRecv, k * one.msgsSent, k * one.msgsRecv};
    EXPECT_EQ(epochs[0].rankTraffic[r], want) << "rank " << r << ": " << str(epochs[0].rankTraffic[r]);
  }
}

}  // namespace
}  // namespace tpb
