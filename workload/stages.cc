#include "workload/stages.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <sstream>

#include "comm/cuda/gpu_trace.h"
#include "comm/cuda/stream_clock.h"
#include "common/error.h"
#include "common/trace.h"
#include "workload/network.h"
#include "workload/sampler.h"
#include "workload/stage_model.h"

namespace tpb {

namespace {

using clock_type = std::chrono::steady_clock;

std::string hiddenSuggestion(const std::vector<int>& hidden, int stages) {
  const int width = hidden.empty() ? 512 : hidden.back();
  std::string s;
  for (int i = 0; i < std::max(stages - 1, 1); ++i) s += (i ? "," : "") + std::to_string(width);
  return s;
}

// Contiguous partition of `cost` into `parts` non-empty ranges minimising the largest range's
// sum (ties: the earliest boundaries), by dynamic programming over (units, stages).
std::vector<int> balancedBounds(const std::vector<double>& cost, int parts) {
  const int n = static_cast<int>(cost.size());
  std::vector<double> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + cost[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: smallest max over the first i units cut into k stages; from[k][i]: last cut.
  std::vector<std::vector<double>> best(parts + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> from(parts + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= parts; ++k)
    for (int i = k; i <= n; ++i)
      for (int j = k - 1; j < i; ++j) {
        const double v = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (v < best[k][i]) {
          best[k][i] = v;
          from[k][i] = j;
        }
      }
  std::vector<int> bounds(parts + 1, n);
  for (int k = parts, i = n; k > 0; --k) {
    i = from[k][i];
    bounds[k - 1] = i;
  }
  return bounds;
}

// What one micro-batch keeps between its forward and its backward.
struct Micro {
  torch::Tensor input, output, loss, gradOut;
  double activationBytes = 0;
};

}  // namespace

namespace {

// What stages are cut from: each unit's cost (the MLP's layers by parameters, as its FLOPs go; a
// network's blocks by forward FLOPs, since a GPT's embeddings hold a third of its parameters
// and multiply nothing) and how refusals name the units.
struct Units {
  std::vector<double> cost;
  std::string noun, model, deeper;
};

std::string counted(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

Units unitsOf(const NetworkSpec& spec, int stages) {
  Units u;
  const bool mlp = spec.kind == NetworkKind::Mlp;
  for (const NetworkCost& c : networkBlockCosts(spec)) u.cost.push_back(mlp ? static_cast<double>(c.parameters) : c.forwardFlops);
  const std::size_t inner = u.cost.size() - 2;
  if (mlp) {
    u.noun = "layer";
    u.model = "the MLP";
    u.deeper = "a deeper --hidden, e.g. " + hiddenSuggestion(spec.mlp.hidden, stages);
  } else if (spec.kind == NetworkKind::Resnet) {
    u.noun = "block";
    u.model = spec.name + " (stem, " + counted(inner, "residual block") + ", head)";
    u.deeper = "a larger depth= in --workload";
  } else {
    u.noun = "block";
    u.model = spec.name + " (embeddings, " + counted(inner, "layer") + ", head)";
    u.deeper = "layers=" + std::to_string(std::max(stages - 2, 1)) + " in --workload";
  }
  return u;
}

// S-1 ascending unit indices in 1..units-1 from `split`, or empty with `why` set.
std::vector<int> parseSplit(const Units& u, int stages, const std::string& split, const std::string& flag,
                            std::string& why) {
  const int units = static_cast<int>(u.cost.size());
  std::vector<int> bounds{0};
  std::ostringstream os;
  for (std::size_t start = 0;;) {
    const std::size_t comma = split.find(',', start);
    const std::string item = split.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    long v = -1;
    if (!item.empty() && item.size() < 8 && item.find_first_not_of("0123456789") == std::string::npos)
      v = std::stol(item);
    if (v <= bounds.back() || v >= units) {
      os << flag << ": '" << split << "': each entry is the first " << u.noun << " of the next stage, ascending in 1.."
         << units - 1 << " (" << u.model << " has " << units << " " << u.noun << "s, numbered from 0)";
      why = os.str();
      return {};
    }
    bounds.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int>(bounds.size()) != stages) {
    os << flag << ": '" << split << "' makes " << bounds.size() << " stages, --n_gpus asks for " << stages
       << " (give " << stages - 1 << " " << u.noun << " indices)";
    why = os.str();
    return {};
  }
  bounds.push_back(units);
  return bounds;
}

// The stage bounds, or empty with `why` set when they cannot be made.
std::vector<int> planStages(const NetworkSpec& spec, int stages, const std::string& split, const std::string& flag,
                            std::string& why) {
  const Units u = unitsOf(spec, stages);
  const int units = static_cast<int>(u.cost.size());
  if (stages > units) {
    std::ostringstream os;
    os << "--n_gpus: " << stages << " stages need at least " << stages << " " << u.noun << "s, " << u.model << " has "
       << units << " (try " << u.deeper << ")";
    why = os.str();
    return {};
  }
  if (split.empty()) return balancedBounds(u.cost, stages);
  return parseSplit(u, stages, split, flag, why);
}

}  // namespace

std::string stagesProblem(const NetworkSpec& spec, int stages, const std::string& split, const std::string& flag) {
  std::string why;
  planStages(spec, stages, split, flag, why);
  return why;
}

std::vector<int> stageBounds(const NetworkSpec& spec, int stages, const std::string& split, const std::string& flag) {
  std::string why;
  std::vector<int> bounds = planStages(spec, stages, split, flag, why);
  if (!why.empty()) TPB_THROW(UsageError, why);
  return bounds;
}

std::string stagesConfigProblem(const TrainConfig& cfg, int micro) {
  const NetworkSpec spec = cfg.network();
  if (micro > 1 && spec.kind == NetworkKind::Resnet && spec.resnet.norm == ConvNorm::Batch) {
    std::ostringstream os;
    os << "--microbatches " << micro << ": with norm=batch in --workload " << cfg.workload
       << " each micro-batch would be normalised by its own statistics, not the batch's as single does; give "
          "--microbatches 1 or norm=group";
    return os.str();
  }
  return stagesProblem(spec, cfg.nGpus, cfg.split);
}

const std::vector<PipelineSchedule>& pipelineSchedules() {
  static const std::vector<PipelineSchedule> schedules = {
      {"gpipe", "every micro-batch's forward, then every backward (GPipe)",
       [](int, int, int micro) {
         std::vector<PipeOp> ops;
         for (int m = 0; m < micro; ++m) ops.push_back({true, m, true});
         for (int m = micro - 1; m >= 0; --m) ops.push_back({false, m, true});
         return ops;
       }},
      {"1f1b", "S-s-1 warm-up forwards, then one forward and one backward in turn (PipeDream-Flush)",
       [](int stage, int stages, int micro) {
         std::vector<PipeOp> ops;
         const int warm = std::min(stages - stage - 1, micro);
         int f = 0, b = 0;
         for (; f < warm; ++f) ops.push_back({true, f, true});
         while (f < micro) {
           ops.push_back({true, f++, false});
           ops.push_back({false, b++, false});
         }
         while (b < micro) ops.push_back({false, b++, true});
         return ops;
       }},
  };
  return schedules;
}

const PipelineSchedule& findSchedule(const std::string& flag, const std::string& name) {
  std::string names;
  for (const auto& s : pipelineSchedules()) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  TPB_THROW(UsageError, flag << ": unknown schedule '" << name << "' (choose from " << names << ")");
}

double gpipeBubble(int stages, int micro) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro + stages - 1);
}

namespace {

// Rank 0's whole model takes every stage's running statistics (BatchNorm's), for evaluation.
void gatherBuffers(Transport& t, StageModel& stage, TrainableImpl* whole, const std::vector<int>& bounds) {
  torch::NoGradGuard noGrad;
  const std::vector<torch::Tensor> mine = stage.buffers();
  if (t.rank() != 0) {
    for (const auto& b : mine) t.send(0, b.data_ptr(), b.nbytes());
    return;
  }
  std::size_t i = 0;
  for (int r = 0; r < t.size(); ++r)
    for (int u = bounds[r]; u < bounds[r + 1]; ++u)
      for (auto b : whole->unit(u).buffers()) {
        if (r == 0) b.copy_(mine.at(i++));
        else t.recv(r, b.data_ptr(), b.nbytes());
      }
}

}  // namespace

TrainResult trainStages(Transport& t, const TrainConfig& cfg, int micro, const PipelineSchedule& schedule,
                        const EpochCallback& onEpoch) {
  const int stages = t.size(), s = t.rank();
  const bool first = s == 0, last = s == stages - 1;
  TPB_CHECK(micro >= 1, "micro-batches must be at least 1, got " << micro);
  const std::vector<int> bounds = stageBounds(cfg.network(), stages, cfg.split);
  const torch::Device device = torchDevice(cfg);
  const bool gpu = cfg.device == Device::Cuda;
  const DataSplit data = loadTrainData(cfg, device);
  StageModel stage(cfg, bounds, s, data.train.images.narrow(0, 0, 1).to(torch::kCPU), device);
  // Activations a micro-batch holds for backward per row: each unit's input and the stage's output.
  const double perRowBytes = stage.boundaryBytesPerRow();
  // Where each stage's parameters sit in the whole model's flat order (its units are contiguous).
  const std::vector<std::size_t>& offsets = stage.stageOffsets();
  const std::size_t total = offsets.back();
  // Rank 0 evaluates the whole model; it gathers the stages' weights into it after every epoch.
  Trainable whole;
  std::unique_ptr<FlatParams> wholeFlat;
  if (first) {
    whole = makeTrainable(cfg);
    if (!device.is_cpu()) whole->to(device);
    wholeFlat = std::make_unique<FlatParams>(whole->orderedParameters());
  }
  auto gatherWeights = [&] {
    gatherBuffers(t, stage, whole.get(), bounds);
    if (!first) {
      t.send(0, stage.flat->data(), stage.ownCount() * sizeof(float));
      return;
    }
    torch::NoGradGuard noGrad;
    wholeFlat->flat().narrow(0, 0, static_cast<std::int64_t>(offsets[1])).copy_(stage.ownWeights());
    for (int r = 1; r < stages; ++r)
      t.recv(r, wholeFlat->data() + offsets[r], (offsets[r + 1] - offsets[r]) * sizeof(float));
  };

  DistributedSampler sampler(data.train.size(), 1, 0, /*shuffle=*/true, cfg.seed);
  const auto floatOpts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const std::vector<PipeOp> ops = schedule.order(s, stages, micro);
  auto syncDevice = [&] {
    if (gpu) synchronize(cfg);
  };
  // On a GPU the stage's compute is read on the default stream's clock at the epoch's end
  // (StreamClock), so the host queues a micro-batch's kernels and moves on to its send without
  // waiting for them; its idle time is the rest of its wall time. Under --trace the host waits
  // after each computation too, so that its spans line up with the GPU's.
  StreamClock clock(gpu ? gpuOf(device) : -1);
  auto timedOnGpu = [&](const char* name, trace::Category cat, const auto& work, const char* argKey = nullptr,
                        std::int64_t arg = 0) {
    const std::size_t from = clock.mark();
    {
      trace::GpuSpan onGpu(name, cat, trace::Track::Gpu, gpuOf(device), nullptr, argKey, arg);
      work();
    }
    clock.closeSpan(from);
    if (trace::enabled()) syncDevice();
  };
  std::vector<torch::Tensor> sendBufs;  // alive until their sends complete
  std::vector<Micro> micros(static_cast<std::size_t>(micro));
  double held = 0, peakHeld = 0;

  EpochLoop loop;
  loop.transport = &t;
  loop.rank = s;
  loop.rowsPerStep = static_cast<std::size_t>(cfg.batchSize);
  loop.device = device;
  loop.countsSamples = last;  // one batch per step, whichever stage counts it; the loss is the last's
  loop.synchronize = syncDevice;
  loop.gpuCompute = &clock;
  loop.beforeClose = [&](EpochStats& e) {
    // Stage figures to rank 0: wall, compute, activation peak.
    double mine[3] = {e.wallS, e.computeS, peakHeld};
    peakHeld = 0;
    if (!first) {
      t.sendHost(0, mine, sizeof mine);
    } else {
      double idleShare = 0;
      e.activationBytes.clear();
      for (int r = 0; r < stages; ++r) {
        double v[3] = {mine[0], mine[1], mine[2]};
        if (r > 0) t.recvHost(r, v, sizeof v);
        idleShare += v[0] > 0 ? std::max(0.0, v[0] - v[1]) / v[0] : 0;
        e.activationBytes.push_back(v[2]);
      }
      e.bubbleFraction = idleShare / stages;
      e.bubbleFormula = gpipeBubble(stages, micro);
    }
    if (cfg.evaluate) gatherWeights();
  };

  // Checkpoints: the stages' weights and momentum gathered on rank 0 in the whole model's order;
  // on resume each stage takes its slice.
  auto hostSlice = [](const torch::Tensor& flat) {
    torch::Tensor c = flat.to(torch::kCPU).contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  };
  auto gatherHost = [&](const torch::Tensor& flat) {
    std::vector<float> mine = hostSlice(flat), all;
    if (!first) {
      t.sendHost(0, mine.data(), mine.size() * sizeof(float));
      return all;
    }
    all.resize(total);
    std::copy(mine.begin(), mine.end(), all.begin());
    for (int r = 1; r < stages; ++r)
      t.recvHost(r, all.data() + offsets[r], (offsets[r + 1] - offsets[r]) * sizeof(float));
    return all;
  };
  // Buffers (BatchNorm's running statistics) are gathered into rank 0's whole model, as for
  // evaluation, and written in its buffers() order; on resume each stage takes its units' run
  // of them, which starts after the buffers of the stages before it (counted along the chain).
  auto buffersBefore = [&] {
    std::uint64_t before = 0;
    if (!first) t.recvHost(s - 1, &before, sizeof before);
    const std::uint64_t upTo = before + stage.buffers().size();
    if (!last) t.sendHost(s + 1, &upTo, sizeof upTo);
    return static_cast<std::size_t>(before);
  };
  loop.saveState = [&] {
    ModelState st;
    st.weights = gatherHost(stage.ownWeights());
    if (stage.sgd->velocity().defined()) st.velocity = gatherHost(stage.ownVelocity());
    gatherBuffers(t, stage, whole.get(), bounds);
    if (first)
      for (const torch::Tensor& b : whole->buffers()) st.buffers.push_back(b.to(torch::kCPU).clone());
    return st;
  };
  loop.loadState = [&](const ModelState& st) {
    stage.loadFromWhole(stage.flat->flat(), st.weights);
    if (stage.sgd->velocity().defined()) stage.loadFromWhole(stage.sgd->velocity(), st.velocity);
    const std::size_t from = buffersBefore();
    std::vector<torch::Tensor> mine = stage.buffers();
    TPB_CHECK(from + mine.size() <= st.buffers.size(),
              "checkpoint: " << st.buffers.size() << " buffers, stage " << s << " needs " << from + mine.size());
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i].copy_(st.buffers[from + i]);
  };

