#include "harness/allreduce_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "comm/transports.h"
#include "common/error.h"
#include "common/format_bytes.h"
#include "core/registry.h"
#include "harness/device_choice.h"
#include "harness/meta.h"
#include "harness/mpirun.h"
#include "harness/point_driver.h"
#include "record/results.h"
#include "worker/allreduce_job.h"

namespace tpb {

using nlohmann::json;

namespace {

void printHeader(std::ostream& os, const std::string& algo, int n, const std::string& transport,
                 const std::string& device) {
  char line[256];
  os << "\n# allreduce  algo=" << algo << "  N=" << n << "  transport=" << transport
     << "  device=" << device << "  (float32 sum, in place)\n";
  std::snprintf(line, sizeof line, "# %10s %11s %11s %11s %11s %11s %11s %7s\n", "bytes", "count",
                "median_us", "min_us", "max_us", "algbw_GB/s", "busbw_GB/s", "#wrong");
  os << line;
}

void printRow(std::ostream& os, const CollectiveRecord& p) {
  char line[256];
  const std::string wrong = p.wrong ? std::to_string(*p.wrong) : "n/a";
  std::snprintf(line, sizeof line, "  %10s %11llu %11.1f %11.1f %11.1f %11.3f %11.3f %7s\n",
                formatBytes(p.bytes).c_str(), static_cast<unsigned long long>(p.count), p.timeMedianUs,
                p.timeMinUs, p.timeMaxUs, p.algbwGbps, p.busbwGbps, wrong.c_str());
  os << line;
}

// What in `algo` needs ranks started by mpirun ("--algos mpi"), or "".
std::string algoNeedsMpi(const std::string& algo) {
  return findAllreduce("--algos", algo).needsMpiLauncher ? "--algos " + algo : std::string();
}

// --algos all on `device`: what can run here, each library once.
std::vector<std::string> everyAlgoFor(Device device, const std::string& launcher) {
  std::vector<std::string> names;
  const bool mpirunUsable = launcher != "tpbench" && mpirunProblem().empty();
  for (const auto& a : allreduceAlgos()) {
    if (a.standsFor || !a.unsupported(device).empty() || (a.needsMpiLauncher && !mpirunUsable)) continue;
    names.push_back(a.name);
  }
  return names;
}

}  // namespace

int runAllreduceBench(const AllreduceBenchOptions& options) {
  AllreduceBenchOptions opt = options;
  // ---- validate everything before launching anything ----
  checkLauncherFlag(opt.launcher);
  if (opt.nGpus.empty()) TPB_THROW(UsageError, "--n_gpus: no rank count given");
  // Every rank of a point runs on this node: on CUDA each needs a GPU of its own.
  const Device device = chooseDevice(opt.device, *std::max_element(opt.nGpus.begin(), opt.nGpus.end()));
  const std::string devName = deviceName(device);
  if (opt.allAlgos) opt.algos = everyAlgoFor(device, opt.launcher);
  if (opt.algos.empty()) TPB_THROW(UsageError, "--algos: no algorithm given");
  for (const auto& a : opt.algos) findAllreduce("--algos", a);
  if (opt.iters < 1) TPB_THROW(UsageError, "--iters: must be at least 1, got " << opt.iters);
  if (opt.warmup < 0) TPB_THROW(UsageError, "--warmup: must be at least 0, got " << opt.warmup);
  for (auto n : opt.nGpus) {
    const int ranks = static_cast<int>(n);
    const std::string tname = opt.transport.empty() ? defaultTransport(device, ranks, ranks) : opt.transport;
    if (std::string why = findTransport(tname).unsupported(device, ranks, ranks); !why.empty())
      TPB_THROW(UsageError, "--transport " << tname << " on " << devName << ": " << why);
  }
  for (const auto& a : opt.algos)
    if (std::string why = findAllreduce("--algos", a).unsupported(device); !why.empty())
      TPB_THROW(UsageError, "--algos: " << a << " cannot run on " << devName << ": " << why);
  // Who starts each point's ranks: refused here, not half-way through, where it cannot be mpirun.
  for (const auto& a : opt.algos)
    for (auto n : opt.nGpus) {
      const int ranks = static_cast<int>(n);
      const std::string tname = opt.transport.empty() ? defaultTransport(device, ranks, ranks) : opt.transport;
      chooseMpirun(opt.launcher, needsMpiLauncher(tname, algoNeedsMpi(a)));
    }
  std::unique_ptr<ResultsFile> results;
  std::unique_ptr<OutLock> outLock;  // held until the last save
  if (!opt.out.empty()) {
    checkWritable("--out", opt.out);
    outLock = std::make_unique<OutLock>("--out", opt.out);
    results = std::make_unique<ResultsFile>(ResultsFile::create(opt.out, collectMeta(opt.command)));
  }

  const std::size_t total = opt.algos.size() * opt.nGpus.size();
  PointDriverOptions dopt;
  dopt.total = total;
  dopt.timeout = opt.timeout;
  dopt.launcher = opt.launcher;
  PointDriver driver(dopt);
  std::size_t done = 0, failedPoints = 0;
  int rc = 0;

  for (const auto& algo : opt.algos) {
    for (const auto nLL : opt.nGpus) {
      if (driver.interrupted()) break;
      const int n = static_cast<int>(nLL);
      const std::string transport = opt.transport.empty() ? defaultTransport(device, n, n) : opt.transport;
      const json job = {{"kind", "allreduce"}, {"algo", algo},        {"device", devName},
                        {"bytes", opt.bytes},  {"iters", opt.iters},  {"warmup", opt.warmup},
                        {"check", opt.check}};
      const PointOutcome po = driver.run("allreduce " + algo + " N=" + std::to_string(n) + " over " + transport,
                                         job, transport, n, algoNeedsMpi(algo));
      const LaunchResult& lr = po.launch;
      const JsonIn in(po.result, po.resultPath);
      const auto points = in.find("points");
      const std::size_t measured = points ? points->size() : 0;

      printHeader(std::cout, algo, n, transport, devName);
      for (std::size_t k = 0; k < opt.bytes.size(); ++k) {
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
          rec.algo = algo;
          rec.transport = transport;
          rec.device = devName;
          rec.nGpus = n;
          rec.iters = opt.iters;
          rec.warmup = opt.warmup;
          rec.bytes = opt.bytes[k] / sizeof(float) * sizeof(float);
          rec.count = rec.bytes / sizeof(float);
          rec.status = "failed";
          rec.error = lr.ok ? std::string("worker wrote no result") : lr.error;
          std::cout << "  " << formatBytes(rec.bytes) << "  FAILED: " << *rec.error << "\n";
          rc = 1;
        }
        rec.entry = entryRecordOf(findAllreduce("--algos", algo));
        if (results) results->addCollective(rec);
      }
      std::cout.flush();
      if (!lr.ok) {
        ++failedPoints;
        std::fprintf(stderr, "allreduce %s N=%d failed: %s\n", algo.c_str(), n, lr.error.c_str());
      }
      if (results) results->save();
      ++done;
      if (lr.interrupted) break;
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
