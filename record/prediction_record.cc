#include "record/prediction_record.h"

#include <cmath>
#include <cstdio>

namespace tpb {

using nlohmann::json;

namespace {

constexpr double kMaxSeconds = 1e9;  // finite: no step lasts thirty years
constexpr double kMaxBytes = 1e18;
constexpr int kMaxRanks = 65536;

double seconds(const JsonIn& in, const char* key) { return in.at(key).number(0, kMaxSeconds); }

std::optional<std::string> optString(const JsonIn& in, const char* key) {
  if (const auto v = in.find(key)) return v->str();
  return std::nullopt;
}

template <class T>
json orNull(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

json PredictionProfile::toJson() const {
  json j = {{"source", source},           {"forward_s", forwardS},          {"backward_s", backwardS},
            {"optimizer_s", optimizerS},  {"gradient_bytes", gradientBytes}, {"tensors", tensors}};
  if (companions) j["companions"] = *companions;
  if (device) j["device"] = *device;
  if (mfu) j["mfu"] = *mfu;
  return j;
}

PredictionProfile PredictionProfile::fromJson(const JsonIn& in) {
  in.object();
  PredictionProfile p;
  p.source = in.at("source").str();
  if (p.source != "measured" && p.source != "flops") in.at("source").fail("\"measured\" or \"flops\"");
  p.forwardS = seconds(in, "forward_s");
  p.backwardS = seconds(in, "backward_s");
  p.optimizerS = seconds(in, "optimizer_s");
  p.gradientBytes = in.at("gradient_bytes").number(0, kMaxBytes);
  p.tensors = static_cast<int>(in.at("tensors").integer(0, 1 << 30));
  if (const auto c = in.find("companions")) p.companions = static_cast<int>(c->integer(0, kMaxRanks - 1));
  p.device = optString(in, "device");
  if (const auto m = in.find("mfu")) p.mfu = m->number(0, 1);
  return p;
}

json PredictionAllreduce::toJson() const {
  json j = {{"source", source}, {"algo", algo}, {"text", text}};
  if (alphaUs) j["alpha_us"] = *alphaUs;
  if (betaUsPerByte) j["beta_us_per_byte"] = *betaUsPerByte;
  if (fittedOn) j["fitted_on"] = *fittedOn;
  if (link) j["link"] = *link;
  if (interLink) j["inter_link"] = *interLink;
  if (gpusPerNode) j["gpus_per_node"] = *gpusPerNode;
  if (nicsPerNode) j["nics_per_node"] = *nicsPerNode;
  return j;
}

PredictionAllreduce PredictionAllreduce::fromJson(const JsonIn& in) {
  in.object();
  PredictionAllreduce a;
  a.source = in.at("source").str();
  if (a.source != "fit" && a.source != "link" && a.source != "none")
    in.at("source").fail("\"fit\", \"link\" or \"none\"");
  a.algo = in.at("algo").str();
  a.text = in.at("text").str();
  if (const auto v = in.find("alpha_us")) a.alphaUs = v->number(0, kMaxSeconds);
  if (const auto v = in.find("beta_us_per_byte")) a.betaUsPerByte = v->number(0, kMaxSeconds);
  if (const auto v = in.find("fitted_on")) {
    std::vector<int> ns;
    for (std::size_t i = 0; i < v->size(); ++i) ns.push_back(static_cast<int>((*v)[i].integer(1, kMaxRanks)));
    a.fittedOn = ns;
  }
  a.link = optString(in, "link");
  a.interLink = optString(in, "inter_link");
  if (const auto v = in.find("gpus_per_node")) a.gpusPerNode = static_cast<int>(v->integer(1, 1024));
  if (const auto v = in.find("nics_per_node")) a.nicsPerNode = static_cast<int>(v->integer(1, 1024));
  return a;
}

std::string PredictionRecord::label() const {
  std::string s = "predict " + strategy + " " + workload;
  if (workload == "mlp") s += " hidden=" + hidden;
  s += " batch=" + std::to_string(batchSize) + " N=" + std::to_string(nGpus);
  if (bucketMb) {
    char b[48];
    std::snprintf(b, sizeof b, " bucket=%g", *bucketMb);
    s += b;
  }
  if (microbatches) s += " M=" + std::to_string(*microbatches);
  return s;
}

json PredictionRecord::toJson() const {
  json j = extra.is_object() ? extra : json::object();
  j["workload"] = workload;
  j["hidden"] = hidden;
  j["strategy"] = strategy;
  j["batch_size"] = batchSize;
  j["n_gpus"] = nGpus;
  j["bucket_mb"] = orNull(bucketMb);
  if (microbatches) j["microbatches"] = *microbatches;
  if (bubble) j["bubble"] = *bubble;
  j["profile"] = profile.toJson();
  j["allreduce"] = allreduce.toJson();
  j["step_s"] = stepS;
  j["compute_s"] = computeS;
  j["alone_s"] = aloneS;
  j["comm_s"] = commS;
  j["exposed_s"] = exposedS;
  j["efficiency"] = efficiency;
  j["samples_per_s"] = samplesPerS;
  j["allreduces"] = allreduces;
  j["best_bucket"] = bestBucket;
  return j;
}

PredictionRecord PredictionRecord::fromJson(const JsonIn& in) {
  in.object();
  PredictionRecord r;
  r.workload = in.at("workload").str();
  r.hidden = in.at("hidden").str();
  r.strategy = in.at("strategy").str();
  r.batchSize = static_cast<int>(in.at("batch_size").integer(1, 65536));
  r.nGpus = static_cast<int>(in.at("n_gpus").integer(1, kMaxRanks));
  if (const auto b = in.find("bucket_mb")) r.bucketMb = b->number(0, 1e9);
  if (const auto m = in.find("microbatches")) r.microbatches = static_cast<int>(m->integer(1, 65536));
  if (const auto b = in.find("bubble")) r.bubble = b->number(0, 1);
  r.profile = PredictionProfile::fromJson(in.at("profile"));
  r.allreduce = PredictionAllreduce::fromJson(in.at("allreduce"));
  r.stepS = seconds(in, "step_s");
  r.computeS = seconds(in, "compute_s");
  r.aloneS = seconds(in, "alone_s");
  r.commS = seconds(in, "comm_s");
  r.exposedS = seconds(in, "exposed_s");
  // Over 1 where the profile at N was faster than alone (noise): a ratio, not a fraction.
  r.efficiency = in.at("efficiency").number(0, 1e6);
  r.samplesPerS = in.at("samples_per_s").number(0, kLargestFinite);
  r.allreduces = static_cast<int>(in.at("allreduces").integer(0, 1 << 30));
  r.bestBucket = in.at("best_bucket").boolean();
  r.extra = in.extraExcept({"workload", "hidden", "strategy", "batch_size", "n_gpus", "bucket_mb", "profile", "allreduce",
                            "step_s", "compute_s", "alone_s", "comm_s", "exposed_s", "efficiency", "samples_per_s",
                            "allreduces", "best_bucket", "microbatches", "bubble"});
  return r;
}

}  // namespace tpb
