#include "record/records.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/error.h"
#include "common/text_escape.h"

namespace tpb {

using nlohmann::json;

namespace {

// Non-finite numbers are written as null (JSON has no NaN), and so read back as NaN.
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

template <typename T>
json orNull(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <typename T>
void putIfSet(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

// The start of every record's JSON: what other writers added, then the known fields over it.
json startWith(const json& extra) { return extra.is_object() ? extra : json::object(); }

// Status values the schema defines.
std::string statusOf(const JsonIn& in) {
  const std::string s = in.str();
  if (s != "ok" && s != "failed" && s != "skipped") in.fail("\"ok\", \"failed\" or \"skipped\"");
  return s;
}

int intIn(const JsonIn& obj, const char* key, long long lo, long long hi) {
  return static_cast<int>(obj.at(key).integer(lo, hi));
}

bool sameNumber(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// meta.load_average: three non-negative numbers (1, 5 and 15 minutes), or absent.
std::optional<std::vector<double>> loadAverageOf(const JsonIn& meta) {
  const auto a = meta.find("load_average");
  if (!a) return std::nullopt;
  a->array();
  if (a->size() != 3) a->fail("an array of 3 numbers (1, 5 and 15 minutes)");
  std::vector<double> v;
  for (std::size_t i = 0; i < 3; ++i) v.push_back((*a)[i].number(0, kLargestFinite));
  return v;
}

}  // namespace

// ---- meta ----------------------------------------------------------------------------------

json Meta::toJson() const {
  json j = startWith(extra);
  putIfSet(j, "tpbench_version", tpbenchVersion);
  putIfSet(j, "git_sha", gitSha);
  putIfSet(j, "timestamp_utc", timestampUtc);
  putIfSet(j, "host", host);
  putIfSet(j, "cpu_model", cpuModel);
  j["cpu_cores"] = orNull(cpuCores);
  putIfSet(j, "cpus_available", cpusAvailable);
  putIfSet(j, "load_average", loadAverage);
  putIfSet(j, "sgemm_gflops", sgemmGflops);
  putIfSet(j, "gpus", gpus);
  j["driver"] = orNull(driver);
  j["cuda"] = orNull(cuda);
  j["nccl"] = orNull(nccl);
  putIfSet(j, "libtorch", libtorch);
  putIfSet(j, "gloo", gloo);
  putIfSet(j, "build_type", buildType);
  putIfSet(j, "command", command);
  putIfSet(j, "launcher", launcher);
  putIfSet(j, "bind", bind);
  putIfSet(j, "mpi_thread", mpiThread);
  putIfSet(j, "shm_single_copy", shmSingleCopy);
  putIfSet(j, "ring_chunk_kb", ringChunkKb);
  putIfSet(j, "nodes", nodes);
  putIfSet(j, "ranks_per_node", ranksPerNode);
  putIfSet(j, "hosts", hosts);
  putIfSet(j, "world_size", worldSize);
  return j;
}

Meta Meta::fromJson(const JsonIn& in) {
  in.object();
  Meta m;
  m.tpbenchVersion = optStr(in, "tpbench_version");
  m.gitSha = optStr(in, "git_sha");
  m.timestampUtc = optStr(in, "timestamp_utc");
  m.host = optStr(in, "host");
  m.cpuModel = optStr(in, "cpu_model");
  m.cpuCores = optInteger(in, "cpu_cores", 0, 1 << 24);
  m.cpusAvailable = optInteger(in, "cpus_available", 1, 1 << 24);
  m.loadAverage = loadAverageOf(in);
  if (const auto g = in.find("sgemm_gflops")) m.sgemmGflops = g->number(1e-9, 1e9);
  if (const auto g = in.find("gpus")) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < g->size(); ++i) names.push_back((*g)[i].str());
    m.gpus = std::move(names);
  }
  m.driver = optStr(in, "driver");
  m.cuda = optStr(in, "cuda");
  m.nccl = optStr(in, "nccl");
  m.libtorch = optStr(in, "libtorch");
  m.gloo = optStr(in, "gloo");
  m.buildType = optStr(in, "build_type");
  m.command = optStr(in, "command");
  m.launcher = optStr(in, "launcher");
  m.bind = optStr(in, "bind");
  if (m.bind && *m.bind != "none" && *m.bind != "core")
    in.at("bind").fail("\"none\" or \"core\"");
  m.mpiThread = optStr(in, "mpi_thread");
  if (m.mpiThread && *m.mpiThread != "funneled" && *m.mpiThread != "single")
    in.at("mpi_thread").fail("\"funneled\" or \"single\"");
  if (const auto c = in.find("shm_single_copy")) m.shmSingleCopy = c->boolean();
  m.ringChunkKb = optInteger(in, "ring_chunk_kb", 1, 1 << 20);
  m.nodes = optInteger(in, "nodes", 1, kMaxRanks);
  m.ranksPerNode = optInteger(in, "ranks_per_node", 1, kMaxRanks);
  m.worldSize = optInteger(in, "world_size", 1, kMaxRanks);
  if (const auto h = in.find("hosts")) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < h->size(); ++i) names.push_back((*h)[i].str());
    m.hosts = std::move(names);
  }
  m.extra = in.extraExcept({"tpbench_version", "git_sha", "timestamp_utc", "host", "cpu_model", "cpu_cores",
                            "cpus_available", "load_average", "sgemm_gflops", "gpus", "driver", "cuda", "nccl", "libtorch", "gloo", "build_type", "command",
                            "launcher", "bind", "mpi_thread", "shm_single_copy", "ring_chunk_kb", "nodes", "ranks_per_node",
                            "hosts", "world_size"});
  return m;
}

