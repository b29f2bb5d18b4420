#include "workload/train.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "comm/cuda/devices.h"
#include "comm/cuda/gpu_trace.h"
#include "comm/cuda/stream_clock.h"
#include "common/error.h"
#include "common/fault.h"
#include "common/cpu_clock.h"
#include "common/slow_ranks.h"
#include "common/trace.h"
#include "workload/checkpoint.h"
#include "workload/evaluate.h"
#include "workload/network.h"
#include "workload/network_data.h"
#include "workload/sampler.h"

namespace tpb {

namespace {
using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}
}  // namespace

torch::Device torchDevice(const TrainConfig& cfg, int offset) {
  if (cfg.device == Device::Cpu) return torch::Device(torch::kCPU);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cfg.deviceIndex + offset));
}

void synchronize(const TrainConfig& cfg, int offset) {
  // The default stream only, not the whole device: an NCCL collective in flight on the
  // transport's stream (ddp's buckets, started during backward) is the exchange's to wait for,
  // under its timeout, and its time is communication, not compute.
  if (cfg.device == Device::Cuda) waitDefaultStream(cfg.deviceIndex + offset);
}

FlatSgd::FlatSgd(double lr, double momentum, const torch::Tensor& like, Impl impl)
    : lr_(static_cast<float>(lr)), momentum_(static_cast<float>(momentum)),
      loop_(impl == Impl::Loop || (impl == Impl::Auto && like.device().is_cpu())) {
  TPB_CHECK(like.dim() == 1 && like.scalar_type() == torch::kFloat32, "FlatSgd: expects a flat float32 buffer");
  TPB_CHECK(!loop_ || like.device().is_cpu(), "FlatSgd: the loop runs on host memory only");
  if (momentum != 0) velocity_ = torch::zeros_like(like);
}

void FlatSgd::step(torch::Tensor& params, const torch::Tensor& grads) {
  TPB_CHECK(params.numel() == grads.numel() && params.device() == grads.device(),
            "FlatSgd: parameters (" << params.numel() << " on " << params.device() << ") and gradients ("
                                    << grads.numel() << " on " << grads.device() << ") do not match");
  torch::NoGradGuard noGrad;
  if (!loop_) {
    if (!velocity_.defined()) {
      params.add_(grads, -lr_);
    } else {
      velocity_.mul_(momentum_).add_(grads);
      params.add_(velocity_, -lr_);
    }
    return;
  }
  float* __restrict w = params.data_ptr<float>();
  const float* __restrict g = grads.data_ptr<float>();
  const auto count = static_cast<std::size_t>(params.numel());
  const float lr = lr_;
  if (!velocity_.defined()) {
    for (std::size_t i = 0; i < count; ++i) w[i] -= lr * g[i];
    return;
  }
  float* __restrict v = velocity_.data_ptr<float>();
  const float m = momentum_;
  for (std::size_t i = 0; i < count; ++i) {
    v[i] = m * v[i] + g[i];
    w[i] -= lr * v[i];
  }
}

namespace {
Trainable modelOn(const TrainConfig& cfg, torch::Device device) {
  Trainable m = makeTrainable(cfg);
  if (!device.is_cpu()) m->to(device);
  return m;
}
}  // namespace

Replica::Replica(const TrainConfig& cfg, torch::Device dev)
    : device(dev),
      model(modelOn(cfg, dev)),
      params(model->orderedParameters()),
      flatParams(std::make_unique<FlatParams>(params)),
      sgd(cfg.lr, cfg.momentum, flatParams->flat()) {}

