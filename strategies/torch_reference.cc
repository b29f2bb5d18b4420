// strategies/torch_reference.cc — see torch_reference.h.
//
// How ranks start. A torch_ddp point runs under tpbench's launcher like every strategy: N rank
// processes (`tpbench worker`, or the ranks of torchrun, srun or mpirun), each with its
// CommContext. The strategy's run() starts one Python child per rank,
//   $TPB_PYTHON scripts/torch_ddp.py --mode ddp --rank r --world N ...,
// relays what it reports, and waits for it (strategies/child_process.h). torch_dp is one rank
// whose child drives all N GPUs. The alternatives were worse: a rank that exec'd Python would
// vanish from tpbench (no epoch written as it finishes, no failure turned into one line), and
// torch.multiprocessing spawned from rank 0 would leave failures, the node layout and the GPU
// per rank to torch instead of tpbench's launcher, and could not span nodes. With a child per
// rank nothing above strategies/ knows Python is involved: the launcher's failure handling applies
// unchanged (a child that fails makes its rank exit non-zero with the child's last stderr line; a
// rank that dies takes its child along, PR_SET_PDEATHSIG), worker/train_job.cc records the epochs
// as for every strategy, and the registry-driven tests run it with threads as ranks.
//
// Rendezvous: on one host (tpbench's ranks bound to loopback) the children meet in a FileStore
// in the host's private data directory, and their Gloo pairs listen on lo: nothing listens
// beyond loopback (PyTorch 1.13's TCPStore binds every address and has no secret). Across
// hosts the children are clients of the store the ranks already use, under a key prefix of the
// point's own: tpbench's store on --master_addr, behind the job's secret, through the script's
// own client of its wire (scripts/tpb_store.py, the secret inherited in TPB_JOB_SECRET, never on
// the command line), or under torchrun its agent's TCPStore. No child listens for the
// rendezvous, and no port is picked in advance; Gloo listens on the interface of tpbench's own
// bind address.
//
// Same arithmetic: one rank per host (elected through the store) writes the dataset, the test
// split and the initial weights as IDX files (workload/idx_file.h) into a directory in the
// point's scratch directory; every rank writes its own sample order, the indices tpbench's
// DistributedSampler gives it in each epoch (for torch_dp: the one-process order, N*B rows per
// step). The script trains on exactly those and writes its final weights back as IDX.
#include "strategies/torch_reference.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <nlohmann/json.hpp>

#include "strategies/child_process.h"
#include "comm/net_iface.h"
#include "comm/store.h"
#include "common/build_info.h"
#include "common/error.h"
#include "workload/idx_file.h"
#include "workload/sampler.h"
#include "workload/network.h"
#include "workload/train.h"

