// The traffic a results file records, checked exactly against the closed forms of the registry
// (tests/traffic_test.cc checks the algorithms themselves in one process): here tpbench's own
// launcher starts the ranks as processes, each point's counted window is what the record says,
// and a byte or a message more on any rank (a barrier leaking into the window, an extra exchange
// in a step) fails the test. No mpirun needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "algorithms/allreduce_ring.h"
#include "core/collective.h"
#include "core/registry.h"
#include "tests/cli_util.h"
#include "tests/thread_world.h"

namespace tpb {
namespace {

using nlohmann::json;

// rank r's four counts in a record's "traffic" object.
Traffic recorded(const json& traffic, int r) {
  return {traffic.at("bytes_sent").at(r).get<std::uint64_t>(), traffic.at("bytes_recv").at(r).get<std::uint64_t>(),
          traffic.at("msgs_sent").at(r).get<std::uint64_t>(), traffic.at("msgs_recv").at(r).get<std::uint64_t>()};
}

using test::str;

Traffic times(std::uint64_t k, const Traffic& t) {
  return {k * t.bytesSent, k * t.bytesRecv, k * t.msgsSent, k * t.msgsRecv};
}

// Every from-scratch point of every op, at a size above the ring's chunk and one below, in and
// out of place, with a root other than 0, over each CPU transport of tpbench's own: one call's
// counts (the record's window) on every rank equal the algorithm's closed form.
TEST(TrafficCli, EveryFromScratchCollectiveRecordsItsClosedFormOnEveryRank) {
  const std::size_t chunk = RingAllreduce::defaultChunkBytes(Device::Cpu);
  // shm at N = 3 and gloo at N = 4: halving-doubling's power of two and not, each transport
  // once (every point is a launch of its own: shm at 3 and 4 beside gloo at 3 took 136 s).
  for (const auto& [transport, ns] : {std::pair<std::string, std::string>{"shm", "3"}, {"gloo", "4"}}) {
    SCOPED_TRACE(transport);
    const std::string out = test::tempPath("traffic-" + transport + ".json");
    const auto r = test::runCli({"collective", "--op", "all", "--n_gpus", ns, "--bytes", "4K,1M", "--iters", "2",
                                 "--warmup", "0", "--root", "1", "--transport", transport, "--launcher", "tpbench",
                                 "--out", out, "--overwrite"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json doc = test::readJson(out);
    int checked = 0;
    for (const json& p : doc.at("allreduce")) {
      if (p.at("origin") != "from scratch") continue;
      SCOPED_TRACE(p.dump());
      ASSERT_EQ(p.at("status"), "ok");
      ASSERT_TRUE(p.contains("traffic"));
      const int n = p.at("n_gpus");
      const std::string op = p.at("op");
      const CollectiveAlgo& algo = findCollective("--algos", op, p.at("algo"));
      ASSERT_TRUE(algo.traffic) << op << " " << algo.name << " states no closed form";
      const int root = p.value("root", 0);
      const std::size_t count = p.at("count");
      ASSERT_EQ(p.at("traffic").at("bytes_sent").size(), static_cast<std::size_t>(n));
      for (int rank = 0; rank < n; ++rank)
        EXPECT_EQ(recorded(p.at("traffic"), rank), algo.traffic(n, rank, root, count, chunk))
            << op << " " << algo.name << " N=" << n << " rank " << rank << ": recorded "
            << str(recorded(p.at("traffic"), rank)) << "; closed form " << str(algo.traffic(n, rank, root, count, chunk));
      ++checked;
    }
    // allreduce (ring, param_server, halving_doubling), broadcast and reduce (tree), allgather and
    // reduce_scatter (ring), alltoall (pairwise), sendrecv (ping_pong), at 2 sizes, each N.
    EXPECT_GE(checked, 8 * 2) << "too few from-scratch points to check";
    std::remove(out.c_str());
  }
}

// A training epoch's traffic on each rank: its steps times one step's exchange, nothing more (no
// barrier, no evaluation, no gathering of the epoch's figures inside the window), for two epochs
// of which the last batch is partial.
TEST(TrafficCli, EachEpochRecordsItsStepsTimesOneStepsClosedForm) {
  const std::size_t chunk = RingAllreduce::defaultChunkBytes(Device::Cpu);
  const int n = 3;
  for (const std::string strategy : {"ring_all_reduce", "param_server"}) {
    SCOPED_TRACE(strategy);
    const std::string out = test::tempPath("traffic-" + strategy + ".json");
    // 1000 samples over 3 ranks at 32 per rank: 11 steps each, the last one short.
    const auto r = test::runCli({"run", "--strategy", strategy, "--n_gpus", std::to_string(n), "--batch_size", "32",
                                 "--epochs", "2", "--train_size", "1000", "--test_size", "100", "--out", out,
                                 "--overwrite"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json run = test::readJson(out).at("runs").at(0);
    ASSERT_EQ(run.at("status"), "ok");
    const std::uint64_t params = run.at("workload_cost").at("parameters");
    ASSERT_GT(params, 0u);
    ASSERT_EQ(run.at("epochs").size(), 2u);
    for (const json& e : run.at("epochs")) {
      SCOPED_TRACE(e.dump());
      // Each optimizer step once, which every training rank takes: the ring's 3 ranks ceil(1000 / 3)
      // = 334 samples each, 11 steps of 32 (the last of 14); the 2 workers around a server 500
      // each, 16 steps (the last of 20).
      const std::uint64_t k = e.at("steps");
      ASSERT_EQ(k, strategy == "param_server" ? 16u : 11u);
      const json& traffic = e.at("traffic");
      ASSERT_EQ(traffic.at("bytes_sent").size(), static_cast<std::size_t>(n));
      for (int rank = 0; rank < n; ++rank) {
        Traffic want;
        if (strategy == "ring_all_reduce") {
          want = times(k, findAllreduce("--algos", "ring").traffic(n, rank, 0, params, chunk));
        } else {
          // The gradient up and the weights back: the server once per worker, each worker once.
          const std::uint64_t b = params * sizeof(float), peers = rank == 0 ? n - 1 : 1;
          want = times(k * peers, Traffic{b, b, 1, 1});
        }
        EXPECT_EQ(recorded(traffic, rank), want)
            << "rank " << rank << ": recorded " << str(recorded(traffic, rank)) << "; closed form " << str(want);
      }
    }
    std::remove(out.c_str());
  }
}

}  // namespace
}  // namespace tpb