torch::Tensor Replica::forwardBackward(const Dataset& data, const torch::Tensor& epochIndices,
                                       std::size_t begin, std::size_t end, double lossScale) {
  torch::Tensor loss;
  const int gpu = gpuOf(device);
  {
    trace::Span span("forward", trace::Category::Compute);
    trace::GpuSpan onGpu("forward", trace::Category::Compute, trace::Track::Gpu, gpu, nullptr);
    const Batch b = gatherBatch(data, epochIndices, begin, end);
    torch::Tensor output = model->forward(b.images.to(device));
    loss = model->loss(output, b.labels.to(device));
  }
  trace::Span span("backward", trace::Category::Compute);
  trace::GpuSpan onGpu("backward", trace::Category::Compute, trace::Track::Gpu, gpu, nullptr);
  if (lossScale == 1.0) {
    loss.backward();
  } else {
    (loss * lossScale).backward();
  }
  return loss.detach();
}

std::vector<float> Replica::hostParams() {
  torch::Tensor cpu = flatParams->flat().to(torch::kCPU).contiguous();
  const float* p = cpu.data_ptr<float>();
  return std::vector<float>(p, p + cpu.numel());
}

namespace {
std::vector<float> toHost(const torch::Tensor& t) {
  if (!t.defined()) return {};
  torch::Tensor cpu = t.to(torch::kCPU).contiguous();
  return std::vector<float>(cpu.data_ptr<float>(), cpu.data_ptr<float>() + cpu.numel());
}

void fromHost(torch::Tensor t, const std::vector<float>& v, const char* what) {
  TPB_CHECK(t.defined() && static_cast<std::size_t>(t.numel()) == v.size(),
            "checkpoint: " << v.size() << " " << what << " for " << (t.defined() ? t.numel() : 0));
  torch::NoGradGuard noGrad;
  t.copy_(torch::from_blob(const_cast<float*>(v.data()), {static_cast<std::int64_t>(v.size())}, torch::kFloat32));
}
}  // namespace

ModelState Replica::state() {
  ModelState s{hostParams(), toHost(sgd.velocity()), {}};
  for (const torch::Tensor& b : model->buffers()) s.buffers.push_back(b.to(torch::kCPU).clone());
  return s;
}

void Replica::load(const ModelState& s) {
  fromHost(flatParams->flat(), s.weights, "weights");
  if (sgd.velocity().defined()) fromHost(sgd.velocity(), s.velocity, "momentum values");
  std::vector<torch::Tensor> mine = model->buffers();
  TPB_CHECK(mine.size() == s.buffers.size(), "checkpoint: " << s.buffers.size() << " buffers for " << mine.size());
  torch::NoGradGuard noGrad;
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i].copy_(s.buffers[i]);
}

FlatGradSync::FlatGradSync(int worldSize, ReduceFn reduce) : world_(worldSize), reduce_(std::move(reduce)) {}

void FlatGradSync::attach(Replica& r) { grads_ = std::make_unique<FlatGrads>(r.params); }

void FlatGradSync::beforeBackward() { grads_->zero(); }

void FlatGradSync::finish() {
  if (world_ <= 1) return;
  reduce_(grads_->data(), grads_->count());
  scaleInPlace(grads_->flat(), 1.0f / static_cast<float>(world_));
}

torch::Tensor FlatGradSync::grads() { return grads_->flat(); }

void scaleInPlace(torch::Tensor flat, float factor) {
  torch::NoGradGuard noGrad;
  if (!flat.device().is_cpu()) {
    flat.mul_(factor);
    return;
  }
  float* g = flat.data_ptr<float>();
  for (std::int64_t i = 0, n = flat.numel(); i < n; ++i) g[i] *= factor;
}

DataSplit loadTrainData(const TrainConfig& cfg, torch::Device device) {
  const NetworkSpec spec = cfg.network();
  DataSplit d;
  if (spec.kind == NetworkKind::Mlp || spec.mnistImages) {
    d = loadDataset(cfg.dataset, cfg.trainSize, cfg.seed);
    if (spec.mnistImages)
      for (Dataset* s : {&d.train, &d.test}) s->images = s->images.view({-1, 1, 28, 28});
  } else {
    const std::size_t n = cfg.trainSize > 0 ? cfg.trainSize : workloadTrainSize(spec);
    d = makeNetworkData(spec, n, workloadTestSize(spec), cfg.seed);
  }
  if (!device.is_cpu()) {
    for (Dataset* s : {&d.train, &d.test}) {
      s->images = s->images.to(device);
      s->labels = s->labels.to(device);
    }
  }
  return d;
}

