// record/reference_busbw.cc — see reference_busbw.h.
#include "record/reference_busbw.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tpb {

const std::vector<ReferenceBusbw>& referenceBusbwTable() {
  // Measured figures are nccl-tests' all_reduce_perf busbw at its plateau (256 MiB and up). Line
  // rates are one direction of the link: the ceiling of ring and tree algorithms, whose every byte
  // busbw counts crosses a link; NVLS reduces inside the switch, moving less than busbw's formula
  // counts, so its busbw passes the line rate (480 over 450 on H100).
  static const std::vector<ReferenceBusbw> table = {
      {"8x H100 SXM (NVLink 4, NVSwitch)", "H100", "ring", 8, 367, true,
       "nccl-tests all_reduce_perf, NCCL_ALGO=Ring, 2-4 GiB: 365-370 GB/s (the cost model's anchor)"},
      {"8x H100 SXM (NVLink 4, NVSwitch)", "H100", "NVLS", 8, 480, true,
       "nccl-tests all_reduce_perf with NVLink SHARP (NCCL 2.17 and later), large messages: about 480 GB/s"},
      {"8x H100 SXM (NVLink 4, NVSwitch)", "H100", "line rate", 8, 450, false,
       "NVLink 4: 900 GB/s per GPU both ways, 450 one way (NVIDIA H100 datasheet)"},
      {"8x H200 SXM (NVLink 4, NVSwitch)", "H200", "ring", 8, 367, true,
       "the same NVLink 4 and NVSwitch fabric as H100 SXM: H100's ring figure"},
      {"8x H200 SXM (NVLink 4, NVSwitch)", "H200", "NVLS", 8, 480, true,
       "the same NVLink 4 and NVSwitch fabric as H100 SXM: H100's NVLS figure"},
      {"8x B200 (NVLink 5, NVSwitch)", "B200", "line rate", 8, 900, false,
       "NVLink 5: 1.8 TB/s per GPU both ways, 900 GB/s one way (NVIDIA B200 datasheet); no measured figure "
       "recorded here"},
      {"InfiniBand NDR (ConnectX-7)", "", "per NIC, line rate", 0, 50, false, "400 Gb/s per port: 50 GB/s one way"},
      {"InfiniBand XDR (ConnectX-8)", "", "per NIC, line rate", 0, 100, false, "800 Gb/s per port: 100 GB/s one way"},
  };
  return table;
}

std::vector<const ReferenceBusbw*> referencesFor(const std::string& op, const std::string& device, int ranks,
                                                 long long nodes, std::uint64_t bytes, const std::string& gpuName) {
  std::vector<const ReferenceBusbw*> out;
  if (op != "allreduce" || device != "cuda" || nodes > 1 || bytes < kReferenceMinBytes || gpuName.empty()) return out;
  for (const auto& r : referenceBusbwTable())
    if (r.ranks == ranks && *r.gpu && gpuName.find(r.gpu) != std::string::npos) out.push_back(&r);
  return out;
}

namespace {
const ReferenceBusbw* best(const std::vector<const ReferenceBusbw*>& refs) {
  const ReferenceBusbw* b = nullptr;
  for (const auto* r : refs)
    if (r->measured && (!b || r->busbwGbps > b->busbwGbps)) b = r;
  return b;
}
}  // namespace

bool farBelowReference(double busbw, const std::vector<const ReferenceBusbw*>& refs) {
  const ReferenceBusbw* b = best(refs);
  return b && std::isfinite(busbw) && busbw < kFarBelowReference * b->busbwGbps;
}

std::string referenceText(double busbw, const std::vector<const ReferenceBusbw*>& refs) {
  if (refs.empty() || !std::isfinite(busbw)) return "";
  std::string text;
  char buf[160];
  for (const auto* r : refs) {
    std::snprintf(buf, sizeof buf, "%.0f %% of %s %.0f", 100 * busbw / r->busbwGbps, r->variant, r->busbwGbps);
    text += (text.empty() ? "" : ", ") + std::string(buf);
  }
  text += std::string(" GB/s (") + refs.front()->platform + ")";
  if (farBelowReference(busbw, refs)) {
    std::snprintf(buf, sizeof buf, "; FAR BELOW: under %.0f %% of the best published figure", 100 * kFarBelowReference);
    text += buf;
  }
  return text;
}

}  // namespace tpb
