// Every collective algorithm of every op (from the registry: allreduce's included) x transport x
// N in {1,2,3,4,5,8} x counts {0, 1, 7, large odd} x in place / out of place x root gives the
// op's exact expected values on every rank, and writes nothing outside its output.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <ostream>
#include <sstream>

#include "common/bus_factor.h"
#include "core/registry.h"
#include "tests/exact_sums.h"
#include "tests/thread_world.h"

namespace tpb {
namespace {

using test::exactInput;

struct Case {
  std::string op, algo, transport;
  int n;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.op << " " << c.algo << " over " << c.transport << ", N=" << c.n; }
std::string caseName(const testing::TestParamInfo<Case>& info) {
  return info.param.op + "_" + info.param.algo + "_" + info.param.transport + "_N" + std::to_string(info.param.n);
}

class CollectiveExact : public testing::TestWithParam<Case> {};

TEST_P(CollectiveExact, EveryCountPlacementAndRoot) {
  const Case c = GetParam();
  const CollectiveOp& op = findOp("--op", c.op);
  const CollectiveAlgo& algo = findCollective("--algos", c.op, c.algo);
  std::vector<int> roots = {0};
  if (op.rooted && c.n > 1) roots.push_back(c.n - 1);
  std::vector<bool> placements = {false};
  if (op.hasInPlace) placements.push_back(true);
  const float sentinel = -12345.0f;
  std::mutex mu;
  std::vector<std::string> failures;
  test::runThreads(c.transport, c.n, [&](CommContext& ctx) {
    const int n = ctx.size(), rank = ctx.rank();
    for (std::size_t asked : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{100003}})
      for (bool inPlace : placements)
        for (int root : roots) {
          const std::size_t count = op.roundCount(asked, n);
          const std::size_t sendCount = op.sendCount(count, n), recvCount = op.recvCount(count, n);
          // One buffer in place (the smaller side is this rank's block of it), two otherwise;
          // one sentinel past each end.
          test::AlgoBuffer a(ctx.transport, count + 1, algo.needsSymmetricMemory),
              b(ctx.transport, count + 1, algo.needsSymmetricMemory);
          std::fill(a.data(), a.data() + count + 1, sentinel);
          std::fill(b.data(), b.data() + count + 1, sentinel);
          float* send = a.data();
          float* recv = inPlace ? a.data() : b.data();
          if (inPlace && sendCount < count) send += rank * sendCount;
          if (inPlace && recvCount < count) recv += rank * recvCount;
          CollectiveArgs args;
          args.send = send;
          args.recv = recv;
          args.count = count;
          args.root = root;
          auto coll = algo.make(ctx, args);
          for (int rep = 0; rep < 2; ++rep) {  // twice: state left by one run must not matter
            for (std::size_t i = 0; i < sendCount; ++i) send[i] = exactInput(rank, i);
            ctx.transport.barrier();
            coll->run();
            ctx.transport.barrier();
            std::size_t wrong = 0, first = recvCount;
            for (std::size_t i = 0; i < recvCount; ++i) {
              const auto want = op.expected(rank, n, root, count, i, exactInput);
              if (want && recv[i] != *want && wrong++ == 0) first = i;
            }
            const bool past = a[count] != sentinel || b[count] != sentinel;
            if (wrong || past) {
              std::ostringstream os;
              os << "rank " << rank << " count " << count << (inPlace ? " in place" : " out of place") << " root "
                 << root << " rep " << rep << ": " << wrong << " wrong (first at " << first << ")"
                 << (past ? ", wrote past the end" : "");
              std::lock_guard<std::mutex> lock(mu);
              failures.push_back(os.str());
            }
          }
        }
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& a : collectiveAlgos())
    for (const std::string& transport : test::cpuTransports())
      for (int n : {1, 2, 3, 4, 5, 8}) {
        if (a.origin == Origin::Library && transport != "shm") continue;  // brings its own communication
        // Ranks that mpirun must start (mpi) are checked under mpirun by tests/mpi_test.cc.
        if (!a.unsupported(Device::Cpu).empty() || a.needsMpiLauncher) continue;
        if (a.needsSymmetricMemory && transport != "shm") continue;  // the one with symmetric memory
        out.push_back({a.op, a.name, transport, n});
      }
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, CollectiveExact, testing::ValuesIn(cases()), caseName);

// Every op has at least one from-scratch algorithm, and every registered algorithm names an op.
TEST(CollectiveRegistry, EveryOpHasAFromScratchAlgorithm) {
  for (const auto& op : collectiveOps()) {
    bool found = false;
    for (const auto& a : collectiveAlgos()) found = found || (a.op == op.name && a.origin == Origin::FromScratch);
    EXPECT_TRUE(found) << op.name;
  }
}

TEST(CollectiveRegistry, BusFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(findOp("--op", "allreduce").busFactor(4), 1.5);
  for (const char* o : {"allgather", "reduce_scatter", "alltoall"}) EXPECT_DOUBLE_EQ(findOp("--op", o).busFactor(4), 0.75) << o;
  for (const char* o : {"broadcast", "reduce", "sendrecv"}) EXPECT_DOUBLE_EQ(findOp("--op", o).busFactor(4), 1.0) << o;
  for (const auto& op : collectiveOps()) EXPECT_EQ(op.busFactor(1), 0.0) << op.name;
}

// The console header says " sum" for exactly the ops whose expected result is a sum of the ranks'
// inputs (at N = 2, rank r's input 1 + 10 r: a sum reads 12 on some rank, no copy does).
TEST(CollectiveRegistry, TheOpsThatSayTheySumAreTheOnesThatDo) {
  const auto input = [](int rank, std::size_t) { return 1.0f + 10.0f * static_cast<float>(rank); };
  for (const auto& op : collectiveOps()) {
    bool sums = false;
    for (int rank = 0; rank < 2; ++rank)
      for (std::size_t i = 0; i < op.recvCount(4, 2); ++i) {
        const auto v = op.expected(rank, 2, 0, 4, i, input);
        sums = sums || (v && *v == 12.0f);
      }
    EXPECT_EQ(op.sums, sums) << op.name;
  }
}

// The formula --help and the charts print is the factor the numbers use: "k(N-1)/N" or "1",
// evaluated here for every op at N = 2..8.
TEST(CollectiveRegistry, EveryOpsPrintedBusFactorIsTheOneItUses) {
  const auto evaluate = [](const std::string& formula, int n) {
    if (formula == "1") return 1.0;
    const std::size_t tail = formula.find("(N-1)/N");
    EXPECT_NE(tail, std::string::npos) << formula;
    EXPECT_EQ(tail + 7, formula.size()) << formula;
    const double k = tail == 0 ? 1.0 : std::stod(formula.substr(0, tail));
    return k * (n - 1) / n;
  };
  for (const auto& op : collectiveOps())
    for (int n = 2; n <= 8; ++n)
      EXPECT_DOUBLE_EQ(op.busFactor(n), evaluate(busFactorKindOf(op.name).formula, n)) << op.name << " N=" << n;
  EXPECT_EQ(busFactorText({"allreduce", "broadcast", "allgather", "reduce"}),
            "allreduce 2(N-1)/N; broadcast, reduce 1; allgather (N-1)/N");
}

}  // namespace
}  // namespace tpb
