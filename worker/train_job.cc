#include "worker/train_job.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/cuda/devices.h"
#include "comm/net_iface.h"
#include "common/trace.h"
#include "core/registry.h"
#include "record/records.h"
#include "record/results.h"
#include "workload/model.h"
#include "workload/train.h"
#include "worker/point_sync.h"
#include "worker/trace_gather.h"
#include "worker/worker.h"

namespace tpb {

using nlohmann::json;

namespace {

// countsTraffic: the strategy communicates over the transport only (from scratch), so what the
// transport counted is all it moved.
EpochRecord epochRecordOf(const EpochStats& e, bool countsTraffic) {
  EpochRecord r;
  r.epoch = e.epoch;
  r.wallS = e.wallS;
  r.computeS = e.computeS;
  r.commS = e.commS;
  r.samplesPerS = e.samplesPerS;
  r.trainLoss = e.trainLoss;
  r.testAccuracy = e.testAccuracy < 0 ? NAN : e.testAccuracy;  // < 0: not evaluated
  r.evalS = e.evalS;
  r.steps = e.steps;
  r.samples = e.samples;
  if (e.rankComputeS.size() > 1 && e.rankCommS.size() == e.rankComputeS.size()) {
    EpochRecord::RankTimes times;
    for (std::size_t i = 0; i < e.rankComputeS.size(); ++i) {
      times.computeS.push_back(e.rankComputeS[i]);
      times.commS.push_back(e.rankCommS[i]);
      times.idleS.push_back(std::max(0.0, e.wallS - e.rankComputeS[i] - e.rankCommS[i]));
    }
    // Kept where every rank timed its steps on the host (else the epoch sums are what there is),
    // and on the CPU clock only beside the wall clock's.
    const auto everyRank = [&e](const std::vector<double>& v) {
      return v.size() == e.rankComputeS.size() && std::all_of(v.begin(), v.end(), [](double s) { return std::isfinite(s); });
    };
    if (everyRank(e.rankStepComputeS)) times.stepComputeS = e.rankStepComputeS;
    if (!times.stepComputeS.empty() && everyRank(e.rankStepComputeCpuS)) times.stepComputeCpuS = e.rankStepComputeCpuS;
    r.ranks = std::move(times);
  }
  if (countsTraffic && !e.rankTraffic.empty()) {
    TrafficRecord t;
    for (const Traffic& x : e.rankTraffic) t.add(x.bytesSent, x.bytesRecv, x.msgsSent, x.msgsRecv);
    r.traffic = std::move(t);
  }
  if (e.bubbleFraction >= 0) r.bubbleFraction = e.bubbleFraction;
  if (e.bubbleFormula >= 0) r.bubbleFormula = e.bubbleFormula;
  if (!e.activationBytes.empty()) r.activationBytes = e.activationBytes;
  return r;
}

json epochsJson(const std::vector<EpochRecord>& epochs) {
  json a = json::array();
  for (const auto& e : epochs) a.push_back(e.toJson());
  return a;
}

}  // namespace

TrainConfig configFromJob(const json& config, const std::string& jobPath) {
  TrainConfig c;
  static_cast<TrainSettings&>(c) = RunConfig::fromJson(JsonIn(config, jobPath, "config"));
  return c;
}

void trainJob(Worker& w, const json& job) {
  const std::string jobPath = job.value("job_path", std::string("job"));
  TrainConfig cfg = configFromJob(job.at("config"), jobPath);
  cfg.saveDir = job.value("save_dir", std::string());
  // The replica lives on this rank's device: on GPUs the one the transport drives (cuda:LOCAL_RANK,
  // or cuda:0 where the rank sees its own GPU only), the CPU otherwise.
  cfg.device = w.comm->device();
  cfg.deviceIndex = cfg.device == Device::Cuda ? rankCudaDevice(w.env.localRank, visibleCudaDevices()) : 0;
  cfg.scratchDir = std::filesystem::path(jobPath).parent_path().string();
  const TrainStrategy& strategy = findStrategy("--strategy", cfg.strategy);
  const std::string resultPath = job.at("result_path");
  const bool reporter = w.env.rank == 0;
  std::vector<EpochRecord> epochs;
  auto onEpoch = [&](const EpochStats& e) {
    if (!reporter) return;
    epochs.push_back(epochRecordOf(e, strategy.origin == Origin::FromScratch));
    writeFileAtomic(resultPath, json{{"epochs", epochsJson(epochs)}}.dump());
    const double share = e.computeS + e.commS > 0 ? e.commS / (e.computeS + e.commS) : 0;
    // Per step as everywhere (report's Run::perStepS): the epoch's wall over its optimizer steps.
    std::printf(e.samplesPerS < 100 ? "%s N=%d epoch %d/%d: %.2f s, %ld steps (%.2f ms/step), %.3g samples/s, loss %.4f, "
                                      "test acc %s, comm %.0f%%\n"
                                    : "%s N=%d epoch %d/%d: %.2f s, %ld steps (%.2f ms/step), %.0f samples/s, loss %.4f, "
                                      "test acc %s, comm %.0f%%\n",
                cfg.strategy.c_str(), cfg.nGpus, e.epoch, cfg.epochs, e.wallS, e.steps,
                e.steps > 0 ? 1e3 * e.wallS / static_cast<double>(e.steps) : 0.0, e.samplesPerS, e.trainLoss,
                e.testAccuracy < 0 ? "n/a" : (std::to_string(e.testAccuracy * 100).substr(0, 5) + "%").c_str(),
                share * 100);
    std::fflush(stdout);
  };
  // --trace: this rank records its spans while it trains; afterwards rank 0 gathers them all.
  const std::string tracePath = job.value("trace_path", std::string());
  trace::enable(!tracePath.empty());
  TrainResult r = strategy.run(*w.comm, cfg, onEpoch);
  if (!tracePath.empty()) {
    const std::string prefix = pointPrefix(job.value("point", -1LL)) + w.env.runId + "/trace/";
    const json fragment = gatherTrace(w.comm->transport, *w.store, prefix, thisHostName());
    trace::enable(false);
    if (reporter) writeFileAtomic(tracePath, fragment.dump());
  }
  if (reporter) writeFileAtomic(resultPath, json{{"epochs", epochsJson(epochs)}, {"done", true}}.dump());
}

}  // namespace tpb
