#include "harness/input_checks.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <type_traits>

#include "comm/mpi/thread_level.h"
#include "comm/net_iface.h"
#include "comm/shm/shm_transport.h"
#include "comm/store.h"
#include "common/decimal.h"
#include "common/error.h"
#include "common/fault.h"
#include "common/text_escape.h"
#include "common/out_file.h"
#include "common/slow_ranks.h"
#include "core/registry.h"
#include "harness/collective_bench.h"
#include "harness/device_choice.h"
#include "harness/train_runner.h"
#include "record/results.h"
#include "algorithms/allreduce_ring.h"
#include "workload/dataset_check.h"
#include "workload/network_spec.h"
#include "workload/checkpoint.h"
#include "workload/stages.h"

namespace tpb {

// ---- numbers ------------------------------------------------------------------------------------

void checkInt(const std::string& flag, long long v, long long lo, long long hi) {
  if (v >= lo && v <= hi) return;
  if (hi == std::numeric_limits<long long>::max())
    TPB_THROW(UsageError, flag << ": must be at least " << lo << ", got " << v);
  TPB_THROW(UsageError, flag << ": must be in " << lo << ".." << hi << ", got " << v);
}

void checkReal(const std::string& flag, double v, const RealInterval& in) {
  const bool above = in.loOpen ? v > in.lo : v >= in.lo;
  const bool below = in.hiOpen ? v < in.hi : v <= in.hi;
  if (std::isfinite(v) && above && below) return;
  std::ostringstream range;
  if (in.hi == kInf) {
    range << (in.loOpen ? "above " : "at least ") << in.lo;
  } else {
    range << "in " << (in.loOpen ? "(" : "[") << in.lo << ", " << in.hi << (in.hiOpen ? ")" : "]");
  }
  TPB_THROW(UsageError, flag << ": must be a finite number " << range.str() << ", got " << v);
}

std::string unsignedTextProblem(const std::string& text) {
  std::string why;
  return parseDecimalInteger<unsigned long long>(text, why) ? "" : why;
}

std::string integerTextProblem(const std::string& text) {
  std::string why;
  return parseDecimalInteger<long long>(text, why) ? "" : why;
}

std::string realTextProblem(const std::string& text) {
  std::string why;
  return parseDecimalReal(text, why) ? "" : why;
}

void checkMaxSteps(const std::string& flag, long long v) {
  if (v == -1 || v >= 1) return;
  TPB_THROW(UsageError, flag << ": must be -1 (no limit) or at least 1, got " << v);
}

// ---- text and lists -----------------------------------------------------------------------------

void checkNotEmpty(const std::string& flag, const std::string& value) {
  if (value.empty()) TPB_THROW(UsageError, flag << ": must not be empty (leave the flag out instead)");
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// ---- sweep size ---------------------------------------------------------------------------------

std::size_t checkPointCount(const std::string& what, const std::vector<PointFactor>& factors, std::size_t limit) {
  std::size_t total = 1;
  for (const auto& f : factors)
    if (__builtin_mul_overflow(total, f.count, &total)) total = std::numeric_limits<std::size_t>::max();
  if (total <= limit) return total;
  std::ostringstream product;
  for (std::size_t i = 0; i < factors.size(); ++i) product << (i ? " x " : "") << factors[i].count << " " << factors[i].flag;
  TPB_THROW(UsageError, what << ": " << product.str() << " = " << total << " points, more than the " << limit
                             << " one command may run (split it, or give fewer values)");
}

// ---- sizes and memory ---------------------------------------------------------------------------

void checkWholeElements(const std::string& flag, const std::vector<std::size_t>& bytes, std::size_t elementSize,
                        const std::string& elementName) {
  for (std::size_t b : bytes)
    if (b % elementSize != 0)
      TPB_THROW(UsageError, flag << ": " << b << " bytes is not a whole number of " << elementName
                                 << " elements (use a multiple of " << elementSize << ")");
}

void checkSampleCount(const std::string& flag, std::size_t asked, std::size_t have, const std::string& what) {
  if (asked > have) TPB_THROW(UsageError, flag << " " << asked << " exceeds the " << have << " " << what);
}

std::optional<std::uint64_t> memAvailableBytes(const std::string& meminfo) {
  std::istringstream in(meminfo);
  for (std::string line; std::getline(in, line);) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kb) == 1) return std::uint64_t{kb} * 1024;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> memAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::stringstream text;
  text << in.rdbuf();
  return memAvailableBytes(text.str());
}

