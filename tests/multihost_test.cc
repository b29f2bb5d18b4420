// The pieces of a several-host run that one host can check: which address a rank binds to
// (comm/net_iface.h), the rendezvous and failure keys of a point (worker/point_sync.h), and the
// flags that choose them, refused up front when wrong.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "comm/net_iface.h"
#include "comm/store.h"
#include "common/error.h"
#include "tests/cli_util.h"
#include "tests/file_util.h"
#include "worker/point_sync.h"

namespace tpb::test {
namespace {

TEST(NetIface, TheRouteToLoopbackIsLoopback) {
  const LocalAddress a = routeTo("127.0.0.1");
  EXPECT_EQ(a.address, "127.0.0.1");
  EXPECT_EQ(a.iface, "lo");
  const LocalAddress b = routeTo("localhost");  // a name resolves first
  EXPECT_TRUE(b.address == "127.0.0.1" || b.address == "::1") << b.address;
}

TEST(NetIface, AnInterfaceByName) {
  const LocalAddress a = interfaceAddress("lo", "--iface");
  EXPECT_EQ(a.iface, "lo");
  EXPECT_EQ(a.address, "127.0.0.1");
}

TEST(NetIface, AMissingInterfaceNamesTheFlagAndTheInterfacesThereAre) {
  try {
    interfaceAddress("nosuch0", "GLOO_SOCKET_IFNAME");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("GLOO_SOCKET_IFNAME nosuch0: no such interface on this host (it has: lo"), std::string::npos) << m;
  }
}

TEST(NetIface, AnUnresolvableMasterIsAUsageError) {
  EXPECT_THROW(routeTo("no-such-host.invalid"), UsageError);
}

TEST(NetIface, BindAddressPrefersTheFlagThenTheVariableThenTheRoute) {
  ::unsetenv("GLOO_SOCKET_IFNAME");
  EXPECT_EQ(bindAddress("127.0.0.1").address, "127.0.0.1");
  ::setenv("GLOO_SOCKET_IFNAME", "nosuch0", 1);
  EXPECT_THROW(bindAddress("127.0.0.1"), UsageError);
  EXPECT_EQ(bindAddress("127.0.0.1", "lo").address, "127.0.0.1");  // the flag wins
  ::setenv("GLOO_SOCKET_IFNAME", "lo,nosuch0", 1);                  // PyTorch's list: the first
  EXPECT_EQ(bindAddress("127.0.0.1").iface, "lo");
  ::unsetenv("GLOO_SOCKET_IFNAME");
}

TEST(PointSync, TheFirstFailureWins) {
  auto store = Store::local();
  const std::string p = pointPrefix(7);
  EXPECT_EQ(p, "tpb/7/");
  EXPECT_EQ(pointPrefix(-1), "tpb/");
  EXPECT_FALSE(postedFailure(*store, p).has_value());
  EXPECT_TRUE(postFailure(*store, p, {3, "b", "10.0.0.2", "was killed by signal 9 (SIGKILL)"}));
  EXPECT_FALSE(postFailure(*store, p, {0, "a", "10.0.0.1", "failed: connection closed"}));
  EXPECT_FALSE(postFailureAfter(*store, p, {1, "a", "10.0.0.1", "failed: reset"}, std::chrono::milliseconds(50)));
  const auto f = postedFailure(*store, p);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->text(true), "rank 3 on host b (10.0.0.2) was killed by signal 9 (SIGKILL)");
  EXPECT_EQ(f->text(false), "rank 3 was killed by signal 9 (SIGKILL)");
  EXPECT_FALSE(postedFailure(*store, pointPrefix(8)).has_value());  // another point's keys
  EXPECT_EQ((RankFailure{-1, "b", "", "timed out after 5 s (--timeout)"}.text(true)),
            "the launcher on host b timed out after 5 s (--timeout)");
}

TEST(PointSync, RanksThatArriveMeet) {
  auto store = Store::local();
  std::thread other([&] { awaitRanks(*store, "tpb/1/", 1, 2, "b (10.0.0.2)", std::chrono::seconds(10)); });
  EXPECT_NO_THROW(awaitRanks(*store, "tpb/1/", 0, 2, "a (10.0.0.1)", std::chrono::seconds(10)));
  other.join();
}

TEST(PointSync, MissingRanksAreNamedAtTheTimeout) {
  auto store = Store::local();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    awaitRanks(*store, "tpb/2/", 1, 4, "a (10.0.0.1)", std::chrono::milliseconds(300));
    FAIL() << "no error";
  } catch (const TimeoutError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rendezvous: ranks 0, 2, 3 of 4 did not arrive within 0.3 s"), std::string::npos) << m;
    EXPECT_NE(m.find("arrived: 1 on a (10.0.0.1)"), std::string::npos) << m;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 0.3);
  EXPECT_LT(s, 5.0);
}

TEST(MultihostCli, BadInterfacesAndRendezvousTimeoutsAreRefusedUpFront) {
  const std::vector<std::string> run = {"run", "--strategy", "ring_all_reduce", "--n_gpus", "2", "--epochs", "1",
                                        "--train_size", "256"};
  expectAllRefused(run, {
                            {{"--iface", "nosuch0"}, "--iface nosuch0: no such interface"},
                            {{"--iface", ""}, "--iface"},
                            {{}, "GLOO_SOCKET_IFNAME nosuch0", {{"GLOO_SOCKET_IFNAME", "nosuch0"}}},
                            {{"--rendezvous_timeout", "0"}, "--rendezvous_timeout"},
                            {{"--nnodes", "2", "--node_rank", "1", "--master_port", "29999", "--master_addr",
                              "no-such-host.invalid"},
                             "--master_addr no-such-host.invalid: cannot resolve"},
                        });
  expectAllRefused({"sweep", "--strategies", "ring_all_reduce", "--n_gpus", "2", "--out", tempPath("x.json")},
                   {{{"--iface", "nosuch0"}, "--iface nosuch0"}});
}

}  // namespace
}  // namespace tpb::test