EpochStats gatherEpoch(Transport* t, const EpochStats& mine) {
  EpochStats s = mine;
  if (t) s.rankTraffic = {mine.traffic};
  if (t && t->size() > 1) {
    // wall, compute, comm, loss sum, steps, samples, then the traffic (exact in a double)
    const Traffic& m = mine.traffic;
    double v[12] = {mine.wallS, mine.computeS, mine.commS, mine.trainLoss * mine.steps,
                    static_cast<double>(mine.steps), static_cast<double>(mine.samples),
                    static_cast<double>(m.bytesSent), static_cast<double>(m.bytesRecv),
                    static_cast<double>(m.msgsSent), static_cast<double>(m.msgsRecv), mine.stepComputeMedianS,
                    mine.stepComputeCpuMedianS};
    if (t->rank() != 0) {
      t->sendHost(0, v, sizeof v);
      return s;
    }
    // A step is one optimizer step of the model: every rank that trains takes each one (in
    // lockstep), so the epoch's count is the largest of theirs, not their sum; the loss is the
    // mean over every rank's steps, and samples count each rank's own once.
    double wall = v[0], compute = 0, comm = 0, lossSum = v[3], steps = v[4], rankSteps = v[4], samples = v[5];
    int computing = 0;
    auto add = [&](const double* x) {
      s.rankComputeS.push_back(x[1]);
      s.rankCommS.push_back(x[2]);
      s.rankStepComputeS.push_back(x[10]);
      s.rankStepComputeCpuS.push_back(x[11]);
      if (x[5] > 0 || x[1] > 0) {
        compute += x[1];
        comm += x[2];
        ++computing;
      }
    };
    add(v);
    for (int r = 1; r < t->size(); ++r) {
      double o[12];
      t->recvHost(r, o, sizeof o);
      s.rankTraffic.push_back({static_cast<std::uint64_t>(o[6]), static_cast<std::uint64_t>(o[7]),
                               static_cast<std::uint64_t>(o[8]), static_cast<std::uint64_t>(o[9])});
      wall = std::max(wall, o[0]);
      lossSum += o[3];
      steps = std::max(steps, o[4]);
      rankSteps += o[4];
      samples += o[5];
      add(o);
    }
    s.wallS = wall;
    s.computeS = computing ? compute / computing : 0;
    s.commS = computing ? comm / computing : 0;
    s.trainLoss = rankSteps > 0 ? lossSum / rankSteps : 0;
    s.steps = static_cast<long>(steps);
    s.samples = static_cast<std::size_t>(samples);
  }
  s.samplesPerS = s.wallS > 0 ? static_cast<double>(s.samples) / s.wallS : 0;
  return s;
}

void evaluateInto(EpochStats& s, TrainableImpl& model, const DataSplit& data, const TrainConfig& cfg) {
  const auto t0 = clock_type::now();
  Dataset test = data.test;
  if (cfg.testSize > 0 && cfg.testSize < test.size()) {
    test.images = test.images.narrow(0, 0, static_cast<int64_t>(cfg.testSize));
    test.labels = test.labels.narrow(0, 0, static_cast<int64_t>(cfg.testSize));
  }
  trace::Span span("evaluate", trace::Category::Eval);
  s.testAccuracy = evaluate(model, test, evalBatchSize(networkCost(cfg.network()).activationBytes, cfg.batchSize)).accuracy;
  s.evalS = since(t0);
}