double mlpParameters(const std::vector<int>& hidden) {
  double params = 0, in = 784;
  for (double width : hidden) {
    params += in * width + width;
    in = width;
  }
  return params + in * 10 + 10;
}

std::string humanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

void checkFitsInMemory(const std::string& flag, const std::string& what, double need,
                       std::optional<std::uint64_t> available, const std::string& hint) {
  if (!available || need <= static_cast<double>(*available)) return;
  TPB_THROW(UsageError, flag << ": " << what << " need at least " << humanBytes(need) << " but this host has "
                             << humanBytes(static_cast<double>(*available))
                             << " available (MemAvailable in /proc/meminfo)" << (hint.empty() ? "" : "; ") << hint);
}

std::string memoryHint(const NetworkSpec& spec, int batch, int replicas, double stateBytes, double activationBytes) {
  std::ostringstream h;
  if (activationBytes >= stateBytes) {
    h << "a smaller --batch_size (now " << batch << ")";
    const bool preset = spec.name != "mlp" && spec.name != "resnet" && spec.name != "gpt" && spec.name != "bert";
    if (spec.kind == NetworkKind::Gpt || spec.kind == NetworkKind::Bert)
      h << " or a shorter sequence (--workload " << (preset ? spec.name + ":seq=" : spec.name + ":...:seq=")
        << std::max(1, spec.transformer.seqLen / 4) << ")";
    else if (spec.kind == NetworkKind::Resnet && !spec.mnistImages)
      h << " or smaller images (--workload " << spec.name << (preset ? ":res=" : ":...:res=") << "64)";
  } else {
    h << "a smaller model (--" << (spec.kind == NetworkKind::Mlp ? "hidden" : "workload") << ")";
  }
  if (replicas > 1) h << ", or fewer replicas (--n_gpus, now " << replicas << ")";
  h << " brings it down";
  return h.str();
}

// ---- host ---------------------------------------------------------------------------------------

namespace {

// errno of binding a fresh socket of `family` to the wildcard address at `port`; 0 when it binds
// (or the family is not there). SO_REUSEADDR as the store sets it: a port in TIME_WAIT is free.
int bindError(int family, std::uint16_t port) {
  const int s = socket(family, SOCK_STREAM, 0);
  if (s < 0) return 0;
  const int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (family == AF_INET6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(port);
    rc = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    rc = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  const int err = rc == 0 ? 0 : errno;
  close(s);
  return err == EAFNOSUPPORT || err == EADDRNOTAVAIL ? 0 : err;
}

}  // namespace

void checkPortFree(const std::string& flag, std::uint16_t port) {
  for (int family : {AF_INET, AF_INET6}) {
    if (const int err = bindError(family, port); err != 0)
      TPB_THROW(UsageError, flag << " " << port << ": this node cannot bind it ("
                                 << (err == EADDRINUSE ? "already in use on this host" : std::strerror(err))
                                 << "); pick another");
  }
}

void checkFaultEnv() {
  if (const std::string why = checkFaultSpec(); !why.empty())
    TPB_THROW(UsageError, "TPB_FAULT: '" << printableLine(std::getenv("TPB_FAULT")).substr(0, 64) << "': " << why);
}

void checkTempDir(const char* tmpdir) {
  if (tmpdir && !*tmpdir) TPB_THROW(UsageError, "TMPDIR: is set but empty (unset it or name a writable directory)");
  const std::string dir = tmpdir ? tmpdir : "/tmp";
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    TPB_THROW(UsageError, "TMPDIR: " << dir << ": " << std::strerror(errno) << " (launches keep their job files there)");
  if (!S_ISDIR(st.st_mode)) TPB_THROW(UsageError, "TMPDIR: " << dir << " is not a directory");
  // Launches create their directories there (mkdtemp): create a file, as access(2) answers yes
  // to root in /proc or on a read-only mount.
  if (const int err = probeCreateBeside(dir + "/tpbench-tmpdir-check"))
    TPB_THROW(UsageError, "TMPDIR: " << dir << " is not writable: " << std::strerror(err));
}

// ---- whole commands -----------------------------------------------------------------------------

namespace {

// Whether `device` (cpu, cuda, auto) means the CPU, as chooseDevice will resolve it. cuda is not
// resolved here: runTraining and runCollectiveBench refuse it where there is no GPU.
bool onCpu(const std::string& device) {
  return device == "cpu" || (device == "auto" && chooseDevice(device, 1) == Device::Cpu);
}

void checkTimeout(std::chrono::seconds timeout) { checkInt("--timeout", timeout.count(), 1); }

}  // namespace

void checkSaveDir(const std::string& flag, const std::string& dir) {
  // Remembered (common/out_file.h): a command refused after this removes what it made.
  createDirectories(flag, dir);
  // Tried, not asked of access(2), which lets root "write" /proc or a read-only mount.
  if (const int err = probeCreateBeside(dir + "/tpbench-save-dir-check"))
    TPB_THROW(UsageError, flag << " " << dir << ": not a writable directory (" << std::strerror(err) << ")");
}

void useSecretFile(const std::string& flag, const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) TPB_THROW(UsageError, flag << " " << path << ": " << std::strerror(errno));
  if (!S_ISREG(st.st_mode)) TPB_THROW(UsageError, flag << " " << path << ": not a regular file");
  if (st.st_uid != geteuid())
    TPB_THROW(UsageError, flag << " " << path << ": owned by uid " << st.st_uid << ", not by this user");
  // Anyone who can read the secret can join the job: the file must be its owner's alone.
  if (st.st_mode & 077)
    TPB_THROW(UsageError, flag << " " << path << ": readable or writable by its group or others (mode "
                               << std::oct << (st.st_mode & 0777) << std::dec << "; chmod 600 it)");
  if (st.st_size > 4096) TPB_THROW(UsageError, flag << " " << path << ": over 4096 bytes");
  std::ifstream in(path, std::ios::binary);
  std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) TPB_THROW(UsageError, flag << " " << path << ": cannot be read");
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty() || secret.find('\0') != std::string::npos)
    TPB_THROW(UsageError, flag << " " << path << ": " << (secret.empty() ? "empty" : "holds a NUL byte"));
  TPB_CHECK_ERRNO(setenv(kJobSecretVar, secret.c_str(), 1), "setenv " << kJobSecretVar);
}

