// The collectives at a glance (record/collective_summary.h): the fastest per (N, size), the
// others as multiples of its time, "within noise" where the min–max ranges overlap, repeats
// merged, and an algorithm that ran over several carriers split into columns.
#include <gtest/gtest.h>

#include "record/collective_summary.h"

namespace tpb {
namespace {

CollectiveTiming timing(const std::string& algo, std::uint64_t bytes, double median, double lo, double hi,
                        const std::string& carrier = "shm") {
  CollectiveTiming t;
  t.op = "allreduce";
  t.algo = algo;
  t.carrier = carrier;
  t.device = "cpu";
  t.n = 2;
  t.bytes = bytes;
  t.medianUs = median;
  t.minUs = lo;
  t.maxUs = hi;
  t.busbwGbps = 1000.0 / median;
  return t;
}

TEST(CollectiveSummary, NamesTheFastestAndTheOthersAsMultiples) {
  const auto tables = summaryTables({timing("ring", 1024, 100, 95, 105), timing("tree", 1024, 50, 48, 52),
                                     timing("gloo", 1024, 200, 150, 400)});
  ASSERT_EQ(tables.size(), 1u);
  const SummaryTable& t = tables[0];
  EXPECT_EQ(t.columns, (std::vector<std::string>{"ring", "tree", "gloo"}));
  ASSERT_EQ(t.rows.size(), 1u);
  const SummaryRow& r = t.rows[0];
  EXPECT_EQ(r.winner, 1u);
  ASSERT_TRUE(r.runnerUp);
  EXPECT_EQ(*r.runnerUp, 0u);
  EXPECT_FALSE(r.withinNoise);  // tree's max 52 is below ring's min 95
  EXPECT_EQ(winnerText(t, r), "tree");
  EXPECT_EQ(ratioText(r, 0), "2.00x");
  EXPECT_EQ(ratioText(r, 1), "1.00x");
  EXPECT_EQ(ratioText(r, 2), "4.00x");
  EXPECT_DOUBLE_EQ(r.cells[r.winner]->busbwGbps, 20.0);
}

TEST(CollectiveSummary, OverlappingRangesAreWithinNoiseNotAWin) {
  const auto tables = summaryTables({timing("ring", 8192, 10, 9, 12), timing("tree", 8192, 11, 10.5, 13),
                                     timing("ring", 65536, 10, 9, 10.4), timing("tree", 65536, 11, 10.5, 13)});
  ASSERT_EQ(tables.size(), 1u);
  const SummaryTable& t = tables[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_TRUE(t.rows[0].withinNoise);  // ring's max 12 reaches tree's min 10.5
  EXPECT_EQ(winnerText(t, t.rows[0]), "ring \u2248 tree");
  EXPECT_FALSE(t.rows[1].withinNoise);  // ring's max 10.4 stays below 10.5
  EXPECT_EQ(winnerText(t, t.rows[1]), "ring");
}

TEST(CollectiveSummary, RepeatsMergeAndMissingCellsStayEmpty) {
  const auto tables = summaryTables({timing("ring", 1024, 10, 9, 11), timing("ring", 1024, 14, 8, 20),
                                     timing("tree", 1024, 30, 29, 31), timing("ring", 4096, 40, 39, 41)});
  ASSERT_EQ(tables.size(), 1u);
  const SummaryTable& t = tables[0];
  ASSERT_EQ(t.rows.size(), 2u);
  const Contender& ring = *t.rows[0].cells[0];
  EXPECT_DOUBLE_EQ(ring.medianUs, 12);  // median of 10 and 14
  EXPECT_DOUBLE_EQ(ring.minUs, 8);
  EXPECT_DOUBLE_EQ(ring.maxUs, 20);
  EXPECT_EQ(ratioText(t.rows[0], 1), "2.50x");
  EXPECT_FALSE(t.rows[1].cells[1]);  // tree was not measured at 4K
  EXPECT_EQ(ratioText(t.rows[1], 1), "-");
  EXPECT_FALSE(t.rows[1].runnerUp);
  EXPECT_EQ(winnerText(t, t.rows[1]), "ring");
}

TEST(CollectiveSummary, AnAlgorithmOverSeveralCarriersGetsAColumnEach) {
  const auto tables = summaryTables({timing("ring", 1024, 10, 9, 11, "shm"), timing("ring", 1024, 90, 80, 99, "gloo"),
                                     timing("tree", 1024, 20, 19, 21, "shm")});
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].columns, (std::vector<std::string>{"ring over shm", "ring over gloo", "tree"}));
}

TEST(CollectiveSummary, OpsAndPlacementsAreTablesOfTheirOwn) {
  auto out = timing("ring", 1024, 10, 9, 11);
  out.inPlace = false;
  auto bcast = timing("tree", 1024, 10, 9, 11);
  bcast.op = "broadcast";
  const auto tables = summaryTables({timing("ring", 1024, 10, 9, 11), out, bcast});
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_TRUE(tables[0].inPlace);
  EXPECT_FALSE(tables[1].inPlace);
  EXPECT_EQ(tables[2].op, "broadcast");
}

TEST(CollectiveSummary, OnlyOkMeasuredRecordsCount) {
  CollectiveRecord r;
  r.algo = "gloo";
  r.transport = "shm";
  r.device = "cpu";
  r.nGpus = 2;
  r.bytes = 1024;
  r.measured = true;
  r.timeMedianUs = 5;
  r.entry.carrier = "gloo-tcp";
  ASSERT_TRUE(timingOf(r));
  EXPECT_EQ(timingOf(r)->carrier, "gloo-tcp");
  r.entry.carrier.reset();
  EXPECT_EQ(timingOf(r)->carrier, "shm");  // a file older than the field: its transport
  r.status = "failed";
  EXPECT_FALSE(timingOf(r));
}

}  // namespace
}  // namespace tpb
