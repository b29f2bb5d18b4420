#include "harness/collective_bench.h"

#include <algorithm>
#include <string>
#include <vector>

#include "comm/transports.h"
#include "common/error.h"
#include "common/text_escape.h"
#include "core/registry.h"
#include "harness/console_report.h"
#include "harness/machine_load.h"
#include "harness/device_choice.h"
#include "harness/external_job.h"
#include "harness/meta.h"
#include "record/reference_busbw.h"
#include "harness/mpirun.h"
#include "harness/point_driver.h"
#include "harness/runner_session.h"
#include "record/collective_summary.h"
#include "record/records.h"
#include "record/results.h"
#include "worker/collective_job.h"

namespace tpb {

using nlohmann::json;

namespace {

// What in an algorithm needs ranks started by mpirun ("--algos mpi"), or "".
std::string algoNeedsMpi(const CollectiveAlgo& algo) {
  return algo.needsMpiLauncher ? "--algos " + algo.name : std::string();
}

// --algos all for `op` on `device`: what can run here, each library once.
std::vector<const CollectiveAlgo*> everyAlgoFor(const std::string& op, Device device, bool mpirunUsable) {
  std::vector<const CollectiveAlgo*> algos;
  for (const auto& a : collectiveAlgos()) {
    if (a.op != op || a.standsFor || !a.unsupported(device).empty() || (a.needsMpiLauncher && !mpirunUsable))
      continue;
    algos.push_back(&a);
  }
  return algos;
}

// One op of the command, resolved once and passed on: its entry, the placements it has, what
// its tables' header says about it, and the algorithms it runs here.
struct OpPlan {
  const CollectiveOp* op = nullptr;
  std::vector<bool> placements;
  std::string how;  // after "float32" in the header
  std::vector<const CollectiveAlgo*> algos;
};

// One point: an algorithm of an op over N ranks (perNode of them on the most crowded node).
struct BenchPoint {
  const OpPlan* op = nullptr;
  const CollectiveAlgo* algo = nullptr;
  int n = 0, perNode = 0;
  std::string transport;
  std::string carrier;  // what carries its data: the transport, or the library's own
};

std::string transportFor(const CollectiveBenchOptions& opt, Device device, int n, int perNode) {
  return opt.transport.empty() ? defaultTransport(device, n, perNode) : opt.transport;
}

void checkFlags(const CollectiveBenchOptions& opt) {
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
  checkBindFlag(opt.bind, opt.external != nullptr);
  if (opt.iters < 1) TPB_THROW(UsageError, "--iters: must be at least 1, got " << opt.iters);
  if (opt.warmup < 0) TPB_THROW(UsageError, "--warmup: must be at least 0, got " << opt.warmup);
  if (!isTimingMethod(opt.timing))
    TPB_THROW(UsageError, "--timing: must be " << kPerCallTiming << " or " << kBackToBackTiming << ", got '"
                                               << printable(opt.timing) << "'");
  if (opt.nGpus.empty()) TPB_THROW(UsageError, "--n_gpus: no rank count given");
}

// Every rank of a point runs on this node: on CUDA each needs a GPU of its own. Under an
// external launcher a point needs at most the job's W ranks.
Device chooseBenchDevice(const CollectiveBenchOptions& opt, const ExternalJob* ext) {
  const long long most = *std::max_element(opt.nGpus.begin(), opt.nGpus.end());
  if (ext && most > ext->worldSize())
    TPB_THROW(UsageError, "--n_gpus: N=" << most << " needs " << most << " ranks, the job " << ext->env().launcher
                                         << " started has " << ext->worldSize());
  return chooseDevice(opt.device, ext ? std::min<long long>(most, ext->env().localWorldSize) : most, ext != nullptr);
}

void checkTransportsAndRoot(const CollectiveBenchOptions& opt, Device device) {
  for (auto n : opt.nGpus) {
    const int ranks = static_cast<int>(n);
    const std::string tname = transportFor(opt, device, ranks, ranks);
    if (std::string why = findTransport(tname).unsupported(device, ranks, ranks); !why.empty())
      TPB_THROW(UsageError, "--transport " << tname << " on " << deviceName(device) << ": " << why);
  }
  for (const auto nLL : opt.nGpus)
    if (opt.root < 0 || opt.root >= nLL)
      for (const auto& op : opt.ops)
        if (findOp("--op", op).rooted)
          TPB_THROW(UsageError, "--root: " << opt.root << " is not a rank of N=" << nLL << " (0.." << nLL - 1 << ")");
}

// The placements `op` has (alltoall and sendrecv are out of place only) and its header's note.
OpPlan opPlanOf(const CollectiveBenchOptions& opt, const CollectiveOp& op) {
  OpPlan p;
  p.op = &op;
  for (bool place : opt.inPlace)
    if (!place || op.hasInPlace) p.placements.push_back(place);
  p.how = op.sums ? " sum" : "";
  p.how += p.placements.size() > 1 ? ", in and out of place" : p.placements[0] ? ", in place" : ", out of place";
  if (op.rooted) p.how += ", root " + std::to_string(opt.root);
  if (opt.timing == kBackToBackTiming) p.how += ", timed back to back";
  if (opt.bind == "core") p.how += ", a core per rank";
  p.how += op.caveat;
  return p;
}

// Each op with the algorithms it runs on this device. Under an external launcher this process
// is already a rank: MPI works where that launcher was mpirun, and nothing is launched.
std::vector<OpPlan> planOps(const CollectiveBenchOptions& opt, Device device, const ExternalJob* ext) {
  const bool mpirunUsable =
      ext ? ext->env().launcher == "mpirun" : opt.launcher != "tpbench" && mpirunProblem().empty();
  std::vector<OpPlan> plans;
  for (const auto& op : opt.ops) {
    OpPlan p = opPlanOf(opt, findOp("--op", op));
    if (opt.allAlgos) {
      p.algos = everyAlgoFor(op, device, mpirunUsable);
    } else {
      for (const auto& a : algosFor(opt, op)) {
        const CollectiveAlgo& algo = findCollective("--algos", op, a);
        if (const std::string why = algo.unsupported(device); !why.empty())
          TPB_THROW(UsageError, "--algos: " << op << " " << a << " cannot run on " << deviceName(device) << ": " << why);
        p.algos.push_back(&algo);
      }
    }
    // An algorithm that loads and stores its peers' buffers runs only where the transport of
    // every N maps them: `all` leaves it out elsewhere, naming it is refused.
    for (auto it = p.algos.begin(); it != p.algos.end();) {
      std::string lacking;
      for (auto n : opt.nGpus) {
        const std::string tname = transportFor(opt, device, static_cast<int>(n), static_cast<int>(n));
        if ((*it)->needsSymmetricMemory && !findTransport(tname).symmetricMemory) lacking = tname;
      }
      if (lacking.empty()) {
        ++it;
      } else if (opt.allAlgos) {
        it = p.algos.erase(it);
      } else {
        TPB_THROW(UsageError, "--algos: " << (*it)->name << " loads and stores its peers' buffers in shared memory, "
                                          << "which --transport " << lacking << " does not give (use shm)");
      }
    }
    plans.push_back(std::move(p));
  }
  return plans;
}

// Who starts each point's ranks: refused here, not half-way through, where it cannot be mpirun.
void checkLaunchers(const CollectiveBenchOptions& opt, const std::vector<OpPlan>& plans, Device device) {
  for (const auto& p : plans)
    for (const CollectiveAlgo* a : p.algos)
      for (auto n : opt.nGpus) {
        const int ranks = static_cast<int>(n);
        chooseMpirun(opt.launcher, needsMpiLauncher(transportFor(opt, device, ranks, ranks), algoNeedsMpi(*a)));
      }
}

bool usesMpi(const CollectiveBenchOptions& opt, const std::vector<OpPlan>& plans) {
  bool used = !opt.transport.empty() && findTransport(opt.transport).needsMpiLauncher;
  for (const auto& p : plans)
    for (const CollectiveAlgo* a : p.algos) used = used || !algoNeedsMpi(*a).empty();
  return used;
}

SessionOptions sessionOptions(const CollectiveBenchOptions& opt, bool writer, std::size_t total) {
  SessionOptions s;
  s.command = opt.command;
  s.out = opt.out;
  s.flags = OutputFlags{false, opt.overwrite, false};
  s.writer = writer;
  s.driver.total = total;
  s.driver.timeout = opt.timeout;
  s.driver.launcher = opt.launcher;
  s.driver.bindCores = checkBindFlag(opt.bind, opt.external != nullptr);
  s.driver.external = opt.external;
  return s;
}

// The points of one `allreduce` or `collective`, op by op, algorithm by algorithm, N by N, on
// the session's driver; then the memcpy reference.
class CollectiveSweep {
 public:
  CollectiveSweep(const CollectiveBenchOptions& opt, Device device, const ExternalJob* ext, RunnerSession& session,
                  std::size_t total)
      : opt_(opt), devName_(deviceName(device)), device_(device), ext_(ext), session_(session),
        driver_(session.driver()), print_(driver_.reporter()), total_(total) {}

