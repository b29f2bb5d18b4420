// record/reference_busbw.cc — see reference_busbw.h. Every row says where its figure was
// published; docs/reports.md ("What a platform should reach") has the same table for reading.
#include "record/reference_busbw.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace tpb {

namespace {

using S = ReferenceScope;

// Sources, shared by the rows that read the same page.
#define TPB_SRC_NCCLTESTS_212                                                                             \
  "https://github.com/NVIDIA/nccl-tests/issues/212: S. Jeaugey (NVIDIA) on 8x H100: 450 GB/s is the "   \
  "NVLink line rate; with the protocol overhead (about 20 %) NCCL gets about 370 GB/s busbw with "       \
  "NCCL_ALGO=RING; allreduce uses NVLink SHARP by default, and on 8 GPUs should peak at about 480 GB/s " \
  "busbw (algbw about 275), at sizes above 256 MiB"
#define TPB_SRC_NCCL_1455                                                                              \
  "https://github.com/NVIDIA/nccl/issues/1455: a user's 8x H100 SXM, all_reduce_perf -b 2G -e 4G: "    \
  "NCCL_ALGO=RING 365-370 GB/s from 2 to 8 GPUs; NCCL_ALGO=NVLS 365-370 at 2-4 GPUs, then 420, 440, " \
  "460 and 480 GB/s at 5, 6, 7 and 8"
#define TPB_SRC_MLENG_SHARP                                                                             \
  "https://github.com/stas00/ml-engineering/blob/master/network/README.md#sharp: nccl-tests at 8 GiB " \
  "on 8x H200: NVLS 414, 436, 460, 473 GB/s at 5-8 GPUs, NCCL_NVLS_ENABLE=0 (ring) 363-366 at 4-8, "  \
  "480.0 vs 367.2 at 16 GiB; on 8x B200 (AWS p6-b200.48xlarge, NCCL 2.27.7): NVLS 778, 811, 838 at "  \
  "6-8 GPUs, ring 673-682 at 4-8"
#define TPB_SRC_AZURE_H200                                                                             \
  "https://github.com/Azure/AI-benchmarking-guide/blob/main/Azure_Results/ND_H200_v5_results.md: "     \
  "Azure ND H200 v5 (8x H200, NCCL 2.20.5), all_reduce_perf in place, NVLS: 467.6, 472.6, 477.4, "    \
  "480.0 GB/s at 1, 2, 4, 8 GiB"
#define TPB_SRC_NVLINK                                                                                  \
  "https://www.nvidia.com/en-us/data-center/nvlink/ and the NVLink table of "                           \
  "https://github.com/stas00/ml-engineering/blob/master/network/README.md: per GPU, NVLink 3 (A100) "  \
  "600 GB/s both ways, NVLink 4 (H100, H200) 900, NVLink 5 (B200, GB200) 1800; one way is half"
#define TPB_SRC_COREWEAVE                                                                               \
  "https://github.com/coreweave/nccl-tests/blob/master/README.md (Expected Performance, GB200, NCCL "  \
  "2.26.2): one NVL72 rack, 72 ranks: 835-847 GB/s at 4-8 GiB (in and out of place); two racks, 144 " \
  "ranks: 791-793 at 8 GiB, 810-820 at 16 GiB"
#define TPB_SRC_AWS_EFA                                                                                  \
  "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html and the EFA notes of "                  \
  "https://github.com/stas00/ml-engineering/blob/master/network/README.md: p5/p5e (EFA v2) 32 "         \
  "interfaces of 100 Gb/s, p5en (EFA v3) 16 of 200 Gb/s, p6-b200 (EFA v4) 8 of 400 Gb/s: 3200 Gb/s a " \
  "node each"

const std::vector<ReferenceBusbw>& table() {
  static const std::vector<ReferenceBusbw> rows = {
      // H100 SXM: 8 per HGX board on NVSwitch (gen 3, with NVLink SHARP).
      {"H100 SXM", "NVLink 4, NVSwitch", "h100", "pcie|nvl", "", S::kNode, 2, 8, "ring", "ring", 367, true,
       "nccl-tests#212, nccl#1455", TPB_SRC_NCCLTESTS_212 "; " TPB_SRC_NCCL_1455},
      {"H100 SXM", "NVLink 4, NVSwitch", "h100", "pcie|nvl", "", S::kNode, 8, 8, "NVLS", "NVLS", 480, true,
       "nccl-tests#212, #290",
       TPB_SRC_NCCLTESTS_212 "; https://github.com/NVIDIA/nccl-tests/issues/290: D. Addison (NVIDIA): 476 GB/s "
                             "on one 8x H100 node, with NVLink SHARP, is in the expected range"},
      {"H100 SXM", "NVLink 4, NVSwitch", "h100", "pcie|nvl", "", S::kNode, 7, 7, "NVLS", "NVLS", 460, true,
       "nccl#1455", TPB_SRC_NCCL_1455},
      {"H100 SXM", "NVLink 4, NVSwitch", "h100", "pcie|nvl", "", S::kNode, 6, 6, "NVLS", "NVLS", 440, true,
       "nccl#1455", TPB_SRC_NCCL_1455},
      {"H100 SXM", "NVLink 4, NVSwitch", "h100", "pcie|nvl", "", S::kNode, 5, 5, "NVLS", "NVLS", 420, true,
       "nccl#1455", TPB_SRC_NCCL_1455},
      {"H100 SXM", "NVLink 4, NVSwitch", "h100", "pcie|nvl", "", S::kNode, 2, 8, "any", "line rate", 450, false,
       "NVLink 4 line rate", TPB_SRC_NVLINK "; nccl-tests#212: 450 GB/s is the line rate"},
      // H200 SXM: the H100's NVLink 4 and NVSwitch, measured on its own.
      {"H200 SXM", "NVLink 4, NVSwitch", "h200", "pcie|nvl|gh200", "", S::kNode, 4, 8, "ring", "ring", 366, true,
       "ml-engineering", TPB_SRC_MLENG_SHARP},
      {"H200 SXM", "NVLink 4, NVSwitch", "h200", "pcie|nvl|gh200", "", S::kNode, 8, 8, "NVLS", "NVLS", 480, true,
       "Azure ND H200 v5, ml-engineering",
       TPB_SRC_AZURE_H200 "; " TPB_SRC_MLENG_SHARP
                          "; the same page's PyTorch benchmark (NCCL 2.27.7): 482.26 GB/s at 16 GiB; "
                          "https://github.com/NVIDIA/nccl-tests/issues/272: 475 GB/s peak on 8x H200 (NCCL 2.20.3)"},
      {"H200 SXM", "NVLink 4, NVSwitch", "h200", "pcie|nvl|gh200", "", S::kNode, 7, 7, "NVLS", "NVLS", 460, true,
       "ml-engineering", TPB_SRC_MLENG_SHARP},
      {"H200 SXM", "NVLink 4, NVSwitch", "h200", "pcie|nvl|gh200", "", S::kNode, 6, 6, "NVLS", "NVLS", 436, true,
       "ml-engineering", TPB_SRC_MLENG_SHARP},
      {"H200 SXM", "NVLink 4, NVSwitch", "h200", "pcie|nvl|gh200", "", S::kNode, 5, 5, "NVLS", "NVLS", 414, true,
       "ml-engineering", TPB_SRC_MLENG_SHARP},
      {"H200 SXM", "NVLink 4, NVSwitch", "h200", "pcie|nvl|gh200", "", S::kNode, 2, 8, "any", "line rate", 450,
       false, "NVLink 4 line rate", TPB_SRC_NVLINK},
      // B200 (HGX B200): NVLink 5 on NVSwitch gen 4.
      {"B200", "NVLink 5, NVSwitch", "b200", "gb200", "", S::kNode, 4, 8, "ring", "ring", 680, true,
       "ml-engineering", TPB_SRC_MLENG_SHARP},
      {"B200", "NVLink 5, NVSwitch", "b200", "gb200", "", S::kNode, 8, 8, "NVLS", "NVLS", 838, true,
       "ml-engineering, nccl#1807",
       TPB_SRC_MLENG_SHARP "; https://github.com/NVIDIA/nccl/issues/1807: a user's 8x B200 reaches 830+ GB/s "
                           "with NCCL 2.27.1 (no maintainer answer on the figure)"},
      {"B200", "NVLink 5, NVSwitch", "b200", "gb200", "", S::kNode, 7, 7, "NVLS", "NVLS", 811, true,
       "ml-engineering", TPB_SRC_MLENG_SHARP},
      {"B200", "NVLink 5, NVSwitch", "b200", "gb200", "", S::kNode, 6, 6, "NVLS", "NVLS", 778, true,
       "ml-engineering", TPB_SRC_MLENG_SHARP},
      {"B200", "NVLink 5, NVSwitch", "b200", "gb200", "", S::kNode, 2, 8, "any", "line rate", 900, false,
       "NVLink 5 line rate", TPB_SRC_NVLINK},
      // A100 SXM: NVSwitch gen 2 has no SHARP, so there is no NVLS; the figure is NCCL's default.
      {"A100 SXM", "NVLink 3, NVSwitch", "a100", "pcie", "", S::kNode, 8, 8, "default", "default", 230, true,
       "Azure ND A100 v4",
       "https://github.com/Azure/AI-benchmarking-guide/blob/main/Azure_Results/ND_A100_v4_results.md: Azure ND "
       "A100 v4 (8x A100-SXM4-80GB, NCCL 2.18.5), all_reduce_perf in place: 228.1, 230.2, 230.5, 231.6 GB/s at "
       "1, 2, 4, 8 GiB (the page names NVLS, which A100 lacks: NCCL chose); "
       "https://github.com/NVIDIA/nccl/issues/527: a user's p4dn.24xlarge (8x A100): 230.8 GB/s at 1 GiB"},
      {"A100 SXM", "NVLink 3, NVSwitch", "a100", "pcie", "", S::kNode, 2, 8, "any", "line rate", 300, false,
       "NVLink 3 line rate", TPB_SRC_NVLINK},
      // GB200: 4 GPUs a compute tray (a host), 18 trays an NVL72 rack, all on NVLink 5 switches.
      {"GB200 (one compute tray)", "NVLink 5", "gb200", "", "", S::kNode, 4, 4, "ring", "ring", 680, true,
       "Azure ND GB200 v6",
       "https://github.com/Azure/AI-benchmarking-guide/blob/main/Azure_Results/ND_GB200_v6_results.md: Azure ND "
       "GB200 v6, one host's 4 GPUs (NCCL 2.25.1), all_reduce_perf in place, Ring: 646.9, 666.6, 673.1, 679.6 "
       "GB/s at 1, 2, 4, 8 GiB"},
      {"GB200 (one compute tray)", "NVLink 5", "gb200", "", "", S::kNode, 2, 4, "any", "line rate", 900, false,
       "NVLink 5 line rate", TPB_SRC_NVLINK},
      {"GB200 (one NVL72 rack)", "NVLink 5, 18 trays", "gb200", "", "", S::kRack, 72, 72, "default", "default", 840,
       true, "CoreWeave nccl-tests README",
       TPB_SRC_COREWEAVE "; NVIDIA's GTC25 talk S72583, as the ml-engineering SHARP section reads its slide: "
                         "850 GB/s on NVL72 with NVLink SHARP, 680 without"},
      {"GB200 (two NVL72 racks, InfiniBand between)", "NVLink 5 + InfiniBand", "gb200", "", "", S::kRack, 144, 144,
       "default", "default", 815, true, "CoreWeave nccl-tests README", TPB_SRC_COREWEAVE},
      // Across nodes, per NIC: a ring allreduce over k nodes keeps every NIC of a node busy, so its
      // busbw is about (NICs per node) x (one NIC's), where each GPU has a NIC of its own.
      {"InfiniBand NDR 400G", "ConnectX-7", "", "", "ndr", S::kPerNic, 0, 0, "ring", "per NIC", 47, true,
       "nccl-tests#290",
       "https://github.com/NVIDIA/nccl-tests/issues/290: D. Addison (NVIDIA), on 2 nodes of 8x H100: benchmark "
       "two nodes with NCCL_ALGO=RING; with NDR at 400 Gb/s expect 46-48 GB/s per NIC; "
       "https://github.com/NVIDIA/nccl-tests/issues/267: ConnectX-7 at 400 Gb/s should reach up to 48-49 GB/s "
       "per NIC"},
      {"InfiniBand NDR 400G", "ConnectX-7", "", "", "ndr", S::kPerNic, 0, 0, "any", "per NIC, line rate", 50, false,
       "400 Gb/s line rate", "400 Gb/s one way: 50 GB/s"},
      {"InfiniBand XDR 800G", "ConnectX-8", "", "", "xdr", S::kPerNic, 0, 0, "any", "per NIC, line rate", 100,
       false, "800 Gb/s line rate",
       "800 Gb/s one way: 100 GB/s (ConnectX-8 SuperNIC, Quantum-X800; no published per-NIC allreduce figure "
       "found)"},
      {"InfiniBand HDR 200G", "ConnectX-6", "", "", "hdr", S::kPerNic, 0, 0, "ring", "per NIC", 24, true,
       "nccl#412, nccl#812",
       "https://github.com/NVIDIA/nccl/issues/412: S. Jeaugey (NVIDIA): with one 200G HDR NIC, about 24 GB/s "
       "inter-node busbw at 8 GiB; https://github.com/NVIDIA/nccl/issues/812: D. Addison (NVIDIA): a DGX A100 "
       "with 8x 200 Gb/s InfiniBand measures 192 GB/s allreduce busbw (forcing NCCL_ALGO=RING on two nodes)"},
      {"InfiniBand HDR 200G", "ConnectX-6", "", "", "hdr", S::kPerNic, 0, 0, "any", "per NIC, line rate", 25, false,
       "200 Gb/s line rate", "200 Gb/s one way: 25 GB/s"},
      {"InfiniBand EDR / 100G", "ConnectX-5/6", "", "", "edr", S::kPerNic, 0, 0, "ring", "per NIC", 12.2, true,
       "nccl-tests#29",
       "https://github.com/NVIDIA/nccl-tests/issues/29: S. Jeaugey (NVIDIA): 12.2 GB/s with one 100 Gb/s card is "
       "as good as it gets (a DGX-1 with 4 such adapters gets 48)"},
      {"InfiniBand EDR / 100G", "ConnectX-5/6", "", "", "edr", S::kPerNic, 0, 0, "any", "per NIC, line rate", 12.5,
       false, "100 Gb/s line rate", "100 Gb/s one way: 12.5 GB/s"},
      {"RoCE 400G", "ConnectX-7", "", "", "roce400", S::kPerNic, 0, 0, "ring", "per NIC", 48, true, "nccl-tests#267",
       "https://github.com/NVIDIA/nccl-tests/issues/267: on 6 nodes of 8x H100 with 8x 400G ConnectX-7 over "
       "RoCE, D. Addison (NVIDIA): ConnectX-7 at 400 Gb/s should reach up to 48-49 GB/s per NIC"},
      {"RoCE 400G", "ConnectX-7", "", "", "roce400", S::kPerNic, 0, 0, "any", "per NIC, line rate", 50, false,
       "400 Gb/s line rate", "400 Gb/s one way: 50 GB/s"},
      {"AWS EFA v2 (p5, p5e)", "32x 100G a node", "", "", "efa-v2", S::kPerNic, 0, 0, "any", "per NIC, line rate",
       12.5, false, "EFA v2 line rate", TPB_SRC_AWS_EFA "; no published per-interface allreduce figure found"},
      {"AWS EFA v3 (p5en)", "16x 200G a node", "", "", "efa-v3", S::kPerNic, 0, 0, "any", "per NIC, line rate", 25,
       false, "EFA v3 line rate", TPB_SRC_AWS_EFA "; no published per-interface allreduce figure found"},
      {"AWS EFA v4 (p6-b200)", "8x 400G a node", "", "", "efa-v4", S::kPerNic, 0, 0, "ring", "per NIC", 47.5, true,
       "ml-engineering",
       "https://github.com/stas00/ml-engineering/blob/master/network/README.md (Inter-node speed depends on "
       "intra-node speed): 4 nodes of p6-b200 (8x B200, 8x 400G EFA v4), NCCL 2.27.7, its PyTorch allreduce "
       "benchmark: 377-382 GB/s busbw at 4-16 GiB, 47-48 GB/s per NIC"},
      {"AWS EFA v4 (p6-b200)", "8x 400G a node", "", "", "efa-v4", S::kPerNic, 0, 0, "any", "per NIC, line rate",
       50, false, "EFA v4 line rate", TPB_SRC_AWS_EFA},
  };
  return rows;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool sameText(const std::string& a, const char* b) { return lower(a) == lower(b); }

bool inRanks(const ReferenceBusbw& r, int ranks) { return ranks >= r.ranks && ranks <= r.ranksMax; }

// "128 MiB", "4 GiB", "1.5 GiB"
std::string sizeText(std::uint64_t bytes) {
  char b[48];
  const double mib = static_cast<double>(bytes) / (1 << 20);
  if (mib >= 1024)
    std::snprintf(b, sizeof b, "%.4g GiB", mib / 1024);
  else if (mib >= 1)
    std::snprintf(b, sizeof b, "%.4g MiB", mib);
  else
    std::snprintf(b, sizeof b, "%llu bytes", static_cast<unsigned long long>(bytes));
  return b;
}

// "G" style sizes, as the tables print them: 2147483648 -> "2G".
std::string shortSize(std::uint64_t bytes) {
  static const struct {
    unsigned shift;
    char unit;
  } kUnits[] = {{30, 'G'}, {20, 'M'}, {10, 'K'}};
  for (const auto& u : kUnits) {
    const std::uint64_t scale = std::uint64_t{1} << u.shift;
    if (bytes >= scale && bytes % scale == 0) return std::to_string(bytes / scale) + u.unit;
  }
  return std::to_string(bytes);
}

std::string gbps(double v) {
  char b[32];
  std::snprintf(b, sizeof b, v == std::floor(v) ? "%.0f" : "%.1f", v);
  return b;
}

std::string percent(double fraction) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f %%", 100 * fraction);
  return b;
}

// "8x H100 SXM"
std::string label(const ReferenceBusbw& r, int ranks) {
  return r.scope == S::kPerNic ? std::string(r.platform) : std::to_string(ranks) + "x " + r.platform;
}

// NCCL_ALGO as one lower-case name: "ring", "nvls", "tree", ...; "" when unknown or not one name
// ("Ring,Tree", "^NVLS"). NCCL 2.24's "allreduce:ring" form is read too.
std::string algorithmOf(const std::string& a, bool* notOne) {
  std::string s = lower(a);
  const auto colon = s.find(':');
  if (colon != std::string::npos) s = s.substr(colon + 1);
  *notOne = false;
  if (s.empty()) return "";
  if (s.find_first_of(",;^ ") != std::string::npos) {
    *notOne = true;
    return "";
  }
  return s;
}

bool floatType(const std::string& dtype) {
  return dtype.empty() || dtype == "float32" || dtype == "float16" || dtype == "bfloat16";
}

// Picks the measured row of `algorithm` among `rows`, else nullptr.
const ReferenceBusbw* measuredOf(const std::vector<const ReferenceBusbw*>& rows, const char* algorithm) {
  for (const auto* r : rows)
    if (r->measured && sameText(r->algorithm, algorithm)) return r;
  return nullptr;
}

const ReferenceBusbw* lineRateOf(const std::vector<const ReferenceBusbw*>& rows) {
  for (const auto* r : rows)
    if (!r->measured) return r;
  return nullptr;
}

// "the published ring figure", "the published NVLS figure", "the published figure".
std::string figureWords(const ReferenceBusbw& r) {
  if (!r.measured) return "the line rate";
  if (sameText(r.algorithm, "default")) return "the published figure";
  return std::string("the published ") + r.algorithm + " figure";
}

Verdict none(std::string why) {
  Verdict v;
  v.whyNone = std::move(why);
  return v;
}

std::string farBelowText() {
  char b[96];
  std::snprintf(b, sizeof b, "; FAR BELOW: under %.0f %% of the published figure", 100 * kFarBelowReference);
  return b;
}

Verdict acrossNodes(const CurveFacts& f, const std::string& algo) {
  const std::string nodesText = std::to_string(f.nodes) + " nodes";
  // GB200's NVLink spans the trays of a rack: NICs say nothing there, and only whole racks have figures.
  for (const auto& r : table())
    if (r.scope == S::kRack && gpuMatches(r, f.gpu))
      return none("no published figure for " + std::to_string(f.ranks) + "x " + f.gpu + " over " + nodesText +
                  ": GB200's are for whole NVL72 racks (72 and 144 GPUs)");
  if (f.nicsPerNode <= 0) return none(nodesText + ": the NIC count per node is not in the log; give --nics");
  if (f.nic.empty()) {
    std::string kinds;
    for (const auto& k : referenceNicKinds()) kinds += (kinds.empty() ? "" : ", ") + k;
    return none(nodesText + ": the NIC kind is not in the log; give --nic (" + kinds + ")");
  }
  std::vector<const ReferenceBusbw*> rows;
  for (const auto& r : table())
    if (r.scope == S::kPerNic && sameText(f.nic, r.nic)) rows.push_back(&r);
  if (rows.empty()) return none("no published per-NIC figure for NIC kind \"" + f.nic + "\"");
  if (!algo.empty() && algo != "ring")
    return none(nodesText + ", NCCL_ALGO=" + f.algorithm +
                ": the per-NIC figures are for ring (tree and NVLS tree pass them on 2 nodes, and nothing is "
                "published for them)");
  const ReferenceBusbw* r = measuredOf(rows, "ring");
  if (!r) r = lineRateOf(rows);
  if (!r) return none("no published per-NIC figure for NIC kind \"" + f.nic + "\"");

  Verdict v;
  v.has = true;
  v.ref = r;
  double expected = f.nicsPerNode * r->busbwGbps;
  // The ring also crosses the node's NVLink: it cannot beat the node's own ring figure.
  const ReferenceBusbw* cap = nullptr;
  if (f.nodes > 0 && f.ranks % f.nodes == 0) {
    const int perNode = static_cast<int>(f.ranks / f.nodes);
    for (const auto& n : table())
      if (n.scope == S::kNode && n.measured && sameText(n.algorithm, "ring") && inRanks(n, perNode) &&
          gpuMatches(n, f.gpu) && n.busbwGbps < expected) {
        cap = &n;
        expected = n.busbwGbps;
      }
  }
  v.expectedGbps = expected;
  v.fraction = f.plateauBusbw / expected;
  std::string what = nodesText + " x " + std::to_string(f.nicsPerNode) + " NICs, " + r->platform;
  std::string how = std::to_string(f.nicsPerNode) + " x " + gbps(r->busbwGbps) + " = " +
                    gbps(f.nicsPerNode * r->busbwGbps) + " GB/s";
  if (cap)
    how += ", capped at " + gbps(cap->busbwGbps) + " GB/s by the " +
           label(*cap, static_cast<int>(f.ranks / f.nodes)) + " ring figure;";
  if (r->measured) {
    v.text = percent(v.fraction) + " of the published per-NIC ring figure for " + what + " (" + how +
             (cap ? " " : ", ") + r->cite + ")";
    v.farBelow = v.fraction < kFarBelowReference;
  } else {
    v.text = percent(v.fraction) + " of the line rate of " + what + " (" + how + (cap ? " " : "; ") +
             "a ceiling: no measured per-NIC figure is published)";
  }
  if (f.nodes == 2 && algo.empty())
    v.text += "; on 2 nodes NCCL may pick tree, whose busbw passes this (NCCL_ALGO=Ring measures the network)";
  if (v.farBelow) v.text += farBelowText();
  return v;
}

}  // namespace

