#include "harness/train_runner.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "comm/transports.h"
#include "common/error.h"
#include "core/registry.h"
#include "harness/console_report.h"
#include "harness/device_choice.h"
#include "harness/external_job.h"
#include "harness/input_checks.h"
#include "harness/meta.h"
#include "harness/mpirun.h"
#include "harness/point_driver.h"
#include "harness/runner_session.h"
#include "record/results.h"
#include "record/stragglers.h"

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
  std::string carrier;  // what carries its data (results' "carrier")
};

// In one process its replicas share memory; else the strategy's own library (for a strategy
// that takes --library, that allreduce's), or the run's transport.
std::string carrierFor(const TrainStrategy& s, const TrainConfig& cfg, Device device, const PointLayout& l) {
  if (l.procs == 1) return "in-process";
  if (!s.takesLibrary) return carrierOf(s, device, l.transport);
  return carrierOf(findAllreduce("--library", cfg.library.empty() ? "library" : cfg.library), device, l.transport);
}

PointLayout layoutOf(const TrainRunOptions& opt, const TrainStrategy& s, const TrainConfig& cfg, Device device) {
  PointLayout l;
  l.procs = s.processes(cfg.nGpus);
  // Under an external launcher the point's ranks are the job's first `procs`, wherever they are.
  const ExternalJob* ext = opt.external;
  l.perNode = ext ? ext->maxLocalSizeOf(l.procs) : opt.nprocPerNode > 0 ? opt.nprocPerNode : l.procs;
  l.world = ext ? l.procs : l.perNode * opt.nnodes;
  l.transport = opt.transport.empty() ? defaultTransport(device, l.world, l.perNode) : opt.transport;
  l.carrier = carrierFor(s, cfg, device, l);
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

// One point of the command, resolved once and passed on: its strategy's entry (the only lookup
// by name), what in it needs mpirun besides its transport, and where its ranks are.
struct PointPlan {
  const TrainPoint* point = nullptr;
  const TrainStrategy* strategy = nullptr;
  std::string libraryMpi;  // libraryNeedsMpi, set once --library has been checked
  PointLayout layout;      // placePoints: an external job's hosts are known only after the join
  const TrainConfig& cfg() const { return point->cfg; }
};

std::vector<PointPlan> planPoints(const TrainRunOptions& opt) {
  std::vector<PointPlan> plans;
  for (const auto& p : opt.points) {
    PointPlan plan;
    plan.point = &p;
    plan.strategy = &findStrategy("--strategy", p.cfg.strategy);
    plans.push_back(std::move(plan));
  }
  return plans;
}

void placePoints(const TrainRunOptions& opt, Device device, std::vector<PointPlan>& plans) {
  for (auto& p : plans) p.layout = layoutOf(opt, *p.strategy, p.cfg(), device);
}

// `run` has one point: skipping it would run nothing and exit 0, so its skip is a refusal.
// Under an external launcher the layout needs the job's hosts (known after the join): that part
// is left to the point, where a skip makes `run` exit 1.
void refuseSkippedRun(const TrainRunOptions& opt, const std::vector<PointPlan>& plans, Device device) {
  const ExternalJob* ext = opt.external;
  for (const auto& p : plans) {
    const TrainStrategy& s = *p.strategy;
    const PointLayout layout = ext ? PointLayout{} : layoutOf(opt, s, p.cfg(), device);
    if (const std::string why = skipReason(s, p.cfg(), device, ext ? nullptr : &layout); !why.empty())
      TPB_THROW(UsageError, "--strategy " << s.name << " --n_gpus " << p.cfg().nGpus << " (--nnodes " << opt.nnodes
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
void checkLibrary(const std::vector<PointPlan>& plans, Device device) {
  std::string library;
  bool taken = false;
  for (const auto& p : plans) {
    if (p.cfg().library.empty()) continue;
    library = p.cfg().library;
    taken = taken || p.strategy->takesLibrary;
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

void checkLayoutFlags(const TrainRunOptions& opt) {
  if (!opt.transport.empty()) findTransport(opt.transport);
  if (opt.nnodes < 1) TPB_THROW(UsageError, "--nnodes: must be at least 1");
  if (opt.nodeRank < 0 || opt.nodeRank >= opt.nnodes)
    TPB_THROW(UsageError, "--node_rank: must be in 0.." << opt.nnodes - 1 << ", got " << opt.nodeRank);
  if (opt.nnodes > 1 && opt.masterPort == 0)
    TPB_THROW(UsageError, "--master_port: a launch over several nodes needs an agreed port");
}

// Resolved once, before anything is launched: no GPU, or fewer than a point needs on this
// node, is one usage error (auto falls back to the CPU only when no GPU is usable at all).
// Under an external launcher a point needs at most the job's W ranks.
Device chooseTrainDevice(const TrainRunOptions& opt, const std::vector<PointPlan>& plans, const ExternalJob* ext) {
  int gpusNeeded = 1;
  bool severalGpusPerProcess = false;  // data_parallel: one process needs all its GPUs visible
  for (const auto& p : plans) {
    const TrainStrategy& s = *p.strategy;
    const int nGpus = p.cfg().nGpus;
    if (!s.unsupportedAnywhere(nGpus).empty()) continue;  // skipped with a reason
    gpusNeeded = std::max(gpusNeeded, gpusPerNode(s, p.cfg(), opt.nprocPerNode));
    severalGpusPerProcess = severalGpusPerProcess || (s.processes(nGpus) == 1 && nGpus > 1);
    if (ext && s.processes(nGpus) > ext->worldSize())
      TPB_THROW(UsageError, "--n_gpus: " << s.name << " N=" << nGpus << " needs " << s.processes(nGpus)
                                         << " ranks, the job " << ext->env().launcher << " started has "
                                         << ext->worldSize());
  }
  if (ext) gpusNeeded = std::min(gpusNeeded, ext->env().localWorldSize);
  return chooseDevice(opt.device, gpusNeeded, ext && !severalGpusPerProcess);
}

// Everything else that is refused before anything is launched, once the device is known.
void checkBeforeLaunch(const TrainRunOptions& opt, std::vector<PointPlan>& plans, Device device,
                       const ExternalJob* ext) {
  if (!opt.transport.empty()) {
    if (std::string why = findTransport(opt.transport).unsupported(device, 2, 2); !why.empty())
      TPB_THROW(UsageError, "--transport " << opt.transport << " on " << deviceName(device) << ": " << why);
  }
  checkLibrary(plans, device);
  for (auto& p : plans) p.libraryMpi = libraryNeedsMpi(*p.strategy, p.cfg());
  checkLauncherFlag(opt.launcher);
  checkBindFlag(opt.bind, ext != nullptr);
  if (opt.everyPointMustRun) refuseSkippedRun(opt, plans, device);
  for (const auto& p : plans) {  // who starts each point's ranks, refused now rather than mid-sweep
    if (ext || !p.strategy->unsupported(device, p.cfg().nGpus).empty()) continue;  // skipped, with the reason
    chooseMpirun(opt.launcher, needsMpiLauncher(layoutOf(opt, *p.strategy, p.cfg(), device).transport, p.libraryMpi),
                 opt.nnodes);
  }
  checkNodesShareASecret(opt.nnodes);
}

SessionOptions sessionOptions(const TrainRunOptions& opt, bool writer) {
  SessionOptions s;
  s.command = opt.command;
  s.out = opt.out;
  s.trace = opt.trace;
  s.flags = OutputFlags{opt.resume, opt.overwrite, opt.resumable};
  for (const auto& p : opt.points)
    if (!p.cfg.saveDir.empty()) s.saveDirs.push_back(p.cfg.saveDir);
  s.writer = writer;
  s.nnodes = opt.nnodes;
  s.ranksPerNode = opt.nprocPerNode;
  PointDriverOptions& d = s.driver;
  d.total = opt.points.size();
  d.timeout = opt.timeout;
  d.nnodes = opt.nnodes;
  d.nodeRank = opt.nodeRank;
  d.masterAddr = opt.masterAddr;
  d.masterPort = opt.masterPort;
  d.rendezvousTimeout = opt.rendezvousTimeout;
  d.heartbeatTimeout = opt.heartbeatTimeout;
  d.iface = opt.iface;
  d.launcher = opt.launcher;
  d.bindCores = checkBindFlag(opt.bind, opt.external != nullptr);
  d.external = opt.external;
  return s;
}

bool usesMpi(const std::vector<PointPlan>& plans) {
  return std::any_of(plans.begin(), plans.end(), [](const PointPlan& p) {
    return !needsMpiLauncher(p.layout.transport, p.libraryMpi).empty();
  });
}

std::string nameOf(const PointPlan& p) { return p.strategy->name + " N=" + std::to_string(p.cfg().nGpus); }

// What a progress line adds after the carrier: the workload when it is not the mlp, and a
// bucketed strategy's bucket size.
std::string pointDetail(const PointPlan& p) {
  const TrainConfig& c = p.cfg();
  std::string out = c.trainsMlp() ? "" : ", " + c.workload;
  if (p.strategy->bucketed) {
    char mb[48];
    std::snprintf(mb, sizeof mb, ", bucket %g MiB", c.bucketMb);
    out += mb;
  }
  return out;
}

// The points of one `run` or `sweep`, in order, on the session's driver: each is skipped (already
// in the results file, or unable to run here) or launched, then recorded and saved.
class TrainSweep {
 public:
  TrainSweep(const TrainRunOptions& opt, Device device, const ExternalJob* ext, RunnerSession& session)
      : opt_(opt), device_(device), deviceText_(deviceName(device)), ext_(ext), session_(session),
        driver_(session.driver()), reporter_(driver_.reporter() && opt.nodeRank == 0) {}

  // The command's exit code.
  int run(const std::vector<PointPlan>& plans) {
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (driver_.interrupted() || !driver_.lostNodeZero().empty()) break;
      const PointPlan& plan = plans[i];
      RunRecord run = recordOf(plan);
      if (alreadySaved(i, plan, run)) continue;
      bool jobEnds = false;  // an external job's failed point ends the command on every rank
      if (const std::string why = skipReason(*plan.strategy, plan.cfg(), device_, &plan.layout); !why.empty())
        skip(plan, run, why);
      else
        jobEnds = launch(plan, run);
      save(run);
      if (jobEnds) break;
    }
    return finish();
  }

 private:
  RunRecord recordOf(const PointPlan& plan) const;
  bool alreadySaved(std::size_t index, const PointPlan& plan, const RunRecord& run);
  void skip(const PointPlan& plan, RunRecord& run, const std::string& why);
  bool launch(const PointPlan& plan, RunRecord& run);
  json jobOf(const PointPlan& plan, const RunRecord& run) const;
  void judge(RunRecord& run, const LaunchResult& lr, bool complete) const;
  void addTrace(const PointPlan& plan, const RunRecord& run, const json& fragment);
  void save(const RunRecord& run);
  int finish() const;

  const TrainRunOptions& opt_;
  const Device device_;
  const std::string deviceText_;
  const ExternalJob* ext_;
  RunnerSession& session_;
  PointDriver& driver_;
  // Node 0 alone (rank 0 alone under an external launcher) reads what each point's rank 0
  // wrote, writes results and prints the table; the other nodes print their own ranks' outcome
  // per point, the other ranks of an external job only their errors.
  const bool reporter_;
  TrainConsole console_;
  int rc_ = 0;
};

RunRecord TrainSweep::recordOf(const PointPlan& plan) const {
  TrainConfig canonical = plan.cfg();
  canonical.strategy = plan.strategy->name;  // aliases are recorded under the strategy's name
  canonical.library = recordedLibrary(*plan.strategy, plan.cfg().library, device_);
  RunRecord run;
  // The record's config (also the key --resume and `compare` match on): every setting that
  // changes the work, max_steps included, from the strategy the plan resolved.
  run.config =
      RunConfig::make(canonical, plan.strategy->microbatched, deviceText_, plan.layout.transport, plan.point->repeat);
  run.entry = entryRecordOf(*plan.strategy, plan.strategy->dataRanks(plan.cfg().nGpus));
  run.entry.carrier = plan.layout.carrier;
  const NetworkCost cost = networkCost(canonical.network());
  WorkloadCostRecord w;
  w.parameters = static_cast<double>(cost.parameters);
  w.gradientBytes = static_cast<double>(cost.gradientBytes);
  w.forwardFlopsPerSample = cost.forwardFlops;
  w.trainFlopsPerSample = cost.trainFlops;
  w.activationBytesPerSample = cost.activationBytes;
  run.workloadCost = w;
  return run;
}

// The console's row of a point's record: its numbers, straggler, core wait and busy machine.
TrainRow rowOf(const PointPlan& plan, const RunRecord& run) {
  const TrainConfig& cfg = plan.cfg();
  const RunSummary& s = run.summary;
  RunConfig point = run.config;
  point.repeatIndex = 0;
  TrainRow row;
  row.strategy = plan.strategy->name;
  row.n = cfg.nGpus;
  row.batch = cfg.batchSize;
  row.trainSize = cfg.trainSize;
  row.status = run.status;
  row.samplesPerS = s.samplesPerS;
  row.testAccuracy = std::isnan(s.finalTestAccuracy) ? -1.0 : s.finalTestAccuracy;
  row.trainS = s.totalS;
  row.point = point.toJson().dump();
  row.workload = cfg.workload;
  row.bucketMb = plan.strategy->bucketed ? cfg.bucketMb : -1.0;
  if (const auto st = stragglerOf(run)) row.straggler = stragglerText(*st);
  if (const auto w = coreWaitOf(run)) row.coreWait = coreWaitText(*w);
  if (run.machine && run.machine->busy) row.busy = run.machine->text();
  if (run.status == "skipped") row.why = run.error.value_or("");
  return row;
}

// --resume: the results file holds the point already. Only the leader (rank 0, node 0) holds the
// file: it tells the others which points it has, whether or not they were given --resume
// themselves, so every node runs the same.
bool TrainSweep::alreadySaved(std::size_t index, const PointPlan& plan, const RunRecord& run) {
  const ResultsFile* results = session_.results();
  bool have = false;
  if (opt_.resume && results) {
    const auto& runs = results->runs();
    have = std::any_of(runs.begin(), runs.end(),
                       [&](const RunRecord& r) { return r.config == run.config && r.status != "failed"; });
  }
  have = driver_.fromLeader("resume/" + std::to_string(index), have ? "1" : "0") == "1";
  if (have)
    driver_.skip(nameOf(plan) + " b=" + std::to_string(plan.cfg().batchSize) + ": already in " +
                 (results ? opt_.out : std::string("node 0's results")) + ", skipped (--resume)");
  // The final table shows the file's record of the point, as if it had run now.
  if (have && results)
    for (const RunRecord& r : results->runs())
      if (r.config == run.config && r.status != "failed") {
        TrainRow row = rowOf(plan, r);
        row.saved = true;
        console_.add(row);
        break;
      }
  return have;
}

void TrainSweep::skip(const PointPlan& plan, RunRecord& run, const std::string& why) {
  const TrainConfig& cfg = plan.cfg();
  run.status = "skipped";
  run.error = why;
  driver_.skip(nameOf(plan) + " b=" + std::to_string(cfg.batchSize) + pointDetail(plan) + ": skipped: " + why);
  TrainRow row;
  row.workload = cfg.workload;
  row.bucketMb = plan.strategy->bucketed ? cfg.bucketMb : -1.0;
  row.strategy = plan.strategy->name;
  row.n = cfg.nGpus;
  row.batch = cfg.batchSize;
  row.trainSize = cfg.trainSize;
  row.status = "skipped";
  row.why = why;
  console_.add(row);
  if (opt_.everyPointMustRun) rc_ = 1;  // `run` ran nothing
}

// Launches the point and records its outcome in `run`; true when that ends the command.
bool TrainSweep::launch(const PointPlan& plan, RunRecord& run) {
  const TrainConfig& cfg = plan.cfg();
  const PointLayout& layout = plan.layout;
  // Saves the point as failed (external launchers: before it starts, and from the watchdog).
  const FailureRecorder recordFailed = [this, failed = run](const std::string& error, const json& partial) mutable {
    bool done = false;
    failed.status = "failed";
    failed.error = error;
    failed.epochs = readEpochs(partial, "result of the point in flight", done);
    failed.summary = RunSummary::of(failed.epochs);
    save(failed);
  };
  const std::string what = nameOf(plan) + " batch " + std::to_string(cfg.batchSize) + " train_size " +
                           std::to_string(cfg.trainSize) + " epochs " + std::to_string(cfg.epochs) + " over " +
                           (layout.procs > 1 ? layout.carrier : "one process") + pointDetail(plan);
  const PointOutcome po = driver_.run(what, jobOf(plan, run), layout.transport, layout.perNode, layout.procs,
                                      recordFailed, plan.libraryMpi);
  const LaunchResult& lr = po.launch;
  bool complete = false;
  run.epochs = readEpochs(po.result, po.resultPath, complete);
  judge(run, lr, complete);
  bool jobEnds = false;
  if (!run.ok()) {
    rc_ = 1;
    jobEnds = ext_ != nullptr;
    if (driver_.reporter()) console_.pointFailed(plan.strategy->name, cfg.nGpus, *run.error);
  } else if (!ext_ && opt_.nodeRank != 0) {
    console_.nodeOk(plan.strategy->name, cfg.nGpus, cfg.batchSize, opt_.nodeRank, layout.perNode, lr.wallSeconds);
  }
  run.summary = RunSummary::of(run.epochs);
  run.wallS = lr.wallSeconds;
  // One process with N replicas (data_parallel) computes on N cores; else each process on one.
  if (lr.machine) run.machine = machineRecordOf(*lr.machine, layout.procs == 1 ? cfg.nGpus : layout.perNode);
  if (session_.trace() && run.ok() && !po.trace.is_null()) addTrace(plan, run, po.trace);
  console_.add(rowOf(plan, run));
  if (lr.interrupted) rc_ = 130;
  return jobEnds;
}

json TrainSweep::jobOf(const PointPlan& plan, const RunRecord& run) const {
  json job = {{"kind", "train"}, {"device", deviceText_}, {"config", run.config.toJson()}};
  if (!plan.cfg().saveDir.empty()) job["save_dir"] = plan.cfg().saveDir;  // no part of the work: not in config
  if (!opt_.trace.empty()) job["trace"] = true;  // every rank records; rank 0 gathers
  return job;
}

// Whether a launched point is "ok": its ranks exited cleanly and, where this process reads it,
// rank 0 wrote a complete result that measured something.
void TrainSweep::judge(RunRecord& run, const LaunchResult& lr, bool complete) const {
  if (lr.ok && (complete || !reporter_)) {
    run.status = "ok";
    // Ranks that exit cleanly after training on nothing measured nothing: not "ok".
    if (std::string none = run.nothingMeasured(); !none.empty() && reporter_) {
      run.status = "failed";
      run.error = none + " (check --train_size, --batch_size, --max_steps)";
    }
  } else {
    run.status = "failed";
    run.error = lr.ok ? std::string("rank 0 reported no result") : lr.error;
  }
}

void TrainSweep::addTrace(const PointPlan& plan, const RunRecord& run, const json& fragment) {
  const TrainConfig& cfg = plan.cfg();
  std::string label = nameOf(plan) + " batch " + std::to_string(cfg.batchSize);
  if (plan.strategy->microbatched) label += " M=" + std::to_string(cfg.microbatches) + " " + cfg.schedule;
  if (plan.point->repeat > 0) label += " repeat " + std::to_string(plan.point->repeat);
  session_.trace()->add(label, run.config.toJson(), fragment);
}

// The results file holds every point once: a rerun of a failed point replaces it.
void TrainSweep::save(const RunRecord& r) {
  ResultsFile* results = session_.results();
  if (!results || !reporter_) return;
  if (opt_.nnodes > 1) results->meta().extra["node_hosts"] = driver_.nodeHosts();
  auto& runs = results->runs();
  runs.erase(std::remove_if(runs.begin(), runs.end(), [&](const RunRecord& o) { return o.config == r.config; }),
             runs.end());
  results->addRun(r);
  updateScalingEfficiency(results->runs());
  results->save();
}

int TrainSweep::finish() const {
  if (reporter_) console_.printTable();
  session_.close();
  if (driver_.interrupted()) {
    console_.interrupted(session_.results() ? opt_.out : "", opt_.resumable);
    return 130;
  }
  if (!driver_.lostNodeZero().empty()) {
    console_.lostNodeZero(driver_.lostNodeZero(), opt_.nodeRank);
    return 1;
  }
  return rc_;
}

}  // namespace

int runTraining(const TrainRunOptions& opt) {
  checkLayoutFlags(opt);
  // Under torchrun, srun or mpirun this process is one rank of a job of W: a point needs at
  // most W ranks, and each rank drives the GPU of its LOCAL_RANK (or the one GPU it sees).
  ExternalJob* ext = opt.external;
  std::vector<PointPlan> plans = planPoints(opt);
  const Device device = chooseTrainDevice(opt, plans, ext);
  checkBeforeLaunch(opt, plans, device, ext);
  // Rank 0 alone writes results under an external launcher, node 0 alone on several nodes (every
  // node runs the same command, --out included: on a shared file system the others must not
  // touch it); the file is created once every rank has passed its checks (the driver's join).
  const bool writer = (!ext || ext->rank() == 0) && opt.nodeRank == 0;
  RunnerSession session(sessionOptions(opt, writer));
  placePoints(opt, device, plans);
  session.open(usesMpi(plans));
  return TrainSweep(opt, device, ext, session).run(plans);
}

}  // namespace tpb
