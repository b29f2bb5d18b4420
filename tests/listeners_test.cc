// tests/listeners_test.cc — on one host nothing a run starts listens beyond loopback: the
// rendezvous store (LibTorch 1.13's TCPStore server bound the wildcard address, reachable from
// every network the host is on), Gloo's pairs, and whatever the strategies open. Each case
// samples the listening sockets of the launcher and all its processes while a 2-rank point of a
// store-using strategy runs. (--launcher mpirun: tests/mpi_test.cc, MpiCli.NothingListensBeyondLoopback.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli_util.h"
#include "tests/listeners_util.h"

namespace tpb {
namespace {

void expectLoopbackOnly(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run", "--n_gpus", "2", "--batch_size", "32", "--epochs", "2",
                                   "--train_size", "512", "--test_size", "256", "--timeout", "120"};
  args.insert(args.end(), extra.begin(), extra.end());
  test::Listeners seen;
  const auto r = test::runCli(args, {}, test::sampleListeners(seen));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(seen.loopback.empty()) << "saw no listening socket at all (the store listens for the whole run)";
  for (const std::string& a : seen.other) ADD_FAILURE() << "a process of the run listened on " << a;
}

TEST(OneHostListeners, RingAllReduceOverGlooListensOnLoopbackOnly) {
  expectLoopbackOnly({"--strategy", "ring_all_reduce", "--transport", "gloo"});
}

TEST(OneHostListeners, DdpListensOnLoopbackOnly) { expectLoopbackOnly({"--strategy", "ddp"}); }

TEST(OneHostListeners, AllreduceWithTheGlooLibraryListensOnLoopbackOnly) {
  expectLoopbackOnly({"--strategy", "allreduce", "--library", "gloo"});
}

}  // namespace
}  // namespace tpb