const std::vector<ReferenceBusbw>& referenceBusbwTable() { return table(); }

bool gpuMatches(const ReferenceBusbw& ref, const std::string& gpuName) {
  if (!*ref.gpu || gpuName.empty()) return false;
  const std::string name = lower(gpuName);
  if (!contains(name, lower(ref.gpu))) return false;
  std::string nots = lower(ref.gpuNot);
  std::size_t start = 0;
  while (start <= nots.size()) {
    const std::size_t bar = nots.find('|', start);
    const std::string one = nots.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (!one.empty() && contains(name, one)) return false;
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return true;
}

std::vector<std::string> referenceNicKinds() {
  std::vector<std::string> out;
  for (const auto& r : table())
    if (r.scope == S::kPerNic && std::find(out.begin(), out.end(), r.nic) == out.end()) out.push_back(r.nic);
  return out;
}

Plateau plateauOf(const std::vector<BusbwPoint>& points) {
  Plateau p;
  std::vector<BusbwPoint> good;
  for (const auto& pt : points)
    if (std::isfinite(pt.busbwGbps) && pt.busbwGbps > 0) {
      good.push_back(pt);
      p.largestBytes = std::max(p.largestBytes, pt.bytes);
    }
  if (good.empty()) {
    p.whyNone = "no point has a measured busbw";
    return p;
  }
  if (p.largestBytes < kReferenceMinBytes) {
    p.whyNone = "largest size " + sizeText(p.largestBytes) + " is below the " + sizeText(kReferenceMinBytes) +
                " plateau";
    return p;
  }
  std::vector<std::uint64_t> sizes;
  for (const auto& pt : good)
    if (pt.bytes >= kReferenceMinBytes) sizes.push_back(pt.bytes);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() > static_cast<std::size_t>(kPlateauSizes)) sizes.resize(kPlateauSizes);
  std::vector<double> bw;
  for (const auto& pt : good)
    if (std::find(sizes.begin(), sizes.end(), pt.bytes) != sizes.end()) bw.push_back(pt.busbwGbps);
  std::sort(bw.begin(), bw.end());
  const std::size_t n = bw.size();
  p.has = true;
  p.busbwGbps = n % 2 ? bw[n / 2] : (bw[n / 2 - 1] + bw[n / 2]) / 2;
  p.points = static_cast<int>(n);
  p.toBytes = sizes.front();
  p.fromBytes = sizes.back();
  return p;
}

