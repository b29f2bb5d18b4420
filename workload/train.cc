#include "workload/train.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "common/fault.h"
#include "workload/evaluate.h"
#include "workload/sampler.h"

namespace tpb {

namespace {
using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}
}  // namespace

FlatSgd::FlatSgd(double lr, double momentum, std::size_t count)
    : lr_(static_cast<float>(lr)), momentum_(static_cast<float>(momentum)), count_(count),
      velocity_(momentum != 0 ? count : 0, 0.0f) {}

void FlatSgd::step(float* __restrict params, const float* __restrict grads) {
  const float lr = lr_;
  if (velocity_.empty()) {
    for (std::size_t i = 0; i < count_; ++i) params[i] -= lr * grads[i];
    return;
  }
  float* __restrict v = velocity_.data();
  const float m = momentum_;
  for (std::size_t i = 0; i < count_; ++i) {
    v[i] = m * v[i] + grads[i];
    params[i] -= lr * v[i];
  }
}

Replica::Replica(const TrainConfig& cfg, const DataSplit& data)
    : model(makeModel(cfg.model, cfg.seed)),
      params(orderedParameters(model)),
      flatParams(std::make_unique<FlatParams>(params)),
      sgd(cfg.lr, cfg.momentum, flatParams->count()) {
  (void)data;
}

double Replica::forwardBackward(const Dataset& data, const std::vector<std::int64_t>& indices,
                                std::size_t begin, std::size_t end, double lossScale) {
  Batch b = gatherBatch(data, indices, begin, end);
  torch::Tensor logits = model->forward(b.images);
  torch::Tensor loss = torch::nn::functional::cross_entropy(logits, b.labels);
  if (lossScale == 1.0) {
    loss.backward();
  } else {
    (loss * lossScale).backward();
  }
  return loss.item<double>();
}

FlatGradSync::FlatGradSync(int worldSize, ReduceFn reduce) : world_(worldSize), reduce_(std::move(reduce)) {}

void FlatGradSync::attach(Replica& r) { grads_ = std::make_unique<FlatGrads>(r.params); }

void FlatGradSync::beforeBackward() { grads_->zero(); }

void FlatGradSync::finish() {
  if (world_ <= 1) return;
  float* g = grads_->data();
  const std::size_t n = grads_->count();
  reduce_(g, n);
  const float inv = 1.0f / static_cast<float>(world_);
  for (std::size_t i = 0; i < n; ++i) g[i] *= inv;
}

float* FlatGradSync::grads() { return grads_->data(); }

DataSplit loadTrainData(const TrainConfig& cfg) { return loadDataset(cfg.dataset, cfg.trainSize, cfg.seed); }

EpochStats gatherEpoch(Transport* t, const EpochStats& mine) {
  EpochStats s = mine;
  if (t && t->size() > 1) {
    // wall, compute, comm, loss sum, steps, samples
    double v[6] = {mine.wallS, mine.computeS, mine.commS, mine.trainLoss * mine.steps,
                   static_cast<double>(mine.steps), static_cast<double>(mine.samples)};
    if (t->rank() != 0) {
      t->send(0, v, sizeof v);
      return s;
    }
    double wall = v[0], compute = 0, comm = 0, lossSum = v[3], steps = v[4], samples = v[5];
    int computing = 0;
    auto add = [&](const double* x) {
      if (x[5] > 0) {
        compute += x[1];
        comm += x[2];
        ++computing;
      }
    };
    add(v);
    for (int r = 1; r < t->size(); ++r) {
      double o[6];
      t->recv(r, o, sizeof o);
      wall = std::max(wall, o[0]);
      lossSum += o[3];
      steps += o[4];
      samples += o[5];
      add(o);
    }
    s.wallS = wall;
    s.computeS = computing ? compute / computing : 0;
    s.commS = computing ? comm / computing : 0;
    s.trainLoss = steps > 0 ? lossSum / steps : 0;
    s.steps = static_cast<long>(steps);
    s.samples = static_cast<std::size_t>(samples);
  }
  s.samplesPerS = s.wallS > 0 ? static_cast<double>(s.samples) / s.wallS : 0;
  return s;
}

void evaluateInto(EpochStats& s, Mlp& model, const DataSplit& data, const TrainConfig& cfg) {
  const auto t0 = clock_type::now();
  Dataset test = data.test;
  if (cfg.testSize > 0 && cfg.testSize < test.size()) {
    test.images = test.images.narrow(0, 0, static_cast<int64_t>(cfg.testSize));
    test.labels = test.labels.narrow(0, 0, static_cast<int64_t>(cfg.testSize));
  }
  s.testAccuracy = evaluate(model, test).accuracy;
  s.evalS = since(t0);
}

void closeEpoch(Transport* t, EpochStats mine, Mlp& model, const DataSplit& data,
                const TrainConfig& cfg, const EpochCallback& onEpoch, TrainResult& result) {
  mine.trainLoss = mine.steps ? mine.trainLoss / mine.steps : 0;
  EpochStats agg = gatherEpoch(t, mine);
  if (t && t->rank() != 0) return;
  if (cfg.evaluate) evaluateInto(agg, model, data, cfg);
  if (onEpoch) onEpoch(agg);
  result.epochs.push_back(agg);
}

TrainResult trainReplicated(Transport* t, const TrainConfig& cfg, GradSync& sync,
                            const EpochCallback& onEpoch) {
  const int world = t ? t->size() : 1, rank = t ? t->rank() : 0;
  const DataSplit data = loadTrainData(cfg);
  Replica rep(cfg, data);
  sync.attach(rep);
  DistributedSampler sampler(data.train.size(), world, rank, /*shuffle=*/true, cfg.seed);
  const std::size_t batch = static_cast<std::size_t>(cfg.batchSize);
  TrainResult result;
  long totalSteps = 0;
  for (int epoch = 0; epoch < cfg.epochs; ++epoch) {
    sampler.setEpoch(static_cast<std::uint64_t>(epoch));
    const std::vector<std::int64_t> idx = sampler.indices();
    if (t) t->barrier();
    EpochStats s;
    s.epoch = epoch + 1;
    double lossSum = 0;
    const auto t0 = clock_type::now();
    for (std::size_t begin = 0; begin < idx.size(); begin += batch) {
      if (cfg.maxSteps >= 0 && totalSteps >= cfg.maxSteps) break;
      const std::size_t end = std::min(begin + batch, idx.size());
      const auto c0 = clock_type::now();
      sync.beforeBackward();
      lossSum += rep.forwardBackward(data.train, idx, begin, end, 1.0);
      const auto c1 = clock_type::now();
      sync.finish();
      const auto c2 = clock_type::now();
      rep.sgd.step(rep.flatParams->data(), sync.grads());
      s.computeS += std::chrono::duration<double>(c1 - c0).count() + since(c2);
      s.commS += std::chrono::duration<double>(c2 - c1).count();
      ++s.steps;
      s.samples += end - begin;
      ++totalSteps;
      faultPoint(rank);
    }
    s.wallS = since(t0);
    s.trainLoss = lossSum;
    closeEpoch(t, s, rep.model, data, cfg, onEpoch, result);
    if (cfg.maxSteps >= 0 && totalSteps >= cfg.maxSteps) break;
  }
  if (t) t->barrier();
  const float* p = rep.flatParams->data();
  result.params.assign(p, p + rep.flatParams->count());
  return result;
}

}  // namespace tpb