// ---- runs[].config -------------------------------------------------------------------------

namespace {

using Absent = SettingInfo::Absent;
using Recorded = SettingInfo::Recorded;

// Keys of runs[].config besides the settings.
constexpr const char* kPlaceKeys[] = {"device", "transport", "repeat_index"};

json settingJson(const std::string& v) { return json(v); }
json settingJson(double v) { return num(v); }
template <class Integer>
json settingJson(Integer v) {
  return json(v);
}

// One setting read from its member, in the range the table gives a file's value.
void readSetting(const JsonIn& v, const SettingInfo&, std::string& out) { out = v.str(); }
void readSetting(const JsonIn& v, const SettingInfo& info, double& out) {
  out = v.number(info.inFile.lo, info.inFile.hi);
}
void readSetting(const JsonIn& v, const SettingInfo& info, std::uint64_t& out) {
  const double hi = info.inFile.hi;
  out = v.unsignedInteger(hi >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(hi));
}
template <class Integer>
void readSetting(const JsonIn& v, const SettingInfo& info, Integer& out) {
  const double hi = info.inFile.hi;
  const long long top = hi >= 9.2e18 ? std::numeric_limits<long long>::max() : static_cast<long long>(hi);
  out = static_cast<Integer>(v.integer(static_cast<long long>(info.inFile.lo), top));
}

bool isSet(const std::string& v) { return !v.empty(); }
template <class Number>
bool isSet(Number) {
  return true;
}

bool sameSetting(double a, double b) { return sameNumber(a, b); }
template <class T>
bool sameSetting(const T& a, const T& b) {
  return a == b;
}

bool isKept(const std::string& key) {
  bool kept = false;
  const TrainSettings defaults;
  forEachSetting([&](const SettingInfo& info, const auto&) { kept |= key == info.key && info.absent == Absent::Kept; },
                 defaults);
  return kept;
}

}  // namespace

bool RunConfig::has(const std::string& key) const {
  return !isKept(key) || std::find(held_.begin(), held_.end(), key) != held_.end();
}

// has() for a setting whose info the caller is visiting: no second walk of the table.
bool RunConfig::holds(const SettingInfo& info) const {
  return info.absent != Absent::Kept || std::find(held_.begin(), held_.end(), info.key) != held_.end();
}

void RunConfig::setHas(const std::string& key, bool held) {
  TPB_CHECK(isKept(key), "RunConfig: " << key << " is held by every record");
  const auto it = std::find(held_.begin(), held_.end(), key);
  if (held && it == held_.end()) held_.push_back(key);
  if (!held && it != held_.end()) held_.erase(it);
}

RunConfig RunConfig::make(const TrainSettings& s, bool microbatched, const std::string& device,
                          const std::string& transport, int repeat) {
  RunConfig r;
  static_cast<TrainSettings&>(r) = s;
  r.device = device;
  r.transport = transport;
  r.repeatIndex = repeat;
  forEachSetting(
      [&](const SettingInfo& info, const auto& value) {
        if (info.absent != Absent::Kept) return;
        r.setHas(info.key, info.recorded == Recorded::Always ||
                               (info.recorded == Recorded::WhenSet && isSet(value)) ||
                               (info.recorded == Recorded::WhenMicrobatched && microbatched));
      },
      s);
  return r;
}

json RunConfig::toJson() const {
  json j = startWith(extra);
  forEachSetting(
      [&](const SettingInfo& info, const auto& value) {
        if (holds(info)) j[info.key] = settingJson(value);
      },
      *this);
  j["device"] = device;
  j["transport"] = transport;
  j["repeat_index"] = repeatIndex;
  return j;
}