std::string plateauText(const Plateau& p) {
  if (!p.has) return "";
  const std::string at =
      p.fromBytes == p.toBytes ? shortSize(p.toBytes) : shortSize(p.fromBytes) + "-" + shortSize(p.toBytes);
  if (p.points == 1) return gbps(std::round(p.busbwGbps)) + " GB/s, the one point at " + at;
  return gbps(std::round(p.busbwGbps)) + " GB/s, the median of " + std::to_string(p.points) + " points at " + at;
}

Verdict verdictFor(const CurveFacts& f) {
  if (f.op != "allreduce") return none("no published figures for " + f.op + " (allreduce only)");
  if (f.device != "cuda")
    return none("not a GPU curve (" + (f.device.empty() ? std::string("no device") : f.device) + ")");
  if (f.gpu.empty()) return none("the GPU is not named in the file");
  if (!floatType(f.dtype))
    return none(f.dtype + ": the published figures are float32 runs; only float32, float16 and bfloat16 curves "
                          "(busbw counts bytes) are compared");
  if (!f.redop.empty() && f.redop != "sum") return none("a " + f.redop + " reduction: the published figures are sums");
  if (f.ranks < 2)
    return none(std::to_string(f.ranks) + (f.ranks == 1 ? " rank" : " ranks") + ": an allreduce moves nothing");
  if (f.plateauBytes < kReferenceMinBytes)
    return none(f.plateauBytes == 0 ? std::string("no point has a measured busbw")
                                    : "largest size " + sizeText(f.plateauBytes) + " is below the " +
                                          sizeText(kReferenceMinBytes) + " plateau");
  if (!std::isfinite(f.plateauBusbw) || f.plateauBusbw <= 0) return none("no measured busbw at the plateau");

  bool notOne = false;
  const std::string algo = algorithmOf(f.algorithm, &notOne);

  // The rows of this GPU and rank count: a rack's at any node count, a node's on one node.
  std::vector<const ReferenceBusbw*> rows;
  bool gpuKnown = false;
  for (const auto& r : table()) {
    if (r.scope == S::kPerNic || !gpuMatches(r, f.gpu)) continue;
    gpuKnown = true;
    if (!inRanks(r, f.ranks)) continue;
    if (r.scope == S::kRack || f.nodes <= 1) rows.push_back(&r);
  }
  if (rows.empty() && f.nodes > 1) return acrossNodes(f, algo);
  if (rows.empty()) {
    std::string why = "no published figure for " + std::to_string(f.ranks) + "x " + f.gpu;
    if (gpuKnown) why += " (this GPU's figures are for other rank counts)";
    return none(why);
  }

  const std::string platform = label(*rows.front(), f.ranks);
  const ReferenceBusbw* r = nullptr;
  const ReferenceBusbw* also = nullptr;
  if (algo.empty()) {
    r = measuredOf(rows, "ring");
    if (!r) r = measuredOf(rows, "default");
    if (!r) r = measuredOf(rows, "NVLS");
    if (!r) r = lineRateOf(rows);
    if (r && sameText(r->algorithm, "ring")) also = measuredOf(rows, "NVLS");
    if (!also && r && r->measured && !sameText(r->algorithm, "default")) also = measuredOf(rows, "default");
  } else if (algo == "ring" || algo == "nvls") {
    r = measuredOf(rows, algo == "ring" ? "ring" : "NVLS");
    if (!r)
      return none("no published " + std::string(algo == "ring" ? "ring" : "NVLS") + " figure for " + platform +
                  (measuredOf(rows, "default") ? " (its figure is for NCCL's default algorithm: run without NCCL_ALGO)"
                                               : ""));
  } else {
    return none("no published figure for NCCL_ALGO=" + f.algorithm + " on " + platform +
                ": the figures are for ring, NVLS and NCCL's default");
  }
  if (!r) return none("no published figure for " + platform);

  Verdict v;
  v.has = true;
  v.ref = r;
  v.also = also;
  v.expectedGbps = r->busbwGbps;
  v.fraction = f.plateauBusbw / r->busbwGbps;
  if (r->measured) {
    v.text = percent(v.fraction) + " of " + figureWords(*r) + " for " + platform + " (" + gbps(r->busbwGbps) +
             " GB/s, " + r->cite + ")";
    v.farBelow = v.fraction < kFarBelowReference;
  } else {
    v.text = percent(v.fraction) + " of the line rate of " + platform + " (" + gbps(r->busbwGbps) +
             " GB/s, a ceiling: no measured figure is published for this rank count)";
  }
  if (also)
    v.text += "; " + percent(f.plateauBusbw / also->busbwGbps) + " of " + figureWords(*also) + " (" +
              gbps(also->busbwGbps) + " GB/s, " + also->cite + ")";
  if (notOne) v.text += "; NCCL_ALGO=" + f.algorithm + " names no one algorithm: compared as unknown";
  if (v.farBelow) v.text += farBelowText();
  return v;
}

