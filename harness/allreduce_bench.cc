#include "harness/allreduce_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "comm/transports.h"
#include "common/error.h"
#include "common/format_bytes.h"
#include "common/text_escape.h"
#include "core/registry.h"
#include "harness/device_choice.h"
#include "harness/external_job.h"
#include "harness/meta.h"
#include "harness/mpirun.h"
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

// What in `op`'s `algo` needs ranks started by mpirun ("--algos mpi"), or "".
std::string algoNeedsMpi(const std::string& op, const std::string& algo) {
  return findCollective("--algos", op, algo).needsMpiLauncher ? "--algos " + algo : std::string();
}

// --algos all for `op` on `device`: what can run here, each library once.
std::vector<std::string> everyAlgoFor(const std::string& op, Device device, bool mpirunUsable) {
  std::vector<std::string> names;
  for (const auto& a : collectiveAlgos()) {
    if (a.op != op || a.standsFor || !a.unsupported(device).empty() || (a.needsMpiLauncher && !mpirunUsable))
      continue;
    names.push_back(a.name);
  }
  return names;
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
  if (opt.algos.empty() && !opt.allAlgos) TPB_THROW(UsageError, "--algos: no algorithm given");
  if (opt.inPlace.empty()) TPB_THROW(UsageError, "--place: no placement given");
  for (const auto& op : opt.ops) {
    const CollectiveOp& o = findOp("--op", op);
    for (bool p : opt.inPlace)
      if (p && !o.hasInPlace && opt.inPlace.size() == 1)
        TPB_THROW(UsageError, "--place: " << op << " has no in-place form (use --place out)");
    if (!opt.allAlgos) algosFor(opt, op);
  }
  checkLauncherFlag(opt.launcher);
  if (opt.iters < 1) TPB_THROW(UsageError, "--iters: must be at least 1, got " << opt.iters);
  if (opt.warmup < 0) TPB_THROW(UsageError, "--warmup: must be at least 0, got " << opt.warmup);
  if (opt.nGpus.empty()) TPB_THROW(UsageError, "--n_gpus: no rank count given");
  // Every rank of a point runs on this node: on CUDA each needs a GPU of its own. Under
  // torchrun, srun or mpirun this process is one rank of a job of W, on the GPU of its LOCAL_RANK
  // (or on the one GPU it sees, where the launcher gives each rank its own).
  ExternalJob* ext = opt.external;
  const long long most = *std::max_element(opt.nGpus.begin(), opt.nGpus.end());
  if (ext && most > ext->worldSize())
    TPB_THROW(UsageError, "--n_gpus: N=" << most << " needs " << most << " ranks, the job " << ext->env().launcher
                                         << " started has " << ext->worldSize());
  const Device device =
      chooseDevice(opt.device, ext ? std::min<long long>(most, ext->env().localWorldSize) : most, ext != nullptr);
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
  // Under an external launcher this process is already a rank: MPI works where that launcher
  // was mpirun, and nothing is launched.
  const bool mpirunUsable =
      ext ? ext->env().launcher == "mpirun" : opt.launcher != "tpbench" && mpirunProblem().empty();
  for (const auto& op : opt.ops) {
    if (opt.allAlgos) {
      runs[op] = everyAlgoFor(op, device, mpirunUsable);
    } else {
      for (const auto& a : algosFor(opt, op)) {
        const std::string why = findCollective("--algos", op, a).unsupported(device);
        if (!why.empty())
          TPB_THROW(UsageError, "--algos: " << op << " " << a << " cannot run on " << devName << ": " << why);
        runs[op].push_back(a);
      }
    }
    total += runs[op].size() * opt.nGpus.size();
  }
  // Who starts each point's ranks: refused here, not half-way through, where it cannot be mpirun.
  if (!ext)
    for (const auto& [op, algos] : runs)
      for (const auto& a : algos)
        for (auto n : opt.nGpus) {
          const int ranks = static_cast<int>(n);
          const std::string tname = opt.transport.empty() ? defaultTransport(device, ranks, ranks) : opt.transport;
          chooseMpirun(opt.launcher, needsMpiLauncher(tname, algoNeedsMpi(op, a)));
        }
  // Rank 0 alone writes results under an external launcher.
  const bool writer = !ext || ext->rank() == 0;
  std::unique_ptr<ResultsFile> results;
  std::optional<OwnedOutput> owned;  // held until the last save
  if (!opt.out.empty() && writer) owned.emplace("--out", opt.out, kResultsOutput, OutputFlags{false, opt.overwrite, false});

  PointDriverOptions dopt;
  dopt.external = opt.external;
  dopt.total = total;
  dopt.timeout = opt.timeout;
  dopt.launcher = opt.launcher;
  PointDriver driver(dopt);
  bool usesMpi = !opt.transport.empty() && findTransport(opt.transport).needsMpiLauncher;
  for (const auto& [op, algos] : runs)
    for (const auto& a : algos) usesMpi = usesMpi || !algoNeedsMpi(op, a).empty();
  driver.prepareMpi(usesMpi);
  if (owned) {
    Meta meta = collectMeta(opt.command);
    driver.describe(meta);
    if (!ext) meta.hosts = std::vector<std::string>{*meta.host};
    results = std::make_unique<ResultsFile>(ResultsFile::create(opt.out, std::move(meta)));
  }
  const bool print = driver.reporter();
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
    // nccl-tests' sendrecv times one exchange in which every rank sends and receives at once.
    if (op.name == "sendrecv") how += "; a ping-pong: time is a round trip, busbw about half nccl-tests' sendrecv";
    for (const auto& algo : runs[opName]) {
      for (const auto nLL : opt.nGpus) {
        if (driver.interrupted()) break;
        const int n = static_cast<int>(nLL);
        const int perNode = ext ? ext->maxLocalSizeOf(n) : n;
        const std::string transport = opt.transport.empty() ? defaultTransport(device, n, perNode) : opt.transport;
        // The point's records, one per size and placement: measured ones from what rank 0 wrote
        // (`got`, read from `path`), the rest failed with `error`.
        auto recordsOf = [&](const json& got, const std::string& path, const std::string& error) {
          const JsonIn in(got, path);
          const auto points = in.find("points");
          const std::size_t measured = points ? points->size() : 0;
          std::vector<CollectiveRecord> recs;
          for (std::size_t k = 0; k < opt.bytes.size() * placements.size(); ++k) {
            CollectiveRecord rec;
            if (k < measured) {
              rec = CollectiveRecord::fromJson((*points)[k]);
              if (rec.wrong && *rec.wrong != 0) {
                rec.status = "failed";
                rec.error = "verification found " + std::to_string(*rec.wrong) + " wrong elements";
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
              rec.error = error;
            }
            rec.entry = entryRecordOf(findCollective("--algos", opName, algo));
            recs.push_back(rec);
          }
          return recs;
        };
        // Replaces this point's records in the file (a failed placeholder first, under an
        // external launcher) and saves.
        const std::size_t kept = results ? results->collectives().size() : 0;
        auto save = [&](const std::vector<CollectiveRecord>& recs) {
          if (!results) return;
          results->collectives().resize(kept);
          for (const auto& r : recs) results->addCollective(r);
          results->save();
        };
        const FailureRecorder recordFailed = [&](const std::string& error, const json& partial) {
          save(recordsOf(partial, "result of the point in flight", error));
        };
        const json job = {{"kind", "collective"}, {"op", opName},     {"algo", algo},          {"device", devName},
                          {"bytes", opt.bytes},   {"iters", opt.iters}, {"warmup", opt.warmup}, {"check", opt.check},
                          {"root", opt.root},     {"in_place", placements}};
        const PointOutcome po = driver.run(opName + " " + algo + " N=" + std::to_string(n) + " over " + transport,
                                           job, transport, n, n, recordFailed, algoNeedsMpi(opName, algo));
        const LaunchResult& lr = po.launch;
        const std::vector<CollectiveRecord> recs =
            recordsOf(po.result, po.resultPath, lr.ok ? std::string("worker wrote no result") : lr.error);

        if (print) printHeader(std::cout, opName, algo, n, transport, devName, how);
        if (!lr.ok) rc = 1;
        for (const auto& rec : recs) {
          if (!print) continue;  // only rank 0 of an external job reads what the point measured
          if (rec.status != "ok") rc = 1;
          if (rec.measured) printRow(std::cout, rec);
          else std::cout << "  " << formatBytes(rec.bytes) << "  FAILED: " << printable(*rec.error) << "\n";
        }
        std::cout.flush();
        if (!lr.ok) {
          ++failedPoints;
          if (print)
            std::fprintf(stderr, "%s %s N=%d failed: %s\n", opName.c_str(), algo.c_str(), n, printable(lr.error).c_str());
        }
        save(recs);
        ++done;
        if (lr.interrupted || (ext && !lr.ok)) break;
      }
      if (driver.interrupted() || (ext && failedPoints)) break;
    }
    if (driver.interrupted() || (ext && failedPoints)) break;
  }

  if (opt.memcpyReference && !driver.interrupted() && print && !(ext && failedPoints)) {
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
  if (!print) return rc;
  if (driver.interrupted()) {
    std::fprintf(stderr, "interrupted: %zu of %zu points finished and saved\n", done, total);
    return 130;
  }
  if (failedPoints) std::fprintf(stderr, "%zu of %zu points failed\n", failedPoints, total);
  return rc;
}

}  // namespace tpb