RunConfig RunConfig::fromJson(const JsonIn& in) {
  in.object();
  RunConfig c;
  std::vector<std::string> known(std::begin(kPlaceKeys), std::end(kPlaceKeys));
  forEachSetting(
      [&](const SettingInfo& info, auto& value) {
        known.push_back(info.key);
        const auto member = info.absent == Absent::Required ? std::optional<JsonIn>(in.at(info.key))
                                                            : in.find(info.key);
        if (info.absent == Absent::Kept) c.setHas(info.key, member.has_value());
        if (!member) return;
        if (info.key == std::string("hidden") && member->value().is_number())
          c.hidden = std::to_string(member->integer(0, kMaxInt));  // older files: one width as a number
        else
          readSetting(*member, info, value);
      },
      c);
  c.device = in.at("device").str();
  c.transport = in.at("transport").str();
  c.repeatIndex = intIn(in, "repeat_index", 0, kMaxInt);
  c.extra = in.extraExcept(known);
  return c;
}

bool RunConfig::operator==(const RunConfig& o) const {
  bool same = device == o.device && transport == o.transport && repeatIndex == o.repeatIndex && extra == o.extra;
  forEachSetting(
      [&](const SettingInfo& info, const auto& mine, const auto& theirs) {
        const bool held = holds(info);
        same = same && held == o.holds(info) && (!held || sameSetting(mine, theirs));
      },
      *this, o);
  return same;
}

// ---- traffic -------------------------------------------------------------------------------

void TrafficRecord::add(std::uint64_t bSent, std::uint64_t bRecv, std::uint64_t mSent, std::uint64_t mRecv) {
  bytesSent.push_back(bSent);
  bytesRecv.push_back(bRecv);
  msgsSent.push_back(mSent);
  msgsRecv.push_back(mRecv);
}

TrafficRecord& TrafficRecord::operator+=(const TrafficRecord& o) {
  TPB_CHECK(o.ranks() == ranks(), "adding traffic of " << o.ranks() << " ranks to " << ranks());
  for (std::size_t r = 0; r < ranks(); ++r) {
    bytesSent[r] += o.bytesSent[r];
    bytesRecv[r] += o.bytesRecv[r];
    msgsSent[r] += o.msgsSent[r];
    msgsRecv[r] += o.msgsRecv[r];
  }
  return *this;
}

bool TrafficRecord::operator==(const TrafficRecord& o) const {
  return bytesSent == o.bytesSent && bytesRecv == o.bytesRecv && msgsSent == o.msgsSent && msgsRecv == o.msgsRecv;
}

json TrafficRecord::toJson() const {
  return {{"bytes_sent", bytesSent}, {"bytes_recv", bytesRecv}, {"msgs_sent", msgsSent}, {"msgs_recv", msgsRecv}};
}

TrafficRecord TrafficRecord::fromJson(const JsonIn& in) {
  in.object();
  TrafficRecord t;
  const std::pair<const char*, std::vector<std::uint64_t>*> fields[] = {
      {"bytes_sent", &t.bytesSent}, {"bytes_recv", &t.bytesRecv}, {"msgs_sent", &t.msgsSent}, {"msgs_recv", &t.msgsRecv}};
  for (const auto& [key, into] : fields) {
    const JsonIn a = in.at(key);
    a.array();
    if (a.size() > static_cast<std::size_t>(kMaxRanks)) a.fail("at most 65536 ranks");
    for (std::size_t i = 0; i < a.size(); ++i) into->push_back(a[i].unsignedInteger(kMaxCount));
  }
  if (t.bytesRecv.size() != t.ranks() || t.msgsSent.size() != t.ranks() || t.msgsRecv.size() != t.ranks())
    in.fail("four arrays of one length (one entry per rank)");
  return t;
}

// ---- runs[].epochs[] -----------------------------------------------------------------------

json EpochRecord::toJson() const {
  json j = startWith(extra);
  j["epoch"] = epoch;
  j["wall_s"] = num(wallS);
  j["compute_s"] = num(computeS);
  j["comm_s"] = num(commS);
  j["samples_per_s"] = num(samplesPerS);
  j["train_loss"] = num(trainLoss);
  j["test_accuracy"] = num(testAccuracy);
  if (!std::isnan(evalS)) j["eval_s"] = num(evalS);
  putIfSet(j, "steps", steps);
  putIfSet(j, "samples", samples);
  if (traffic) j["traffic"] = traffic->toJson();
  if (bubbleFraction) j["bubble_fraction"] = num(*bubbleFraction);
  if (bubbleFormula) j["bubble_formula"] = num(*bubbleFormula);
  putIfSet(j, "activation_bytes", activationBytes);
  if (ranks) {
    json r = json::object();
    const auto numbers = [](const std::vector<double>& v) {
      json a = json::array();
      for (double x : v) a.push_back(num(x));
      return a;
    };
    r["compute_s"] = numbers(ranks->computeS);
    r["comm_s"] = numbers(ranks->commS);
    r["idle_s"] = numbers(ranks->idleS);
    if (!ranks->stepComputeS.empty()) r["step_compute_s"] = numbers(ranks->stepComputeS);
    if (!ranks->stepComputeCpuS.empty()) r["step_compute_cpu_s"] = numbers(ranks->stepComputeCpuS);
    j["ranks"] = std::move(r);
  }
  return j;
}