Verdict verdictFor(CurveFacts facts, const std::vector<BusbwPoint>& points) {
  const Plateau p = plateauOf(points);
  facts.plateauBusbw = p.busbwGbps;
  facts.plateauBytes = p.largestBytes;
  return verdictFor(facts);  // without a plateau, facts.plateauBytes says why, as p.whyNone does
}

std::vector<CurveVerdict> curveVerdicts(const std::vector<CurvePoint>& points) {
  using Key = std::tuple<std::string, std::string, std::string, long long, int, std::string, std::string, std::string,
                         int, std::string>;
  std::map<Key, std::pair<CurveFacts, std::vector<BusbwPoint>>> curves;
  for (const auto& p : points) {
    const CurveFacts& f = p.facts;
    if (f.op != "allreduce") continue;
    auto& c = curves[Key{p.series, f.device, f.gpu, f.nodes, f.ranks, f.dtype, f.redop, f.algorithm, f.nicsPerNode,
                         f.nic}];
    if (c.second.empty()) c.first = f;
    c.second.push_back({p.bytes, p.busbwGbps});
  }
  std::vector<CurveVerdict> out;
  out.reserve(curves.size());
  for (auto& [key, curve] : curves) {
    CurveVerdict v;
    v.series = std::get<0>(key);
    v.plateau = plateauOf(curve.second);
    v.facts = curve.first;
    v.facts.plateauBusbw = v.plateau.busbwGbps;
    v.facts.plateauBytes = v.plateau.largestBytes;
    v.verdict = verdictFor(v.facts);
    out.push_back(std::move(v));
  }
  return out;
}