  // The units' work for runStageOps, on the step it is running (`now`).
  Step* now = nullptr;
  auto rowsOf = [&](int m) {
    const std::size_t rows = now->end - now->begin;
    return std::make_pair(now->begin + rows * m / micro, now->begin + rows * (m + 1) / micro);
  };
  auto bufferOf = [](const torch::Tensor& x) {
    return StageBuffer{x.data_ptr<float>(), static_cast<std::size_t>(x.numel()) * sizeof(float)};
  };
  StageWork work;
  work.stage = s;
  work.stages = stages;
  work.receiveInto = [&](const PipeOp& op) {
    const auto [b, e] = rowsOf(op.micro);
    Micro& mb = micros[op.micro];
    torch::Tensor& into = op.forward ? mb.input : mb.gradOut;
    const auto rows = static_cast<std::int64_t>(e - b);
    into = torch::empty(op.forward ? stage.inputShape(rows) : stage.outputShape(rows), floatOpts);
    return bufferOf(into);
  };
  auto forward = [&](const PipeOp& op) {
    const auto [b, e] = rowsOf(op.micro);
    const std::size_t rows = now->end - now->begin, n = e - b;
    Micro& mb = micros[op.micro];
    if (first) mb.input = gatherBatch(data.train, now->indices, b, e).images;
    else mb.input.requires_grad_(true);
    timedOnGpu("forward", trace::Category::Compute, [&] {
      mb.output = stage.forward(mb.input);
      if (last) {
        const torch::Tensor labels =
            now->indices.slice(0, static_cast<std::int64_t>(b), static_cast<std::int64_t>(e));
        torch::Tensor loss = stage.loss(mb.output, data.train.labels.index_select(0, labels));
        // Micro-batch means weighted by their share of the batch add up to the batch mean.
        if (n != rows) loss = loss * (static_cast<double>(n) / static_cast<double>(rows));
        now->lossSum.add_(loss.detach());
        mb.loss = loss;
      }
    }, "micro", op.micro);
    mb.activationBytes = perRowBytes * static_cast<double>(n);
    held += mb.activationBytes;
    peakHeld = std::max(peakHeld, held);
    if (last) return StageBuffer{};
    sendBufs.push_back(mb.output.detach());
    return bufferOf(sendBufs.back());
  };
  auto backward = [&](const PipeOp& op) {
    Micro& mb = micros[op.micro];
    timedOnGpu("backward", trace::Category::Compute, [&] {
      if (last) mb.loss.backward();
      else mb.output.backward(mb.gradOut);
    }, "micro", op.micro);
    held -= mb.activationBytes;
    StageBuffer out;
    if (!first) {
      sendBufs.push_back(mb.input.grad());
      out = bufferOf(sendBufs.back());
    }
    mb = Micro{};
    return out;
  };
  work.compute = [&](const PipeOp& op) { return op.forward ? forward(op) : backward(op); };