EpochRecord EpochRecord::fromJson(const JsonIn& in) {
  in.object();
  EpochRecord e;
  // Ranges as results/README.md gives them: times and rates >= 0, a cross-entropy loss >= 0,
  // accuracies and bubble fractions in [0, 1].
  e.epoch = intIn(in, "epoch", 0, kMaxInt);  // tpbench writes 1-based; hand-made files (the fixtures) hold 0
  e.wallS = in.at("wall_s").numberOrNull(kNonNegativeNumber);
  e.computeS = in.at("compute_s").numberOrNull(kNonNegativeNumber);
  e.commS = in.at("comm_s").numberOrNull(kNonNegativeNumber);
  e.samplesPerS = in.at("samples_per_s").numberOrNull(kNonNegativeNumber);
  e.trainLoss = in.at("train_loss").numberOrNull(kNonNegativeNumber);
  e.testAccuracy = in.at("test_accuracy").numberOrNull(kFraction);
  e.evalS = optNumber(in, "eval_s", kNonNegativeNumber);
  e.steps = optInteger(in, "steps", 0, kMaxCount);
  e.samples = optInteger(in, "samples", 0, kMaxCount);
  if (const auto t = in.find("traffic")) e.traffic = TrafficRecord::fromJson(*t);
  if (in.find("bubble_fraction")) e.bubbleFraction = in.at("bubble_fraction").numberOrNull(kFraction);
  if (in.find("bubble_formula")) e.bubbleFormula = in.at("bubble_formula").numberOrNull(kFraction);
  if (const auto a = in.find("activation_bytes")) {
    std::vector<double> bytes;
    for (std::size_t i = 0; i < a->size(); ++i) bytes.push_back((*a)[i].number(0, 1e18));
    e.activationBytes = std::move(bytes);
  }
  if (const auto r = in.find("ranks")) {
    r->object();
    EpochRecord::RankTimes times;
    const std::pair<const char*, std::vector<double>*> arrays[] = {
        {"compute_s", &times.computeS}, {"comm_s", &times.commS}, {"idle_s", &times.idleS}};
    for (const auto& [key, out] : arrays) {
      const JsonIn a = r->at(key);
      a.array();
      if (a.size() < 1 || a.size() > static_cast<std::size_t>(kMaxRanks)) a.fail("1 to 65536 entries, one per rank");
      for (std::size_t i = 0; i < a.size(); ++i) out->push_back(a[i].numberOrNull(kNonNegativeNumber));
    }
    if (times.commS.size() != times.computeS.size() || times.idleS.size() != times.computeS.size())
      r->fail("compute_s, comm_s and idle_s of one length (one entry per rank)");
    if (const auto a = r->find("step_compute_s")) {
      a->array();
      if (a->size() != times.computeS.size()) a->fail("one entry per rank, as compute_s");
      for (std::size_t i = 0; i < a->size(); ++i) times.stepComputeS.push_back((*a)[i].number(0, kLargestFinite));
    }
    if (const auto a = r->find("step_compute_cpu_s")) {
      a->array();
      if (times.stepComputeS.empty()) a->fail("only beside step_compute_s");
      if (a->size() != times.computeS.size()) a->fail("one entry per rank, as compute_s");
      for (std::size_t i = 0; i < a->size(); ++i) times.stepComputeCpuS.push_back((*a)[i].number(0, kLargestFinite));
    }
    e.ranks = std::move(times);
  }
  e.extra = in.extraExcept({"epoch", "wall_s", "compute_s", "comm_s", "samples_per_s", "train_loss",
                            "test_accuracy", "eval_s", "steps", "samples", "traffic", "bubble_fraction",
                            "bubble_formula", "activation_bytes", "ranks"});
  return e;
}

// ---- runs[].summary ------------------------------------------------------------------------

