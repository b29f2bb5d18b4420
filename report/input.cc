// report/input.cc — see input.h.
#include "report/input.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "record/results.h"

namespace tpb::report {

using nlohmann::json;

namespace {

double numberOr(const json& j, const char* key, double fallback = kNaN) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  const double v = it->get<double>();
  return std::isfinite(v) ? v : fallback;
}

std::string stringOr(const json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

Run parseRun(const json& r) {
  Run run;
  run.config = r.is_object() && r.contains("config") && r["config"].is_object() ? r["config"]
                                                                                : json::object();
  run.strategy = stringOr(run.config, "strategy", "?");
  run.n = static_cast<int>(numberOr(run.config, "n_gpus", 0));
  run.batch = static_cast<long long>(numberOr(run.config, "batch_size", 0));
  run.trainSize = static_cast<long long>(numberOr(run.config, "train_size", 0));
  run.epochsRequested = static_cast<long long>(numberOr(run.config, "epochs", 0));
  run.status = stringOr(r, "status", "?");
  run.error = stringOr(r, "error");
  double samples = 0;
  bool haveSamples = true;
  if (r.is_object() && r.contains("epochs") && r["epochs"].is_array()) {
    for (const auto& e : r["epochs"]) {
      run.wall.push_back(numberOr(e, "wall_s"));
      run.compute.push_back(numberOr(e, "compute_s"));
      run.comm.push_back(numberOr(e, "comm_s"));
      run.accuracy.push_back(numberOr(e, "test_accuracy"));
      const double s = numberOr(e, "samples");
      if (std::isfinite(s)) {
        samples += s;
      } else {
        haveSamples = false;
      }
    }
  }
  const json summary = r.is_object() && r.contains("summary") ? r["summary"] : json::object();
  run.samplesPerS = numberOr(summary, "samples_per_s");
  if (!(run.samplesPerS > 0) && !run.wall.empty()) {
    // Older or hand-written files may lack the summary: derive it as train_runner does.
    double total = 0;
    for (double w : run.wall) total += std::isfinite(w) ? w : 0;
    if (haveSamples && samples > 0 && total > 0) run.samplesPerS = samples / total;
  }
  if (!(run.samplesPerS > 0)) run.samplesPerS = kNaN;
  run.finalAccuracy = numberOr(summary, "final_test_accuracy");
  if (!std::isfinite(run.finalAccuracy) && !run.accuracy.empty())
    run.finalAccuracy = run.accuracy.back();
  run.scalingEfficiency = numberOr(summary, "scaling_efficiency");
  return run;
}

ArPoint parseAllreduce(const json& p) {
  ArPoint a;
  a.algo = stringOr(p, "algo", "?");
  a.transport = stringOr(p, "transport", "?");
  a.device = stringOr(p, "device", "?");
  a.status = stringOr(p, "status", "?");
  a.error = stringOr(p, "error");
  a.n = static_cast<int>(numberOr(p, "n_gpus", 0));
  a.bytes = static_cast<long long>(numberOr(p, "bytes", 0));
  a.medianUs = numberOr(p.is_object() && p.contains("time_us") ? p["time_us"] : json(), "median");
  a.busbw = numberOr(p, "busbw_gbps");
  return a;
}

// The records of `doc[key]`, each checked to be an object.
const json& records(const json& doc, const char* key, const std::string& path) {
  const json& list = doc.at(key);
  for (const auto& r : list) {
    if (!r.is_object())
      TPB_THROW(UsageError,
                "'" << path << "': " << key << "[] holds a " << r.type_name() << ", not an object");
  }
  return list;
}

}  // namespace

double median(std::vector<double> xs) {
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](double x) { return !std::isfinite(x); }),
           xs.end());
  if (xs.empty()) return kNaN;
  std::sort(xs.begin(), xs.end());
  const std::size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

double meanOf(const std::vector<double>& xs) {
  double s = 0;
  std::size_t n = 0;
  for (double x : xs) {
    if (std::isfinite(x)) s += x, ++n;
  }
  return n ? s / static_cast<double>(n) : kNaN;
}

std::string valueText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "null";
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + valueText(e);
    return s.empty() ? "(none)" : s;
  }
  return v.dump();
}

Inputs loadInputs(const std::vector<std::string>& paths) {
  Inputs all;
  for (const auto& path : paths) {
    const ResultsFile f = ResultsFile::load(path);
    const json& doc = f.doc();
    Input in;
    in.path = path;
    const json meta = doc.value("meta", json::object());
    if (meta.is_object()) {
      for (const auto& [k, v] : meta.items()) in.meta.emplace_back(k, valueText(v));
    }
    const json& runs = records(doc, "runs", path);
    for (const auto& r : runs) all.runs.push_back(parseRun(r));
    const json& points = records(doc, "allreduce", path);
    for (const auto& p : points) all.points.push_back(parseAllreduce(p));
    in.runs = runs.size();
    in.allreduce = points.size();
    all.files.push_back(std::move(in));
  }
  return all;
}

}  // namespace tpb::report
