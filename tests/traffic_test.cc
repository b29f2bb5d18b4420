// Exact traffic accounting: every transport counts what it posts, and every from-scratch
// algorithm moves exactly what its closed form says, per rank, over N in {1,2,3,4,5,8} and
// awkward counts. A from-scratch algorithm without a closed form here fails the suite, so a new
// one has to state its cost.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/registry.h"
#include "strategies/ring_allreduce.h"
#include "tests/thread_world.h"
#include "tests/train_util.h"

namespace tpb {
namespace {

using Expected = std::function<Traffic(int n, int rank, std::size_t count, std::size_t chunkBytes)>;

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Adds `count` floats sent (or received) in `msgs` non-empty messages.
void addSend(Traffic& t, std::size_t floats, std::size_t msgs) {
  t.bytesSent += floats * sizeof(float);
  t.msgsSent += msgs;
}
void addRecv(Traffic& t, std::size_t floats, std::size_t msgs) {
  t.bytesRecv += floats * sizeof(float);
  t.msgsRecv += msgs;
}

// The ring's segmentation as strategies/ring_allreduce.cc documents it: N segments of
// ceil(count/N) floats rounded up to 16 (64-byte lines), the last ones shorter or empty, each
// cut into the same number of chunks of chunkBytes (at least 16 floats). Returns per segment
// its floats and its non-empty chunks.
struct Segment {
  std::size_t floats = 0, chunks = 0;
};
std::vector<Segment> ringSegments(int n, std::size_t count, std::size_t chunkBytes) {
  const std::size_t segFloats = ceilDiv(ceilDiv(count, n), 16) * 16;
  const std::size_t chunkFloats = std::max<std::size_t>(16, chunkBytes / sizeof(float) / 16 * 16);
  std::vector<Segment> segs(n);
  for (int s = 0; s < n; ++s) {
    const std::size_t begin = std::min(s * segFloats, count), end = std::min(begin + segFloats, count);
    segs[s] = {end - begin, ceilDiv(end - begin, chunkFloats)};
  }
  return segs;
}

// Ring: reduce-scatter sends every segment but (r+1) and receives every one but r; all-gather
// sends every one but (r+2) and receives every one but (r+1). With equal segments that is
// 2(N-1)/N * S bytes each way in 2(N-1) * chunks messages.
Traffic ringTraffic(int n, int r, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if (n == 1) return t;
  const auto segs = ringSegments(n, count, chunkBytes);
  for (int s = 0; s < n; ++s) {
    const Segment& g = segs[s];
    if (s != (r + 1) % n) addSend(t, g.floats, g.chunks), addRecv(t, g.floats, g.chunks);
    if (s != (r + 2) % n) addSend(t, g.floats, g.chunks);
    if (s != r) addRecv(t, g.floats, g.chunks);
  }
  return t;
}

// Parameter server: the root receives (N-1)*S and sends (N-1)*S; each worker sends S and
// receives S; every message is one chunk.
Traffic paramServerTraffic(int n, int r, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if (n == 1) return t;
  const std::size_t msgs = ceilDiv(count, std::max<std::size_t>(1, chunkBytes / sizeof(float)));
  const std::size_t peers = r == 0 ? static_cast<std::size_t>(n - 1) : 1;
  addSend(t, peers * count, peers * msgs);
  addRecv(t, peers * count, peers * msgs);
  return t;
}

// Chunks of `chunkBytes` (at least one float) for the algorithms posting through
// strategies/chunked.h: ceil(floats / chunk) messages, none for nothing.
std::size_t msgs(std::size_t floats, std::size_t chunkBytes) {
  return ceilDiv(floats, std::max<std::size_t>(1, chunkBytes / sizeof(float)));
}
void exchange(Traffic& t, std::size_t sent, std::size_t received, std::size_t chunkBytes) {
  addSend(t, sent, msgs(sent, chunkBytes));
  addRecv(t, received, msgs(received, chunkBytes));
}

// Halving-doubling: with p the largest power of two <= N and rem = N - p, the even ranks below
// 2*rem hand over the whole buffer and get it back; the others (q = 0..p-1) exchange, in the
// halving steps d = p/2..1, the half of their aligned range of 2d blocks they give away (sent)
// against the half they keep (received), and in the doubling steps d = 1..p/2 their aligned
// range of d blocks against the partner's; block b starts at b*count/p. For equal blocks that is
// 2(p-1)/p * S each way in 2 log2 p exchanges.
Traffic halvingDoublingTraffic(int n, int r, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if (n == 1) return t;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int rem = n - p;
  if (r < 2 * rem && r % 2 == 0) {
    exchange(t, count, count, chunkBytes);
    return t;
  }
  if (r < 2 * rem) exchange(t, count, count, chunkBytes);  // receives the fold, sends the result back
  const int q = r < 2 * rem ? r / 2 : r - rem;
  auto floats = [&](int lo, int size) {
    return (static_cast<std::size_t>(lo + size) * count) / p - (static_cast<std::size_t>(lo) * count) / p;
  };
  for (int d = p / 2; d >= 1; d /= 2) {
    const int keep = q / d * d, give = (q ^ d) / d * d;
    exchange(t, floats(give, d), floats(keep, d), chunkBytes);
  }
  for (int d = 1; d < p; d *= 2) exchange(t, floats(q / d * d, d), floats((q ^ d) / d * d, d), chunkBytes);
  return t;
}

// The closed form of every from-scratch allreduce, by registered name.
const std::map<std::string, Expected>& allreduceClosedForms() {
  static const std::map<std::string, Expected> forms = {
      {"ring", ringTraffic},
      {"param_server", paramServerTraffic},
      {"halving_doubling", halvingDoublingTraffic},
  };
  return forms;
}

// The other collectives: count is the op's (rounded) count, m = count/N its blocks.
using CollectiveExpected = std::function<Traffic(int n, int rank, int root, std::size_t count, std::size_t chunkBytes)>;

// Ring allgather, ring reduce-scatter and pairwise alltoall: N-1 blocks each way, (N-1)/N * S.
Traffic blocksEachWay(int n, int, int, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  const std::size_t m = count / n;
  for (int s = 1; s < n; ++s) exchange(t, m, m, chunkBytes);
  return t;
}

// Binomial tree: rank v = (r - root) mod N has a child v + 2^k for each 2^k below v's lowest set
// bit (below the first power of two >= N at the root) with v + 2^k < N.
int treeChildren(int n, int v) {
  int low = 1, children = 0;
  while (low < n && !(v & low)) low <<= 1;
  for (int mask = low >> 1; mask > 0; mask >>= 1) children += v + mask < n;
  return children;
}

// Broadcast: S in from the parent (not at the root), S out to each child.
Traffic treeBroadcastTraffic(int n, int r, int root, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  const int v = (r - root + n) % n;
  const std::size_t kids = static_cast<std::size_t>(treeChildren(n, v));
  addSend(t, kids * count, kids * msgs(count, chunkBytes));
  if (v != 0) addRecv(t, count, msgs(count, chunkBytes));
  return t;
}

// Reduce: the broadcast reversed.
Traffic treeReduceTraffic(int n, int r, int root, std::size_t count, std::size_t chunkBytes) {
  const Traffic b = treeBroadcastTraffic(n, r, root, count, chunkBytes);
  return {b.bytesRecv, b.bytesSent, b.msgsRecv, b.msgsSent};
}

// Ping-pong: S each way between 2k and 2k+1; the last rank of an odd N moves nothing.
Traffic pingPongTraffic(int n, int r, int, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if ((r ^ 1) < n) exchange(t, count, count, chunkBytes);
  return t;
}

const std::map<std::string, CollectiveExpected>& collectiveClosedForms() {
  static const std::map<std::string, CollectiveExpected> forms = {
      {"allgather ring", blocksEachWay},        {"reduce_scatter ring", blocksEachWay},
      {"alltoall pairwise", blocksEachWay},     {"broadcast tree", treeBroadcastTraffic},
      {"reduce tree", treeReduceTraffic},       {"sendrecv ping_pong", pingPongTraffic},
  };
  return forms;
}

std::string str(const Traffic& t) {
  return "sent " + std::to_string(t.bytesSent) + " B in " + std::to_string(t.msgsSent) + ", received " +
         std::to_string(t.bytesRecv) + " B in " + std::to_string(t.msgsRecv);
}

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
      for (int n : {1, 2, 3, 4, 5, 8}) cases.push_back({a.name, transport, n});
  }
  return cases;
}

