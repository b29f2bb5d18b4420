#include "harness/train_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "comm/transports.h"
#include "common/error.h"
#include "common/text_escape.h"
#include "common/trace.h"
#include "harness/device_choice.h"
#include "harness/external_job.h"
#include "harness/input_checks.h"
#include "harness/point_driver.h"
#include "core/registry.h"
#include "harness/meta.h"
#include "harness/mpirun.h"
#include "record/results.h"
#include "record/trace_file.h"

namespace tpb {

using nlohmann::json;

namespace {

// What rank 0 of a point wrote (`got`, read from `path`): its epochs so far and whether it finished.
std::vector<EpochRecord> readEpochs(const json& got, const std::string& path, bool& complete) {
  complete = false;
  std::vector<EpochRecord> epochs;
  const JsonIn in(got, path);
  if (const auto e = in.find("epochs")) {
    for (std::size_t i = 0; i < e->size(); ++i) epochs.push_back(EpochRecord::fromJson((*e)[i]));
  }
  if (const auto d = in.find("done")) complete = d->boolean();
  return epochs;
}

}  // namespace

RunConfig runConfigOf(const TrainConfig& c, const std::string& device, const std::string& transport,
                      int repeat) {
  return RunConfig::make(c, findStrategy("--strategy", c.strategy).microbatched, device, transport, repeat);
}

void updateScalingEfficiency(std::vector<RunRecord>& runs) {
  // The N = 1 point of the same work: the config with N, the repeat and the transport (which a
  // strategy picks by its rank count) set aside.
  auto baseKey = [](RunConfig c) {
    c.nGpus = 1;
    c.repeatIndex = 0;
    c.transport.clear();
    return c;
  };
  for (auto& r : runs) {
    if (!r.ok()) continue;
    const RunConfig key = baseKey(r.config);
    std::vector<double> base;
    for (const auto& o : runs) {
      if (o.ok() && o.config.nGpus == 1 && baseKey(o.config) == key) base.push_back(o.summary.samplesPerS);
    }
    if (base.empty()) {
      r.summary.scalingEfficiency = NAN;
    } else {
      std::sort(base.begin(), base.end());
      const double b = base[base.size() / 2];
      r.summary.scalingEfficiency = b > 0 ? r.summary.samplesPerS / (r.config.nGpus * b) : 0.0;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher side
// ---------------------------------------------------------------------------------------------

int gpusPerNode(const TrainStrategy& strategy, const TrainConfig& cfg, int nprocPerNode) {
  const int procs = strategy.processes(cfg.nGpus);
  // One process driving several GPUs (data_parallel) needs them all on its node; otherwise
  // every process on a node drives one.
  if (procs == 1) return cfg.nGpus;
  return nprocPerNode > 0 ? nprocPerNode : procs;
}

namespace {

// Where a point's ranks are and what they talk over.
struct PointLayout {
  int procs = 1, perNode = 1, world = 1;
  std::string transport;
};

PointLayout layoutOf(const TrainRunOptions& opt, const TrainStrategy& s, const TrainConfig& cfg, Device device) {
  PointLayout l;
  l.procs = s.processes(cfg.nGpus);
  // Under an external launcher the point's ranks are the job's first `procs`, wherever they are.
  const ExternalJob* ext = opt.external;
  l.perNode = ext ? ext->maxLocalSizeOf(l.procs) : opt.nprocPerNode > 0 ? opt.nprocPerNode : l.procs;
  l.world = ext ? l.procs : l.perNode * opt.nnodes;
  l.transport = opt.transport.empty() ? defaultTransport(device, l.world, l.perNode) : opt.transport;
  return l;
}

// Why a point cannot run and is skipped, "" when it can: its strategy on this device and
// config, then (`layout` given) the ranks the layout gives and its transport.
std::string skipReason(const TrainStrategy& s, const TrainConfig& cfg, Device device, const PointLayout* layout) {
  std::string why = s.unsupported(device, cfg.nGpus);
  if (why.empty()) why = s.unsupportedConfig(cfg);
  if (!why.empty() || !layout) return why;
  if (layout->world != layout->procs)
    return "needs " + std::to_string(layout->procs) + " processes, the layout gives " + std::to_string(layout->world);
  if (std::string t = findTransport(layout->transport).unsupported(device, layout->world, layout->perNode);
      !t.empty() && layout->world > 1)
    return "transport " + layout->transport + ": " + t;
  return "";
}

// `run` has one point: skipping it would run nothing and exit 0, so its skip is a refusal.
// Under an external launcher the layout needs the job's hosts (known after the join): that part
// is left to the point, where a skip makes `run` exit 1.
void refuseSkippedRun(const TrainRunOptions& opt, Device device) {
  const ExternalJob* ext = opt.external;
  for (const auto& p : opt.points) {
    const TrainStrategy& s = findStrategy("--strategy", p.cfg.strategy);
    const PointLayout layout = ext ? PointLayout{} : layoutOf(opt, s, p.cfg, device);
    if (const std::string why = skipReason(s, p.cfg, device, ext ? nullptr : &layout); !why.empty())
      TPB_THROW(UsageError, "--strategy " << s.name << " --n_gpus " << p.cfg.nGpus << " (--nnodes " << opt.nnodes
                                          << ", --nproc_per_node " << opt.nprocPerNode << ", --device "
                                          << deviceName(device) << "): cannot run: " << why);
  }
}

// The library a point records: "" for strategies that take none, and for the device's default
// (what `library` stands for), so configs from before --library existed still match.
std::string recordedLibrary(const TrainStrategy& s, const std::string& library, Device device) {
  if (!s.takesLibrary || library.empty()) return {};
  const AllreduceAlgo& byDefault = findAllreduce("--library", "library");
  if (library == byDefault.name || library == byDefault.standsFor(device)) return {};
  return library;
}

// What in a point needs ranks started by mpirun besides its transport ("--library mpi"), or "".
std::string libraryNeedsMpi(const TrainStrategy& s, const TrainConfig& cfg) {
  if (!s.takesLibrary || cfg.library.empty()) return {};
  return findAllreduce("--library", cfg.library).needsMpiLauncher ? "--library " + cfg.library : std::string();
}

// --library names a library allreduce that runs on `device`, for points of which at least one
// strategy takes it.
void checkLibrary(const TrainRunOptions& opt, Device device) {
  std::string library;
  bool taken = false;
  for (const auto& p : opt.points) {
    if (p.cfg.library.empty()) continue;
    library = p.cfg.library;
    taken = taken || findStrategy("--strategy", p.cfg.strategy).takesLibrary;
  }
  if (library.empty()) return;
  const AllreduceAlgo& a = findAllreduce("--library", library);
  if (a.origin != Origin::Library)
    TPB_THROW(UsageError, "--library: " << library << " is not a library allreduce (choose gloo, mpi or nccl; "
                                                      "the from-scratch ones are strategies of their own)");
  if (std::string why = a.unsupported(device); !why.empty())
    TPB_THROW(UsageError, "--library " << library << " on " << deviceName(device) << ": " << why);
  if (!taken) {
    std::string takers;
    for (const auto& s : trainStrategies())
      if (s.takesLibrary) takers += (takers.empty() ? "" : ", ") + s.name;
    TPB_THROW(UsageError, "--library: only the " << takers << " strategy takes it");
  }
}

// What one command owns: claimed (locked, and checked against what is there already) before
// anything is launched, and held until every point is saved.
struct OwnedOutputs {
  std::optional<OwnedOutput> out, trace;
  std::vector<std::unique_ptr<OutLock>> saveDirs;
};

void claimOutputs(const TrainRunOptions& opt, OwnedOutputs& owned) {
  const OutputFlags flags{opt.resume, opt.overwrite, opt.resumable};
  if (!opt.trace.empty()) {
    if (!opt.out.empty() && std::filesystem::absolute(opt.trace).lexically_normal() ==
                                std::filesystem::absolute(opt.out).lexically_normal())
      TPB_THROW(UsageError, "--trace: '" << opt.trace << "' is the results file (--out); name another file");
    owned.trace.emplace("--trace", opt.trace, kTraceOutput, flags);
  }
  if (!opt.out.empty()) owned.out.emplace("--out", opt.out, kResultsOutput, flags);
  std::set<std::string> dirs;
  for (const auto& p : opt.points)
    if (!p.cfg.saveDir.empty() && dirs.insert(p.cfg.saveDir).second)
      owned.saveDirs.push_back(std::make_unique<OutLock>("--save_dir", p.cfg.saveDir));
}

}  // namespace

int runTraining(const TrainRunOptions& opt) {
  if (!opt.transport.empty()) findTransport(opt.transport);
  if (opt.nnodes < 1) TPB_THROW(UsageError, "--nnodes: must be at least 1");
  if (opt.nodeRank < 0 || opt.nodeRank >= opt.nnodes)
    TPB_THROW(UsageError, "--node_rank: must be in 0.." << opt.nnodes - 1 << ", got " << opt.nodeRank);
  if (opt.nnodes > 1 && opt.masterPort == 0)
    TPB_THROW(UsageError, "--master_port: a launch over several nodes needs an agreed port");
  // Under torchrun, srun or mpirun this process is one rank of a job of W: a point needs at
  // most W ranks, and each rank drives the GPU of its LOCAL_RANK (or the one GPU it sees).
  ExternalJob* ext = opt.external;
  int gpusNeeded = 1;
  bool severalGpusPerProcess = false;  // data_parallel: one process needs all its GPUs visible
  for (const auto& p : opt.points) {
    const TrainStrategy& s = findStrategy("--strategy", p.cfg.strategy);
    if (!s.unsupported(Device::Cpu, p.cfg.nGpus).empty()) continue;  // skipped with a reason
    gpusNeeded = std::max(gpusNeeded, gpusPerNode(s, p.cfg, opt.nprocPerNode));
    severalGpusPerProcess = severalGpusPerProcess || (s.processes(p.cfg.nGpus) == 1 && p.cfg.nGpus > 1);
    if (ext && s.processes(p.cfg.nGpus) > ext->worldSize())
      TPB_THROW(UsageError, "--n_gpus: " << s.name << " N=" << p.cfg.nGpus << " needs " << s.processes(p.cfg.nGpus)
                                         << " ranks, the job " << ext->env().launcher << " started has "
                                         << ext->worldSize());
  }
  if (ext) gpusNeeded = std::min(gpusNeeded, ext->env().localWorldSize);
  // Resolved once, before anything is launched: no GPU, or fewer than a point needs on this
  // node, is one usage error (auto falls back to the CPU only when no GPU is usable at all).
  const Device device = chooseDevice(opt.device, gpusNeeded, ext && !severalGpusPerProcess);
  const std::string deviceText = deviceName(device);
  if (!opt.transport.empty()) {
    if (std::string why = findTransport(opt.transport).unsupported(device, 2, 2); !why.empty())
      TPB_THROW(UsageError, "--transport " << opt.transport << " on " << deviceText << ": " << why);
  }

  checkLibrary(opt, device);
  checkLauncherFlag(opt.launcher);
  if (opt.everyPointMustRun) refuseSkippedRun(opt, device);
  for (const auto& p : opt.points) {  // who starts each point's ranks, refused now rather than mid-sweep
    const TrainStrategy& s = findStrategy("--strategy", p.cfg.strategy);
    if (ext || !s.unsupported(device, p.cfg.nGpus).empty()) continue;  // skipped, with the reason
    chooseMpirun(opt.launcher, needsMpiLauncher(layoutOf(opt, s, p.cfg, device).transport, libraryNeedsMpi(s, p.cfg)),
                 opt.nnodes);
  }
  checkNodesShareASecret(opt.nnodes);

  // Rank 0 alone writes results under an external launcher, node 0 alone on several nodes (every
  // node runs the same command, --out included: on a shared file system the others must not
  // touch it); the file is created once every rank has passed its checks (the driver's join).
  const bool writer = (!ext || ext->rank() == 0) && opt.nodeRank == 0;
  std::unique_ptr<ResultsFile> results;
  OwnedOutputs owned;  // held until every point is saved
  if (opt.out.empty() && opt.resume) TPB_THROW(UsageError, "--resume: needs --out FILE to resume from");
  if (writer) {
    claimOutputs(opt, owned);
    if (owned.out && owned.out->continues()) results = std::make_unique<ResultsFile>(ResultsFile::load(opt.out));
  }

  PointDriverOptions dopt;
  dopt.external = opt.external;
  dopt.total = opt.points.size();
  dopt.timeout = opt.timeout;
  dopt.nnodes = opt.nnodes;
  dopt.nodeRank = opt.nodeRank;
  dopt.masterAddr = opt.masterAddr;
  dopt.masterPort = opt.masterPort;
  dopt.rendezvousTimeout = opt.rendezvousTimeout;
  dopt.heartbeatTimeout = opt.heartbeatTimeout;
  dopt.iface = opt.iface;
  dopt.launcher = opt.launcher;
  PointDriver driver(dopt);
  bool usesMpi = false;
  for (const auto& p : opt.points) {
    const TrainStrategy& s = findStrategy("--strategy", p.cfg.strategy);
    usesMpi = usesMpi || !needsMpiLauncher(layoutOf(opt, s, p.cfg, device).transport, libraryNeedsMpi(s, p.cfg)).empty();
  }
  driver.prepareMpi(usesMpi);
  // This command's meta, collected once for a new results file and a new trace alike.
  std::optional<Meta> meta;
  auto commandMeta = [&]() -> const Meta& {
    if (!meta) {
      meta = collectMeta(opt.command);
      driver.describe(*meta);
      if (!ext) {
        if (opt.nprocPerNode > 0) meta->ranksPerNode = opt.nprocPerNode;
        if (opt.nnodes == 1) meta->hosts = std::vector<std::string>{*meta->host};
      }
    }
    return *meta;
  };
  if (!opt.out.empty() && writer && !results)
    results = std::make_unique<ResultsFile>(ResultsFile::create(opt.out, commandMeta()));
  // The trace's clock starts now, on this node's steady clock, which rank 0 of every point shares.
  std::unique_ptr<TraceFile> traceFile;
  if (!opt.trace.empty() && writer) {
    // A resumed sweep goes on in the same trace, after what the file holds.
    traceFile = owned.trace->continues()
                    ? std::make_unique<TraceFile>(TraceFile::resume(opt.trace, trace::nowNs()))
                    : std::make_unique<TraceFile>(opt.trace, trace::nowNs(), commandMeta().toJson());
  }
  // Node 0 alone (rank 0 alone under an external launcher) reads what each point's rank 0
  // wrote, writes results and prints the table; the other nodes print their own ranks' outcome
  // per point, the other ranks of an external job only their errors.
  const bool reporter = driver.reporter() && opt.nodeRank == 0;
  int rc = 0;
  struct Row { std::string strategy; int n, batch; std::size_t trainSize; std::string status; double sps, acc, total; };
  std::vector<Row> rows;

  for (const auto& point : opt.points) {
    if (driver.interrupted() || !driver.lostNodeZero().empty()) break;
    const TrainConfig& cfg = point.cfg;
    const TrainStrategy& strategy = findStrategy("--strategy", cfg.strategy);
    const PointLayout layout = layoutOf(opt, strategy, cfg, device);
    const int procs = layout.procs, perNode = layout.perNode;
    const std::string& transport = layout.transport;
    TrainConfig canonical = cfg;
    canonical.strategy = strategy.name;  // aliases are recorded under the strategy's name
    canonical.library = recordedLibrary(strategy, cfg.library, device);
    RunRecord run;
    run.config = runConfigOf(canonical, deviceText, transport, point.repeat);
    run.entry = entryRecordOf(strategy, strategy.dataRanks(cfg.nGpus));
    const std::string name = strategy.name + " N=" + std::to_string(cfg.nGpus);
    const std::string shortName = name + " b=" + std::to_string(cfg.batchSize);  // skip lines

    {
      bool have = false;
      if (opt.resume && results) {
        const auto& runs = results->runs();
        have = std::any_of(runs.begin(), runs.end(), [&](const RunRecord& r) {
          return r.config == run.config && r.status != "failed";
        });
      }
      // Only the leader (rank 0, node 0) holds the file: it tells the others which points it
      // has, whether or not they were given --resume themselves, so every node runs the same.
      have = driver.fromLeader("resume/" + std::to_string(&point - opt.points.data()), have ? "1" : "0") == "1";
      if (have) {
        driver.skip(shortName + ": already in " + (results ? opt.out : std::string("node 0's results")) +
                    ", skipped (--resume)");
        continue;
      }
    }

    const std::string why = skipReason(strategy, cfg, device, &layout);
    // The results file holds every point once: a rerun of a failed point replaces it.
    auto save = [&](const RunRecord& r) {
      if (!results || !reporter) return;
      if (opt.nnodes > 1) results->meta().extra["node_hosts"] = driver.nodeHosts();
      auto& runs = results->runs();
      runs.erase(std::remove_if(runs.begin(), runs.end(), [&](const RunRecord& o) { return o.config == r.config; }),
                 runs.end());
      results->addRun(r);
      updateScalingEfficiency(results->runs());
      results->save();
    };
    bool jobEnds = false;  // an external job's failed point ends the command on every rank
    if (!why.empty()) {
      run.status = "skipped";
      run.error = why;
      driver.skip(shortName + ": skipped: " + why);
      rows.push_back({strategy.name, cfg.nGpus, cfg.batchSize, cfg.trainSize, "skipped", 0, 0, 0});
      if (opt.everyPointMustRun) rc = 1;  // `run` ran nothing
    } else {
      json job = {{"kind", "train"}, {"device", deviceText}, {"config", run.config.toJson()}};
      if (!cfg.saveDir.empty()) job["save_dir"] = cfg.saveDir;  // no part of the work: not in config
      if (!opt.trace.empty()) job["trace"] = true;  // every rank records; rank 0 gathers
      // Saves the point as failed (external launchers: before it starts, and from the watchdog).
      const FailureRecorder recordFailed = [&, failed = run](const std::string& error, const json& partial) mutable {
        bool done = false;
        failed.status = "failed";
        failed.error = error;
        failed.epochs = readEpochs(partial, "result of the point in flight", done);
        failed.summary = RunSummary::of(failed.epochs);
        save(failed);
      };
      const PointOutcome po = driver.run(
          name + " batch " + std::to_string(cfg.batchSize) + " train_size " + std::to_string(cfg.trainSize) +
              " epochs " + std::to_string(cfg.epochs) + " over " + (procs > 1 ? transport : "one process"),
          job, transport, perNode, procs, recordFailed, libraryNeedsMpi(strategy, cfg));
      const LaunchResult& lr = po.launch;

      bool complete = false;
      run.epochs = readEpochs(po.result, po.resultPath, complete);
      if (lr.ok && (complete || !reporter)) {
        run.status = "ok";
        // Ranks that exit cleanly after training on nothing measured nothing: not "ok".
        if (std::string none = run.nothingMeasured(); !none.empty() && reporter) {
          run.status = "failed";
          run.error = none + " (check --train_size, --batch_size, --max_steps)";
        }
      } else {
        run.status = "failed";
        run.error = lr.ok ? std::string("rank 0 reported no result") : lr.error;
      }
      if (!run.ok()) {
        rc = 1;
        jobEnds = ext != nullptr;
        if (driver.reporter())
          std::fprintf(stderr, "%s N=%d failed: %s\n", strategy.name.c_str(), cfg.nGpus,
                       printable(*run.error).c_str());
      } else if (!ext && opt.nodeRank != 0) {
        std::printf("%s N=%d batch %d: node %d (ranks %d..%d) ok, %.2f s\n", strategy.name.c_str(), cfg.nGpus,
                    cfg.batchSize, opt.nodeRank, opt.nodeRank * perNode, (opt.nodeRank + 1) * perNode - 1,
                    lr.wallSeconds);
        std::fflush(stdout);
      }
      run.summary = RunSummary::of(run.epochs);
      run.wallS = lr.wallSeconds;
      if (traceFile && run.ok() && !po.trace.is_null()) {
        std::string label = name + " batch " + std::to_string(cfg.batchSize);
        if (strategy.microbatched) label += " M=" + std::to_string(cfg.microbatches) + " " + cfg.schedule;
        if (point.repeat > 0) label += " repeat " + std::to_string(point.repeat);
        traceFile->add(label, run.config.toJson(), po.trace);
      }
      const RunSummary& s = run.summary;
      rows.push_back({strategy.name, cfg.nGpus, cfg.batchSize, cfg.trainSize, run.status, s.samplesPerS,
                      std::isnan(s.finalTestAccuracy) ? -1.0 : s.finalTestAccuracy, s.totalS});
      if (lr.interrupted) rc = 130;
    }
    save(run);
    if (jobEnds) break;
  }

  if (!rows.empty() && reporter) {
    std::printf("\n# %-16s %4s %6s %10s %8s %12s %9s %9s\n", "strategy", "N", "batch", "train_size",
                "status", "samples/s", "test_acc", "train_s");
    for (const auto& r : rows) {
      if (r.status == "skipped") {
        std::printf("  %-16s %4d %6d %10zu %8s %12s %9s %9s\n", r.strategy.c_str(), r.n, r.batch,
                    r.trainSize, "skipped", "-", "-", "-");
        continue;
      }
      char acc[16] = "n/a";
      if (r.acc >= 0) std::snprintf(acc, sizeof acc, "%.2f%%", r.acc * 100);
      std::printf("  %-16s %4d %6d %10zu %8s %12.0f %9s %9.2f\n", r.strategy.c_str(), r.n, r.batch,
                  r.trainSize, r.status.c_str(), r.sps, acc, r.total);
    }
  }
  if (results && reporter) std::fprintf(stderr, "results written to %s\n", opt.out.c_str());
  if (traceFile && traceFile->points() > 0)
    std::fprintf(stderr, "trace of %zu run(s) written to %s (open it in Perfetto or chrome://tracing)\n",
                 traceFile->points(), opt.trace.c_str());
  if (driver.interrupted()) {
    std::fprintf(stderr, "interrupted: finished points are saved\n");
    return 130;
  }
  if (!driver.lostNodeZero().empty()) {
    std::fprintf(stderr, "error: %s; node %d stops its sweep here\n", printable(driver.lostNodeZero()).c_str(), opt.nodeRank);
    return 1;
  }
  return rc;
}

}  // namespace tpb
