// tests/listeners_test.cc — on one host nothing a run starts listens beyond loopback: the
// rendezvous store (LibTorch 1.13's TCPStore server bound the wildcard address, reachable from
// every network the host is on), Gloo's pairs, and whatever the strategies open. Each case
// samples the listening sockets of the launcher and all its processes while a 2-rank point of a
// store-using strategy runs; and --secret_file's checks. (--launcher mpirun: tests/mpi_test.cc, MpiCli.NothingListensBeyondLoopback.)
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include <string>
#include <vector>

#include "comm/net_iface.h"
#include "common/error.h"
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

// torch_ddp's Python children (PyTorch 1.13): their rendezvous and Gloo pairs stay on this host.
TEST(OneHostListeners, TorchDdpListensOnLoopbackOnly) {
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch.distributed (Debian's python3-torch is not installed)";
  expectLoopbackOnly({"--strategy", "torch_ddp"});
}

// --secret_file: the secret must be its owner's alone, and several nodes must have one.
TEST(SecretFile, ALooseEmptyOrMissingSecretIsRefusedUpFront) {
  const std::string path = test::tempPath("secret");
  const std::vector<std::string> run = {"run", "--strategy", "ring_all_reduce", "--n_gpus", "2", "--secret_file", path};
  test::writeText(path, "s3cret\n");
  for (mode_t loose : {0644, 0640, 0604, 0620}) {
    chmod(path.c_str(), loose);
    test::expectRefusedUpFront(test::runCli(run), "--secret_file " + path + ": readable or writable by its group or others");
  }
  chmod(path.c_str(), 0600);
  test::writeText(path, "\n");
  test::expectRefusedUpFront(test::runCli(run), "--secret_file " + path + ": empty");
  std::remove(path.c_str());
  test::expectRefusedUpFront(test::runCli(run), "--secret_file " + path + ": No such file or directory");
  // Several nodes, no secret anywhere: refused before node 0 opens its store.
  test::expectRefusedUpFront(test::runCli({"run", "--strategy", "ring_all_reduce", "--n_gpus", "2", "--nnodes", "2",
                                           "--nproc_per_node", "1", "--master_port", "29999"},
                                          {{"TPB_JOB_SECRET", ""}}),
                             "--secret_file: several nodes need the job's secret");
}

// Under torchrun without its agent store (rank 0 hosts it), srun or mpirun over several nodes:
// rank 0's store needs a secret too, refused up front without one.
TEST(SecretFile, AnExternalJobOverSeveralNodesNeedsASecret) {
  const auto r = test::runCli({"run", "--strategy", "ring_all_reduce", "--timeout", "20", "--rendezvous_timeout", "5"},
                              {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"},
                               {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29998"}, {"TPB_JOB_SECRET", ""}});
  test::expectRefusedUpFront(r, "TPB_JOB_SECRET: torchrun over several nodes");
}

// One node by the environment (no LOCAL_WORLD_SIZE: torchrun-like variables a PyTorchJob gives),
// but MASTER_ADDR one of this host's network addresses: the store would listen beyond this host,
// so it needs the secret too.
TEST(SecretFile, AStoreOnANetworkAddressNeedsASecretOnOneNodeToo) {
  std::string address;
  try {
    address = routeTo("192.0.2.1").address;  // this host's address towards a documentation network
  } catch (const UsageError& e) {
    GTEST_SKIP() << "no route off this host: " << e.what();
  }
  if (address.rfind("127.", 0) == 0) GTEST_SKIP() << "the route off this host is loopback";
  const auto r = test::runCli({"run", "--strategy", "ring_all_reduce", "--timeout", "20", "--rendezvous_timeout", "5"},
                              {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", address}, {"MASTER_PORT", "29997"},
                               {"TPB_JOB_SECRET", ""}});
  test::expectRefusedUpFront(r, "TPB_JOB_SECRET: rank 0's store would listen on " + address + ", beyond this host");
}

TEST(SecretFile, AnOwnersOnlySecretRunsAPoint) {
  const std::string path = test::tempPath("secret_ok");
  test::writeText(path, "s3cret\n");
  chmod(path.c_str(), 0600);
  const auto r = test::runCli({"run", "--strategy", "ring_all_reduce", "--transport", "gloo", "--n_gpus", "2",
                               "--epochs", "1", "--train_size", "256", "--test_size", "64", "--secret_file", path});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tpb