  auto step = [&](Step& st) {
    now = &st;
    stage.grads->zero();
    std::vector<PipeOp> present;  // an epoch's last batch may have fewer rows than micro-batches
    for (const PipeOp& op : ops) {
      const auto [b, e] = rowsOf(op.micro);
      if (b != e) present.push_back(op);
    }
    const StageTimes times = runStageOps(t, present, work);
    sendBufs.clear();
    if (stage.sharesWeights()) {
      const auto c = clock_type::now();
      stage.sumTiedGradients(t);
      st.stats.commS += trace::close("tied gradients", trace::Category::Comm, c);
    }
    const auto c0 = clock_type::now();
    timedOnGpu("optimizer", trace::Category::Optimizer, [&] { stage.step(); });
    st.stats.computeS += times.computeS + trace::close("optimizer", trace::Category::Optimizer, c0);
    st.stats.commS += times.commS;
  };

  TrainResult result = runEpochs(cfg, loop, sampler, data, whole.get(), step, onEpoch);
  // Every rank returns the whole model: the stages' weights to rank 0, then from it to all.
  if (!first) {
    gatherWeights();
    result.params.resize(total);
    t.recvHost(0, result.params.data(), total * sizeof(float));
  } else {
    gatherWeights();
    torch::Tensor cpu = wholeFlat->flat().to(torch::kCPU).contiguous();
    result.params.assign(cpu.data_ptr<float>(), cpu.data_ptr<float>() + total);
    for (int r = 1; r < stages; ++r) t.sendHost(r, result.params.data(), total * sizeof(float));
  }
  return result;
}

}  // namespace tpb