void checkNodesShareASecret(int nnodes) {
  // Node 0's store is reachable from the other nodes' network: only holders of the secret get in.
  if (nnodes > 1 && jobSecret().empty())
    TPB_THROW(UsageError, "--secret_file: several nodes need the job's secret, the same on every node: give "
                          "--secret_file FILE (mode 600) or set "
                              << kJobSecretVar);
}

namespace {

// A number against what the table says a run accepts for its setting (common/train_settings.h).
void checkAccepted(const SettingInfo& info, double value) {
  using Check = SettingInfo::Check;
  const std::string flag = std::string("--") + info.key;
  const Bounds& b = info.accepted;
  if (info.check == Check::Integer)
    checkInt(flag, static_cast<long long>(value), static_cast<long long>(b.lo),
             b.hi == kUnbounded ? std::numeric_limits<long long>::max() : static_cast<long long>(b.hi));
  else if (info.check == Check::Real)
    checkReal(flag, value, {b.lo, b.hi, b.loOpen, b.hiOpen});
  else if (info.check == Check::StepLimit)
    checkMaxSteps(flag, static_cast<long long>(value));
}

// Every setting against the table.
void checkSettings(const TrainSettings& c) {
  forEachSetting(
      [](const SettingInfo& info, const auto& value) {
        if constexpr (std::is_arithmetic_v<std::decay_t<decltype(value)>>) checkAccepted(info, static_cast<double>(value));
      },
      c);
}

// The checkpoint must be readable, safe and of these settings (loadCheckpoint), and leave
// something to train: one written after the last epoch, or at --max_steps, would train nothing.
void checkResumable(const TrainConfig& c) {
  const Checkpoint ck = loadCheckpoint(c.resumeFrom, c);
  if (ck.epoch >= c.epochs)
    TPB_THROW(UsageError, "--resume_from " << c.resumeFrom << ": nothing left to train: the checkpoint was written after "
                                           << "epoch " << ck.epoch << " and --epochs is " << c.epochs
                                           << " (give --epochs " << ck.epoch + 1 << " or more to train on)");
  if (c.maxSteps >= 0 && ck.steps >= c.maxSteps)
    TPB_THROW(UsageError, "--resume_from " << c.resumeFrom << ": nothing left to train: the checkpoint was written after "
                                           << ck.steps << " steps and --max_steps is " << c.maxSteps);
}

}  // namespace