CurveFacts curveFactsOf(const CollectiveRecord& p, const Meta& meta) {
  const auto str = [&](const char* key) -> std::optional<std::string> {
    const auto v = p.extra.find(key);
    if (v == p.extra.end() || !v->is_string()) return std::nullopt;
    return v->get<std::string>();
  };
  const auto integer = [&](const char* key) -> std::optional<long long> {
    const auto v = p.extra.find(key);
    if (v == p.extra.end() || !v->is_number_integer()) return std::nullopt;
    return v->get<long long>();
  };
  CurveFacts f;
  f.op = p.op;
  f.device = p.device;
  f.gpu = str("gpu").value_or(meta.gpus && !meta.gpus->empty() ? meta.gpus->front() : "");
  f.ranks = p.nGpus;
  f.nodes = integer("nodes").value_or(meta.nodes.value_or(1));
  f.nicsPerNode = static_cast<int>(integer("nics_per_node").value_or(0));
  f.nic = str("nic").value_or("");
  f.algorithm = str("nccl_algo").value_or(p.algo == "ring" ? "ring" : "");
  f.dtype = p.elementType();
  f.redop = p.reduction();
  return f;
}

std::string curveVerdictText(const CurveVerdict& v) {
  std::string text;
  if (v.plateau.has) text = "plateau " + plateauText(v.plateau) + "; ";
  return text + (v.verdict.has ? v.verdict.text : "no verdict: " + v.verdict.whyNone);
}

}  // namespace tpb
