// Every allreduce algorithm x transport x N x count gives the exact sum on every rank.
#include <gtest/gtest.h>

#include <mutex>
#include <ostream>
#include <sstream>

#include "core/registry.h"
#include "tests/thread_world.h"

namespace tpb {
namespace {

// Small integers, distinct per rank and element: sums are exact in float32.
float value(int rank, std::size_t i) {
  return static_cast<float>((i * 7919u + static_cast<std::size_t>(rank) * 131u) % 1000u);
}

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
                     const AllreduceFactory& make) {
  std::mutex mu;
  std::vector<std::string> failures;
  test::runThreads(transport, n, [&](CommContext& ctx) {
    for (std::size_t count : counts) {
      std::vector<float> buf(count + 1);
      const float sentinel = -12345.0f;  // one past the end must stay untouched
      buf[count] = sentinel;
      for (std::size_t i = 0; i < count; ++i) buf[i] = value(ctx.rank(), i);
      auto ar = make(ctx, buf.data(), count);
      // Twice, so state left by one run cannot corrupt the next.
      for (int rep = 0; rep < 2; ++rep) {
        if (rep == 1)
          for (std::size_t i = 0; i < count; ++i) buf[i] = value(ctx.rank(), i);
        ar->run();
        std::size_t wrong = 0, first = count;
        for (std::size_t i = 0; i < count; ++i) {
          float expect = 0;
          for (int r = 0; r < ctx.size(); ++r) expect += value(r, i);
          if (buf[i] != expect && wrong++ == 0) first = i;
        }
        if (wrong || buf[count] != sentinel) {
          std::ostringstream os;
          os << "rank " << ctx.rank() << " count " << count << " rep " << rep << ": " << wrong
             << " wrong (first at " << first << ")" << (buf[count] != sentinel ? ", wrote past the end" : "");
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back(os.str());
        }
      }
    }
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

TEST_P(AllreduceExact, EverySizeEveryRank) {
  const Case c = GetParam();
  expectExactSums(c.transport, c.n, {0, 1, 7, static_cast<std::size_t>(c.n - 1), 100003},
                  findAllreduce("--algos", c.algo).make);
}

// Chunks of 256 bytes force many pipelined chunks per segment, odd tails and empty chunks, in
// every algorithm that pipelines in chunks.
class AllreduceChunked : public testing::TestWithParam<Case> {};

TEST_P(AllreduceChunked, TinyChunks) {
  const Case c = GetParam();
  const auto& chunked = findAllreduce("--algos", c.algo).makeChunked;
  expectExactSums(c.transport, c.n, {1, 7, 1000, 10007}, [&](CommContext& ctx, float* b, std::size_t k) {
    return chunked(ctx, b, k, 256);
  });
}

// Every registered algorithm that runs on the CPU in threads; a library baseline brings its own
// communication and ignores the transport, so it runs once per N. Algorithms whose ranks must be
// processes that mpirun started (mpi) are checked under mpirun by tests/mpi_test.cc.
std::vector<Case> casesOver(const std::vector<int>& ns, bool chunkedOnly) {
  std::vector<Case> cases;
  for (const auto& algo : allreduceAlgos()) {
    if (chunkedOnly && !algo.makeChunked) continue;
    if (!algo.unsupported(Device::Cpu).empty() || algo.needsMpiLauncher) continue;
    for (const std::string transport : {"shm", "gloo"})
      for (int n : ns) {
        if (algo.origin == Origin::Library && transport != "shm") continue;
        cases.push_back({algo.name, transport, n});
      }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, AllreduceExact, testing::ValuesIn(casesOver({1, 2, 3, 4, 5, 8}, false)), caseName);
INSTANTIATE_TEST_SUITE_P(All, AllreduceChunked, testing::ValuesIn(casesOver({2, 3, 5}, true)), caseName);

}  // namespace
}  // namespace tpb