void checkSetting(const std::string& key, double value) {
  TrainSettings probe;
  bool known = false;
  forEachSetting(
      [&](const SettingInfo& info, const auto& field) {
        if (info.key != key) return;
        known = true;
        if constexpr (std::is_arithmetic_v<std::decay_t<decltype(field)>>) checkAccepted(info, value);
      },
      probe);
  TPB_CHECK(known, "checkSetting: no setting " << key);
}

void checkTrainRun(const TrainRunOptions& o) {
  checkTimeout(o.timeout);
  checkInt("--nproc_per_node", o.nprocPerNode, 0, 64);
  checkNotEmpty("--master_addr", o.masterAddr);
  std::map<std::string, DatasetSizes> datasets;
  double need = 0;
  const TrainConfig* largest = nullptr;
  std::string largestWhat, largestHint;
  for (const TrainPoint& p : o.points) {
    const TrainConfig& c = p.cfg;
    checkSettings(c);
    // A batch is split into M micro-batches of rows*m/M..rows*(m+1)/M: above the batch some are
    // empty every step, and the M recorded (and the bubble it predicts) would be false.
    const TrainStrategy& strategy = findStrategy("--strategy", c.strategy);
    if (!c.slowRanks.empty()) {
      if (!strategy.slowsRanks) {
        std::string those;
        for (const TrainStrategy& s : trainStrategies())
          if (s.slowsRanks) those += (those.empty() ? "" : ", ") + s.name;
        TPB_THROW(UsageError, "--slow_ranks: " << c.strategy << " does not apply it (" << those << " do)");
      }
      slowFactors(c.slowRanks, c.nGpus);
    }
    if (strategy.microbatched && c.microbatches > c.batchSize)
      TPB_THROW(UsageError, "--microbatches " << c.microbatches << " is above --batch_size " << c.batchSize << ": "
                                              << c.strategy << " splits each batch into that many micro-batches of "
                                              << "at least one sample each");
    findSchedule("--schedule", c.schedule);
    if (!c.saveDir.empty()) checkSaveDir("--save_dir", c.saveDir);
    const NetworkSpec spec = parseWorkload("--workload", c.workload, c.hidden);
    double dataBytes = 0;
    if (spec.kind == NetworkKind::Mlp || spec.mnistImages) {
      if (!datasets.count(c.dataset)) datasets[c.dataset] = checkDatasetSpec("--dataset", c.dataset);
      const DatasetSizes& d = datasets[c.dataset];
      checkSampleCount("--train_size", c.trainSize, d.train, "training samples of " + c.dataset);
      checkSampleCount("--test_size", c.testSize, d.test, "test samples of " + c.dataset);
    } else {
      // Generated on every rank: no file to read, and only memory bounds --train_size.
      if (c.dataset != "synthetic")
        TPB_THROW(UsageError, "--dataset " << c.dataset << ": --workload " << c.workload << " trains on generated "
                                           << (spec.kind == NetworkKind::Resnet ? "images" : "tokens")
                                           << "; a dataset is for mlp and resnet:image=mnist");
      const std::size_t tests = workloadTestSize(spec);
      checkSampleCount("--test_size", c.testSize, tests, "test samples generated for " + c.workload);
      const double train = c.trainSize > 0 ? static_cast<double>(c.trainSize) : workloadTrainSize(spec);
      dataBytes = (train + tests) * sampleBytes(spec);
    }
    // Every replica on this node holds the model state, the activations of its batch and (for
    // generated data) the data: one per rank, data_parallel's N in one process.
    const int replicas = o.nnodes > 1 && o.nprocPerNode > 0 ? o.nprocPerNode : c.nGpus;
    const NetworkCost cost = networkCost(spec);
    const double state = static_cast<double>(cost.parameters) * sizeof(float) * (c.momentum > 0 ? 3 : 2);
    const double activations = cost.activationBytes * c.batchSize;
    // Rank 0 evaluates after each epoch in batches of evalBatchSize (at most its training batch's
    // activations or kEvalActivationBytes, whichever is more).
    const std::size_t evalBatch = c.evaluate ? evalBatchSize(cost.activationBytes, c.batchSize) : 0;
    const double evaluation = evalBatch > static_cast<std::size_t>(c.batchSize)
                                  ? cost.activationBytes * static_cast<double>(evalBatch - c.batchSize)
                                  : 0.0;
    const double bytes = replicas * (state + activations + dataBytes) + evaluation;
    if (bytes > need) {
      need = bytes;
      largest = &c;
      largestHint = memoryHint(spec, c.batchSize, replicas, state, activations);
      largestWhat = [&, state, activations, dataBytes, evaluation, evalBatch] {
        std::ostringstream what;
        what << replicas << " replica" << (replicas == 1 ? "" : "s") << " on this node of " << c.workload << " ("
             << std::setprecision(3) << static_cast<double>(cost.parameters) << " parameters; float32 weights, "
             << "gradients" << (c.momentum > 0 ? ", momentum" : "") << ": " << humanBytes(state)
             << ", activations at batch " << c.batchSize << ": " << humanBytes(activations);
        if (dataBytes > 0) what << ", generated data: " << humanBytes(dataBytes);
        what << ", each";
        if (evaluation > 0) what << "; evaluation at batch " << evalBatch << " on rank 0: " << humanBytes(evaluation) << " more";
        what << ")";
        return what.str();
      }();
    }
  }
  if (largest && onCpu(o.device))
    checkFitsInMemory(largest->trainsMlp() ? "--hidden" : "--workload", largestWhat, need, memAvailableBytes(),
                      largestHint);
  // After the memory check: a checkpoint's size bound comes from the model, which now fits.
  for (const TrainPoint& p : o.points)
    if (!p.cfg.resumeFrom.empty()) checkResumable(p.cfg);
  if (o.nodeRank == 0 && o.masterPort != 0) checkPortFree("--master_port", o.masterPort);
  // The address the ranks will bind to: --iface's (which must exist and be up), else
  // GLOO_SOCKET_IFNAME's, else the one that routes to --master_addr (which must resolve).
  bindAddress(o.masterAddr, o.iface);
  checkTempDir(std::getenv("TMPDIR"));
  RingAllreduce::defaultChunkBytes(Device::Cpu);  // TPB_RING_CHUNK_KB: now, not in every rank
  shmSingleCopyFromEnv();                         // TPB_SHM_SINGLE_COPY: likewise
  mpiThreadLevelFromEnv();                        // TPB_MPI_THREAD: likewise
  checkFaultEnv();
}

