// tests/reference_busbw_test.cc — the published bus-bandwidth table and the verdict that puts a GPU
// allreduce curve against it (record/reference_busbw.h): which row a GPU name, a rank count, a
// node count and an algorithm pick, what the plateau of a curve is, and why a curve gets none.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "record/reference_busbw.h"

namespace tpb {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

CurveFacts facts(const std::string& gpu, int ranks, double plateau, long long nodes = 1) {
  CurveFacts f;
  f.gpu = gpu;
  f.ranks = ranks;
  f.nodes = nodes;
  f.plateauBusbw = plateau;
  f.plateauBytes = 8 * kGiB;
  return f;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The platform of the figure a GPU name gets on one node of 8 ranks, "" when none.
std::string platformOf(const std::string& gpu, int ranks = 8) {
  const Verdict v = verdictFor(facts(gpu, ranks, 300));
  return v.has ? v.ref->platform : "";
}

TEST(ReferenceBusbw, GpuNamesPickTheirPlatformOnly) {
  EXPECT_EQ(platformOf("NVIDIA H100 80GB HBM3"), "H100 SXM");
  EXPECT_EQ(platformOf("nvidia h100 80gb hbm3"), "H100 SXM");  // any case
  EXPECT_EQ(platformOf("NVIDIA H100 PCIe"), "");               // not the SXM board's NVSwitch
  EXPECT_EQ(platformOf("NVIDIA H100 NVL"), "");                // PCIe cards with NVLink bridges
  EXPECT_EQ(platformOf("NVIDIA H200"), "H200 SXM");
  EXPECT_EQ(platformOf("NVIDIA H200 NVL"), "");
  EXPECT_EQ(platformOf("NVIDIA GH200 480GB"), "");  // Grace Hopper is not an 8x H200 board
  EXPECT_EQ(platformOf("NVIDIA H20"), "");
  EXPECT_EQ(platformOf("NVIDIA B200"), "B200");
  EXPECT_EQ(platformOf("NVIDIA GB200", 4), "GB200 (one compute tray)");  // "GB200" contains "B200"
  EXPECT_EQ(platformOf("NVIDIA GB200"), "");                            // 8 GPUs are not one tray
  EXPECT_EQ(platformOf("NVIDIA A100-SXM4-80GB"), "A100 SXM");
  EXPECT_EQ(platformOf("NVIDIA A100-SXM4-40GB"), "A100 SXM");
  EXPECT_EQ(platformOf("NVIDIA A100-PCIE-40GB"), "");
  EXPECT_EQ(platformOf("NVIDIA A100 80GB PCIe"), "");
  EXPECT_EQ(platformOf("NVIDIA GeForce RTX 4090", 4), "");
  const Verdict v = verdictFor(facts("NVIDIA GeForce RTX 4090", 4, 20));
  EXPECT_EQ(v.whyNone, "no published figure for 4x NVIDIA GeForce RTX 4090");
  for (const auto& r : referenceBusbwTable())
    if (r.scope == ReferenceScope::kPerNic) {
      EXPECT_FALSE(gpuMatches(r, "NVIDIA H100 80GB HBM3")) << r.platform;
    }
}

TEST(ReferenceBusbw, UnknownAlgorithmIsAgainstRingAndNamesNvls) {
  const Verdict v = verdictFor(facts("NVIDIA H100 80GB HBM3", 8, 283));
  ASSERT_TRUE(v.has) << v.whyNone;
  EXPECT_EQ(std::string(v.ref->algorithm), "ring");
  ASSERT_NE(v.also, nullptr);
  EXPECT_EQ(std::string(v.also->algorithm), "NVLS");
  EXPECT_DOUBLE_EQ(v.expectedGbps, 367);
  EXPECT_NEAR(v.fraction, 283.0 / 367, 1e-12);
  EXPECT_FALSE(v.farBelow);
  EXPECT_TRUE(has(v.text, "77 % of the published ring figure for 8x H100 SXM (367 GB/s, nccl-tests#212")) << v.text;
  EXPECT_TRUE(has(v.text, "59 % of the published NVLS figure (480 GB/s")) << v.text;
  EXPECT_FALSE(has(v.text, "FAR BELOW")) << v.text;
  EXPECT_TRUE(v.whyNone.empty());
}

TEST(ReferenceBusbw, FarBelowIsUnderSeventyPercentOfTheFigureComparedWith) {
  const Verdict low = verdictFor(facts("NVIDIA H100 80GB HBM3", 8, 250));  // 68 % of 367
  ASSERT_TRUE(low.has);
  EXPECT_TRUE(low.farBelow);
  EXPECT_TRUE(has(low.text, "FAR BELOW")) << low.text;
  const Verdict ok = verdictFor(facts("NVIDIA H100 80GB HBM3", 8, 260));  // 71 %
  ASSERT_TRUE(ok.has);
  EXPECT_FALSE(ok.farBelow);
  EXPECT_FALSE(has(ok.text, "FAR BELOW")) << ok.text;
  // Against a line rate (no measured figure for 3 B200 ranks) nothing is flagged.
  const Verdict ceiling = verdictFor(facts("NVIDIA B200", 3, 90));
  ASSERT_TRUE(ceiling.has) << ceiling.whyNone;
  EXPECT_FALSE(ceiling.ref->measured);
  EXPECT_FALSE(ceiling.farBelow);
  EXPECT_TRUE(has(ceiling.text, "of the line rate of 3x B200 (900 GB/s, a ceiling")) << ceiling.text;
}

TEST(ReferenceBusbw, AKnownAlgorithmPicksItsOwnFigure) {
  CurveFacts f = facts("NVIDIA H100 80GB HBM3", 8, 470);
  f.algorithm = "NVLS";
  Verdict v = verdictFor(f);
  ASSERT_TRUE(v.has) << v.whyNone;
  EXPECT_DOUBLE_EQ(v.expectedGbps, 480);
  EXPECT_EQ(v.also, nullptr);
  EXPECT_TRUE(has(v.text, "98 % of the published NVLS figure for 8x H100 SXM (480 GB/s")) << v.text;

  f.algorithm = "Ring";
  f.plateauBusbw = 360;
  v = verdictFor(f);
  ASSERT_TRUE(v.has);
  EXPECT_DOUBLE_EQ(v.expectedGbps, 367);
  EXPECT_EQ(v.also, nullptr);

  f.algorithm = "allreduce:ring";  // NCCL 2.24's per-collective form
  EXPECT_DOUBLE_EQ(verdictFor(f).expectedGbps, 367);

  f.algorithm = "Tree";
  v = verdictFor(f);
  EXPECT_FALSE(v.has);
  EXPECT_TRUE(has(v.whyNone, "NCCL_ALGO=Tree")) << v.whyNone;

  f.algorithm = "Ring,Tree";  // not one algorithm: compared as unknown, and said so
  v = verdictFor(f);
  ASSERT_TRUE(v.has);
  EXPECT_NE(v.also, nullptr);
  EXPECT_TRUE(has(v.text, "names no one algorithm")) << v.text;

  // NVLS does not run at 4 GPUs: no NVLS figure there.
  f = facts("NVIDIA H100 80GB HBM3", 4, 360);
  f.algorithm = "NVLS";
  EXPECT_FALSE(verdictFor(f).has);
}

TEST(ReferenceBusbw, RankCountsPickTheirRows) {
  Verdict v = verdictFor(facts("NVIDIA H100 80GB HBM3", 4, 360));
  ASSERT_TRUE(v.has);
  EXPECT_DOUBLE_EQ(v.expectedGbps, 367);  // ring from 2 to 8 GPUs
  EXPECT_EQ(v.also, nullptr);             // and no NVLS at 4
  EXPECT_TRUE(has(v.text, "for 4x H100 SXM")) << v.text;
  v = verdictFor(facts("NVIDIA H100 80GB HBM3", 6, 430));
  ASSERT_NE(v.also, nullptr);
  EXPECT_DOUBLE_EQ(v.also->busbwGbps, 440);
  v = verdictFor(facts("NVIDIA H200", 8, 470));
  EXPECT_DOUBLE_EQ(v.expectedGbps, 366);
  ASSERT_NE(v.also, nullptr);
  EXPECT_DOUBLE_EQ(v.also->busbwGbps, 480);
  v = verdictFor(facts("NVIDIA B200", 8, 830));
  EXPECT_DOUBLE_EQ(v.expectedGbps, 680);
  ASSERT_NE(v.also, nullptr);
  EXPECT_DOUBLE_EQ(v.also->busbwGbps, 838);
  // 16 ranks cannot be one 8-GPU node.
  v = verdictFor(facts("NVIDIA H100 80GB HBM3", 16, 360));
  EXPECT_FALSE(v.has);
  EXPECT_TRUE(has(v.whyNone, "other rank counts")) << v.whyNone;
  // A100's figure is NCCL's default (no NVLS on A100): a forced ring has none.
  v = verdictFor(facts("NVIDIA A100-SXM4-80GB", 8, 225));
  ASSERT_TRUE(v.has);
  EXPECT_TRUE(has(v.text, "98 % of the published figure for 8x A100 SXM (230 GB/s")) << v.text;
  EXPECT_EQ(v.also, nullptr);
  CurveFacts ring = facts("NVIDIA A100-SXM4-80GB", 8, 225);
  ring.algorithm = "RING";
  v = verdictFor(ring);
  EXPECT_FALSE(v.has);
  EXPECT_TRUE(has(v.whyNone, "default algorithm")) << v.whyNone;
}

TEST(ReferenceBusbw, Gb200IsPerTrayAndPerRack) {
  Verdict v = verdictFor(facts("NVIDIA GB200", 4, 670));
  ASSERT_TRUE(v.has);
  EXPECT_DOUBLE_EQ(v.expectedGbps, 680);
  // A whole NVL72 rack is 18 hosts on one NVLink domain: no NIC count is needed.
  v = verdictFor(facts("NVIDIA GB200", 72, 835, 18));
  ASSERT_TRUE(v.has) << v.whyNone;
  EXPECT_DOUBLE_EQ(v.expectedGbps, 840);
  EXPECT_TRUE(has(v.text, "99 % of the published figure for 72x GB200 (one NVL72 rack) (840 GB/s")) << v.text;
  v = verdictFor(facts("NVIDIA GB200", 144, 790, 36));
  ASSERT_TRUE(v.has);
  EXPECT_DOUBLE_EQ(v.expectedGbps, 815);
  // Part of a rack over two hosts: NVLink or NICs, and no figure either way.
  CurveFacts part = facts("NVIDIA GB200", 8, 700, 2);
  part.nicsPerNode = 4;
  part.nic = "ndr";
  v = verdictFor(part);
  EXPECT_FALSE(v.has);
  EXPECT_TRUE(has(v.whyNone, "whole NVL72 racks")) << v.whyNone;
}

TEST(ReferenceBusbw, AcrossNodesNeedsTheNicCountAndKind) {
  CurveFacts f = facts("NVIDIA H100 80GB HBM3", 16, 330, 2);
  Verdict v = verdictFor(f);
  EXPECT_FALSE(v.has);
  EXPECT_EQ(v.whyNone, "2 nodes: the NIC count per node is not in the log; give --nics");
  f.nicsPerNode = 8;
  v = verdictFor(f);
  EXPECT_FALSE(v.has);
  EXPECT_TRUE(has(v.whyNone, "2 nodes: the NIC kind is not in the log; give --nic (ndr, ")) << v.whyNone;
  f.nic = "token-ring";
  EXPECT_FALSE(verdictFor(f).has);

  // 8 NDR NICs: 8 x 47 = 376, but the ring crosses the node's NVLink too: capped at H100's 367.
  f.nic = "NDR";
  v = verdictFor(f);
  ASSERT_TRUE(v.has) << v.whyNone;
  EXPECT_EQ(std::string(v.ref->nic), "ndr");
  EXPECT_DOUBLE_EQ(v.expectedGbps, 367);
  EXPECT_NEAR(v.fraction, 330.0 / 367, 1e-12);
  EXPECT_TRUE(has(v.text, "90 % of the published per-NIC ring figure for 2 nodes x 8 NICs, InfiniBand NDR 400G "
                          "(8 x 47 = 376 GB/s, capped at 367 GB/s by the 8x H100 SXM ring figure"))
      << v.text;
  EXPECT_TRUE(has(v.text, "NCCL may pick tree")) << v.text;  // 2 nodes, algorithm unknown

  // 4 NICs a node: the NICs are the limit, and 4 nodes need no tree warning.
  f = facts("NVIDIA H100 80GB HBM3", 32, 180, 4);
  f.nicsPerNode = 4;
  f.nic = "ndr";
  v = verdictFor(f);
  ASSERT_TRUE(v.has);
  EXPECT_DOUBLE_EQ(v.expectedGbps, 188);
  EXPECT_FALSE(has(v.text, "capped")) << v.text;
  EXPECT_FALSE(has(v.text, "tree")) << v.text;
  f.plateauBusbw = 120;  // 64 % of 188
  EXPECT_TRUE(verdictFor(f).farBelow);

  // The per-NIC figures are ring's: a tree curve has none.
  f.algorithm = "NVLSTree";
  v = verdictFor(f);
  EXPECT_FALSE(v.has);
  EXPECT_TRUE(has(v.whyNone, "NCCL_ALGO=NVLSTree")) << v.whyNone;

  // A kind with only a line rate is compared with it, as a ceiling, never flagged.
  f = facts("NVIDIA GeForce RTX 4090", 8, 10, 2);
  f.nicsPerNode = 32;
  f.nic = "efa-v2";
  v = verdictFor(f);
  ASSERT_TRUE(v.has);
  EXPECT_FALSE(v.ref->measured);
  EXPECT_DOUBLE_EQ(v.expectedGbps, 400);  // no node figure for this GPU: no cap
  EXPECT_FALSE(v.farBelow);
  EXPECT_TRUE(has(v.text, "of the line rate of 2 nodes x 32 NICs, AWS EFA v2")) << v.text;
}

TEST(ReferenceBusbw, PlateauIsTheMedianOfTheLargestSizes) {
  const std::vector<BusbwPoint> curve = {
      {64 * kMiB, 300},  {256 * kMiB, 420}, {512 * kMiB, 440}, {kGiB, 460},     {kGiB, 462},
      {2 * kGiB, 470},   {2 * kGiB, 472},   {4 * kGiB, 476},   {4 * kGiB, 478}, {8 * kGiB, NAN},
      {8 * kGiB, -1.0},
  };
  const Plateau p = plateauOf(curve);
  ASSERT_TRUE(p.has) << p.whyNone;
  // The 8 GiB points have no busbw: the three largest sizes with one are 1, 2 and 4 GiB.
  EXPECT_EQ(p.points, 6);
  EXPECT_EQ(p.fromBytes, kGiB);
  EXPECT_EQ(p.toBytes, 4 * kGiB);
  EXPECT_EQ(p.largestBytes, 4 * kGiB);
  EXPECT_DOUBLE_EQ(p.busbwGbps, (470 + 472) / 2.0);
  EXPECT_EQ(plateauText(p), "471 GB/s, the median of 6 points at 1G-4G");

  const Plateau one = plateauOf({{128 * kMiB, 200}, {512 * kMiB, 350}});
  ASSERT_TRUE(one.has);
  EXPECT_EQ(one.points, 1);
  EXPECT_DOUBLE_EQ(one.busbwGbps, 350);
  EXPECT_EQ(plateauText(one), "350 GB/s, the one point at 512M");

  // The verdict of a curve uses its plateau.
  CurveFacts f = facts("NVIDIA H100 80GB HBM3", 8, NAN);
  const Verdict v = verdictFor(f, curve);
  ASSERT_TRUE(v.has) << v.whyNone;
  EXPECT_NEAR(v.fraction, 471 / 367.0, 1e-12);
}

TEST(ReferenceBusbw, SmallCurvesGetNoVerdict) {
  const std::vector<BusbwPoint> small = {{64 * kMiB, 300}, {128 * kMiB, 330}};
  const Plateau p = plateauOf(small);
  EXPECT_FALSE(p.has);
  EXPECT_EQ(p.largestBytes, 128 * kMiB);
  EXPECT_EQ(p.whyNone, "largest size 128 MiB is below the 256 MiB plateau");
  const Verdict v = verdictFor(facts("NVIDIA H100 80GB HBM3", 8, NAN), small);
  EXPECT_FALSE(v.has);
  EXPECT_EQ(v.whyNone, "largest size 128 MiB is below the 256 MiB plateau");
  EXPECT_TRUE(v.text.empty());
  // Exactly 256 MiB is a plateau; one byte less is not.
  EXPECT_TRUE(plateauOf({{kReferenceMinBytes, 300}}).has);
  EXPECT_FALSE(plateauOf({{kReferenceMinBytes - 1, 300}}).has);
  EXPECT_FALSE(plateauOf({}).has);
  EXPECT_FALSE(plateauOf({{kGiB, NAN}}).has);
  CurveFacts f = facts("NVIDIA H100 80GB HBM3", 8, 300);
  f.plateauBytes = 0;
  EXPECT_FALSE(verdictFor(f).has);
  f.plateauBytes = 8 * kGiB;
  f.plateauBusbw = NAN;
  EXPECT_FALSE(verdictFor(f).has);
}

TEST(ReferenceBusbw, TypesOpsAndDevicesWithoutFigures) {
  CurveFacts f = facts("NVIDIA H100 80GB HBM3", 8, 300);
  for (const char* t : {"", "float32", "float16", "bfloat16"}) {
    f.dtype = t;
    EXPECT_TRUE(verdictFor(f).has) << t;  // busbw counts bytes
  }
  for (const char* t : {"float64", "int8", "int32", "float8_e4m3"}) {
    f.dtype = t;
    const Verdict v = verdictFor(f);
    EXPECT_FALSE(v.has) << t;
    EXPECT_TRUE(has(v.whyNone, t)) << v.whyNone;
  }
  f.dtype = "bfloat16";
  f.redop = "max";
  EXPECT_FALSE(verdictFor(f).has);
  f.redop = "sum";
  f.op = "allgather";
  EXPECT_EQ(verdictFor(f).whyNone, "no published figures for allgather (allreduce only)");
  f.op = "allreduce";
  f.device = "cpu";
  EXPECT_FALSE(verdictFor(f).has);
  f.device = "cuda";
  f.gpu = "";
  EXPECT_EQ(verdictFor(f).whyNone, "the GPU is not named in the file");
  f.gpu = "NVIDIA H100 80GB HBM3";
  f.ranks = 1;
  EXPECT_FALSE(verdictFor(f).has);
}

TEST(ReferenceBusbw, EveryRowSaysWhereItsFigureComesFrom) {
  std::set<std::tuple<std::string, std::string, int, int, bool, std::string>> seen;
  std::set<std::string> lineRateNics;
  for (const auto& r : referenceBusbwTable()) {
    const std::string src = r.source, cite = r.cite, algo = r.algorithm;
    EXPECT_GT(r.busbwGbps, 0) << r.platform;
    EXPECT_GT(src.size(), 20u) << r.platform << ": every figure says where it comes from";
    EXPECT_FALSE(cite.empty()) << r.platform;
    EXPECT_FALSE(std::string(r.variant).empty()) << r.platform;
    if (r.measured) {
      EXPECT_TRUE(has(src, "https://")) << r.platform << " " << algo << ": a measured figure names its page";
      EXPECT_TRUE(algo == "ring" || algo == "NVLS" || algo == "default") << r.platform << " " << algo;
    } else {
      EXPECT_EQ(algo, "any") << r.platform << ": a line rate is not an algorithm's";
    }
    if (r.scope == ReferenceScope::kPerNic) {
      EXPECT_EQ(std::string(r.gpu), "") << r.platform;
      EXPECT_FALSE(std::string(r.nic).empty()) << r.platform;
      EXPECT_EQ(r.ranks, 0) << r.platform;
      EXPECT_EQ(r.ranksMax, 0) << r.platform;
      if (!r.measured) lineRateNics.insert(r.nic);
    } else {
      EXPECT_FALSE(std::string(r.gpu).empty()) << r.platform;
      EXPECT_EQ(std::string(r.nic), "") << r.platform;
      EXPECT_GE(r.ranks, 2) << r.platform;
      EXPECT_LE(r.ranks, r.ranksMax) << r.platform;
    }
    // No two rows answer the same question (a GPU or NIC, a scope, an algorithm, a basis, ranks).
    for (int n = std::max(r.ranks, 0); n <= r.ranksMax; ++n)
      EXPECT_TRUE(seen.insert({std::string(r.gpu) + r.gpuNot + r.nic, algo, n, static_cast<int>(r.scope),
                               r.measured, r.platform})
                      .second)
          << r.platform << " " << algo << " at " << n << " ranks twice";
  }
  // Every NIC kind has its line rate, and a measured per-NIC figure stays under it, as a ring's
  // figure stays under its NVLink's.
  for (const auto& k : referenceNicKinds()) EXPECT_EQ(lineRateNics.count(k), 1u) << k;
  for (const auto& m : referenceBusbwTable()) {
    if (!m.measured || std::string(m.algorithm) != "ring") continue;
    for (const auto& l : referenceBusbwTable())
      if (!l.measured && l.scope == m.scope && std::string(l.gpu) == m.gpu && std::string(l.nic) == m.nic &&
          l.ranks <= m.ranks && m.ranksMax <= std::max(l.ranksMax, l.ranks)) {
        EXPECT_LT(m.busbwGbps, l.busbwGbps) << m.platform;
      }
  }
}

// import, report and the collective benchmark group points into curves by one function: a curve
// per series, GPU, nodes, rank count, type, reduction, algorithm and NIC setting, other ops left out.
TEST(ReferenceBusbw, CurveVerdictsGroupPointsIntoCurves) {
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  auto point = [&](const std::string& series, int ranks, std::uint64_t bytes, double bw) {
    CurvePoint p;
    p.series = series;
    p.facts.gpu = h100;
    p.facts.ranks = ranks;
    p.bytes = bytes;
    p.busbwGbps = bw;
    return p;
  };
  std::vector<CurvePoint> pts;
  for (std::uint64_t b : {kGiB, 2 * kGiB, 4 * kGiB}) {
    pts.push_back(point("a.json", 8, b, 360));  // in place and out of place: one curve
    pts.push_back(point("a.json", 8, b, 362));
    pts.push_back(point("b.json", 8, b, 180));  // another file: its own curve
    pts.push_back(point("a.json", 4, b, 300));  // another rank count
  }
  CurvePoint bf16 = point("a.json", 8, kGiB, 350);
  bf16.facts.dtype = "bfloat16";
  pts.push_back(bf16);
  CurvePoint gather = point("a.json", 8, kGiB, 350);
  gather.facts.op = "allgather";
  pts.push_back(gather);
  const auto curves = curveVerdicts(pts);
  ASSERT_EQ(curves.size(), 4u);  // a.json 8 float32, a.json 8 bfloat16, a.json 4, b.json 8
  int checked = 0;
  for (const auto& c : curves) {
    if (c.series == "a.json" && c.facts.ranks == 8 && c.facts.dtype == "float32") {
      EXPECT_EQ(c.plateau.points, 6);
      EXPECT_DOUBLE_EQ(c.plateau.busbwGbps, 361);
      ASSERT_TRUE(c.verdict.has) << c.verdict.whyNone;
      EXPECT_TRUE(has(curveVerdictText(c), "plateau 361 GB/s, the median of 6 points at 1G-4G; 98 % of the published ring"))
          << curveVerdictText(c);
      ++checked;
    }
    if (c.series == "b.json") {
      EXPECT_TRUE(c.verdict.farBelow) << curveVerdictText(c);
      ++checked;
    }
    if (c.facts.dtype == "bfloat16") {
      EXPECT_EQ(c.plateau.points, 1);
      EXPECT_TRUE(has(curveVerdictText(c), "the one point at 1G")) << curveVerdictText(c);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3);
  // Without a plateau the text says why.
  const auto small = curveVerdicts({point("c", 8, 64ull << 20, 200)});
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(curveVerdictText(small[0]), "no verdict: largest size 64 MiB is below the 256 MiB plateau");
}

}  // namespace
}  // namespace tpb
