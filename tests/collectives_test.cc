// Every allreduce algorithm x transport x N x count gives the exact sum on every rank.
#include <gtest/gtest.h>

#include <mutex>
#include <ostream>
#include <sstream>

#include "core/registry.h"
#include "tests/exact_sums.h"
#include "tests/thread_world.h"

namespace tpb {
namespace {

struct Case {
  std::string algo, transport;
  int n;
};

// How gtest (and so ctest's test list) shows a case, instead of a dump of its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.algo << " over " << c.transport << ", N=" << c.n; }

std::string caseName(const testing::TestParamInfo<Case>& info) {
  return info.param.algo + "_" + info.param.transport + "_N" + std::to_string(info.param.n);
}

class AllreduceExact : public testing::TestWithParam<Case> {};

// Runs `make` on every rank for each count and checks every element against the exact sum.
void expectExactSums(const std::string& transport, int n, const std::vector<std::size_t>& counts,
                     const AllreduceFactory& make, bool symmetric) {
  std::mutex mu;
  std::vector<std::string> failures;
  test::runThreads(transport, n, [&](CommContext& ctx) {
    const auto mine = test::exactSumFailures(ctx, make, counts, symmetric);
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& f : mine) failures.push_back("rank " + std::to_string(ctx.rank()) + " " + f);
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// The check itself can fail: an allreduce that leaves the input as it is, and one that also
// writes one element past the end, are both caught, with the count, the run and the first wrong.
TEST(ExactSums, AWrongAllreduceIsCaught) {
  struct Broken : Allreduce {
    float* buf;
    std::size_t count;
    bool overrun;
    Broken(float* b, std::size_t c, bool o) : buf(b), count(c), overrun(o) {}
    void run() override {
      if (overrun) buf[count] = 0;
    }
  };
  std::mutex mu;
  std::vector<std::string> seen;
  test::runThreads("shm", 2, [&](CommContext& ctx) {
    auto idle = test::exactSumFailures(
        ctx, [](CommContext&, float* b, std::size_t c) { return std::make_unique<Broken>(b, c, false); }, {0, 7});
    auto past = test::exactSumFailures(
        ctx, [](CommContext&, float* b, std::size_t c) { return std::make_unique<Broken>(b, c, true); }, {0});
    std::lock_guard<std::mutex> lock(mu);
    if (ctx.rank() != 0) return;
    seen = idle;
    seen.insert(seen.end(), past.begin(), past.end());
  });
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], "count 7 rep 0: 7 wrong (first at 0)");
  EXPECT_EQ(seen[1], "count 7 rep 1: 7 wrong (first at 0)");
  EXPECT_EQ(seen[2], "count 0 rep 0: 0 wrong, wrote past the end");
  EXPECT_EQ(seen[3], "count 0 rep 1: 0 wrong, wrote past the end");
}

TEST_P(AllreduceExact, EverySizeEveryRank) {
  const Case c = GetParam();
  const AllreduceAlgo& a = findAllreduce("--algos", c.algo);
  expectExactSums(c.transport, c.n, {0, 1, 7, static_cast<std::size_t>(c.n - 1), 100003}, a.make,
                  a.needsSymmetricMemory);
}

// Chunks of 256 bytes force many pipelined chunks per segment, odd tails and empty chunks, in
// every algorithm that pipelines in chunks.
class AllreduceChunked : public testing::TestWithParam<Case> {};

TEST_P(AllreduceChunked, TinyChunks) {
  const Case c = GetParam();
  const AllreduceAlgo& a = findAllreduce("--algos", c.algo);
  expectExactSums(
      c.transport, c.n, {1, 7, 1000, 10007},
      [&](CommContext& ctx, float* b, std::size_t k) { return a.makeChunked(ctx, b, k, 256); },
      a.needsSymmetricMemory);
}

// Every registered algorithm that runs on the CPU in threads; a library baseline brings its own
// communication and ignores the transport, so it runs once per N. Algorithms whose ranks must be
// processes that mpirun started (mpi) are checked under mpirun by tests/mpi_test.cc.
std::vector<Case> casesOver(const std::vector<int>& ns, bool chunkedOnly) {
  std::vector<Case> cases;
  for (const auto& algo : allreduceAlgos()) {
    if (chunkedOnly && !algo.makeChunked) continue;
    if (!algo.unsupported(Device::Cpu).empty() || algo.needsMpiLauncher) continue;
    for (const std::string& transport : test::cpuTransports())
      for (int n : ns) {
        if (algo.origin == Origin::Library && transport != "shm") continue;
        if (algo.needsSymmetricMemory && transport != "shm") continue;  // the one with symmetric memory
        cases.push_back({algo.name, transport, n});
      }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, AllreduceExact, testing::ValuesIn(casesOver({1, 2, 3, 4, 5, 8}, false)), caseName);
INSTANTIATE_TEST_SUITE_P(All, AllreduceChunked, testing::ValuesIn(casesOver({2, 3, 5}, true)), caseName);

}  // namespace
}  // namespace tpb