  // The command's exit code.
  int run(const std::vector<OpPlan>& plans) {
    for (const auto& op : plans)
      for (const CollectiveAlgo* algo : op.algos)
        for (const auto n : opt_.nGpus) {
          if (stopped()) return finish();
          runPoint(pointOf(op, *algo, static_cast<int>(n)));
        }
    return finish();
  }

 private:
  // Interrupted, or an external job's point failed (which ends the command on every rank).
  bool stopped() const { return driver_.interrupted() || (ext_ && failedPoints_); }
  BenchPoint pointOf(const OpPlan& op, const CollectiveAlgo& algo, int n) const;
  void runPoint(const BenchPoint& p);
  json jobOf(const BenchPoint& p) const;
  std::vector<CollectiveRecord> recordsOf(const BenchPoint& p, const json& got, const std::string& path,
                                          const std::string& error) const;
  void show(const BenchPoint& p, const std::vector<CollectiveRecord>& recs, const LaunchResult& lr);
  void reference();
  int finish();

  const CollectiveBenchOptions& opt_;
  const std::string devName_;
  const Device device_;
  const ExternalJob* ext_;
  RunnerSession& session_;
  PointDriver& driver_;
  const bool print_;  // only rank 0 of an external job reads what the points measured
  const std::size_t total_;
  CollectiveConsole console_;
  std::vector<CollectiveTiming> timings_;  // every measured point, for the summary
  std::size_t done_ = 0, failedPoints_ = 0;
  int rc_ = 0;
};

BenchPoint CollectiveSweep::pointOf(const OpPlan& op, const CollectiveAlgo& algo, int n) const {
  BenchPoint p;
  p.op = &op;
  p.algo = &algo;
  p.n = n;
  p.perNode = ext_ ? ext_->maxLocalSizeOf(n) : n;
  p.transport = transportFor(opt_, device_, n, p.perNode);
  p.carrier = carrierOf(algo, device_, p.transport);
  return p;
}

void CollectiveSweep::runPoint(const BenchPoint& p) {
  ResultsFile* results = session_.results();
  // Replaces this point's records in the file (a failed placeholder first, under an external
  // launcher) and saves.
  const std::size_t kept = results ? results->collectives().size() : 0;
  auto save = [&](const std::vector<CollectiveRecord>& recs) {
    if (!results) return;
    results->collectives().resize(kept);
    for (const auto& r : recs) results->addCollective(r);
    results->save();
  };
  const FailureRecorder recordFailed = [&](const std::string& error, const json& partial) {
    save(recordsOf(p, partial, "result of the point in flight", error));
  };
  const std::string& op = p.op->op->name;
  const PointOutcome po = driver_.run(op + " " + p.algo->name + " N=" + std::to_string(p.n) + " over " + p.carrier,
                                      jobOf(p), p.transport, p.n, p.n, recordFailed, algoNeedsMpi(*p.algo));
  const LaunchResult& lr = po.launch;
  std::vector<CollectiveRecord> recs =
      recordsOf(p, po.result, po.resultPath, lr.ok ? std::string("worker wrote no result") : lr.error);
  if (lr.machine)
    for (CollectiveRecord& r : recs) r.machine = machineRecordOf(*lr.machine, p.n);
  show(p, recs, lr);
  save(recs);
  ++done_;
}

json CollectiveSweep::jobOf(const BenchPoint& p) const {
  return {{"kind", "collective"}, {"op", p.op->op->name}, {"algo", p.algo->name}, {"device", devName_},
          {"bytes", opt_.bytes},  {"iters", opt_.iters},  {"warmup", opt_.warmup}, {"check", opt_.check},
          {"root", opt_.root},    {"in_place", p.op->placements}, {"timing", opt_.timing}};
}

// The point's records, one per size and placement: measured ones from what rank 0 wrote (`got`,
// read from `path`), the rest failed with `error`.
std::vector<CollectiveRecord> CollectiveSweep::recordsOf(const BenchPoint& p, const json& got,
                                                         const std::string& path, const std::string& error) const {
  const JsonIn in(got, path);
  const auto points = in.find("points");
  const std::size_t measured = points ? points->size() : 0;
  const std::vector<bool>& placements = p.op->placements;
  const CollectiveOp& op = *p.op->op;
  std::vector<CollectiveRecord> recs;
  for (std::size_t k = 0; k < opt_.bytes.size() * placements.size(); ++k) {
    CollectiveRecord rec;
    if (k < measured) {
      rec = CollectiveRecord::fromJson((*points)[k]);
      if (rec.wrong && *rec.wrong != 0) {
        rec.status = "failed";
        rec.error = "verification found " + std::to_string(*rec.wrong) + " wrong elements";
      }
    } else {
      rec.op = op.name;
      rec.algo = p.algo->name;
      rec.inPlace = placements[k % placements.size()];
      if (op.rooted) rec.root = opt_.root;
      rec.transport = p.transport;
      rec.device = devName_;
      rec.nGpus = p.n;
      rec.iters = opt_.iters;
      rec.warmup = opt_.warmup;
      rec.timing = opt_.timing;
      rec.count = op.roundCount(opt_.bytes[k / placements.size()] / sizeof(float), p.n);
      rec.bytes = rec.count * sizeof(float);
      rec.status = "failed";
      rec.error = error;
    }
    rec.entry = entryRecordOf(*p.algo);
    rec.entry.carrier = p.carrier;
    recs.push_back(rec);
  }
  return recs;
}

void CollectiveSweep::show(const BenchPoint& p, const std::vector<CollectiveRecord>& recs, const LaunchResult& lr) {
  if (!lr.ok) rc_ = 1;
  if (print_) {
    console_.header({p.op->op->name, p.algo->name, p.n, p.transport, p.carrier, devName_, p.op->how});
    for (const auto& rec : recs) {
      if (rec.status != "ok") rc_ = 1;
      console_.row(rec);
      if (auto t = timingOf(rec)) timings_.push_back(std::move(*t));
    }
    // A GPU allreduce curve reaching the sizes published figures are for: how far from them it is.
    const Meta& m = session_.meta();
    std::vector<CurvePoint> curve;
    for (const auto& rec : recs) {
      if (!rec.ok() || rec.device != "cuda" || rec.op != "allreduce") continue;
      curve.push_back({"", curveFactsOf(rec, m), rec.bytes, rec.busbwGbps});
    }
    for (const auto& v : curveVerdicts(curve))
      if (v.plateau.has) console_.againstReference(curveVerdictText(v));
    if (!recs.empty() && recs[0].machine && recs[0].machine->busy)
      console_.busy(recs[0].machine->text());
  }
  console_.endPoint();
  if (!lr.ok) {
    ++failedPoints_;
    if (print_) console_.pointFailed(p.op->op->name, p.algo->name, p.n, lr.error);
  }
}

void CollectiveSweep::reference() {
  json ref = json::array();
  console_.referenceHeader();
  for (std::size_t bytes : {std::size_t(1) << 20, std::size_t(16) << 20, std::size_t(64) << 20}) {
    const double gbps = memcpyGBps(bytes);
    ref.push_back({{"bytes", bytes}, {"gbps", gbps}});
    console_.reference(bytes, gbps);
  }
  if (ResultsFile* results = session_.results()) {
    results->extra()["reference"]["memcpy"] = ref;
    results->save();
  }
}

int CollectiveSweep::finish() {
  if (print_) console_.summary(summaryTables(timings_));
  if (opt_.memcpyReference && print_ && !stopped()) reference();
  session_.close();
  if (!print_) return rc_;
  if (driver_.interrupted()) {
    console_.interrupted(done_, total_);
    return 130;
  }
  if (failedPoints_) console_.failedPoints(failedPoints_, total_);
  return rc_;
}

}  // namespace


std::vector<std::string> algosFor(const CollectiveBenchOptions& opt, const std::string& op) {
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

int runCollectiveBench(const CollectiveBenchOptions& opt) {
  checkFlags(opt);
  // Under torchrun, srun or mpirun this process is one rank of a job of W, on the GPU of its
  // LOCAL_RANK (or on the one GPU it sees, where the launcher gives each rank its own).
  ExternalJob* ext = opt.external;
  const Device device = chooseBenchDevice(opt, ext);
  checkTransportsAndRoot(opt, device);
  const std::vector<OpPlan> plans = planOps(opt, device, ext);
  std::size_t total = 0;
  for (const auto& p : plans) total += p.algos.size() * opt.nGpus.size();
  if (!ext) checkLaunchers(opt, plans, device);
  // Rank 0 alone writes results under an external launcher.
  const bool writer = !ext || ext->rank() == 0;
  RunnerSession session(sessionOptions(opt, writer, total));
  session.open(usesMpi(opt, plans));
  return CollectiveSweep(opt, device, ext, session, total).run(plans);
}

}  // namespace tpb