RunSummary RunSummary::of(const std::vector<EpochRecord>& epochs) {
  RunSummary s;
  double total = 0, samples = 0;
  for (const auto& e : epochs) {
    if (std::isfinite(e.wallS)) total += e.wallS;
    samples += static_cast<double>(e.samples.value_or(0));
  }
  s.totalS = total;
  s.samplesPerS = total > 0 ? samples / total : 0.0;
  if (!epochs.empty()) {
    s.finalTestAccuracy = epochs.back().testAccuracy;
    s.finalTrainLoss = epochs.back().trainLoss;
  }
  return s;
}

json RunSummary::toJson() const {
  json j = startWith(extra);
  j["total_s"] = num(totalS);
  j["samples_per_s"] = num(samplesPerS);
  j["final_test_accuracy"] = num(finalTestAccuracy);
  j["final_train_loss"] = num(finalTrainLoss);
  j["scaling_efficiency"] = num(scalingEfficiency);
  return j;
}

RunSummary RunSummary::fromJson(const JsonIn& in) {
  in.object();
  RunSummary s;
  s.totalS = optNumber(in, "total_s", kNonNegativeNumber);
  s.samplesPerS = optNumber(in, "samples_per_s", kNonNegativeNumber);
  s.finalTestAccuracy = optNumber(in, "final_test_accuracy", kFraction);
  s.finalTrainLoss = optNumber(in, "final_train_loss", kNonNegativeNumber);
  // Above 1 is superlinear scaling, not an error.
  s.scalingEfficiency = optNumber(in, "scaling_efficiency", kNonNegativeNumber);
  s.extra = in.extraExcept({"total_s", "samples_per_s", "final_test_accuracy", "final_train_loss",
                            "scaling_efficiency"});
  return s;
}

// ---- runs[] --------------------------------------------------------------------------------

std::string RunRecord::nothingMeasured() const {
  if (epochs.empty()) return "no epoch completed";
  long long steps = 0, samples = 0;
  bool stepsKnown = false, samplesKnown = false;
  for (const auto& e : epochs) {
    if (e.steps) stepsKnown = true, steps += *e.steps;
    if (e.samples) samplesKnown = true, samples += *e.samples;
  }
  if (stepsKnown && steps == 0) return "ran 0 optimizer steps";
  if (samplesKnown && samples == 0) return "trained on 0 samples";
  return "";
}

json WorkloadCostRecord::toJson() const {
  return {{"parameters", static_cast<long long>(parameters)},
          {"gradient_bytes", static_cast<long long>(gradientBytes)},
          {"forward_flops_per_sample", num(forwardFlopsPerSample)},
          {"train_flops_per_sample", num(trainFlopsPerSample)},
          {"activation_bytes_per_sample", num(activationBytesPerSample)}};
}

WorkloadCostRecord WorkloadCostRecord::fromJson(const JsonIn& in) {
  in.object();
  WorkloadCostRecord c;
  constexpr double kMax = 1e30;  // finite: a FLOP count of any network there is fits
  c.parameters = static_cast<double>(in.at("parameters").integer(0, kMaxCount));
  c.gradientBytes = static_cast<double>(in.at("gradient_bytes").integer(0, kMaxCount));
  c.forwardFlopsPerSample = in.at("forward_flops_per_sample").number(0, kMax);
  c.trainFlopsPerSample = in.at("train_flops_per_sample").number(0, kMax);
  c.activationBytesPerSample = in.at("activation_bytes_per_sample").number(0, kMax);
  return c;
}

namespace {
constexpr long long kMaxMachineCpus = 1 << 20;  // CPUs of one host (Linux's limit is 8192)
constexpr long long kMaxProcesses = 1 << 22;     // processes of one host (Linux's pid_max limit)
}  // namespace

std::string MachineRecord::text() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "other processes used %.2f of %d cores beside %d rank%s", othersCores, cores, ranks,
                ranks == 1 ? "" : "s");
  return buf;
}

json MachineRecord::toJson() const {
  json j = {{"cores", cores}, {"ranks", ranks}, {"others_cpu_s", num(othersCpuS)}, {"others_cores", num(othersCores)},
            {"busy", busy}};
  if (load1m) j["load_1m"] = num(*load1m);
  if (othersRunnable) j["others_runnable"] = *othersRunnable;
  return j;
}

MachineRecord MachineRecord::fromJson(const JsonIn& in) {
  in.object();
  MachineRecord m;
  m.cores = static_cast<int>(in.at("cores").integer(1, kMaxMachineCpus));
  m.ranks = static_cast<int>(in.at("ranks").integer(1, kMaxMachineCpus));
  m.othersCpuS = in.at("others_cpu_s").number(0, 1e12);
  m.othersCores = in.at("others_cores").number(0, static_cast<double>(m.cores));
  m.busy = in.at("busy").boolean();
  if (const auto l = in.find("load_1m")) m.load1m = l->number(0, 1e6);
  if (const auto r = in.find("others_runnable")) m.othersRunnable = static_cast<int>(r->integer(0, kMaxProcesses));
  return m;
}