void closeEpoch(Transport* t, EpochStats mine, TrainableImpl* model, const DataSplit& data,
                const TrainConfig& cfg, const EpochCallback& onEpoch, TrainResult& result) {
  mine.trainLoss = mine.steps ? mine.trainLoss / mine.steps : 0;
  EpochStats agg = gatherEpoch(t, mine);
  if (t && t->rank() != 0) return;
  if (cfg.evaluate) {
    TPB_CHECK(model, "rank 0 has no model to evaluate");
    evaluateInto(agg, *model, data, cfg);
  }
  if (onEpoch) onEpoch(agg);
  result.epochs.push_back(agg);
}

double medianOf(std::vector<double> xs) {
  const auto mid = xs.begin() + static_cast<std::ptrdiff_t>(xs.size() / 2);
  std::nth_element(xs.begin(), mid, xs.end());
  if (xs.size() % 2) return *mid;
  return (*mid + *std::max_element(xs.begin(), mid)) / 2;
}

namespace {

// The checkpoint after `epochs` epochs and `steps` steps: every rank gives its state (saveState
// may gather it), the reporter writes it.
void saveEpoch(const TrainConfig& cfg, const EpochLoop& loop, const CheckpointModel& model, int epochs, long steps,
               bool reporter) {
  Checkpoint ck;
  ck.state = loop.saveState();
  ck.epoch = epochs;
  ck.steps = steps;
  ck.samplerSeed = cfg.seed;
  if (reporter) saveCheckpoint(checkpointPath(cfg.saveDir, cfg, epochs), cfg, model, ck);
}
}  // namespace

