// harness/import.cc — see import.h.
#include "harness/import.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/error.h"
#include "common/text_escape.h"
#include "record/nccl_tests.h"
#include "record/reference_busbw.h"
#include "record/results.h"
#include "common/train_settings.h"

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
  bool rccl = false;
  for (const auto& p : parts) rccl = rccl || p.library == "rccl";
  meta.extra["imported"] = {{"tool", rccl ? kRcclTestsOrigin : kNcclTestsOrigin}, {"files", from}};
  return meta;
}

std::string placementsOf(const std::vector<CollectiveRecord>& points) {
  std::set<std::string> ops;
  for (const auto& p : points) ops.insert(p.op);
  std::string text;
  for (const auto& op : ops) text += (text.empty() ? "" : ", ") + op;
  return text;
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
  if (o.ranks < 0 || o.ranks > kMaxRanks) TPB_THROW(UsageError, "--ranks: a rank count from 1 to " << kMaxRanks);
  if (!o.library.empty() && o.library != "nccl" && o.library != "rccl")
    TPB_THROW(UsageError, "--library: '" << printableLine(o.library) << "' is not nccl or rccl");
  if (o.nicsPerNode < 0 || o.nicsPerNode > 64) TPB_THROW(UsageError, "--nics: a NIC count per node from 1 to 64");
  if (!o.nic.empty()) {
    const auto kinds = referenceNicKinds();
    if (std::find(kinds.begin(), kinds.end(), o.nic) == kinds.end()) {
      std::string names;
      for (const auto& k : kinds) names += (names.empty() ? "" : ", ") + k;
      TPB_THROW(UsageError, "--nic: '" << printableLine(o.nic) << "' is not a NIC kind (choose from " << names << ")");
    }
  }
  for (const auto& f : o.files) parts.push_back(importNcclTests(f, o.op, o.ranks, o.library));
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
    if (m.extra.contains("rccl") && m.extra["rccl"].is_string()) out << ", RCCL " << m.extra["rccl"].get<std::string>();
    out << "\n";
    for (const auto& t : part.tests) {
      out << "  " << t.op << ": " << t.points << " points, the test from " << t.opFrom;
      if (!t.ranksFrom.empty() && t.ranksFrom != "the Rank lines" && t.ranksFrom != "the devices")
        out << ", " << t.ranks << " ranks from " << t.ranksFrom;
      out << "\n";
    }
    for (const auto& why : part.leftOut) out << "  left out: " << why << "\n";
    // Each allreduce curve (one rank count, type and reduction) against what its platform
    // should reach: its plateau busbw and the published figure (record/reference_busbw.h).
    // --nics and --nic are kept on each point (over what the log's NET/IB line said), so that a
    // report of the file gives the same verdict.
    std::vector<CollectiveRecord> points = part.points;
    for (auto& p : points) {
      if (o.nicsPerNode > 0) p.extra["nics_per_node"] = o.nicsPerNode;
      if (!o.nic.empty()) p.extra["nic"] = o.nic;
    }
    std::vector<CurvePoint> curvePoints;
    for (const auto& p : points)
      if (p.op == "allreduce") curvePoints.push_back({"", curveFactsOf(p, m), p.bytes, p.busbwGbps});
    for (const auto& v : curveVerdicts(curvePoints)) {
      out << "  allreduce at " << v.facts.ranks << " ranks" << (v.facts.dtype != "float32" ? " (" + v.facts.dtype + ")" : "")
          << ": " << curveVerdictText(v) << "\n";
    }
    for (auto& p : points) results.addCollective(std::move(p));
    total += part.points.size();
  }
  results.save();
  out << "wrote " << total << " imported points to " << printableLine(o.out) << "\n";
  return 0;
}

}  // namespace tpb
