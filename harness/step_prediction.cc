#include "harness/step_prediction.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <iomanip>
#include <optional>
#include <sstream>

#include "common/error.h"
#include "common/format_bytes.h"
#include "common/text_escape.h"
#include "cost_model/alpha_beta.h"
#include "cost_model/step_model.h"
#include "harness/input_checks.h"
#include "harness/meta.h"
#include "record/results.h"
#include "worker/worker.h"
#include "workload/network_spec.h"
#include "workload/stages.h"
#include "workload/step_profile.h"
#include "workload/train_config.h"

namespace tpb {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Buckets whose predicted steps are within this fraction of the fastest tie.
constexpr double kBucketTie = 1e-3;
// How far the model has been from measurements, said under every table (docs/strategies.md,
// "Projections and anchors" and scripts/step-model-check.sh's table).
constexpr const char* kLinkError =
    "# error, as checked: from link presets and FLOPs the model put PyTorch's DDP benchmark (ResNet-50, V100, 2-16 "
    "GPUs) 6-7 % faster than published, and ring allreduce over NVLink 4 22 % above nccl-tests' bandwidth "
    "(docs/strategies.md)";
constexpr const char* kMeasuredError =
    "# error, as checked on a 2-core CPU: median |error| 8.6 % over 27 points (an MLP, a small ResNet and GPT at N = "
    "2-4), the MLP's worst -34 % (docs/strategies.md, scripts/step-model-check.sh)";

// Where the allreduce's time comes from, and how to say so.
struct AllreduceSource {
  model::AllreduceTime time;
  std::string text;
  PredictionAllreduce record;
};

AllreduceSource fromCollectives(const PredictOptions& opt, const std::string& algo) {
  std::vector<CollectiveRecord> records;
  for (const auto& path : opt.collectives) {
    const ResultsFile f = ResultsFile::load(path);
    for (const CollectiveRecord& r : f.collectives())
      if (r.op == "allreduce" && r.algo == algo && r.device == "cpu") records.push_back(r);
  }
  const std::vector<model::Fit> fits = model::fitAll(records);
  // The in-place fits (what a strategy's gradients are reduced as) of the one transport with the most N.
  std::map<std::string, std::vector<const model::Fit*>> byTransport;
  for (const model::Fit& f : fits)
    if (f.inPlace && f.noFit.empty()) byTransport[f.transport].push_back(&f);
  const std::vector<const model::Fit*>* group = nullptr;
  std::string transport;
  for (const auto& [t, g] : byTransport)
    if (!group || g.size() > group->size()) group = &g, transport = t;
  if (!group) {
    std::string names;
    for (const auto& path : opt.collectives) names += (names.empty() ? "" : ", ") + path;
    TPB_THROW(UsageError, "--collectives: no in-place allreduce " << algo << " on the CPU measured at 2 or more sizes in "
                                                                   << names << " (tpbench allreduce --algos " << algo
                                                                   << " --n_gpus 2,3 --bytes 8,64K,1M,4M)");
  }
  const model::AcrossN fit = model::fitAcrossN(*group);
  const std::string carrier = group->front()->carrier.empty() ? transport : group->front()->carrier;
  if (!fit.noFit.empty()) TPB_THROW(UsageError, "--collectives: allreduce " << algo << ": " << fit.noFit);
  const auto formula = model::formulaOf("allreduce", algo);
  TPB_CHECK(formula.has_value(), "predict: a fit of " << algo << " without its formula");
  std::string ns;
  for (int n : fit.ns) ns += (ns.empty() ? "" : ",") + std::to_string(n);
  char text[512];
  std::snprintf(text, sizeof text,
                "allreduce %s over %s, fitted on N=%s: alpha %.2f us per step, beta %.3g us/B (%.2f GB/s), through %s%s%s",
                algo.c_str(), carrier.c_str(), ns.c_str(), fit.alphaUs, fit.betaUsPerByte,
                fit.betaUsPerByte > 0 ? 1e-3 / fit.betaUsPerByte : INFINITY, formula->text.c_str(),
                formula->assumption.empty() ? "" : "; ", formula->assumption.c_str());
  PredictionAllreduce rec;
  rec.source = "fit";
  rec.algo = algo;
  rec.text = text;
  rec.alphaUs = fit.alphaUs;
  rec.betaUsPerByte = fit.betaUsPerByte;
  rec.fittedOn = fit.ns;
  return {model::alphaBetaTime(*formula, fit.alphaUs, fit.betaUsPerByte), text, rec};
}

std::string linkText(const model::LinkPreset& link) {
  char text[384];
  std::snprintf(text, sizeof text, "%s (preset: alpha %.2f us, %.0f GB/s per direction; %s)", link.name.c_str(),
                link.alphaUs, link.gbps, link.source.c_str());
  return text;
}

AllreduceSource fromLink(const PredictOptions& opt) {
  const model::LinkPreset& link = model::findLink(opt.link);
  const CostFormula ring = ringAllreduceCost();
  const model::AllreduceTime within = model::alphaBetaTime(ring, link.alphaUs, 1e-3 / link.gbps);
  PredictionAllreduce rec;
  rec.source = "link";
  rec.algo = "ring";
  rec.link = link.name;
  const std::string text = "allreduce ring on " + linkText(link);
  if (opt.interLink.empty()) {
    rec.text = text + ", through " + ring.text;
    return {within, rec.text, rec};
  }
  // Across nodes one ring runs through every GPU; as NCCL's tuning model counts it, 2(nodes-1) of
  // its 2(N-1) steps cross the network and the rest stay in a node. NCCL runs as many rings
  // (channels) as a node has ports and spreads them over the ports, so every byte that crosses a
  // GPU's link crosses its node's ports too, shared by all of them: the ring's bandwidth is the
  // lower of one GPU's link and the node's ports together.
  const model::LinkPreset& across = model::findLink(opt.interLink);
  const int perNode = opt.gpusPerNode;
  const int nics = opt.nicsPerNode > 0 ? opt.nicsPerNode : perNode;
  const double alphaIn = link.alphaUs, alphaOut = across.alphaUs, gbps = std::min(link.gbps, nics * across.gbps);
  // NCCL picks per size the faster of that ring and its tree (a double binary tree across the
  // nodes, a chain within each): the tree's latency grows with log2 of the nodes, not with N,
  // and each byte goes up and down it once, 2·S at the same bandwidth.
  const auto time = [within, perNode, alphaIn, alphaOut, gbps](double bytes, int n) {
    if (n <= perNode) return within(bytes, n);
    const int nodes = (n + perNode - 1) / perNode;
    const double outSteps = 2.0 * (nodes - 1), inSteps = 2.0 * (n - 1) - outSteps;
    const double ringUs = outSteps * alphaOut + inSteps * alphaIn + 2.0 * (n - 1) / n * bytes / (gbps * 1e3);
    const double treeUs =
        2.0 * std::ceil(std::log2(nodes)) * alphaOut + 2.0 * (perNode - 1) * alphaIn + 2.0 * bytes / (gbps * 1e3);
    return std::min(ringUs, treeUs) * 1e-6;
  };
  char rate[160];
  std::snprintf(rate, sizeof rate, "; a node's %d port%s carry %.0f GB/s together, so the ring's bandwidth across nodes is %.0f GB/s",
                nics, nics == 1 ? "" : "s", nics * across.gbps, gbps);
  rec.interLink = across.name;
  rec.gpusPerNode = perNode;
  rec.nicsPerNode = nics;
  rec.text = text + " within a node of " + std::to_string(perNode) + " GPUs, and " + linkText(across) +
             " between nodes: the faster of one ring over every GPU (2(nodes-1) of its 2(N-1) steps at the network's " +
             "latency, the rest at the node's) and a tree (2 log2(nodes) steps across the network, 2(GPUs per node - 1) " +
             "within a node, every byte twice)" + rate;
  return {time, rec.text, rec};
}

// --workload's blocks as the step model reads them (workload/network_spec.h).
std::vector<model::BlockCost> blocksOf(const NetworkSpec& spec) {
  std::vector<model::BlockCost> blocks;
  const std::vector<NetworkCost> costs = networkBlockCosts(spec);
  for (std::size_t i = 0; i < costs.size(); ++i)
    blocks.push_back({"block " + std::to_string(i), costs[i].forwardFlops, static_cast<double>(costs[i].gradientBytes)});
  return blocks;
}

// Before anything is measured: the most replicas a measurement here runs at once (a rank and its
// companions, `replicas` = N) at `batch` rows, within measureStep's companions and within this
// host's MemAvailable. Each holds the model's weights and gradients (and momentum: measureStep's
// TrainConfig's), the activations of its batch and its 4 batches of data.
void checkReplicasFit(const NetworkSpec& spec, int replicas, int batch) {
  if (replicas - 1 > kMaxCompanions)
    TPB_THROW(UsageError, "--n_gpus: " << replicas << " is measured on this CPU as " << replicas
                                       << " replicas stepping side by side, at most " << kMaxCompanions + 1
                                       << "; give --gpu to predict from FLOPs instead");
  const NetworkCost cost = networkCost(spec);
  const double state = static_cast<double>(cost.parameters) * sizeof(float) * (TrainConfig{}.momentum > 0 ? 3 : 2);
  const double activations = cost.activationBytes * batch, data = 4.0 * batch * sampleBytes(spec);
  std::ostringstream what;
  what << replicas << " replica" << (replicas == 1 ? "" : "s") << " of " << workloadText(spec)
       << " measured side by side (" << std::setprecision(3) << static_cast<double>(cost.parameters)
       << " parameters: " << humanBytes(state) << ", activations at batch " << batch << ": " << humanBytes(activations)
       << ", data: " << humanBytes(data) << ", each)";
  checkFitsInMemory(replicas > 1 ? "--n_gpus" : "--batch_size", what.str(), replicas * (state + activations + data),
                    memAvailableBytes(), memoryHint(spec, batch, replicas, state, activations));
}

// One rank's step of the workload measured here beside `companions` other replicas (the other
// ranks of a run at N = companions + 1), said in one line. startRankProcess() has run.
model::StepProfile measuredProfile(const PredictOptions& opt, const NetworkSpec& spec, int companions,
                                   std::ostream& os, int batch = 0) {
  TrainConfig cfg;
  cfg.workload = workloadText(spec);
  cfg.hidden = opt.hidden;
  cfg.batchSize = batch > 0 ? batch : opt.batchSize;
  cfg.seed = opt.seed;
  cfg.trainSize = static_cast<std::size_t>(cfg.batchSize) * 4;
  const MeasuredStep m = measureStep(cfg, opt.warmup, opt.steps, companions);
  model::StepProfile p;
  p.forwardS = m.forwardS;
  p.backwardS = m.backwardS;
  p.optimizerS = m.optimizerS;
  for (std::size_t i = 0; i < m.names.size(); ++i) p.params.push_back({m.names[i], m.bytes[i], m.gradReadyS[i]});
  char line[768];
  std::snprintf(line, sizeof line,
                "# measured: %s at batch %d, one rank on this CPU beside %d stepping as it, mean of %d steps after "
                "%d warm-up: forward %.3f ms, backward %.3f ms, optimizer %.3f ms (step %.3f ms; whole steps %.3f-%.3f "
                "ms); %zu parameters, %s of gradients\n",
                cfg.workload.c_str(), cfg.batchSize, companions, m.steps, opt.warmup, 1e3 * m.forwardS, 1e3 * m.backwardS,
                1e3 * m.optimizerS, 1e3 * p.computeS(), 1e3 * m.stepMinS, 1e3 * m.stepMaxS, p.params.size(),
                formatBytesApprox(p.gradientBytes()).c_str());
  os << line;
  return p;
}

// One rank's step on a GPU preset from the workload's FLOPs, said in one line.
model::StepProfile flopsProfile(const PredictOptions& opt, const NetworkSpec& spec, std::ostream& os) {
  const model::DevicePreset& d = model::findDevice(opt.gpu);
  const model::StepProfile p = model::profileFromFlops(blocksOf(spec), opt.batchSize, d, opt.mfu);
  char line[768];
  std::snprintf(line, sizeof line,
                "# from FLOPs: %s at batch %d on %s (%s) at %.0f %% of peak: forward %.3f ms, backward %.3f ms "
                "(twice forward), optimizer %.3f ms (20 B per parameter at the memory's rate); %zu blocks, %s of "
                "float32 gradients\n",
                workloadText(spec).c_str(), opt.batchSize, d.description.c_str(), d.source.c_str(), 100 * opt.mfu,
                1e3 * p.forwardS, 1e3 * p.backwardS, 1e3 * p.optimizerS, p.params.size(),
                formatBytesApprox(p.gradientBytes()).c_str());
  os << line;
  return p;
}

// What a row was predicted from, as its record says it.
PredictionProfile profileRecord(const PredictOptions& opt, const model::StepProfile& p, int companions) {
  PredictionProfile r;
  r.source = opt.gpu.empty() ? "measured" : "flops";
  if (opt.gpu.empty()) {
    r.companions = companions;
  } else {
    r.device = opt.gpu;
    r.mfu = opt.mfu;
  }
  r.forwardS = p.forwardS;
  r.backwardS = p.backwardS;
  r.optimizerS = p.optimizerS;
  r.gradientBytes = p.gradientBytes();
  r.tensors = static_cast<int>(p.params.size());
  return r;
}

// A row's record with what every strategy's shares: the point at N, its profile, one rank alone.
PredictionRecord pointRecord(const PredictOptions& opt, const NetworkSpec& spec, int n, PredictionProfile profile,
                             double aloneS) {
  PredictionRecord r;
  r.workload = workloadText(spec);
  r.hidden = opt.hidden;
  r.strategy = opt.strategy;
  r.batchSize = opt.batchSize;
  r.nGpus = n;
  r.profile = std::move(profile);
  r.aloneS = aloneS;
  return r;
}

// --out: the rows as records of a new results file (the file was claimed before measuring).
void writePredictions(const PredictOptions& opt, std::vector<PredictionRecord> records, std::ostream& os) {
  ResultsFile f = ResultsFile::create(opt.out, collectMeta(opt.command));
  for (PredictionRecord& r : records) f.addPrediction(std::move(r));
  f.save();
  os << "# wrote " << opt.out << " (" << f.predictions().size() << " predictions)\n";
}

// Where the stages share the network: each stage's part of its forward FLOPs, the stages cut as
// the pipeline strategy cuts them (workload/stages.h: contiguous, balanced by cost).
std::vector<double> stageShares(const NetworkSpec& spec, int stages) {
  const std::vector<int> bounds = stageBounds(spec, stages, "", "--n_gpus");
  const std::vector<NetworkCost> blocks = networkBlockCosts(spec);
  double total = 0;
  for (const NetworkCost& b : blocks) total += b.forwardFlops;
  std::vector<double> shares;
  for (int s = 0; s < stages; ++s) {
    double flops = 0;
    for (int u = bounds[static_cast<std::size_t>(s)]; u < bounds[static_cast<std::size_t>(s) + 1]; ++u)
      flops += blocks[static_cast<std::size_t>(u)].forwardFlops;
    shares.push_back(total > 0 ? flops / total : 1.0 / stages);
  }
  return shares;
}

// --strategy pipeline: S stages (--n_gpus), M micro-batches (--microbatches). One micro-batch's
// step is measured beside S - 1 replicas (the stages compute side by side once the pipeline is
// full), each stage given its share of it (stageShares), and the step predicted by
// predictPipeline; efficiency is one rank's whole-batch step alone over S x the step.
int runPipeline(const PredictOptions& opt, std::ostream& os) {
  for (const auto& [flag, given] : {std::pair<const char*, bool>{"--collectives", !opt.collectives.empty()},
                                    {"--link", !opt.link.empty()}, {"--inter_link", !opt.interLink.empty()},
                                    {"--gpu", !opt.gpu.empty()}, {"--algo", !opt.algo.empty()},
                                    {"--nics_per_node", opt.nicsPerNode > 0}, {"--mfu", !std::isnan(opt.mfu)}})
    if (given)
      TPB_THROW(UsageError, flag << ": not with --strategy pipeline (its stages exchange activations, not gradients; the "
                                    "model measures the stages' compute here and leaves the transfers out)");
  if (opt.batchSize < 1 || opt.batchSize > 65536) TPB_THROW(UsageError, "--batch_size: must be in 1..65536");
  if (opt.steps < 1 || opt.steps > 100000) TPB_THROW(UsageError, "--steps: must be in 1..100000");
  if (opt.warmup < 0 || opt.warmup > 100000) TPB_THROW(UsageError, "--warmup: must be in 0..100000");
  const std::vector<int> micros = opt.microbatches.empty() ? std::vector<int>{4} : opt.microbatches;
  for (int m : micros)
    if (m < 1 || m > opt.batchSize)
      TPB_THROW(UsageError, "--microbatches: " << m << " is not in 1..--batch_size (" << opt.batchSize << ")");
  const NetworkSpec spec = parseWorkload("--workload", opt.workload, opt.hidden);
  std::map<int, std::vector<double>> shares;
  for (int n : opt.ns) {
    if (n < 1 || n > 1024) TPB_THROW(UsageError, "--n_gpus: " << n << " stages is not in 1..1024");
    shares[n] = stageShares(spec, n);
    for (int m : micros) {
      TrainConfig cfg;
      cfg.workload = workloadText(spec);
      cfg.hidden = opt.hidden;
      cfg.nGpus = n;
      const std::string why = stagesConfigProblem(cfg, m);
      if (!why.empty()) TPB_THROW(UsageError, why);
    }
  }
  for (int n : opt.ns)
    for (int m : micros) checkReplicasFit(spec, n, (opt.batchSize + m - 1) / m);
  checkReplicasFit(spec, 1, opt.batchSize);
  std::optional<OwnedOutput> owned;
  if (!opt.out.empty()) owned.emplace("--out", opt.out, kResultsOutput, OutputFlags{false, opt.overwrite, false});
  startRankProcess();
  const model::StepProfile alone = measuredProfile(opt, spec, 0, os);
  const double aloneS = alone.computeS();
  os << "# predicted: pipeline, S stages (--n_gpus) cut as the strategy cuts them (balanced by cost), each doing its "
        "share of the network's forward FLOPs of every micro-batch's step; the first micro-batch crosses every stage, "
        "the others follow one slowest stage apart (GPipe; 1F1B is as long with equal stages); the activations' "
        "transfers are left out; efficiency: one rank's batch alone over S x the step\n";
  char line[512];
  std::snprintf(line, sizeof line, "#  %5s %5s %11s %10s %11s %8s %9s %10s %11s\n", "S", "M", "micro_rows", "step_ms",
                "busiest_ms", "bubble", "formula", "efficiency", "samples/s");
  os << line;
  std::vector<PredictionRecord> records;
  std::map<std::pair<int, int>, model::StepProfile> measured;  // (rows, companions) -> profile
  for (int n : opt.ns) {
    for (int m : micros) {
      const int rows = (opt.batchSize + m - 1) / m;
      const auto key = std::make_pair(rows, n - 1);
      if (!measured.count(key)) measured[key] = measuredProfile(opt, spec, n - 1, os, rows);
      const model::StepProfile& micro = measured[key];
      const model::PipelinePrediction p = model::predictPipeline(micro, shares[n], m);
      std::snprintf(line, sizeof line, "   %5d %5d %11d %10.3f %11.3f %8.3f %9.3f %9.1f%% %11.0f\n", n, m, rows,
                    1e3 * p.stepS, 1e3 * p.busyS, p.bubble, (n - 1.0) / (m + n - 1.0), 100 * aloneS / (n * p.stepS),
                    opt.batchSize / p.stepS);
      os << line;
      PredictionRecord r = pointRecord(opt, spec, n, profileRecord(opt, micro, n - 1), aloneS);
      r.microbatches = m;
      r.allreduce.source = "none";
      r.allreduce.text = "none: the stages exchange activations and their gradients, which the model leaves out";
      r.stepS = p.stepS;
      r.computeS = p.busyS;
      r.exposedS = p.stepS - p.busyS;
      r.efficiency = aloneS / (n * p.stepS);
      r.samplesPerS = opt.batchSize / p.stepS;
      r.bubble = p.bubble;
      records.push_back(std::move(r));
    }
  }
  os << "# the model leaves out the activations' transfers, the stages slowing each other (shared cores and "
        "memory bandwidth) and stragglers\n";
  if (owned) writePredictions(opt, std::move(records), os);
  return 0;
}

}  // namespace