TrainResult runEpochs(const TrainConfig& cfg, const EpochLoop& loop, DistributedSampler& sampler,
                      const DataSplit& data, TrainableImpl* evalModel, const std::function<void(Step&)>& step,
                      const EpochCallback& onEpoch) {
  TPB_CHECK(loop.rowsPerStep > 0, "a step must consume at least one sample");
  Transport* t = loop.transport;
  const bool reporter = !t || t->rank() == 0;
  TrainResult result;
  long totalSteps = 0;
  int firstEpoch = 0;
  // The model's names and shapes, for the file: built once, only when checkpoints are kept.
  const CheckpointModel ckModel = cfg.resumeFrom.empty() && cfg.saveDir.empty() ? CheckpointModel{}
                                                                                 : checkpointModel(cfg);
  if (!cfg.resumeFrom.empty()) {
    TPB_CHECK(loop.loadState, "this training loop cannot resume from a checkpoint");
    const Checkpoint ck = loadCheckpoint(cfg.resumeFrom, cfg, ckModel);
    loop.loadState(ck.state);
    firstEpoch = ck.epoch;
    totalSteps = ck.steps;
  }
  TPB_CHECK(cfg.saveDir.empty() || loop.saveState, "this training loop cannot write checkpoints");
  const auto stepsLeft = [&] { return cfg.maxSteps < 0 || totalSteps < cfg.maxSteps; };
  // A slow run (a large --workload on the CPU) says where it is every kProgressEvery on the
  // reporting rank: steps done of those it will run, the time per step and what is left.
  constexpr auto kProgressEvery = std::chrono::seconds(10);
  const auto runStart = clock_type::now();
  auto lastProgress = runStart;
  const long firstStep = totalSteps;
  const auto progress = [&](int epoch, std::size_t epochRows, std::size_t done) {
    const auto now = clock_type::now();
    if (!reporter || now - lastProgress < kProgressEvery) return;
    lastProgress = now;
    const long perEpoch = static_cast<long>((epochRows + loop.rowsPerStep - 1) / loop.rowsPerStep);
    long planned = perEpoch * (cfg.epochs - epoch) - static_cast<long>(done) + totalSteps;
    if (cfg.maxSteps >= 0) planned = std::min<long>(planned, cfg.maxSteps);
    const double perStep = std::chrono::duration<double>(now - runStart).count() / (totalSteps - firstStep);
    std::printf("%s N=%d step %ld/%ld (epoch %d/%d): %.2f s/step, about %.0f s left\n", cfg.strategy.c_str(),
                cfg.nGpus, totalSteps, planned, epoch + 1, cfg.epochs, perStep, perStep * (planned - totalSteps));
    std::fflush(stdout);
  };
  for (int epoch = firstEpoch; epoch < cfg.epochs && stepsLeft(); ++epoch) {
    sampler.setEpoch(static_cast<std::uint64_t>(epoch));
    const torch::Tensor idx = epochIndexTensor(sampler.indices(), data.train.size(), loop.device);
    const std::size_t n = static_cast<std::size_t>(idx.numel());
    torch::Tensor lossSum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(loop.device));
    if (loop.synchronize) loop.synchronize();
    if (t) t->barrier();
    EpochStats s;
    s.epoch = epoch + 1;
    const Traffic before = t ? t->traffic() : Traffic{};
    const auto t0 = clock_type::now();
    std::vector<double> stepCompute;  // each step's share of s.computeS, as the step added it
    std::vector<double> stepComputeCpu;  // and of s.computeCpuS
    for (std::size_t begin = 0; begin < n && stepsLeft(); begin += loop.rowsPerStep) {
      Step st{idx, begin, std::min(begin + loop.rowsPerStep, n), s, lossSum};
      trace::Span span("step", trace::Category::Step, "step", totalSteps);
      const double computedBefore = s.computeS, cpuBefore = s.computeCpuS;
      step(st);
      stepCompute.push_back(s.computeS - computedBefore);
      stepComputeCpu.push_back(s.computeCpuS - cpuBefore);
      if (loop.countsSamples) {
        ++s.steps;
        s.samples += st.end - st.begin;
      }
      ++totalSteps;
      faultPoint(loop.rank);
      progress(epoch, n, (begin + loop.rowsPerStep) / loop.rowsPerStep);
    }
    s.trainLoss = lossSum.item<double>();  // on a GPU this waits for the epoch's last step
    s.wallS = since(t0);
    trace::flushGpu();  // the GPU has finished the epoch's steps (above): read their events
    if (t) s.traffic = t->traffic() - before;
    const bool hostTimedSteps = !loop.computeIsWall && !(loop.gpuCompute && loop.gpuCompute->active()) && !loop.beforeClose;
    if (hostTimedSteps && !stepCompute.empty()) s.stepComputeMedianS = medianOf(stepCompute);
    if (hostTimedSteps && loop.stepsTimeCpu && !stepComputeCpu.empty())
      s.stepComputeCpuMedianS = medianOf(stepComputeCpu);
    if (loop.computeIsWall) s.computeS = s.wallS - s.commS;
    if (loop.gpuCompute && loop.gpuCompute->active()) {
      s.computeS = loop.gpuCompute->takeSpansS();
      s.commS = std::max(0.0, s.wallS - s.computeS);
    }
    if (loop.beforeClose) loop.beforeClose(s);
    closeEpoch(t, s, evalModel, data, cfg, onEpoch, result);
    if (!cfg.saveDir.empty()) saveEpoch(cfg, loop, ckModel, epoch + 1, totalSteps, reporter);
  }
  if (t) t->barrier();
  return result;
}