namespace tpb {

namespace fs = std::filesystem;
using nlohmann::json;

std::string torchPython() {
  const char* p = std::getenv("TPB_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

std::string torchScript() {
  if (const char* s = std::getenv("TPB_TORCH_SCRIPT"); s && *s) return s;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    // build/tpbench and build/tests/tpb_tests, wherever the tree was copied to.
    candidates.push_back(exe.parent_path() / ".." / "scripts" / "torch_ddp.py");
    candidates.push_back(exe.parent_path() / ".." / ".." / "scripts" / "torch_ddp.py");
  }
  if (*build_info::kSourceDir) candidates.push_back(fs::path(build_info::kSourceDir) / "scripts" / "torch_ddp.py");
  for (const auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec).string();
  return "";
}

namespace {

// What the script says about this machine's torch (--probe), asked once per process.
struct Probe {
  std::string why;  // "" when torch is importable
  std::string torch;
  bool cuda = false, gloo = false, nccl = false;
  int gpus = 0;
};

Probe runProbe() {
  Probe p;
  const std::string python = torchPython(), script = torchScript();
  if (script.empty()) {
    p.why = "scripts/torch_ddp.py was not found beside this build or its sources (set TPB_TORCH_SCRIPT)";
    return p;
  }
  if (::access(python.c_str(), X_OK) != 0) {
    p.why = "no Python at " + python + " (set TPB_PYTHON to one with PyTorch)";
    return p;
  }
  std::string report;
  ChildRun run;
  run.argv = {python, script, "--probe", "--report_fd", "3"};
  run.env = {"PYTHONDONTWRITEBYTECODE=1"};
  run.onReport = [&](const std::string& line) { report = line; };
  run.forwardStderr = false;
  run.limit = std::chrono::seconds(120);
  try {
    const ChildExit e = runChild(run);
    if (!e.ok() || report.empty()) {
      p.why = "PyTorch is not usable from " + python + " (set TPB_PYTHON): " + script + " --probe " + e.describe();
      return p;
    }
    const json j = json::parse(report);
    p.torch = j.at("torch").get<std::string>();
    p.cuda = j.at("cuda").get<bool>();
    p.gpus = j.at("gpus").get<int>();
    p.gloo = j.at("gloo").get<bool>();
    p.nccl = j.at("nccl").get<bool>();
  } catch (const std::exception& e) {
    p.why = "asking " + python + " about PyTorch failed: " + e.what();
  }
  return p;
}

const Probe& probe() {
  static const Probe p = runProbe();  // thread-safe initialisation
  return p;
}

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// The directory the script reads the data and weights from, shared by this host's ranks; its
// writer (the first rank of the host to ask) removes it when every rank is done.
class SharedFiles {
 public:
  SharedFiles(CommContext& ctx, const TrainConfig& cfg) {
    const std::string key = ctx.runId + "/torch_ref/files/" + hostName();
    writer_ = ctx.store.add(key + "/writers", 1) == 1;
    if (!writer_) {
      const std::string v = ctx.store.get(key + "/dir");
      if (v.rfind("!", 0) == 0) TPB_THROW(Error, "the rank writing this host's data failed: " << v.substr(1));
      const std::size_t space = v.find(' ');
      trainSize_ = std::stoull(v.substr(0, space));
      dir_ = v.substr(space + 1);
      return;
    }
    try {
      write(cfg);
    } catch (const std::exception& e) {
      ctx.store.set(key + "/dir", std::string("!") + e.what());
      throw;
    }
    ctx.store.set(key + "/dir", std::to_string(trainSize_) + " " + dir_);
  }
  ~SharedFiles() {
    std::error_code ec;
    if (writer_ && !dir_.empty()) fs::remove_all(dir_, ec);
  }
  SharedFiles(const SharedFiles&) = delete;
  SharedFiles& operator=(const SharedFiles&) = delete;

  const std::string& dir() const { return dir_; }
  std::size_t trainSize() const { return trainSize_; }

 private:
  void write(const TrainConfig& cfg) {
    std::string base = cfg.scratchDir;
    if (base.empty()) {
      const char* t = std::getenv("TMPDIR");
      base = t && *t ? t : "/tmp";
    }
    std::string tmpl = base + "/torch_ref.XXXXXX";
    if (!::mkdtemp(tmpl.data())) TPB_THROW(Error, "mkdtemp(" << tmpl << "): " << std::strerror(errno));
    dir_ = tmpl;
    {
      // The workload's data as every tpbench rank loads it; IDX has no int64, so tokens and a
      // network's labels go as int32 (the mlp's labels stay uint8, as MNIST's).
      const DataSplit data = loadTrainData(cfg, torch::Device(torch::kCPU));
      trainSize_ = data.train.size();
      Dataset test = data.test;
      if (cfg.testSize > 0 && cfg.testSize < test.size()) {
        test.images = test.images.narrow(0, 0, static_cast<int64_t>(cfg.testSize));
        test.labels = test.labels.narrow(0, 0, static_cast<int64_t>(cfg.testSize));
      }
      const auto labelType = cfg.trainsMlp() ? torch::kUInt8 : torch::kInt32;
      const auto inputs = [](const torch::Tensor& t) {
        return t.scalar_type() == torch::kInt64 ? t.to(torch::kInt32) : t.contiguous();
      };
      writeIdx(dir_ + "/train-images.idx", inputs(data.train.images));
      writeIdx(dir_ + "/train-labels.idx", data.train.labels.to(labelType));
      writeIdx(dir_ + "/test-images.idx", inputs(test.images));
      writeIdx(dir_ + "/test-labels.idx", test.labels.to(labelType));
    }
    Trainable model = makeTrainable(cfg);
    std::vector<torch::Tensor> flat;
    for (const auto& p : model->orderedParameters()) flat.push_back(p.detach().reshape({-1}));
    writeIdx(dir_ + "/weights.idx", torch::cat(flat));
  }

  bool writer_ = false;
  std::string dir_;
  std::size_t trainSize_ = 0;
};

// This rank's sample order for every epoch, [epochs, samples] (what trainReplicated's sampler
// gives it; world 1 for DataParallel's one process).
torch::Tensor sampleOrder(const TrainConfig& cfg, std::size_t trainSize, int world, int rank) {
  DistributedSampler sampler(trainSize, world, rank, /*shuffle=*/true, cfg.seed);
  const auto per = static_cast<int64_t>(sampler.numSamples());
  torch::Tensor order = torch::empty({cfg.epochs, per}, torch::kInt32);
  for (int e = 0; e < cfg.epochs; ++e) {
    sampler.setEpoch(static_cast<std::uint64_t>(e));
    const auto idx = sampler.indices();
    std::int32_t* row = order[e].data_ptr<std::int32_t>();
    for (int64_t i = 0; i < per; ++i) row[i] = static_cast<std::int32_t>(idx[static_cast<std::size_t>(i)]);
  }
  return order;
}

double numberOr(const json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<double>();
}

EpochStats epochOf(const json& j) {
  EpochStats s;
  s.epoch = j.at("epoch").get<int>();
  s.wallS = j.at("wall_s").get<double>();
  s.computeS = numberOr(j, "compute_s", NAN);  // null where the script cannot split the step
  s.commS = numberOr(j, "comm_s", NAN);
  s.trainLoss = j.at("train_loss").get<double>();
  s.testAccuracy = numberOr(j, "test_accuracy", -1);
  s.evalS = numberOr(j, "eval_s", 0);
  s.steps = j.at("steps").get<long>();
  s.samples = j.at("samples").get<std::size_t>();
  s.samplesPerS = s.wallS > 0 ? static_cast<double>(s.samples) / s.wallS : 0;
  return s;
}

// A network's shapes for scripts/torch_ddp.py's make_network (--network): what it needs to build
// the same modules; "" for the mlp (--hidden says it all).
std::string networkJson(const TrainConfig& cfg) {
  if (cfg.trainsMlp()) return "";
  const NetworkSpec s = cfg.network();
  if (s.kind == NetworkKind::Resnet) {
    const ResnetSpec& r = s.resnet;
    return json{{"kind", "resnet"},           {"in_channels", r.inChannels}, {"width", r.width},
                {"imagenet_stem", r.imagenetStem}, {"stage_blocks", r.stageBlocks}, {"bottleneck", r.bottleneck},
                {"classes", r.classes},       {"norm", r.norm == ConvNorm::Batch ? "batch" : "group"}}
        .dump();
  }
  const TransformerSpec& t = s.transformer;
  return json{{"kind", s.kind == NetworkKind::Gpt ? "gpt" : "bert"},
              {"layers", t.layers},
              {"hidden", t.hidden},
              {"heads", t.heads},
              {"ffn", t.ffnWidth()},
              {"vocab", t.vocab},
              {"positions", t.positions},
              {"token_types", t.tokenTypes},
              {"classes", t.classes}}
      .dump();
}

std::string str(double x) {
  std::ostringstream o;
  o.precision(17);
  o << x;
  return o.str();
}

}  // namespace

std::string torchUnsupportedConfig(const TrainConfig& cfg) {
  if (!cfg.saveDir.empty() || !cfg.resumeFrom.empty())
    return std::string(cfg.saveDir.empty() ? "--resume_from" : "--save_dir") +
           ": the PyTorch references train in scripts/torch_ddp.py, which writes and reads no tpbench "
           "checkpoints";
  return {};
}

std::string torchUnsupported(TorchWrapper wrapper, Device device, int n) {
  if (wrapper == TorchWrapper::DataParallel && device == Device::Cpu)
    return "torch.nn.DataParallel replicates over CUDA devices only (on the CPU it runs the module unreplicated); "
           "torch_ddp is the CPU reference";
  const Probe& p = probe();
  if (!p.why.empty()) return p.why;
  const std::string torch = "PyTorch " + p.torch + " (" + torchPython() + ")";
  if (device == Device::Cpu) return p.gloo ? "" : torch + " has no Gloo backend";
  if (!p.cuda) return torch + " sees no CUDA device";
  if (wrapper == TorchWrapper::Ddp && !p.nccl) return torch + " has no NCCL backend";
  if (wrapper == TorchWrapper::DataParallel && p.gpus < n)
    return "needs " + std::to_string(n) + " GPUs in one process, " + torch + " sees " + std::to_string(p.gpus);
  return "";
}

namespace {

// Ranks bound to loopback are all on this host: tpbench's own transport reaches no other.
bool onOneHost(const CommContext& ctx) {
  return ctx.host.rfind("127.", 0) == 0 || ctx.host == "::1" || ctx.host == "localhost";
}

// The interface the script's Gloo pairs listen on (GLOO_SOCKET_IFNAME; left to torch, which
// binds what the host name resolves to, when none holds this rank's address): the one tpbench's
// own ranks bind to, so that on one host nothing listens beyond loopback.
std::string glooInterface(const CommContext& ctx) {
  if (onOneHost(ctx)) return "lo";
  try {
    return routeTo(ctx.host).iface;
  } catch (const UsageError&) {
    return "";
  }
}

}  // namespace

TrainResult trainWithTorch(TorchWrapper wrapper, CommContext& ctx, const TrainConfig& cfg,
                           const EpochCallback& onEpoch) {
  const bool ddp = wrapper == TorchWrapper::Ddp;
  const std::string name = ddp ? "torch_ddp" : "torch_dp";
  TPB_CHECK(ddp || ctx.size() == 1, name << " runs in one process");
  const std::string script = torchScript();
  if (script.empty()) TPB_THROW(Error, name << ": scripts/torch_ddp.py was not found (set TPB_TORCH_SCRIPT)");
  const int rank = ctx.rank(), world = ctx.size();
  // One host: the ranks meet in a file of this host's private directory, as PyTorch 1.13's
  // TCPStore would listen on every address of the host, with no secret.
  const bool fileStore = onOneHost(ctx);
  if (ddp && !fileStore && ctx.store.host().empty())
    TPB_THROW(Error, name << " across hosts needs a store server the children can reach (this one is in-process)");
  SharedFiles files(ctx, cfg);
  const std::string order = files.dir() + "/order-r" + std::to_string(rank) + ".idx";
  const std::string paramsOut = files.dir() + "/params-r" + std::to_string(rank) + ".idx";
  writeIdx(order, sampleOrder(cfg, files.trainSize(), world, rank));

  const std::string hidden = hiddenText(cfg.model().hidden);
  const bool gpu = cfg.device == Device::Cuda;
  ChildRun run;
  run.argv = {torchPython(), script, "--mode", ddp ? "ddp" : "dp", "--report_fd", "3",
              "--data", files.dir(), "--order", order, "--params_out", paramsOut,
              "--hidden", hidden, "--network", networkJson(cfg), "--batch_size", std::to_string(cfg.batchSize),
              "--epochs", std::to_string(cfg.epochs), "--max_steps", std::to_string(cfg.maxSteps),
              "--lr", str(cfg.lr), "--momentum", str(cfg.momentum), "--bucket_mb", str(cfg.bucketMb),
              "--evaluate", cfg.evaluate ? "1" : "0",
              "--eval_batch", std::to_string(evalBatchSize(networkCost(cfg.network()).activationBytes, cfg.batchSize)),
              "--device", gpu ? "cuda" : "cpu",
              "--device_index", std::to_string(cfg.deviceIndex), "--n_devices", std::to_string(ddp ? 1 : cfg.nGpus),
              "--rank", std::to_string(rank), "--world", std::to_string(world),
              "--store_addr", ctx.store.host(), "--store_port", std::to_string(ctx.store.port()),
              "--store_prefix", ctx.runId + "/torch_ref/c10d/",
              "--store_protocol", ctx.store.ownProtocol() ? "tpbench" : "c10d",
              "--store_file", fileStore ? files.dir() + "/rendezvous" : "",
              "--timeout_s", std::to_string(std::chrono::duration<double>(ctx.timeout()).count())};
  // One thread per rank, as every tpbench rank (the launcher pins OpenBLAS the same way); no
  // __pycache__ written into the source tree; stderr lines as they come; a fatal signal prints
  // the Python stack of every thread (faulthandler) before the process dies of it.
  run.env = {"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "PYTHONFAULTHANDLER=1", "OMP_NUM_THREADS=1",
             "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1"};
  if (const std::string iface = glooInterface(ctx); !iface.empty()) run.env.push_back("GLOO_SOCKET_IFNAME=" + iface);
  TrainResult result;
  bool done = false;
  run.onReport = [&](const std::string& line) {
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception&) {
      TPB_THROW(Error, name << ": the script reported '" << line << "', not JSON");
    }
    const std::string event = j.value("event", "");
    if (event == "epoch") {
      const EpochStats s = epochOf(j);
      if (onEpoch) onEpoch(s);
      result.epochs.push_back(s);
    } else if (event == "done") {
      done = true;
    }
  };
  const ChildExit exit = runChild(run);
  if (!exit.ok() || !done)
    TPB_THROW(Error, name << ": " << script << " (rank " << rank << ") "
                          << (exit.ok() ? "ended without reporting done" : exit.describe()));
  const torch::Tensor params = readIdx(paramsOut);
  TPB_CHECK(params.scalar_type() == torch::kFloat32 && params.dim() == 1,
            paramsOut << ": expected a float32 vector of weights");
  result.params.assign(params.data_ptr<float>(), params.data_ptr<float>() + params.numel());
  // The files go with the writer's SharedFiles: not before every rank has read its weights.
  ctx.transport.barrier();
  return result;
}

}  // namespace tpb