std::string allreduceAlgoOf(const std::string& strategy) {
  if (strategy == "ddp" || strategy == "allreduce") return "library";
  if (strategy == "ring_all_reduce") return "ring";
  TPB_THROW(UsageError, "--strategy: '" << printable(strategy)
                                        << "' is not one the step model covers (ddp, ring_all_reduce, allreduce, pipeline)");
}

int runPredict(const PredictOptions& opt, std::ostream& os) {
  // Every input is checked before anything is measured.
  if (opt.strategy == "pipeline") return runPipeline(opt, os);
  if (!opt.microbatches.empty()) TPB_THROW(UsageError, "--microbatches: goes with --strategy pipeline");
  const std::string own = allreduceAlgoOf(opt.strategy);
  const std::string algo = opt.algo.empty() ? own : opt.algo;
  const bool bucketed = opt.strategy == "ddp";
  if (opt.collectives.empty() == opt.link.empty())
    TPB_THROW(UsageError, "--collectives: give either results files to fit the allreduce from or --link, not "
                              << (opt.link.empty() ? "neither" : "both"));
  if (!opt.link.empty()) model::findLink(opt.link);
  if (!opt.interLink.empty()) {
    if (opt.link.empty()) TPB_THROW(UsageError, "--inter_link: goes with --link (the link within a node)");
    model::findLink(opt.interLink);
  }
  if (opt.gpusPerNode < 1 || opt.gpusPerNode > 1024) TPB_THROW(UsageError, "--gpus_per_node: must be in 1..1024");
  if (opt.nicsPerNode < 0 || opt.nicsPerNode > 1024) TPB_THROW(UsageError, "--nics_per_node: must be in 1..1024");
  if (opt.nicsPerNode > 0 && opt.interLink.empty())
    TPB_THROW(UsageError, "--nics_per_node: goes with --inter_link (the ports between nodes)");
  if (!opt.gpu.empty()) {
    model::findDevice(opt.gpu);
    if (opt.link.empty())
      TPB_THROW(UsageError, "--gpu: goes with --link (a GPU's step beside this CPU's allreduce would mean nothing)");
    if (!(opt.mfu > 0 && opt.mfu <= 1))
      TPB_THROW(UsageError, "--mfu: give the fraction of the GPU's dense peak the workload reaches, in (0, 1] (with --gpu)");
  } else if (!std::isnan(opt.mfu)) {
    TPB_THROW(UsageError, "--mfu: goes with --gpu");
  }
  if (!opt.link.empty() && !opt.algo.empty())
    TPB_THROW(UsageError, "--algo: a --link preset is modelled as a ring allreduce; --algo goes with --collectives");
  if (!opt.algo.empty() && !model::formulaOf("allreduce", opt.algo))
    TPB_THROW(UsageError, "--algo: '" << printable(opt.algo) << "' has no allreduce cost formula in this build");
  for (int n : opt.ns)
    if (n < 1 || n > 65536) TPB_THROW(UsageError, "--n_gpus: " << n << " is not in 1..65536");
  for (double mb : opt.bucketMb)
    if (!(mb > 0 && mb <= 1024)) TPB_THROW(UsageError, "--bucket_mb: " << mb << " is not in (0, 1024]");
  if (opt.batchSize < 1 || opt.batchSize > 65536) TPB_THROW(UsageError, "--batch_size: must be in 1..65536");
  if (opt.steps < 1 || opt.steps > 100000) TPB_THROW(UsageError, "--steps: must be in 1..100000");
  if (opt.warmup < 0 || opt.warmup > 100000) TPB_THROW(UsageError, "--warmup: must be in 0..100000");
  const NetworkSpec spec = parseWorkload("--workload", opt.workload, opt.hidden);
  // Claimed before anything is measured, and held until the predictions are written.
  std::optional<OwnedOutput> owned;
  if (!opt.out.empty()) owned.emplace("--out", opt.out, kResultsOutput, OutputFlags{false, opt.overwrite, false});
  const AllreduceSource source = opt.link.empty() ? fromCollectives(opt, algo) : fromLink(opt);
  // On a GPU preset one profile serves every N; measured here, each N's ranks share this machine,
  // so each N gets its own profile, measured beside N - 1 replicas stepping as the others would.
  // Scaling efficiency is one rank's step alone over the step at N (what N ranks sharing the
  // machine lose counts against it).
  const bool perN = opt.gpu.empty();
  if (perN) checkReplicasFit(spec, *std::max_element(opt.ns.begin(), opt.ns.end()), opt.batchSize);
  if (perN) startRankProcess();  // once: one thread, as every rank computes
  const model::StepProfile alone = perN ? measuredProfile(opt, spec, 0, os) : flopsProfile(opt, spec, os);
  const double aloneS = alone.computeS();
  char line[768];
  os << "# " << source.text << "\n";
  os << "# predicted: " << opt.strategy
     << (bucketed ? " (DDP's buckets, each allreduce launched when its last gradient is ready, one at a time)"
                  : " (one allreduce of every gradient after backward)")
     << "; weak scaling, each rank keeps batch " << opt.batchSize
     << "; efficiency: one rank's step alone over the step at N\n";
  // What the user did not say and the table rests on.
  if (!opt.batchGiven) os << "# assumed: batch " << opt.batchSize << " per rank, the default (--batch_size)\n";
  if (!opt.link.empty() && opt.interLink.empty() && *std::max_element(opt.ns.begin(), opt.ns.end()) > opt.gpusPerNode)
    os << "# assumed: every rank on one " << opt.link << " ring at every N, as if one node held them all (--inter_link "
       << "and --gpus_per_node put nodes of " << opt.gpusPerNode << " over a network)\n";
  std::snprintf(line, sizeof line, "#  %5s %10s %7s %10s %10s %11s %10s %11s\n", "N", "bucket_MiB", "buckets", "step_ms",
                "comm_ms", "exposed_ms", "efficiency", "samples/s");
  os << line;
  const std::vector<double> caps = bucketed ? opt.bucketMb : std::vector<double>{0};
  std::vector<PredictionRecord> records;
  for (int n : opt.ns) {
    const model::StepProfile p = perN && n > 1 ? measuredProfile(opt, spec, n - 1, os) : alone;
    const PredictionProfile profile = profileRecord(opt, p, perN ? n - 1 : 0);
    const std::size_t firstOfN = records.size();
    std::vector<double> capsBytes;
    for (double mb : caps) {
      const model::StepPlan plan{n, bucketed ? model::Sync::Bucketed : model::Sync::AfterBackward,
                                 bucketed ? mb * kMiB : 1.0};
      const model::StepPrediction s = model::predictStep(p, plan, source.time);
      char bucket[32] = "-";
      if (bucketed) std::snprintf(bucket, sizeof bucket, "%g", mb);
      std::snprintf(line, sizeof line, "   %5d %10s %7zu %10.3f %10.3f %11.3f %9.1f%% %11.0f\n", n, bucket,
                    s.allreduces.size(), 1e3 * s.stepS, 1e3 * s.commS, 1e3 * s.exposedCommS, 100 * aloneS / s.stepS,
                    n * opt.batchSize / s.stepS);
      os << line;
      capsBytes.push_back(mb * kMiB);
      PredictionRecord r = pointRecord(opt, spec, n, profile, aloneS);
      if (bucketed) r.bucketMb = mb;
      r.allreduce = source.record;
      r.stepS = s.stepS;
      r.computeS = s.computeS;
      r.commS = s.commS;
      r.exposedS = s.exposedCommS;
      r.efficiency = aloneS / s.stepS;
      r.samplesPerS = n * opt.batchSize / s.stepS;
      r.allreduces = static_cast<int>(s.allreduces.size());
      records.push_back(std::move(r));
    }
    if (bucketed && caps.size() > 1 && n > 1) {
      // Caps within 0.1 % of each other tie: none is named (the smallest would be, by bestBucket's
      // rule, though it wins nothing).
      double fastest = records[firstOfN].stepS, slowest = fastest;
      for (std::size_t i = firstOfN; i < records.size(); ++i)
        fastest = std::min(fastest, records[i].stepS), slowest = std::max(slowest, records[i].stepS);
      if (slowest - fastest <= kBucketTie * fastest) {
        std::snprintf(line, sizeof line, "#  best bucket at N=%d: none, every bucket given predicts %.3f ms\n", n,
                      1e3 * fastest);
        os << line;
        continue;
      }
      const model::BucketChoice best = model::bestBucket(p, n, capsBytes, source.time);
      std::snprintf(line, sizeof line, "#  best bucket at N=%d: %g MiB of those given (%.3f ms)\n", n,
                    best.capBytes / kMiB, 1e3 * best.prediction.stepS);
      os << line;
      for (std::size_t i = firstOfN; i < records.size(); ++i)
        records[i].bestBucket = *records[i].bucketMb * kMiB == best.capBytes;
    }
  }
  if (!opt.link.empty() && opt.gpu.empty())
    os << "# the compute is this CPU's, the allreduce the link's: a GPU computes faster, and would leave more of "
          "the communication exposed\n";
  os << "# the model leaves out compute and communication slowing each other (shared cores and memory "
        "bandwidth), the buckets' copies, and stragglers\n";
  os << (opt.link.empty() ? kMeasuredError : kLinkError) << "\n";
  if (owned) writePredictions(opt, std::move(records), os);
  return 0;
}

}  // namespace tpb
