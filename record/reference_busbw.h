// record/reference_busbw.h — what a platform should reach: published or line-rate bus bandwidth
// per GPU system and network, with where each figure comes from, so that NCCL points (tpbench's
// own and those imported from nccl-tests) can say how far they are from it. The whole table is in
// docs/reports.md ("What a platform should reach"); `report` and `import` apply it.
//
// A figure applies to allreduce at large messages (from kReferenceMinBytes), where busbw has
// reached its plateau; smaller messages are latency-bound and compare with nothing here. Only
// single-node entries are applied automatically (the GPU's name and the rank count are in every
// file's meta); a per-NIC figure needs the NIC count and kind, which no file records, so those
// rows are for reading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpb {

struct ReferenceBusbw {
  const char* platform;  // "8x H100 SXM (NVLink 4, NVSwitch)"
  const char* gpu;       // what a GPU name must contain ("H100"); "" for a network entry
  const char* variant;   // "ring", "NVLS", "line rate", "per NIC, line rate"
  int ranks;             // the rank count it is for (one GPU each); 0: per NIC
  double busbwGbps;
  bool measured;         // a published measurement (true) or a line-rate ceiling (false)
  const char* source;
};

inline constexpr std::uint64_t kReferenceMinBytes = std::uint64_t{256} << 20;
// Below this fraction of the best applicable reference a point is flagged.
inline constexpr double kFarBelowReference = 0.7;

const std::vector<ReferenceBusbw>& referenceBusbwTable();

// The entries that apply to an allreduce point of `ranks` GPUs named `gpuName` on one node, of
// `bytes` per rank: empty for another op, a smaller message, another GPU or more nodes.
std::vector<const ReferenceBusbw*> referencesFor(const std::string& op, const std::string& device, int ranks,
                                                 long long nodes, std::uint64_t bytes, const std::string& gpuName);

// "77 % of 480 GB/s (8x H100 SXM, NVLS)" and, below kFarBelowReference of the best, a flag;
// "" when no entry applies. `busbw` in GB/s.
std::string referenceText(double busbw, const std::vector<const ReferenceBusbw*>& refs);
bool farBelowReference(double busbw, const std::vector<const ReferenceBusbw*>& refs);

}  // namespace tpb