json RunRecord::toJson() const {
  json j = startWith(extra);
  j["config"] = config.toJson();
  j["status"] = status;
  j["error"] = orNull(error ? std::optional<std::string>(shortened(*error)) : std::nullopt);
  json e = json::array();
  for (const auto& ep : epochs) e.push_back(ep.toJson());
  j["epochs"] = std::move(e);
  j["summary"] = summary.toJson();
  if (!std::isnan(wallS)) j["wall_s"] = num(wallS);
  if (workloadCost) j["workload_cost"] = workloadCost->toJson();
  if (machine) j["machine"] = machine->toJson();
  entry.writeInto(j);
  return j;
}

RunRecord RunRecord::fromJson(const JsonIn& in) {
  in.object();
  RunRecord r;
  r.config = RunConfig::fromJson(in.at("config"));
  r.status = statusOf(in.at("status"));
  r.error = optStr(in, "error");
  // A skipped run has no epochs or summary (older writers left them out).
  if (const auto e = in.find("epochs")) {
    for (std::size_t i = 0; i < e->size(); ++i) r.epochs.push_back(EpochRecord::fromJson((*e)[i]));
  }
  if (const auto s = in.find("summary")) r.summary = RunSummary::fromJson(*s);
  r.wallS = optNumber(in, "wall_s", kNonNegativeNumber);
  if (const auto c = in.find("workload_cost")) r.workloadCost = WorkloadCostRecord::fromJson(*c);
  if (const auto m = in.find("machine")) r.machine = MachineRecord::fromJson(*m);
  r.entry = EntryRecord::readFrom(in);
  r.extra = in.extraExcept({"config", "status", "error", "epochs", "summary", "wall_s", "workload_cost", "machine", "origin",
                            "order", "color", "data_ranks", "reference_of", "carrier"});
  return r;
}

// ---- the registry's fields beside runs[] and allreduce[] ----------------------------------

bool isHexColor(const std::string& s) {
  return s.size() == 7 && s[0] == '#' && s.find_first_not_of("0123456789abcdefABCDEF", 1) == std::string::npos;
}

void EntryRecord::writeInto(json& record) const {
  putIfSet(record, "origin", origin);
  putIfSet(record, "order", order);
  putIfSet(record, "color", color);
  putIfSet(record, "data_ranks", dataRanks);
  putIfSet(record, "reference_of", referenceOf);
  putIfSet(record, "carrier", carrier);
}

EntryRecord EntryRecord::readFrom(const JsonIn& record) {
  EntryRecord e;
  e.origin = optStr(record, "origin");
  if (const auto o = optInteger(record, "order", -kMaxInt, kMaxInt)) e.order = static_cast<int>(*o);
  e.color = optStr(record, "color");
  if (e.color && !isHexColor(*e.color)) record.at("color").fail("a colour \"#rrggbb\"");
  if (const auto d = optInteger(record, "data_ranks", 0, kMaxRanks)) e.dataRanks = static_cast<int>(*d);
  e.referenceOf = optStr(record, "reference_of");
  e.carrier = optStr(record, "carrier");
  return e;
}

// ---- allreduce[] ---------------------------------------------------------------------------

