// The pieces of a several-host run that one host can check: which address a rank binds to
// (comm/net_iface.h), the rendezvous and failure keys of a point (worker/point_sync.h), and the
// flags that choose them, refused up front when wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

// Rank 0's judge: a rank whose beats stop is lost once they have been still for the silence,
// not before; one that said it is done is not; one that never beat at all is lost too.
TEST(PointSync, HeartbeatJudgeNamesTheRankThatFellSilent) {
  using namespace std::chrono_literals;
  auto store = Store::local();
  const std::string p = pointPrefix(3);
  const auto t0 = HeartbeatJudge::clock::now();
  HeartbeatJudge judge(p, 0, 4, 1000ms, t0);
  for (int r = 1; r < 4; ++r) beat(*store, p, r);
  EXPECT_FALSE(judge.lostRank(*store, t0 + 10ms).has_value());
  // Ranks 1 and 3 keep beating; rank 2 stops, then rank 3 says it is done and stops too.
  for (int step = 1; step <= 9; ++step) {
    beat(*store, p, 1);
    if (step < 5) beat(*store, p, 3);
    EXPECT_FALSE(judge.lostRank(*store, t0 + step * 100ms + 10ms).has_value()) << step;
  }
  beat(*store, p, 1);
  EXPECT_FALSE(judge.lostRank(*store, t0 + 1000ms).has_value());  // rank 2: still 990 ms
  beat(*store, p, 1);
  EXPECT_EQ(judge.lostRank(*store, t0 + 1020ms), std::optional<int>(2));
  // Once done, a silent rank is not lost; rank 3 (still since 410 ms) is, until it says so too.
  sayDone(*store, p, 2);
  beat(*store, p, 1);
  EXPECT_EQ(judge.lostRank(*store, t0 + 1500ms), std::optional<int>(3));
  sayDone(*store, p, 3);
  beat(*store, p, 1);
  EXPECT_FALSE(judge.lostRank(*store, t0 + 1600ms).has_value());
  // A judge of another point sees none of these beats: every rank of it is lost at the silence.
  HeartbeatJudge other(pointPrefix(4), 0, 2, 1000ms, t0);
  EXPECT_FALSE(other.lostRank(*store, t0 + 999ms).has_value());
  EXPECT_EQ(other.lostRank(*store, t0 + 1000ms), std::optional<int>(1));
}

// The failure rank 0 posts names the lost rank's host and address as it registered them.
TEST(PointSync, LostRankFailureNamesItsHost) {
  auto store = Store::local();
  const std::string p = pointPrefix(5);
  store->set(p + "rank/3", "tpb-node1 (10.77.0.2)");
  const RankFailure f = lostRankFailure(*store, p, 3, std::chrono::milliseconds(2500));
  EXPECT_EQ(f.text(true),
            "rank 3 on host tpb-node1 (10.77.0.2) stopped answering: no heartbeat for 2.5 s (--heartbeat_timeout); "
            "its host is down or cut off, or the rank is frozen");
}

// What two nodes' jobs must share, and the first place they differ, in words.
TEST(PointSync, FirstDifferenceOfTwoNodesJobsIsNamed) {
  const nlohmann::json a = {{"kind", "train"},
                            {"device", "cpu"},
                            {"config", {{"epochs", 1}, {"hidden", {512, 512}}}},
                            {"result_path", "/tmp/a/result.json"}};
  nlohmann::json b = a;
  b["result_path"] = "/tmp/b/result.json";  // each node's own
  EXPECT_EQ(sharedPartOfJob(a).dump(), sharedPartOfJob(b).dump());
  EXPECT_FALSE(firstDifference(sharedPartOfJob(b), sharedPartOfJob(a)).has_value());
  b["config"]["epochs"] = 2;
  EXPECT_EQ(firstDifference(sharedPartOfJob(b), sharedPartOfJob(a)), std::optional<std::string>("config.epochs is 2 here, 1 on node 0"));
  b = a;
  b["config"]["hidden"] = {256};
  EXPECT_EQ(firstDifference(b, a), std::optional<std::string>("config.hidden is [256] here, [512,512] on node 0"));
  b = a;
  b["trace"] = true;
  EXPECT_EQ(firstDifference(sharedPartOfJob(b), sharedPartOfJob(a)),
            std::optional<std::string>("trace is true here, absent on node 0"));
  EXPECT_EQ(firstDifference(sharedPartOfJob(a), sharedPartOfJob(b)),
            std::optional<std::string>("trace is absent here, true on node 0"));
}

TEST(MultihostCli, BadInterfacesAndRendezvousTimeoutsAreRefusedUpFront) {
  const std::vector<std::string> run = {"run", "--strategy", "ring_all_reduce", "--n_gpus", "2", "--epochs", "1",
                                        "--train_size", "256"};
  expectAllRefused(run, {
                            {{"--iface", "nosuch0"}, "--iface nosuch0: no such interface"},
                            {{"--iface", ""}, "--iface"},
                            {{}, "GLOO_SOCKET_IFNAME nosuch0", {{"GLOO_SOCKET_IFNAME", "nosuch0"}}},
                            {{"--rendezvous_timeout", "0"}, "--rendezvous_timeout"},
                            {{"--heartbeat_timeout", "0"}, "--heartbeat_timeout"},
                            {{"--nnodes", "2", "--node_rank", "1", "--master_port", "29999", "--master_addr",
                              "no-such-host.invalid"},
                             "--master_addr no-such-host.invalid: cannot resolve"},
                        });
  expectAllRefused({"sweep", "--strategies", "ring_all_reduce", "--n_gpus", "2", "--out", tempPath("x.json")},
                   {{{"--iface", "nosuch0"}, "--iface nosuch0"}});
}

}  // namespace
}  // namespace tpb::test
