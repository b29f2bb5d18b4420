// harness/import.cc — see import.h.
#include "harness/import.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/error.h"
#include "common/text_escape.h"
#include "common/format_bytes.h"
#include "record/nccl_tests.h"
#include "record/reference_busbw.h"
#include "record/results.h"

#ifndef TPB_VERSION
#define TPB_VERSION "unknown"
#endif

namespace tpb {

namespace {

// The file's meta: the first file's, with every file's hosts; the rank count where all agree.
Meta mergedMeta(const std::vector<NcclTestsImport>& parts, const std::vector<std::string>& files) {
  Meta meta = parts.front().meta;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const Meta& m = parts[i].meta;
    if (m.hosts)
      for (const auto& h : *m.hosts)
        if (std::find(meta.hosts->begin(), meta.hosts->end(), h) == meta.hosts->end()) meta.hosts->push_back(h);
    if (m.worldSize != meta.worldSize) meta.worldSize.reset();
    if (m.command != meta.command) meta.command.reset();
    if (m.nccl != meta.nccl) meta.nccl.reset();
    if (m.nodes != meta.nodes) meta.nodes.reset();  // each point keeps its own (record/nccl_tests.h)
  }
  if (!meta.worldSize) meta.gpus.reset();  // one list per rank: only where every file has the same ranks
  meta.tpbenchVersion = TPB_VERSION;
  nlohmann::json from = nlohmann::json::array();
  for (const auto& f : files) from.push_back(printableLine(f));
  meta.extra["imported"] = {{"tool", kNcclTestsOrigin}, {"files", from}};
  return meta;
}

std::string placementsOf(const std::vector<CollectiveRecord>& points) {
  std::set<std::string> ops;
  for (const auto& p : points) ops.insert(p.op);
  std::string text;
  for (const auto& op : ops) text += (text.empty() ? "" : ", ") + op;
  return text;
}

std::string busbwText(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", gbps);
  return buf;
}

}  // namespace

int runImport(const ImportOptions& o, std::ostream& out) {
  const auto& ops = ncclTestsOps();
  if (!o.op.empty() && std::find(ops.begin(), ops.end(), o.op) == ops.end()) {
    std::string names;
    for (const auto& n : ops) names += (names.empty() ? "" : ", ") + n;
    TPB_THROW(UsageError, "--op: '" << printableLine(o.op) << "' is not a test tpbench imports (choose from " << names << ")");
  }
  for (const auto& f : o.files)
    if (f == o.out) TPB_THROW(UsageError, "--out " << printableLine(o.out) << " is also an input file");
  std::vector<NcclTestsImport> parts;
  for (const auto& f : o.files) parts.push_back(importNcclTests(f, o.op));
  const OwnedOutput owned("--out", o.out, kResultsOutput, OutputFlags{false, o.overwrite, false});

  ResultsFile results = ResultsFile::create(o.out, mergedMeta(parts, o.files));
  std::size_t total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& part = parts[i];
    const Meta& m = part.meta;
    out << printableLine(o.files[i]) << ": " << part.points.size() << " points of " << placementsOf(part.points);
    if (m.worldSize) out << ", " << *m.worldSize << " ranks on " << (m.hosts ? m.hosts->size() : 0) << " host(s)";
    if (m.gpus && !m.gpus->empty() && !m.gpus->front().empty()) out << " (" << m.gpus->front() << ")";
    if (m.nccl) out << ", NCCL " << *m.nccl;
    out << "\n";
    for (const auto& why : part.leftOut) out << "  left out: " << why << "\n";
    // The best large-message allreduce against what its platform should reach.
    const CollectiveRecord* bestPoint = nullptr;
    std::vector<const ReferenceBusbw*> refs;
    const std::string gpu = m.gpus && !m.gpus->empty() ? m.gpus->front() : "";
    for (const auto& p : part.points) {
      auto r = referencesFor(p.op, p.device, p.nGpus, m.nodes.value_or(1), p.bytes, gpu);
      if (!r.empty() && (!bestPoint || p.busbwGbps > bestPoint->busbwGbps)) {
        bestPoint = &p;
        refs = std::move(r);
      }
    }
    if (bestPoint)
      out << "  best busbw at " << formatBytes(bestPoint->bytes) << ": " << busbwText(bestPoint->busbwGbps) << " GB/s = "
          << referenceText(bestPoint->busbwGbps, refs) << "\n";
    for (const auto& p : part.points) results.addCollective(p);
    total += part.points.size();
  }
  results.save();
  out << "wrote " << total << " nccl-tests points to " << printableLine(o.out) << "\n";
  return 0;
}

}  // namespace tpb
