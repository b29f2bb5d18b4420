#include "harness/allreduce_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "comm/transports.h"
#include "common/error.h"
#include "common/format_bytes.h"
#include "core/registry.h"
#include "harness/device_choice.h"
#include "harness/meta.h"
#include "harness/point_driver.h"
#include "record/results.h"
#include "worker/collective_job.h"

namespace tpb {

using nlohmann::json;

namespace {

void printHeader(std::ostream& os, const std::string& op, const std::string& algo, int n,
                 const std::string& transport, const std::string& device, const std::string& how) {
  char line[256];
  os << "\n# " << op << "  algo=" << algo << "  N=" << n << "  transport=" << transport << "  device=" << device
     << "  (float32" << how << ")\n";
  std::snprintf(line, sizeof line, "# %10s %11s %5s %11s %11s %11s %11s %11s %7s %12s\n", "bytes", "count", "place",
                "median_us", "min_us", "max_us", "algbw_GB/s", "busbw_GB/s", "#wrong", "sent_B/rank");
  os << line;
}

void printRow(std::ostream& os, const CollectiveRecord& p) {
  char line[256];
  const std::string wrong = p.wrong ? std::to_string(*p.wrong) : "n/a";
  // The most any rank sent in one call (exact; "-" where the transport did not carry it).
  std::string sent = "-";
  if (p.traffic && p.traffic->ranks())
    sent = std::to_string(*std::max_element(p.traffic->bytesSent.begin(), p.traffic->bytesSent.end()));
  std::snprintf(line, sizeof line, "  %10s %11llu %5s %11.1f %11.1f %11.1f %11.3f %11.3f %7s %12s\n",
                formatBytes(p.bytes).c_str(), static_cast<unsigned long long>(p.count), p.isInPlace() ? "in" : "out",
                p.timeMedianUs, p.timeMinUs, p.timeMaxUs, p.algbwGbps, p.busbwGbps, wrong.c_str(), sent.c_str());
  os << line;
}

}  // namespace

std::vector<std::string> algosFor(const AllreduceBenchOptions& opt, const std::string& op) {
  if (opt.ops.size() == 1) {
    for (const auto& a : opt.algos) findCollective("--algos", op, a);
    return opt.algos;
  }
  std::vector<std::string> mine;
  for (const auto& a : opt.algos) {
    bool somewhere = false;
    for (const auto& o : opt.ops) {
      for (const auto& name : collectiveNames(o)) somewhere = somewhere || name == a;
    }
    if (!somewhere) TPB_THROW(UsageError, "--algos: '" << a << "' is an algorithm of none of the ops asked for");
    for (const auto& name : collectiveNames(op))
      if (name == a) mine.push_back(a);
  }
  if (mine.empty()) TPB_THROW(UsageError, "--algos: none of them implements " << op);
  return mine;
}

int runAllreduceBench(const AllreduceBenchOptions& opt) {
  // ---- validate everything before launching anything ----
  if (opt.ops.empty()) TPB_THROW(UsageError, "--op: no collective given");
  if (opt.algos.empty()) TPB_THROW(UsageError, "--algos: no algorithm given");
  if (opt.inPlace.empty()) TPB_THROW(UsageError, "--place: no placement given");
  for (const auto& op : opt.ops) {
    const CollectiveOp& o = findOp("--op", op);
    for (bool p : opt.inPlace)
      if (p && !o.hasInPlace && opt.inPlace.size() == 1)
        TPB_THROW(UsageError, "--place: " << op << " has no in-place form (use --place out)");
    algosFor(opt, op);
  }
  if (opt.iters < 1) TPB_THROW(UsageError, "--iters: must be at least 1, got " << opt.iters);
  if (opt.warmup < 0) TPB_THROW(UsageError, "--warmup: must be at least 0, got " << opt.warmup);
  if (opt.nGpus.empty()) TPB_THROW(UsageError, "--n_gpus: no rank count given");
  // Every rank of a point runs on this node: on CUDA each needs a GPU of its own.
  const Device device = chooseDevice(opt.device, *std::max_element(opt.nGpus.begin(), opt.nGpus.end()));
  const std::string devName = deviceName(device);
  for (auto n : opt.nGpus) {
    const int ranks = static_cast<int>(n);
    const std::string tname = opt.transport.empty() ? defaultTransport(device, ranks, ranks) : opt.transport;
    if (std::string why = findTransport(tname).unsupported(device, ranks, ranks); !why.empty())
      TPB_THROW(UsageError, "--transport " << tname << " on " << devName << ": " << why);
  }
  for (const auto nLL : opt.nGpus)
    if (opt.root < 0 || opt.root >= nLL)
      for (const auto& op : opt.ops)
        if (findOp("--op", op).rooted)
          TPB_THROW(UsageError, "--root: " << opt.root << " is not a rank of N=" << nLL << " (0.." << nLL - 1 << ")");
  // The algorithms each op runs on this device.
  std::map<std::string, std::vector<std::string>> runs;
  std::size_t total = 0;
  for (const auto& op : opt.ops) {
    for (const auto& a : algosFor(opt, op)) {
      const std::string why = findCollective("--algos", op, a).unsupported(device);
      if (why.empty()) runs[op].push_back(a);
      else if (!opt.skipUnsupported)
        TPB_THROW(UsageError, "--algos: " << op << " " << a << " cannot run on " << devName << ": " << why);
    }
    total += runs[op].size() * opt.nGpus.size();
  }
  std::unique_ptr<ResultsFile> results;
  std::unique_ptr<OutLock> outLock;  // held until the last save
  if (!opt.out.empty()) {
    checkWritable("--out", opt.out);
    outLock = std::make_unique<OutLock>("--out", opt.out);
    results = std::make_unique<ResultsFile>(ResultsFile::create(opt.out, collectMeta(opt.command)));
  }

  PointDriverOptions dopt;
  dopt.total = total;
  dopt.timeout = opt.timeout;
  PointDriver driver(dopt);
  std::size_t done = 0, failedPoints = 0;
  int rc = 0;

  for (const auto& opName : opt.ops) {
    const CollectiveOp& op = findOp("--op", opName);
    // Placements this op has (alltoall and sendrecv are out of place only).
    std::vector<bool> placements;
    for (bool p : opt.inPlace)
       if (!p || op.hasInPlace) placements.push_back(p);
    std::string how = op.name == "allreduce" || op.name == "reduce" || op.name == "reduce_scatter" ? " sum" : "";
    how += placements.size() > 1 ? ", in and out of place" : placements[0] ? ", in place" : ", out of place";
    if (op.rooted) how += ", root " + std::to_string(opt.root);
    for (const auto& algo : runs[opName]) {
      for (const auto nLL : opt.nGpus) {
        if (driver.interrupted()) break;
        const int n = static_cast<int>(nLL);
        const std::string transport = opt.transport.empty() ? defaultTransport(device, n, n) : opt.transport;
        const json job = {{"kind", "collective"}, {"op", opName},     {"algo", algo},          {"device", devName},
                          {"bytes", opt.bytes},   {"iters", opt.iters}, {"warmup", opt.warmup}, {"check", opt.check},
                          {"root", opt.root},     {"in_place", placements}};
        const PointOutcome po = driver.run(opName + " " + algo + " N=" + std::to_string(n) + " over " + transport,
                                           job, transport, n);
        const LaunchResult& lr = po.launch;
        const JsonIn in(po.result, po.resultPath);
        const auto points = in.find("points");
        const std::size_t measured = points ? points->size() : 0;

        printHeader(std::cout, opName, algo, n, transport, devName, how);
        for (std::size_t k = 0; k < opt.bytes.size() * placements.size(); ++k) {
          CollectiveRecord rec;
          if (k < measured) {
            rec = CollectiveRecord::fromJson((*points)[k]);
            printRow(std::cout, rec);
            if (rec.wrong && *rec.wrong != 0) {
              rec.status = "failed";
              rec.error = "verification found " + std::to_string(*rec.wrong) + " wrong elements";
              rc = 1;
            }
          } else {
            rec.op = opName;
            rec.algo = algo;
            rec.inPlace = placements[k % placements.size()];
            if (op.rooted) rec.root = opt.root;
            rec.transport = transport;
            rec.device = devName;
            rec.nGpus = n;
            rec.iters = opt.iters;
            rec.warmup = opt.warmup;
            rec.count = op.roundCount(opt.bytes[k / placements.size()] / sizeof(float), n);
            rec.bytes = rec.count * sizeof(float);
            rec.status = "failed";
            rec.error = lr.ok ? std::string("worker wrote no result") : lr.error;
            std::cout << "  " << formatBytes(rec.bytes) << "  FAILED: " << *rec.error << "\n";
            rc = 1;
          }
          rec.entry = entryRecordOf(findCollective("--algos", opName, algo));
          if (results) results->addCollective(rec);
        }
        std::cout.flush();
        if (!lr.ok) {
          ++failedPoints;
          std::fprintf(stderr, "%s %s N=%d failed: %s\n", opName.c_str(), algo.c_str(), n, lr.error.c_str());
        }
        if (results) results->save();
        ++done;
        if (lr.interrupted) break;
      }
      if (driver.interrupted()) break;
    }
    if (driver.interrupted()) break;
  }

  if (opt.memcpyReference && !driver.interrupted()) {
    json ref = json::array();
    std::cout << "\n# reference: single-thread memcpy on this host\n";
    for (std::size_t bytes : {std::size_t(1) << 20, std::size_t(16) << 20, std::size_t(64) << 20}) {
      const double gbps = memcpyGBps(bytes);
      ref.push_back({{"bytes", bytes}, {"gbps", gbps}});
      char line[128];
      std::snprintf(line, sizeof line, "  memcpy %6s: %8.2f GB/s\n", formatBytes(bytes).c_str(), gbps);
      std::cout << line;
    }
    if (results) {
      results->extra()["reference"]["memcpy"] = ref;
      results->save();
    }
  }
  if (results) std::fprintf(stderr, "results written to %s\n", opt.out.c_str());
  if (driver.interrupted()) {
    std::fprintf(stderr, "interrupted: %zu of %zu points finished and saved\n", done, total);
    return 130;
  }
  if (failedPoints) std::fprintf(stderr, "%zu of %zu points failed\n", failedPoints, total);
  return rc;
}

}  // namespace tpb
