// record/reference_busbw.h — what a platform should reach: published allreduce bus bandwidth
// per GPU system and per network card, each figure with where it was published, and the verdict
// that puts a GPU allreduce curve (tpbench's own or imported from nccl-tests) against it:
// "77 % of the published ring figure for 8x H100 SXM (367 GB/s, nccl-tests#212)", or no verdict
// with the reason. The whole table, with its sources, is in docs/reports.md ("What a platform
// should reach"); `import`, `report` and `allreduce`/`collective` on CUDA print the verdicts.
//
// A figure is a plateau: the busbw of the largest messages, where the bandwidth has stopped
// growing; smaller messages are latency-bound and compare with nothing here. A curve's plateau is
// plateauOf()'s (the median busbw at its three largest sizes from kReferenceMinBytes up).
//
// Measured figures (published all_reduce_perf results, or what NVIDIA's NCCL engineers said a
// platform should reach) are kept apart from line rates (one direction of the link, a ceiling
// that ring and tree cannot pass; NVLS reduces inside the switch, so its busbw passes it). A
// verdict is against a measured figure where one fits; against a line rate it says so and is
// never flagged FAR BELOW.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "record/records.h"

namespace tpb {

// Where a figure applies.
enum class ReferenceScope {
  kNode,    // `ranks` GPUs in one node
  kRack,    // `ranks` GPUs of one NVLink domain over several hosts (GB200 NVL72): any host count
  kPerNic,  // across nodes, what one NIC of the kind carries: a curve's figure is NICs per node x it
};

struct ReferenceBusbw {
  const char* platform;   // "H100 SXM", "GB200 (one NVL72 rack)", "InfiniBand NDR 400G"
  const char* fabric;     // "NVLink 4, NVSwitch", "ConnectX-7": for the table
  const char* gpu;        // what the GPU's name must contain, any case ("h100"); "" for a NIC row
  const char* gpuNot;     // what it must not contain, '|'-separated ("pcie|nvl"); "" for none
  const char* nic;        // a NIC row's kind, as CurveFacts::nic names it ("ndr"); "" otherwise
  ReferenceScope scope;
  int ranks, ranksMax;    // the rank counts it is for, both included; 0, 0 for a NIC row
  const char* algorithm;  // "ring", "NVLS", "default" (NCCL's own choice, none forced), "any" (line rate)
  const char* variant;    // the short label referenceText prints: "ring", "NVLS", "default", "line rate"
  double busbwGbps;       // GB/s (1e9 bytes/s), as nccl-tests prints
  bool measured;          // a published measurement (true) or a line-rate ceiling (false)
  const char* cite;       // short, for verdict text: "nccl-tests#212"
  const char* source;     // URLs, and what each says
};

// Every curve's plateau starts at 256 MiB: below it no figure applies.
inline constexpr std::uint64_t kReferenceMinBytes = std::uint64_t{256} << 20;
// A plateau is the median busbw at this many of a curve's largest sizes (from kReferenceMinBytes).
inline constexpr int kPlateauSizes = 3;
// Under this fraction of the measured figure it is compared with, a verdict says FAR BELOW.
inline constexpr double kFarBelowReference = 0.7;

const std::vector<ReferenceBusbw>& referenceBusbwTable();

// Whether a GPU's name (nvidia-smi's, as files record it: "NVIDIA H100 80GB HBM3") is the row's
// GPU: it contains `gpu` and none of `gpuNot`, case aside. Always false for a NIC row.
bool gpuMatches(const ReferenceBusbw& ref, const std::string& gpuName);

// The NIC kinds the per-NIC rows know ("ndr", "xdr", ...), for a --nic option's help and errors.
std::vector<std::string> referenceNicKinds();

// One point of a curve: its size per rank and its busbw in GB/s.
struct BusbwPoint {
  std::uint64_t bytes = 0;
  double busbwGbps = NAN;
};

// A curve's plateau: the median busbw of the points at its kPlateauSizes largest sizes, among
// those of kReferenceMinBytes and more (in-place and out-of-place points of a size both count;
// points without a finite positive busbw are left out). Published figures are peaks at 4-16 GiB
// and busbw still grows from 256 MiB to 1 GiB, so the largest sizes are the ones to compare;
// the median of several keeps one slow or one fast size from deciding. A curve reaching only
// 256 MiB-1 GiB gets a plateau, and reads lower for it: the verdict text says from what sizes.
struct Plateau {
  bool has = false;
  double busbwGbps = NAN;
  std::uint64_t fromBytes = 0, toBytes = 0;  // the smallest and largest size it is the median of
  int points = 0;                            // how many points the median is of
  std::uint64_t largestBytes = 0;            // the curve's largest size with a busbw (with or without a plateau)
  std::string whyNone;                       // when !has: "largest size 128 MiB is below the 256 MiB plateau"
};
Plateau plateauOf(const std::vector<BusbwPoint>& points);
// "371 GB/s, the median of 6 points at 2G-8G"; "" without a plateau.
std::string plateauText(const Plateau& p);

// What a verdict needs to know of one curve (one op, algorithm, dtype and rank count, in-place
// and out-of-place points together).
struct CurveFacts {
  std::string op = "allreduce";
  std::string device = "cuda";
  std::string gpu;            // the first GPU's name, as the file records it; "" when none is named
  int ranks = 0;
  long long nodes = 1;        // hosts
  int nicsPerNode = 0;        // 0: unknown (no file records it; `--nics` gives it)
  std::string nic;            // the NIC kind, one of referenceNicKinds(); "": unknown (`--nic`)
  std::string algorithm;      // NCCL_ALGO where the log says it ("Ring", "NVLS", "Tree"); "": unknown
                              // (NCCL chose); tpbench's own from-scratch ring passes "ring"
  std::string dtype = "float32";  // tpbench's names ("bfloat16"); "" is float32
  std::string redop = "sum";      // "" is sum
  double plateauBusbw = NAN;      // GB/s: plateauOf(points).busbwGbps
  std::uint64_t plateauBytes = 0; // the curve's largest size: plateauOf(points).largestBytes
};

struct Verdict {
  bool has = false;
  std::string text;     // when has: "77 % of the published ring figure for 8x H100 SXM (367 GB/s, nccl-tests#212)"
  std::string whyNone;  // when !has: "no published figure for 4x NVIDIA GeForce RTX 4090"
  const ReferenceBusbw* ref = nullptr;   // the figure compared with (across nodes: the per-NIC row)
  const ReferenceBusbw* also = nullptr;  // algorithm unknown: the NVLS (or default) figure also named
  double expectedGbps = NAN;  // ref's busbw; across nodes NICs per node x it, capped by the node's ring figure
  double fraction = NAN;      // plateauBusbw / expectedGbps
  bool farBelow = false;      // a measured figure, and fraction under kFarBelowReference
};

// The figure that fits the curve and how far its plateau is from it:
// - allreduce on CUDA only, of a named GPU, float32/float16/bfloat16 and sum only (busbw counts
//   bytes, so the 16-bit float types compare with the float32 runs the figures are; other types
//   and reductions run other code paths and have no published figure);
// - a plateau only (plateauBytes from kReferenceMinBytes, a finite positive plateauBusbw);
// - one node (or one NVLink rack for GB200): the row of the GPU, the rank count and the
//   algorithm. Algorithm unknown: against the ring figure, naming the NVLS one too where there
//   is one (NCCL picks NVLS by default where it can); where only a default-algorithm figure is
//   published, against it. Tree, CollNet, PAT and the like: no verdict (no figure is published);
// - across nodes: NICs per node x the per-NIC figure of the NIC kind (both must be given: no
//   file records them), capped by the node's ring figure, for ring or unknown algorithms only.
//   On 2 nodes, with the algorithm unknown, the text warns that tree can pass it.
Verdict verdictFor(const CurveFacts& facts);
// The same, with facts' plateau taken from `points` (plateauOf) first.
Verdict verdictFor(CurveFacts facts, const std::vector<BusbwPoint>& points);

// One point of an allreduce curve, as import, report and the collective benchmark hold it: which
// curve it belongs to (`series`: who measured it, such as an algorithm or an imported file, and
// `facts` less the plateau) and its figures. Points of other ops are left out by curveVerdicts.
struct CurvePoint {
  std::string series;
  CurveFacts facts;  // plateauBusbw and plateauBytes are ignored: the curve's points give them
  std::uint64_t bytes = 0;
  double busbwGbps = NAN;
};

// What the verdict needs to know of a results file's point: where it ran (the point's own
// "gpu" and "nodes", an imported one's, else the file's meta), its NIC count and kind where an
// import recorded them ("nics_per_node", "nic"), its algorithm (an import's "nccl_algo"; tpbench's
// own "ring" is a ring, anything else NCCL's choice), type and reduction.
CurveFacts curveFactsOf(const CollectiveRecord& p, const Meta& meta);

struct CurveVerdict {
  std::string series;
  CurveFacts facts;  // with the plateau filled in
  Plateau plateau;
  Verdict verdict;
};

// The allreduce curves among `points` (a curve: one series, device, GPU, node count, rank count,
// element type, reduction, NCCL algorithm and NIC setting; in-place and out-of-place points
// together), each with its plateau and verdict, in the order of their keys. The one grouping
// that `import`, `report` and `allreduce`/`collective` on CUDA all print.
std::vector<CurveVerdict> curveVerdicts(const std::vector<CurvePoint>& points);
// "plateau 371 GB/s, the median of 2 points at 512M; 101 % of the published ring figure for 8x
// H100 SXM (...)", or "no verdict: largest size 64 MiB is below the 256 MiB plateau".
std::string curveVerdictText(const CurveVerdict& v);

}  // namespace tpb
