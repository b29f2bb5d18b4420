// report/input.cc — see input.h.
#include "report/input.h"

#include <algorithm>
#include <cmath>

#include "record/nccl_tests.h"
#include "record/results.h"
#include "record/stragglers.h"
#include "report/format.h"

namespace tpb::report {

using nlohmann::json;

namespace {

double finiteOr(double v, double fallback = kNaN) { return std::isfinite(v) ? v : fallback; }

Run runOf(const RunRecord& r) {
  Run run;
  run.config = r.config.toJson();
  run.settings = r.config;
  run.strategy = r.config.strategy;
  run.n = r.config.nGpus;
  run.dataRanks = r.entry.dataRanks.value_or(r.config.nGpus);
  run.batch = r.config.batchSize;
  run.trainSize = static_cast<long long>(r.config.trainSize);
  run.epochsRequested = r.config.epochs;
  run.status = r.status;
  run.error = r.error.value_or("");
  long long samples = 0;
  bool haveSamples = true;
  for (const EpochRecord& e : r.epochs) {
    run.wall.push_back(finiteOr(e.wallS));
    run.compute.push_back(finiteOr(e.computeS));
    run.comm.push_back(finiteOr(e.commS));
    run.accuracy.push_back(finiteOr(e.testAccuracy));
    run.steps.push_back(e.steps && *e.steps > 0 ? static_cast<double>(*e.steps) : kNaN);
    if (e.bubbleFraction) run.bubble.push_back(finiteOr(*e.bubbleFraction));
    if (e.bubbleFormula) run.bubbleFormula.push_back(finiteOr(*e.bubbleFormula));
    if (e.samples) {
      samples += *e.samples;
    } else {
      haveSamples = false;
    }
  }
  run.samplesPerS = finiteOr(r.summary.samplesPerS);
  if (!(run.samplesPerS > 0) && !run.wall.empty()) {
    // Older or hand-written files may lack the summary: derive it as train_runner does.
    double total = 0;
    for (double w : run.wall) total += std::isfinite(w) ? w : 0;
    if (haveSamples && samples > 0 && total > 0) run.samplesPerS = double(samples) / total;
  }
  if (!(run.samplesPerS > 0)) run.samplesPerS = kNaN;
  run.finalAccuracy = finiteOr(r.summary.finalTestAccuracy);
  if (!std::isfinite(run.finalAccuracy) && !run.accuracy.empty())
    run.finalAccuracy = run.accuracy.back();
  run.scalingEfficiency = finiteOr(r.summary.scalingEfficiency);
  if (const auto st = stragglerOf(r)) run.straggler = stragglerText(*st);
  else if (const auto w = coreWaitOf(r)) run.straggler = coreWaitText(*w);  // it held the run back too
  // A busy machine besides (as the console says it): it may explain either.
  run.busy = r.machine && r.machine->busy;
  if (run.busy) run.straggler += (run.straggler.empty() ? "" : "; ") + ("the machine was busy: " + r.machine->text());
  return run;
}

CollectivePoint pointOf(const CollectiveRecord& c) {
  CollectivePoint a;
  a.op = c.op;
  a.inPlace = c.isInPlace();
  a.algo = c.algo;
  a.transport = c.transport;
  a.carrier = c.carriedOver();
  a.device = c.device;
  a.status = c.status;
  a.error = c.error.value_or("");
  a.n = c.nGpus;
  a.bytes = static_cast<long long>(c.bytes);
  a.medianUs = finiteOr(c.timeMedianUs);
  a.minUs = finiteOr(c.timeMinUs);
  a.maxUs = finiteOr(c.timeMaxUs);
  a.busbw = finiteOr(c.busbwGbps);
  if (const auto st = stragglerOf(c)) a.straggler = stragglerText(*st);
  a.busy = c.machine && c.machine->busy;
  if (a.busy) a.straggler += (a.straggler.empty() ? "" : "; ") + ("the machine was busy: " + c.machine->text());
  a.dtype = c.elementType();
  a.redop = c.reduction();
  a.imported = c.algo == kNcclTestsOrigin || c.algo == kRcclTestsOrigin;
  if (a.imported) {
    // What the verdict may read of an imported point; a value out of its range is left out.
    const auto str = [&](const char* key) {
      const auto v = c.extra.find(key);
      return v != c.extra.end() && v->is_string() && v->get_ref<const std::string&>().size() <= 64
                 ? v->get<std::string>() : std::string();
    };
    a.ncclAlgo = str("nccl_algo");
    a.nic = str("nic");
    if (const auto v = c.extra.find("nics_per_node"); v != c.extra.end() && v->is_number_integer()) {
      const auto n = v->get<long long>();
      if (n >= 1 && n <= 64) a.nicsPerNode = static_cast<int>(n);
    }
  }
  return a;
}

}  // namespace

std::string CollectivePoint::whereText() const {
  if (!imported) return "";
  std::string text = std::to_string(n) + (n == 1 ? " rank" : " ranks");
  if (nodes > 1) text += ", " + std::to_string(nodes) + " nodes";
  if (!gpu.empty()) text += ", " + gpu;
  return text;
}

double median(std::vector<double> xs) {
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](double x) { return !std::isfinite(x); }),
           xs.end());
  if (xs.empty()) return kNaN;
  std::sort(xs.begin(), xs.end());
  const std::size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

