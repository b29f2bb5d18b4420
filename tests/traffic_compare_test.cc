// `compare` holds exact traffic exactly: any changed count (of any rank) is a regression whatever
// the timings say, and so is a count BASE had and NEW did not record; equal counts pass.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "record/compare.h"

namespace tpb {
namespace {

using nlohmann::json;

json traffic(std::uint64_t rank1Sent) {
  return {{"bytes_sent", {4096, rank1Sent}}, {"bytes_recv", {rank1Sent, 4096}}, {"msgs_sent", {2, 2}},
          {"msgs_recv", {2, 2}}};
}

json point(double busbw, const json& t) {
  json p = {{"op", "allgather"}, {"algo", "ring"}, {"transport", "shm"}, {"device", "cpu"}, {"n_gpus", 2},
            {"bytes", 8192}, {"count", 2048}, {"in_place", false},
            {"time_us", {{"median", 1.0}, {"min", 1.0}, {"max", 1.0}}}, {"algbw_gbps", busbw},
            {"busbw_gbps", busbw}, {"wrong", 0}, {"status", "ok"}, {"iters", 20}, {"warmup", 5}};
  if (!t.is_null()) p["traffic"] = t;
  return p;
}

json epochRun(const json& t) {
  json config = {{"strategy", "ring_all_reduce"}, {"n_gpus", 2}, {"batch_size", 64}, {"epochs", 1},
                 {"device", "cpu"}, {"transport", "shm"}, {"dataset", "synthetic"}, {"train_size", 8192},
                 {"hidden", "512,512"}, {"lr", 0.01}, {"seed", 1}, {"repeat_index", 0}};
  json e = {{"epoch", 1}, {"wall_s", 1.0}, {"compute_s", 0.5}, {"comm_s", 0.5}, {"samples_per_s", 8192.0},
            {"train_loss", 0.5}, {"test_accuracy", 0.9}, {"steps", 64}, {"samples", 8192}, {"traffic", t}};
  return {{"config", config}, {"status", "ok"}, {"error", nullptr}, {"epochs", json::array({e})},
          {"summary", {{"total_s", 1.0}, {"samples_per_s", 8192.0}, {"final_test_accuracy", 0.9},
                       {"final_train_loss", 0.5}, {"scaling_efficiency", nullptr}}}};
}

CompareResult compare(const json& runs0, const json& ar0, const json& runs1, const json& ar1) {
  auto write = [](const std::string& name, const json& runs, const json& ar) {
    const std::string path = testing::TempDir() + "tpb_traffic_" + std::to_string(getpid()) + "_" + name;
    std::ofstream(path) << json{{"schema", "tpbench.results/1"}, {"meta", json::object()}, {"runs", runs},
                                {"allreduce", ar}}
                               .dump();
    return path;
  };
  CompareOptions o;
  o.basePath = write("base.json", runs0, ar0);
  o.newPath = write("new.json", runs1, ar1);
  return compareResults(o);
}

const Comparison* find(const CompareResult& r, const std::string& metric) {
  for (const auto& p : r.points)
    if (const Comparison* c = p.metric(metric)) return c;
  return nullptr;
}

TEST(TrafficCompare, EqualCountsPass) {
  const auto r = compare(json::array({epochRun(traffic(4096))}), json::array({point(5, traffic(4096))}),
                         json::array({epochRun(traffic(4096))}), json::array({point(5, traffic(4096))}));
  EXPECT_FALSE(r.regressed());
  const Comparison* c = find(r, "traffic");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->kind, "exact");
}

TEST(TrafficCompare, OneByteMoreOnOneRankRegressesEvenWhenFaster) {
  const auto r = compare(json::array(), json::array({point(5, traffic(4096))}), json::array(),
                         json::array({point(50, traffic(4100))}));
  ASSERT_TRUE(r.regressed());
  const Comparison* c = find(r, "traffic.bytes_sent");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->regression);
  EXPECT_NE(c->note.find("rank 1: 4096 -> 4100"), std::string::npos) << c->note;
  EXPECT_NE(find(r, "traffic.bytes_recv"), nullptr);
  EXPECT_EQ(find(r, "traffic.msgs_sent"), nullptr);  // unchanged counts make no row
}

TEST(TrafficCompare, EpochTrafficIsComparedToo) {
  const auto r = compare(json::array({epochRun(traffic(4096))}), json::array(),
                         json::array({epochRun(traffic(8192))}), json::array());
  ASSERT_TRUE(r.regressed());
  EXPECT_NE(find(r, "traffic.bytes_sent"), nullptr);
}

TEST(TrafficCompare, CountsMissingInNewRegressAndAbsentInBaseAreNotRequired) {
  const auto gone = compare(json::array(), json::array({point(5, traffic(4096))}), json::array(),
                            json::array({point(5, nullptr)}));
  ASSERT_TRUE(gone.regressed());
  EXPECT_EQ(find(gone, "traffic")->note, "not recorded in NEW");
  // An older BASE without counts holds NEW to nothing exact.
  const auto older = compare(json::array(), json::array({point(5, nullptr)}), json::array(),
                             json::array({point(5, traffic(4096))}));
  EXPECT_FALSE(older.regressed());
}

}  // namespace
}  // namespace tpb
