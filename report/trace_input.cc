// report/trace_input.cc — see trace_input.h.
#include "report/trace_input.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/error.h"
#include "record/results.h"
#include "record/trace_file.h"

namespace tpb::report {

using nlohmann::json;

namespace {

const json& field(const json& o, const char* key, const std::string& where) {
  if (!o.is_object() || !o.contains(key)) TPB_THROW(UsageError, where << ": no \"" << key << "\"");
  return o.at(key);
}

// A span's start or length: microseconds from the trace's origin, finite, >= 0 and bounded,
// so that the sums over a run's spans stay finite (results/README.md: ts counts from the moment
// tracing started).
double spanTime(const json& o, const char* key, const std::string& where) {
  const json& j = field(o, key, where);
  const double v = j.is_number() ? j.get<double>() : NAN;
  if (!(v >= 0 && v <= kMaxTraceUs))
    TPB_THROW(UsageError, where << "." << key << ": expected a number of microseconds in [0, " << kMaxTraceUs
                                << "], got " << (j.is_number() ? j.dump() : std::string(j.type_name())));
  return v;
}

int integer(const json& o, const char* key, const std::string& where, int lo, int hi) {
  const json& v = field(o, key, where);
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
    TPB_THROW(UsageError, where << "." << key << ": expected an integer in " << lo << ".." << hi);
  return v.get<int>();
}

std::string text(const json& o, const char* key, const std::string& where) {
  const json& v = field(o, key, where);
  if (!v.is_string()) TPB_THROW(UsageError, where << "." << key << ": expected a string");
  return v.get<std::string>();
}

constexpr int kMaxPid = 1 << 20, kMaxTid = 1 << 16;

void loadOne(const std::string& path, std::vector<TracedRun>& out) {
  const json doc = readJsonBounded(path, "trace file");
  const json& tp = field(doc, "tpbench", path);
  if (text(tp, "schema", path + ": tpbench") != "tpbench.trace/1")
    TPB_THROW(UsageError, path << ": tpbench.schema is not \"tpbench.trace/1\": not a tpbench trace");
  const json& points = field(tp, "points", path + ": tpbench");
  if (!points.is_array()) TPB_THROW(UsageError, path << ": tpbench.points: expected an array");
  std::map<int, std::size_t> byPid;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string where = path + ": tpbench.points[" + std::to_string(i) + "]";
    TracedRun r;
    r.file = path;
    r.label = text(points[i], "label", where);
    r.config = field(points[i], "config", where);
    if (!r.config.is_object()) TPB_THROW(UsageError, where << ".config: expected an object");
    r.strategy = text(r.config, "strategy", where + ".config");
    r.n = integer(r.config, "n_gpus", where + ".config", 1, kMaxTid / kTraceTracks);
    const int pid = integer(points[i], "pid", where, 1, kMaxPid);
    if (byPid.count(pid)) TPB_THROW(UsageError, where << ".pid: " << pid << " appears twice");
    byPid[pid] = out.size();
    out.push_back(std::move(r));
  }
  const json& events = field(doc, "traceEvents", path);
  if (!events.is_array()) TPB_THROW(UsageError, path << ": traceEvents: expected an array");
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    const std::string where = path + ": traceEvents[" + std::to_string(i) + "]";
    if (text(e, "ph", where) != "X") continue;  // metadata
    const auto it = byPid.find(integer(e, "pid", where, 1, kMaxPid));
    if (it == byPid.end()) TPB_THROW(UsageError, where << ".pid: no point has it");
    TraceSpan s;
    s.name = text(e, "name", where);
    s.cat = text(e, "cat", where);
    const int tid = integer(e, "tid", where, 0, kMaxTid);
    s.rank = tid / kTraceTracks;
    s.track = tid % kTraceTracks;
    s.beginUs = spanTime(e, "ts", where);
    s.endUs = s.beginUs + spanTime(e, "dur", where);
    if (s.endUs > kMaxTraceUs) TPB_THROW(UsageError, where << ": ts + dur: ends after " << kMaxTraceUs << " us");
    if (e.contains("args") && e["args"].is_object() && e["args"].size() == 1) {
      const auto a = e["args"].begin();
      if (a.value().is_number_integer()) {
        s.argKey = a.key();
        s.arg = a.value().get<long long>();
      }
    }
    out[it->second].spans.push_back(std::move(s));
  }
}

}  // namespace

int TracedRun::ranks() const {
  int most = 0;
  for (const TraceSpan& s : spans) most = std::max(most, s.rank + 1);
  return most;
}

std::vector<TracedRun> loadTraces(const std::vector<std::string>& paths) {
  std::vector<TracedRun> out;
  for (const std::string& p : paths) loadOne(p, out);
  return out;
}