double Run::perStepS(const std::vector<double>& of) const {
  std::vector<double> perStep;
  const std::size_t first = of.size() > 1 ? 1 : 0;  // the first epoch warms up
  for (std::size_t e = first; e < of.size() && e < steps.size(); ++e)
    if (std::isfinite(of[e]) && std::isfinite(steps[e]) && steps[e] > 0) perStep.push_back(of[e] / steps[e]);
  return median(perStep);
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

namespace {

// A meta field as the report's Inputs table shows it: as valueText, but a measured number (the
// load average) in three figures: 6.02, not 6.02197265625.
std::string metaText(const json& v) {
  if (v.is_number_float()) return fmtNum(v.get<double>());
  if (v.is_array() && !v.empty()) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + metaText(e);
    return s;
  }
  return valueText(v);
}

}  // namespace

Inputs loadInputs(const std::vector<std::string>& paths, const StyleLookup& registry) {
  Inputs all;
  all.styles = Styles(registry);
  for (const auto& path : paths) {
    const ResultsFile f = ResultsFile::load(path);
    Input in;
    in.path = path;
    const json meta = f.meta().toJson();
    for (const auto& [k, v] : meta.items()) in.meta.emplace_back(k, metaText(v));
    for (const RunRecord& r : f.runs()) {
      all.runs.push_back(runOf(r));
      all.styles.add(SeriesKind::Strategy, r.config.strategy, r.entry);
    }
    for (const CollectiveRecord& c : f.collectives()) {
      all.points.push_back(pointOf(c));
      // Where it ran: the point's own "gpu" and "nodes" (an imported point), else its file's.
      const Meta& m = f.meta();
      CollectivePoint& p = all.points.back();
      if (m.gpus && !m.gpus->empty()) p.gpu = m.gpus->front();
      p.nodes = m.nodes.value_or(m.hosts ? static_cast<long long>(m.hosts->size()) : 1);
      if (const auto g = c.extra.find("gpu"); g != c.extra.end() && g->is_string()) p.gpu = g->get<std::string>();
      if (const auto n = c.extra.find("nodes"); n != c.extra.end() && n->is_number_integer()) p.nodes = n->get<long long>();
      p.file = all.files.size();
      all.styles.add(SeriesKind::Algorithm, c.algo, c.entry);
    }
    all.predictions.insert(all.predictions.end(), f.predictions().begin(), f.predictions().end());
    in.runs = f.runs().size();
    in.allreduce = f.collectives().size();
    in.predictions = f.predictions().size();
    all.files.push_back(std::move(in));
  }
  return all;
}

}  // namespace tpb::report