void checkCollectiveRun(const CollectiveBenchOptions& o) {
  checkTimeout(o.timeout);
  checkInt("--iters", o.iters, 1);
  checkInt("--warmup", o.warmup, 0);
  // --algos all: at most every algorithm an op has.
  std::size_t algos = o.algos.size();
  if (o.allAlgos) {
    algos = 0;
    for (const auto& op : o.ops) algos = std::max(algos, collectiveNames(op).size());
  }
  if (o.ops.size() > 1 || o.inPlace.size() > 1)
    checkPointCount("collective", {{"--op", o.ops.size()}, {"--algos", algos}, {"--place", o.inPlace.size()},
                                   {"--n_gpus", o.nGpus.size()}, {"--bytes", o.bytes.size()}});
  else
    checkPointCount("allreduce", {{"--algos", algos}, {"--n_gpus", o.nGpus.size()}, {"--bytes", o.bytes.size()}});
  checkWholeElements("--bytes", o.bytes, sizeof(float), "float32");
  if (!o.bytes.empty() && !o.nGpus.empty() && onCpu(o.device)) {
    const std::size_t bytes = *std::max_element(o.bytes.begin(), o.bytes.end());
    const long long ranks = *std::max_element(o.nGpus.begin(), o.nGpus.end());
    // Out of place, each rank holds an input and an output buffer.
    const bool outOfPlace = std::find(o.inPlace.begin(), o.inPlace.end(), false) != o.inPlace.end();
    std::ostringstream what;
    what << humanBytes(static_cast<double>(bytes)) << " with --n_gpus " << ranks << ": the buffers of " << ranks
         << " ranks";
    checkFitsInMemory("--bytes", what.str(),
                      static_cast<double>(bytes) * static_cast<double>(ranks) * (outOfPlace ? 2 : 1),
                      memAvailableBytes());
  }
  checkTempDir(std::getenv("TMPDIR"));
  RingAllreduce::defaultChunkBytes(Device::Cpu);  // TPB_RING_CHUNK_KB: now, not in every rank
  shmSingleCopyFromEnv();                         // TPB_SHM_SINGLE_COPY: likewise
  mpiThreadLevelFromEnv();                        // TPB_MPI_THREAD: likewise
  checkFaultEnv();
}

}  // namespace tpb
