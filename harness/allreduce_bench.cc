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
#include "harness/external_job.h"
#include "harness/meta.h"
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

}  // namespace

int runAllreduceBench(const AllreduceBenchOptions& opt) {
  // ---- validate everything before launching anything ----
  if (opt.algos.empty()) TPB_THROW(UsageError, "--algos: no algorithm given");
  for (const auto& a : opt.algos) findAllreduce("--algos", a);
  if (opt.iters < 1) TPB_THROW(UsageError, "--iters: must be at least 1, got " << opt.iters);
  if (opt.warmup < 0) TPB_THROW(UsageError, "--warmup: must be at least 0, got " << opt.warmup);
  if (opt.nGpus.empty()) TPB_THROW(UsageError, "--n_gpus: no rank count given");
  // Every rank of a point runs on this node: on CUDA each needs a GPU of its own. Under
  // torchrun, srun or mpirun this process is one rank of a job of W, on the GPU of its LOCAL_RANK.
  ExternalJob* ext = ExternalJob::current();
  const long long most = *std::max_element(opt.nGpus.begin(), opt.nGpus.end());
  if (ext && most > ext->worldSize())
    TPB_THROW(UsageError, "--n_gpus: N=" << most << " needs " << most << " ranks, the job " << ext->env().launcher
                                         << " started has " << ext->worldSize());
  const Device device = chooseDevice(opt.device, ext ? std::min<long long>(most, ext->env().localWorldSize) : most);
  const std::string devName = deviceName(device);
  for (auto n : opt.nGpus) {
    const int ranks = static_cast<int>(n);
    const std::string tname = opt.transport.empty() ? defaultTransport(device, ranks, ranks) : opt.transport;
    if (std::string why = findTransport(tname).unsupported(device, ranks, ranks); !why.empty())
      TPB_THROW(UsageError, "--transport " << tname << " on " << devName << ": " << why);
  }
  for (const auto& a : opt.algos)
    if (std::string why = findAllreduce("--algos", a).unsupported(device); !why.empty())
      TPB_THROW(UsageError, "--algos: " << a << " cannot run on " << devName << ": " << why);
  // Rank 0 alone writes results under an external launcher.
  const bool writer = !ext || ext->rank() == 0;
  std::unique_ptr<ResultsFile> results;
  std::unique_ptr<OutLock> outLock;  // held until the last save
  if (!opt.out.empty() && writer) {
    checkWritable("--out", opt.out);
    outLock = std::make_unique<OutLock>("--out", opt.out);
  }

  const std::size_t total = opt.algos.size() * opt.nGpus.size();
  PointDriverOptions dopt;
  dopt.total = total;
  dopt.timeout = opt.timeout;
  PointDriver driver(dopt);
  if (outLock) {
    Meta meta = collectMeta(opt.command);
    driver.describe(meta);
    if (!ext) meta.hosts = std::vector<std::string>{*meta.host};
    results = std::make_unique<ResultsFile>(ResultsFile::create(opt.out, std::move(meta)));
  }
  const bool print = driver.reporter();
  std::size_t done = 0, failedPoints = 0;
  int rc = 0;

  for (const auto& algo : opt.algos) {
    for (const auto nLL : opt.nGpus) {
      if (driver.interrupted()) break;
      const int n = static_cast<int>(nLL);
      const int perNode = ext ? ext->maxLocalSizeOf(n) : n;
      const std::string transport = opt.transport.empty() ? defaultTransport(device, n, perNode) : opt.transport;
      // The point's records, one per size: measured ones from what rank 0 wrote (`got`, read
      // from `path`), the rest failed with `error`.
      auto recordsOf = [&](const json& got, const std::string& path, const std::string& error) {
        const JsonIn in(got, path);
        const auto points = in.find("points");
        const std::size_t measured = points ? points->size() : 0;
        std::vector<CollectiveRecord> recs;
        for (std::size_t k = 0; k < opt.bytes.size(); ++k) {
          CollectiveRecord rec;
          if (k < measured) {
            rec = CollectiveRecord::fromJson((*points)[k]);
            if (rec.wrong && *rec.wrong != 0) {
              rec.status = "failed";
              rec.error = "verification found " + std::to_string(*rec.wrong) + " wrong elements";
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
            rec.error = error;
          }
          rec.entry = entryRecordOf(findAllreduce("--algos", algo));
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
      const json job = {{"kind", "allreduce"}, {"algo", algo},        {"device", devName},
                        {"bytes", opt.bytes},  {"iters", opt.iters},  {"warmup", opt.warmup},
                        {"check", opt.check}};
      const PointOutcome po = driver.run("allreduce " + algo + " N=" + std::to_string(n) + " over " + transport,
                                         job, transport, n, n, recordFailed);
      const LaunchResult& lr = po.launch;
      const std::vector<CollectiveRecord> recs =
          recordsOf(po.result, po.resultPath, lr.ok ? std::string("worker wrote no result") : lr.error);

      if (print) printHeader(std::cout, algo, n, transport, devName);
      if (!lr.ok) rc = 1;
      for (const auto& rec : recs) {
        if (!print) continue;  // only rank 0 of an external job reads what the point measured
        if (rec.status != "ok") rc = 1;
        if (rec.measured) printRow(std::cout, rec);
        else std::cout << "  " << formatBytes(rec.bytes) << "  FAILED: " << *rec.error << "\n";
      }
      std::cout.flush();
      if (!lr.ok) {
        ++failedPoints;
        if (print) std::fprintf(stderr, "allreduce %s N=%d failed: %s\n", algo.c_str(), n, lr.error.c_str());
      }
      save(recs);
      ++done;
      if (lr.interrupted || (ext && !lr.ok)) break;
    }
    if (driver.interrupted() || (ext && rc != 0 && failedPoints)) break;
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