TrainResult trainReplicated(Transport* t, const TrainConfig& cfg, GradSync& sync,
                            const EpochCallback& onEpoch) {
  const int world = t ? t->size() : 1, rank = t ? t->rank() : 0;
  const torch::Device device = torchDevice(cfg);
  const DataSplit data = loadTrainData(cfg, device);
  Replica rep(cfg, device);
  sync.attach(rep);
  DistributedSampler sampler(data.train.size(), world, rank, /*shuffle=*/true, cfg.seed);
  // On a GPU with several ranks, compute and communication are split on the default stream's own
  // clock, read at the epoch's end (StreamClock): from the forward's start to the backward's end,
  // and the optimizer, are compute; the stream's wait between them, for the exchange, is
  // communication. The host does not wait inside the step, so nothing measures launch latency.
  // Only under --trace does it wait for the backward, so that the host spans on the timeline
  // line up with the GPU's. One rank exchanges nothing: its steps queue back to back.
  const bool gpu = cfg.device == Device::Cuda, exchanges = gpu && world > 1;
  StreamClock clock(exchanges ? gpuOf(device) : -1);
  struct StepMarks {
    std::size_t start, backwardDone, optimizerStart, done;
  };
  std::vector<StepMarks> marks;
  EpochLoop loop;
  loop.transport = t;
  loop.rank = rank;
  loop.rowsPerStep = static_cast<std::size_t>(cfg.batchSize);
  loop.device = device;
  loop.computeIsWall = gpu && !exchanges;
  loop.synchronize = [&cfg] { synchronize(cfg); };
  loop.saveState = [&rep] { return rep.state(); };
  loop.loadState = [&rep](const ModelState& s) { rep.load(s); };
  if (exchanges) {
    loop.beforeClose = [&](EpochStats& e) {  // the epoch's end waited for the stream
      e.computeS = e.commS = 0;
      for (const StepMarks& m : marks) {
        e.computeS += clock.seconds(m.start, m.backwardDone) + clock.seconds(m.optimizerStart, m.done);
        e.commS += clock.seconds(m.backwardDone, m.optimizerStart);
      }
      marks.clear();
      clock.restart();
    };
  }
  // Each step's compute is timed on this thread's CPU clock as well (ranks compute on one thread):
  // a rank that waited for a core spends more wall time on it, not more CPU time.
  loop.stepsTimeCpu = !gpu;
  // --slow_ranks: this rank's compute takes `slow` times as long, after its backward and before
  // the exchange, so its peers wait for it as for a slower device. On a GPU it waits out the
  // difference; on the CPU it works it out, spinning until its CPU clock has run (slow - 1) times
  // the step's forward and backward again, as a slower core would (a sleep would cost no CPU time
  // and pay a wake-up on top).
  const double slow = slowFactors(cfg.slowRanks, world)[static_cast<std::size_t>(rank)];
  TrainResult result = runEpochs(cfg, loop, sampler, data, rep.model.get(), [&](Step& st) {
    StepMarks m{};
    m.start = clock.mark();
    const auto c0 = clock_type::now();
    const double cpu0 = gpu ? 0 : threadCpuSeconds();
    sync.beforeBackward();
    st.lossSum.add_(rep.forwardBackward(data.train, st.indices, st.begin, st.end, 1.0));
    if (slow > 1 && gpu) {
      synchronize(cfg);  // the device's compute, not the host's launch
      std::this_thread::sleep_for((slow - 1) * (clock_type::now() - c0));
    } else if (slow > 1) {
      const double now = threadCpuSeconds(), until = now + (slow - 1) * (now - cpu0);
      while (threadCpuSeconds() < until) {
      }
    }
    const double cpu1 = gpu ? 0 : threadCpuSeconds();
    m.backwardDone = clock.mark();
    if (exchanges && trace::enabled()) synchronize(cfg);
    const auto c1 = clock_type::now();
    sync.finish();
    st.stats.commS += trace::close(sync.traceName(), sync.traceCategory(), c1);
    m.optimizerStart = clock.mark();
    const auto c2 = clock_type::now();
    const double cpu2 = gpu ? 0 : threadCpuSeconds();
    {
      trace::GpuSpan onGpu("optimizer", trace::Category::Optimizer, trace::Track::Gpu, gpuOf(device), nullptr);
      rep.step(sync.grads());
    }
    if (!gpu) st.stats.computeCpuS += (cpu1 - cpu0) + (threadCpuSeconds() - cpu2);
    m.done = clock.mark();
    if (exchanges) marks.push_back(m);
    st.stats.computeS += std::chrono::duration<double>(c1 - c0).count() +
                         trace::close("optimizer", trace::Category::Optimizer, c2);
  }, onEpoch);
  result.params = rep.hostParams();
  return result;
}

}  // namespace tpb