namespace {
struct ElementType {
  const char* name;
  std::size_t bytes;
};
constexpr ElementType kElementTypes[] = {{"int8", 1},    {"uint8", 1},   {"int32", 4},    {"uint32", 4},
                                         {"int64", 8},   {"uint64", 8},  {"float16", 2},  {"float32", 4},
                                         {"float64", 8}, {"bfloat16", 2}, {"float8_e4m3", 1}, {"float8_e5m2", 1}};
constexpr const char* kReductions[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
}  // namespace

std::size_t elementBytes(const std::string& dtype) {
  for (const auto& t : kElementTypes)
    if (dtype == t.name) return t.bytes;
  return 0;
}

std::string elementTypeNames() {
  std::string out;
  for (const auto& t : kElementTypes) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

bool isReduction(const std::string& redop) {
  for (const char* r : kReductions)
    if (redop == r) return true;
  return false;
}

std::string reductionNames() {
  std::string out;
  for (const char* r : kReductions) out += (out.empty() ? "" : ", ") + std::string(r);
  return out;
}


IterationSpread IterationSpread::of(const std::vector<double>& timesUs, const Summary& s) {
  IterationSpread spread;
  spread.p90Us = s.p90;
  spread.p99Us = s.p99;
  spread.cv = s.cv();
  spread.firstUs = timesUs.front();
  spread.spikes = std::count_if(timesUs.begin(), timesUs.end(), [&](double us) { return us > kSpikeFactor * s.median; });
  return spread;
}

json CollectiveRecord::toJson() const {
  json j = startWith(extra);
  j["op"] = op;
  j["algo"] = algo;
  j["transport"] = transport;
  j["device"] = device;
  j["n_gpus"] = nGpus;
  putIfSet(j, "root", root);
  putIfSet(j, "in_place", inPlace);
  putIfSet(j, "dtype", dtype);
  putIfSet(j, "redop", redop);
  j["bytes"] = bytes;
  j["count"] = count;
  if (measured) {
    json t = startWith(timeExtra);
    t["median"] = num(timeMedianUs);
    t["min"] = num(timeMinUs);
    t["max"] = num(timeMaxUs);
    if (spread) {
      t["p90"] = spread->p90Us;
      t["p99"] = spread->p99Us;
      t["cv"] = spread->cv;
      t["first"] = spread->firstUs;
      t["spikes"] = spread->spikes;
    }
    j["time_us"] = std::move(t);
    if (ranks) {
      json median = json::array();
      for (double us : ranks->medianUs) median.push_back(num(us));
      j["ranks"] = {{"median_us", std::move(median)}, {"slowest_in", ranks->slowestIn}};
      if (!ranks->cpu.empty()) j["ranks"]["cpu"] = ranks->cpu;
    }
    j["algbw_gbps"] = num(algbwGbps);
    j["busbw_gbps"] = num(busbwGbps);
    j["wrong"] = orNull(wrong);
  }
  putIfSet(j, "timer", timer);
  putIfSet(j, "timing", timing);
  putIfSet(j, "mpi_thread", mpiThread);
  j["status"] = status;
  putIfSet(j, "error", error ? std::optional<std::string>(shortened(*error)) : std::nullopt);
  j["iters"] = iters;
  j["warmup"] = warmup;
  if (traffic) j["traffic"] = traffic->toJson();
  if (machine) j["machine"] = machine->toJson();
  entry.writeInto(j);
  return j;
}

namespace {
constexpr long long kMaxCpu = 1 << 20;

// time_us' spread: all five members or none; each in order with the median, min and max it
// comes from (p90 and p99 between median and max, first between min and max).
// ranks: one median and one count per rank, the counts within the iterations; where given, one
// core per rank (-1: not bound to one).
CollectiveRanks ranksIn(const JsonIn& r, const CollectiveRecord& c) {
  r.object();
  CollectiveRanks out;
  const JsonIn median = r.at("median_us"), slowest = r.at("slowest_in");
  median.array();
  slowest.array();
  const std::size_t n = static_cast<std::size_t>(c.nGpus);
  if (median.size() != n) median.fail("one entry per rank (n_gpus " + std::to_string(n) + ")");
  if (slowest.size() != n) slowest.fail("one entry per rank (n_gpus " + std::to_string(n) + ")");
  long long total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out.medianUs.push_back(median[i].numberOrNull(kNonNegativeNumber));
    out.slowestIn.push_back(slowest[i].integer(0, c.iters));
    total += out.slowestIn.back();
  }
  if (total > c.iters) slowest.fail("counts summing to at most iters (" + std::to_string(c.iters) + ")");
  if (const auto cpu = r.find("cpu")) {
    cpu->array();
    if (cpu->size() != n) cpu->fail("one entry per rank (n_gpus " + std::to_string(n) + ")");
    for (std::size_t i = 0; i < n; ++i) out.cpu.push_back((*cpu)[i].integer(-1, kMaxCpu));
  }
  return out;
}

std::optional<IterationSpread> spreadIn(const JsonIn& t, const CollectiveRecord& c) {
  const char* keys[] = {"p90", "p99", "cv", "first", "spikes"};
  int present = 0;
  for (const char* k : keys) present += t.value().contains(k);
  if (present == 0) return std::nullopt;
  for (const char* k : keys)
    if (!t.value().contains(k)) t.fail(std::string("p90, p99, cv, first and spikes together (") + k + " is absent)");
  if (!(c.timeMinUs <= c.timeMedianUs && c.timeMedianUs <= c.timeMaxUs))
    t.fail("median, min and max as numbers where p90, p99, cv, first and spikes are given");
  IterationSpread s;
  s.p90Us = t.at("p90").number(c.timeMedianUs, c.timeMaxUs);
  s.p99Us = t.at("p99").number(s.p90Us, c.timeMaxUs);
  s.cv = t.at("cv").number(0, kLargestFinite);
  s.firstUs = t.at("first").number(c.timeMinUs, c.timeMaxUs);
  s.spikes = t.at("spikes").integer(0, kMaxInt);
  return s;
}
}  // namespace

CollectiveRecord CollectiveRecord::fromJson(const JsonIn& in) {
  in.object();
  CollectiveRecord c;
  c.op = optStr(in, "op").value_or("allreduce");
  c.algo = in.at("algo").str();
  c.transport = in.at("transport").str();
  c.device = in.at("device").str();
  c.nGpus = intIn(in, "n_gpus", 1, kMaxRanks);
  if (const auto r = optInteger(in, "root", 0, kMaxRanks - 1)) c.root = static_cast<int>(*r);
  if (const auto p = in.find("in_place")) c.inPlace = p->boolean();
  c.dtype = optStr(in, "dtype");
  if (c.dtype && !isElementType(*c.dtype)) in.at("dtype").fail("an element type (" + elementTypeNames() + ")");
  c.redop = optStr(in, "redop");
  if (c.redop && !isReduction(*c.redop)) in.at("redop").fail("a reduction (" + reductionNames() + ")");
  c.bytes = in.at("bytes").unsignedInteger(kMaxCount);
  c.count = in.at("count").unsignedInteger(kMaxCount);
  if (const auto t = in.find("time_us")) {
    t->object();
    c.measured = true;
    c.timeMedianUs = optNumber(*t, "median", kNonNegativeNumber);
    c.timeMinUs = optNumber(*t, "min", kNonNegativeNumber);
    c.timeMaxUs = optNumber(*t, "max", kNonNegativeNumber);
    // Each is the slowest rank's min, median or max over the iterations: they keep that order.
    // (An absent one is NaN, which compares false.)
    if (c.timeMinUs > c.timeMedianUs) t->at("min").fail("at most time_us.median");
    if (c.timeMedianUs > c.timeMaxUs) t->at("max").fail("at least time_us.median");
    c.timeExtra = t->extraExcept({"median", "min", "max", "p90", "p99", "cv", "first", "spikes"});
    // The ranks' mean call times (IMB's and OSU's reading): the mean of them is at most the largest.
    const double rankMean = optNumber(*t, "rank_mean", kNonNegativeNumber);
    if (rankMean > optNumber(*t, "rank_mean_max", kNonNegativeNumber))
      t->at("rank_mean").fail("at most time_us.rank_mean_max");
    c.spread = spreadIn(*t, c);
  }
  for (const char* key : {"algbw_gbps", "busbw_gbps", "wrong"})
    if (in.value().contains(key)) c.measured = true;
  c.algbwGbps = optNumber(in, "algbw_gbps", kNonNegativeNumber);
  c.busbwGbps = optNumber(in, "busbw_gbps", kNonNegativeNumber);
  c.wrong = optInteger(in, "wrong", 0, kMaxCount);
  c.timer = optStr(in, "timer");
  if (const auto t = in.find("timing")) {
    c.timing = t->str();
    if (!isTimingMethod(*c.timing))
      t->fail(std::string(kPerCallTiming) + " or " + kBackToBackTiming);
  }
  c.mpiThread = optStr(in, "mpi_thread");
  if (c.mpiThread && *c.mpiThread != "single" && *c.mpiThread != "funneled" && *c.mpiThread != "serialized" &&
      *c.mpiThread != "multiple")
    in.at("mpi_thread").fail("\"single\", \"funneled\", \"serialized\" or \"multiple\"");
  c.status = statusOf(in.at("status"));
  c.error = optStr(in, "error");
  c.iters = intIn(in, "iters", 0, kMaxInt);
  c.warmup = intIn(in, "warmup", 0, kMaxInt);
  if (c.spread && c.spread->spikes > c.iters) in.at("time_us").at("spikes").fail("at most iters");
  if (const auto r = in.find("ranks")) c.ranks = ranksIn(*r, c);
  if (const auto t = in.find("traffic")) c.traffic = TrafficRecord::fromJson(*t);
  if (const auto m = in.find("machine")) c.machine = MachineRecord::fromJson(*m);
  c.entry = EntryRecord::readFrom(in);
  c.extra = in.extraExcept({"op", "algo", "transport", "device", "n_gpus", "root", "in_place", "dtype", "redop", "bytes", "count", "time_us",
                            "algbw_gbps", "busbw_gbps", "wrong", "timer", "timing", "mpi_thread", "status", "error",
                            "iters", "warmup", "traffic", "machine", "origin", "order", "color", "data_ranks",
                            "reference_of", "carrier", "ranks"});
  return c;
}

}  // namespace tpb