StepWindow representativeStep(const TracedRun& r) {
  StepWindow w;
  std::vector<long long> steps;
  for (const TraceSpan& s : r.spans)
    if (s.cat == "step" && s.rank == 0 && s.onHost() && s.argKey == "step") steps.push_back(s.arg);
  if (steps.empty()) return w;
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  w.step = steps[steps.size() / 2];
  w.beginUs = INFINITY;
  w.endUs = -INFINITY;
  std::map<int, std::pair<double, double>> own;  // each rank's own step
  for (const TraceSpan& s : r.spans) {
    if (s.cat != "step" || s.argKey != "step" || s.arg != w.step || !s.onHost()) continue;
    own[s.rank] = {s.beginUs, s.endUs};
    w.beginUs = std::min(w.beginUs, s.beginUs);
    w.endUs = std::max(w.endUs, s.endUs);
  }
  // A rank's spans of this step: on its host thread those inside its step; on its other tracks
  // those that began during it (they may end after it: a GPU stream runs behind the host).
  for (const TraceSpan& s : r.spans) {
    const auto it = own.find(s.rank);
    if (s.cat == "step" || it == own.end()) continue;
    const auto [b, e] = it->second;
    if (s.onHost() ? (s.beginUs >= b && s.endUs <= e) : (s.beginUs >= b && s.beginUs <= e)) w.spans.push_back(s);
  }
  return w;
}

namespace {

// Total length of [b, e) covered by `intervals` (sorted by begin, merged on the fly).
double coveredBy(double b, double e, const std::vector<std::pair<double, double>>& intervals) {
  double covered = 0, reach = b;
  for (const auto& [lo, hi] : intervals) {
    if (lo >= e) break;
    const double from = std::max(lo, reach), to = std::min(hi, e);
    if (to > from) {
      covered += to - from;
      reach = to;
    }
  }
  return covered;
}

// The union of `spans` (sorted here: concurrent spans count once) and how much of that union
// `compute` (sorted) covers; compute may be null (nothing covers it).
std::pair<double, double> unionAndCovered(std::vector<std::pair<double, double>>& spans,
                                          const std::vector<std::pair<double, double>>* compute) {
  std::sort(spans.begin(), spans.end());
  double total = 0, covered = 0;
  double lo = spans.front().first, hi = spans.front().second;
  auto flush = [&] {
    total += hi - lo;
    if (compute) covered += coveredBy(lo, hi, *compute);
  };
  for (const auto& [b, e] : spans) {
    if (b > hi) {
      flush();
      lo = b;
      hi = e;
    } else {
      hi = std::max(hi, e);
    }
  }
  flush();
  return {total, covered};
}

}  // namespace

std::string Overlap::noHiddenFraction() const {
  if (steps == 0) return "the trace holds no step of rank 0";
  if (!(asyncUs > 0)) return "no communication ran beside the computation";
  if (!std::isfinite(hiddenUs / asyncUs)) return "the spans' times are out of range";
  return "";
}

Overlap overlapOf(const TracedRun& r) {
  Overlap o;
  const int ranks = std::max(1, r.ranks());
  // Host tracks, or the GPU streams where the nccl transport's stream has spans.
  o.gpu = std::any_of(r.spans.begin(), r.spans.end(), [](const TraceSpan& s) { return s.track == 3; });
  const int computeTrack = o.gpu ? 2 : 0, asyncTrack = o.gpu ? 3 : 1;
  std::map<int, std::vector<std::pair<double, double>>> compute;  // per rank
  for (const TraceSpan& s : r.spans) {
    if (s.track == computeTrack && s.cat == "compute") compute[s.rank].emplace_back(s.beginUs, s.endUs);
    if (s.cat == "step" && s.rank == 0 && s.onHost()) ++o.steps;
  }
  for (auto& [rank, v] : compute) std::sort(v.begin(), v.end());
  // Concurrent buckets overlap each other: what counts is the time some communication was in
  // flight, the union of a rank's spans on that track.
  std::map<int, std::vector<std::pair<double, double>>> inFlight;
  double exposed = 0, asyncCount = 0;
  for (const TraceSpan& s : r.spans) {
    if (s.track == asyncTrack) {
      inFlight[s.rank].emplace_back(s.beginUs, s.endUs);
      ++asyncCount;
    } else if (s.onHost() && (s.cat == "comm" || s.cat == "wait")) {
      exposed += s.endUs - s.beginUs;
    }
  }
  const auto computeOf = [&](int rank) -> const std::vector<std::pair<double, double>>* {
    const auto it = compute.find(rank);
    return it == compute.end() ? nullptr : &it->second;
  };
  double async = 0, hidden = 0;
  for (auto& [rank, v] : inFlight) {
    const auto [total, covered] = unionAndCovered(v, computeOf(rank));
    async += total;
    hidden += covered;
  }
  // HTA's figure: all of a rank's communication (its union), and the part its compute covers.
  std::map<int, std::vector<std::pair<double, double>>> comm = inFlight;
  for (const TraceSpan& s : r.spans)
    if (s.onHost() && s.cat == "comm" && !o.gpu) comm[s.rank].emplace_back(s.beginUs, s.endUs);
  for (auto& [rank, v] : comm) {
    const auto [total, covered] = unionAndCovered(v, computeOf(rank));
    o.ranks.push_back({rank, total, covered});
  }
  if (o.steps == 0) return o;
  const double per = static_cast<double>(o.steps) * ranks;
  o.asyncUs = async / per;
  o.hiddenUs = hidden / per;
  o.exposedUs = exposed / per;
  o.asyncPerStep = asyncCount / per;
  return o;
}

}  // namespace tpb::report