class AllreduceTraffic : public testing::TestWithParam<Case> {};

TEST_P(AllreduceTraffic, MatchesClosedForm) {
  const Case c = GetParam();
  const auto form = allreduceClosedForms().find(c.algo);
  ASSERT_NE(form, allreduceClosedForms().end()) << c.algo << " is from scratch but has no closed form here";
  const auto& make = findAllreduce("--algos", c.algo).makeChunked;
  ASSERT_TRUE(make) << c.algo << " has no makeChunked";
  // 13440 = 16 * 840 floats divides into N aligned segments for every N here: the textbook case.
  const std::vector<std::size_t> counts = {0, 1, 7, 100003, 13440};
  const std::vector<std::size_t> chunks = {256, 4096, 512u << 10};
  std::mutex mu;
  std::vector<std::string> failures;
  test::runThreads(c.transport, c.n, [&](CommContext& ctx) {
    for (std::size_t count : counts)
      for (std::size_t chunk : chunks) {
        std::vector<float> buf(count, 1.0f);
        auto ar = make(ctx, buf.data(), count, chunk);
        const Traffic before = ctx.transport.traffic();
        ar->run();
        const Traffic got = ctx.transport.traffic() - before;
        const Traffic want = form->second(ctx.size(), ctx.rank(), count, chunk);
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
  const auto form = collectiveClosedForms().find(c.algo);
  ASSERT_NE(form, collectiveClosedForms().end()) << c.algo << " is from scratch but has no closed form here";
  const std::string opName = c.algo.substr(0, c.algo.find(' '));
  const CollectiveOp& op = findOp("--op", opName);
  const CollectiveAlgo& algo = findCollective("--algos", opName, c.algo.substr(c.algo.find(' ') + 1));
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
          const Traffic want = form->second(n, ctx.rank(), root, count, chunk);
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

// The textbook forms, stated independently of the segmentation helper above.
TEST(AllreduceTrafficClosedForm, RingIsTwoNMinusOneOverNTimesS) {
  const std::size_t count = 13440, bytes = count * sizeof(float);
  for (int n : {2, 3, 4, 5, 8})
    for (int r = 0; r < n; ++r) {
      const Traffic t = ringTraffic(n, r, count, 4096);
      EXPECT_EQ(t.bytesSent, 2 * (n - 1) * bytes / n);
      EXPECT_EQ(t.bytesRecv, 2 * (n - 1) * bytes / n);
      EXPECT_EQ(t.msgsSent, 2u * (n - 1) * ceilDiv(count / n, 1024));
    }
  EXPECT_EQ(paramServerTraffic(5, 0, count, 4096).bytesRecv, 4 * bytes);
  for (int n : {2, 4, 8})
    for (int r = 0; r < n; ++r) EXPECT_EQ(halvingDoublingTraffic(n, r, count, 4096).bytesSent, 2 * (n - 1) * bytes / n);
  EXPECT_EQ(paramServerTraffic(5, 3, count, 4096).bytesSent, bytes);
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
    Traffic one = ringTraffic(n, r, params, RingAllreduce::defaultChunkBytes(Device::Cpu)), want;
    for (int s = 0; s < cfg.maxSteps; ++s) {
      addSend(want, one.bytesSent / sizeof(float), one.msgsSent);
      addRecv(want, one.bytesRecv / sizeof(float), one.msgsRecv);
    }
    EXPECT_EQ(epochs[0].rankTraffic[r], want) << "rank " << r << ": " << str(epochs[0].rankTraffic[r]);
  }
}

}  // namespace
}  // namespace tpb
