#include "harness/allreduce_bench.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "comm/shm/shm_transport.h"
#include "comm/transports.h"
#include "common/error.h"
#include "common/fault.h"
#include "harness/device_choice.h"
#include "harness/launch.h"
#include "harness/meta.h"
#include "harness/range.h"
#include "core/registry.h"
#include "record/results.h"
#include "record/stats.h"
#include "harness/worker.h"

#ifdef TPB_HAVE_CUDA
#include "comm/cuda/cuda_check.h"
#endif
#ifdef TPB_HAVE_NCCL
#include "comm/nccl/nccl_transport.h"
#endif

namespace tpb {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

double busBandwidthFactor(int n) { return n <= 1 ? 0.0 : 2.0 * (n - 1) / n; }

namespace {

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using FloatBuffer = std::unique_ptr<float[], AlignedFree>;

FloatBuffer allocFloats(std::size_t count) {
  const std::size_t bytes = std::max<std::size_t>(64, (count * sizeof(float) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, bytes);
  TPB_CHECK(p, "out of memory allocating " << bytes << " bytes");
  std::memset(p, 0, bytes);  // touch every page before timing
  return FloatBuffer(static_cast<float*>(p));
}

// The benchmark's buffer on the job's device. On CUDA the algorithms get device memory, and
// filling and checking go through a host copy (host() plus upload/download), outside the timed
// loop; on CPU data() is host() and the copies are no-ops.
class BenchBuffer {
 public:
  BenchBuffer(Device device, int cudaDevice, std::size_t maxCount) : host_(allocFloats(maxCount)) {
    if (device == Device::Cpu) return;
#ifdef TPB_HAVE_CUDA
    // cuda:LOCAL_RANK, the GPU the nccl transport drives (set per thread, so set it here too).
    TPB_CUDA_CHECK(cudaSetDevice(cudaDevice));
    const std::size_t bytes = std::max<std::size_t>(1, maxCount) * sizeof(float);
    TPB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dev_), bytes));
    TPB_CUDA_CHECK(cudaMemset(dev_, 0, bytes));  // touch it before timing, as on CPU
#else
    (void)cudaDevice;
    TPB_THROW(Error, "device cuda in a build without CUDA");
#endif
  }
  ~BenchBuffer() {
#ifdef TPB_HAVE_CUDA
    if (dev_) cudaFree(dev_);
#endif
  }
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;

  float* data() { return dev_ ? dev_ : host_.get(); }
  float* host() { return host_.get(); }
  void zero(std::size_t count) {
#ifdef TPB_HAVE_CUDA
    if (dev_) {
      TPB_CUDA_CHECK(cudaMemset(dev_, 0, count * sizeof(float)));
      return;
    }
#endif
    std::fill(host_.get(), host_.get() + count, 0.0f);
  }
  void upload(std::size_t count) {
#ifdef TPB_HAVE_CUDA
    if (dev_) TPB_CUDA_CHECK(cudaMemcpy(dev_, host_.get(), count * sizeof(float), cudaMemcpyHostToDevice));
#endif
    (void)count;
  }
  void download(std::size_t count) {
#ifdef TPB_HAVE_CUDA
    if (dev_) TPB_CUDA_CHECK(cudaMemcpy(host_.get(), dev_, count * sizeof(float), cudaMemcpyDeviceToHost));
#endif
    (void)count;
  }

 private:
  FloatBuffer host_;
  float* dev_ = nullptr;
};

// Every Allreduce::run() returns with its result in place; on CUDA this also makes sure no
// kernel of the iteration is still running (a check download, the next size's setup).
void finishDeviceWork(Device device) {
#ifdef TPB_HAVE_CUDA
  if (device == Device::Cuda) TPB_CUDA_CHECK(cudaDeviceSynchronize());
#endif
  (void)device;
}

// Times one iteration. CPU: the steady clock around run(). GPU: CUDA events recorded on the
// nccl transport's stream, where every operation of an iteration is queued, just before and
// after run() (nccl-tests' method); elapsed time is read once the stop event has completed, so
// the iteration's last kernel is counted and nothing of the next one is.
class IterationTimer {
 public:
  explicit IterationTimer(Transport& t) {
#ifdef TPB_HAVE_NCCL
    if (auto* nccl = dynamic_cast<NcclTransport*>(&t)) {
      stream_ = nccl->stream();
      TPB_CUDA_CHECK(cudaEventCreate(&start_));
      TPB_CUDA_CHECK(cudaEventCreate(&stop_));
    }
#endif
    (void)t;
  }
  ~IterationTimer() {
#ifdef TPB_HAVE_NCCL
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
#endif
  }
  IterationTimer(const IterationTimer&) = delete;
  IterationTimer& operator=(const IterationTimer&) = delete;

  const char* method() const { return usesEvents() ? "cuda_events" : "steady_clock"; }
  void start() {
#ifdef TPB_HAVE_NCCL
    if (usesEvents()) {
      TPB_CUDA_CHECK(cudaEventRecord(start_, stream_));
      return;
    }
#endif
    t0_ = clock_type::now();
  }
  // Microseconds since start(); waits for the device work queued in between.
  double stopUs() {
#ifdef TPB_HAVE_NCCL
    if (usesEvents()) {
      TPB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      TPB_CUDA_CHECK(cudaEventSynchronize(stop_));
      float ms = 0;
      TPB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      return static_cast<double>(ms) * 1000.0;
    }
#endif
    return std::chrono::duration<double, std::micro>(clock_type::now() - t0_).count();
  }

 private:
#ifdef TPB_HAVE_NCCL
  bool usesEvents() const { return start_ != nullptr; }
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
#else
  bool usesEvents() const { return false; }
#endif
  clock_type::time_point t0_;
};

// Check pattern: small integers, different per rank and per element, so every sum is exact in
// float32 (at most 8 ranks * 1023 < 2^24) and a misplaced segment cannot go unnoticed.
float checkValue(int rank, std::size_t i) {
  return static_cast<float>((i * 2654435761u + static_cast<std::size_t>(rank) * 977u) % 1024u);
}

}  // namespace

double memcpyGBps(std::size_t bytes) {
  FloatBuffer a = allocFloats(bytes / sizeof(float) + 1), b = allocFloats(bytes / sizeof(float) + 1);
  std::vector<double> secs;
  for (int i = 0; i < 3; ++i) std::memcpy(b.get(), a.get(), bytes);  // warm-up
  for (int i = 0; i < 15; ++i) {
    const auto t0 = clock_type::now();
    std::memcpy(b.get(), a.get(), bytes);
    secs.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  return static_cast<double>(bytes) / summarize(secs).median / 1e9;
}

// ---------------------------------------------------------------------------------------------
// Worker side
// ---------------------------------------------------------------------------------------------

void allreduceJob(Worker& w, const json& job) {
  Transport& t = *w.transport;
  const AllreduceAlgo& algo = findAllreduce("--algos", job.at("algo").get<std::string>());
  const auto sizes = job.at("bytes").get<std::vector<std::size_t>>();
  const int iters = job.at("iters").get<int>();
  const int warmup = job.at("warmup").get<int>();
  const bool check = job.at("check").get<bool>();
  const std::string resultPath = job.at("result_path").get<std::string>();
  const int n = t.size(), rank = t.rank();
  // Every point's record but its size and measurements: what the launcher records as it is.
  CollectiveRecord proto;
  proto.algo = job.at("algo").get<std::string>();  // as the user named it, as before
  proto.transport = job.at("transport").get<std::string>();
  proto.device = job.at("device").get<std::string>();
  proto.nGpus = n;
  proto.iters = iters;
  proto.warmup = warmup;


  std::size_t maxCount = 0;
  for (auto b : sizes) maxCount = std::max(maxCount, b / sizeof(float));
  const Device device = t.device();
  BenchBuffer buf(device, w.env.localRank, maxCount);
  IterationTimer timer(t);
  proto.timer = timer.method();

  json points = json::array();
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t count = sizes[k] / sizeof(float);
    const std::size_t bytes = count * sizeof(float);
    buf.zero(count);
    std::unique_ptr<Allreduce> ar = algo.make(*w.comm, buf.data(), count);  // setup: untimed

    for (int i = 0; i < warmup; ++i) {
      t.barrier();
      ar->run();
    }
    finishDeviceWork(device);
    std::vector<double> mine(iters);
    for (int i = 0; i < iters; ++i) {
      t.barrier();  // every iteration starts together; its time is the slowest rank's
      timer.start();
      ar->run();
      mine[i] = timer.stopUs();
      faultPoint(rank);
    }
    double wrong = -1;
    if (check) {
      float* h = buf.host();
      for (std::size_t i = 0; i < count; ++i) h[i] = checkValue(rank, i);
      buf.upload(count);
      ar->run();
      finishDeviceWork(device);
      buf.download(count);
      wrong = 0;
      for (std::size_t i = 0; i < count; ++i) {
        float expect = 0;
        for (int r = 0; r < n; ++r) expect += checkValue(r, i);
        if (h[i] != expect) ++wrong;
      }
    }
    ar.reset();

    // Gather every rank's iteration times and error count on rank 0 (over the transport).
    mine.push_back(wrong);
    if (rank != 0) {
      t.sendHost(0, mine.data(), mine.size() * sizeof(double));
      continue;
    }
    std::vector<double> slowest(mine.begin(), mine.end() - 1);
    double wrongTotal = wrong;
    std::vector<double> theirs(mine.size());
    for (int r = 1; r < n; ++r) {
      t.recvHost(r, theirs.data(), theirs.size() * sizeof(double));
      for (int i = 0; i < iters; ++i) slowest[i] = std::max(slowest[i], theirs[i]);
      if (check) wrongTotal += theirs.back();
    }
    const Summary s = summarize(slowest);
    const double algbw = s.median > 0 ? static_cast<double>(bytes) / (s.median * 1e-6) / 1e9 : 0.0;
    CollectiveRecord p = proto;
    p.bytes = bytes;
    p.count = count;
    p.measured = true;
    p.timeMedianUs = s.median;
    p.timeMinUs = s.min;
    p.timeMaxUs = s.max;
    p.algbwGbps = algbw;
    p.busbwGbps = algbw * busBandwidthFactor(n);
    if (check) p.wrong = static_cast<long long>(wrongTotal);
    points.push_back(p.toJson());
    writeFileAtomic(resultPath, json{{"points", points}}.dump());
    std::fprintf(stderr, "%s N=%d: %s done (%zu/%zu)\n", algo.name.c_str(), n,
                 formatBytes(bytes).c_str(), k + 1, sizes.size());
  }
  t.barrier();
}

// ---------------------------------------------------------------------------------------------
// Launcher side
// ---------------------------------------------------------------------------------------------

namespace {

void printHeader(std::ostream& os, const std::string& algo, int n, const std::string& transport,
                 const std::string& device) {
  char line[256];
  os << "\n# allreduce  algo=" << algo << "  N=" << n << "  transport=" << transport
     << "  device=" << device << "  (float32 sum, in place)\n";
  std::snprintf(line, sizeof line, "# %10s %11s %11s %11s %11s %11s %11s %7s\n", "bytes", "count",
                "median_us", "min_us", "max_us", "algbw_GB/s", "busbw_GB/s", "#wrong");
  os << line;
}

void printRow(std::ostream& os, const CollectiveRecord& p) {
  char line[256];
  const std::string wrong = p.wrong ? std::to_string(*p.wrong) : "n/a";
  std::snprintf(line, sizeof line, "  %10s %11llu %11.1f %11.1f %11.1f %11.3f %11.3f %7s\n",
                formatBytes(p.bytes).c_str(), static_cast<unsigned long long>(p.count), p.timeMedianUs,
                p.timeMinUs, p.timeMaxUs, p.algbwGbps, p.busbwGbps, wrong.c_str());
  os << line;
}

std::string makeTempDir() {
  std::string tmpl = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) +
                     "/tpbench.XXXXXX";
  TPB_CHECK(mkdtemp(tmpl.data()) != nullptr, "mkdtemp(" << tmpl << ") failed: " << std::strerror(errno));
  return tmpl;
}

}  // namespace

int runAllreduceBench(const AllreduceBenchOptions& opt) {
  // ---- validate everything before launching anything ----
  if (opt.algos.empty()) TPB_THROW(UsageError, "--algos: no algorithm given");
  for (const auto& a : opt.algos) findAllreduce("--algos", a);
  if (opt.iters < 1) TPB_THROW(UsageError, "--iters: must be at least 1, got " << opt.iters);
  if (opt.warmup < 0) TPB_THROW(UsageError, "--warmup: must be at least 0, got " << opt.warmup);
  if (opt.nGpus.empty()) TPB_THROW(UsageError, "--n_gpus: no rank count given");
  // Every rank of a point runs on this node: on CUDA each needs a GPU of its own.
  const Device device = chooseDevice(opt.device, *std::max_element(opt.nGpus.begin(), opt.nGpus.end()));
  const std::string devName = deviceName(device);
  for (auto n : opt.nGpus) {
    const int ranks = static_cast<int>(n);
    const std::string tname = opt.transport.empty() ? defaultTransport(device, ranks, ranks) : opt.transport;
    if (std::string why = findTransport(tname).unsupported(device, ranks, ranks); !why.empty())
      TPB_THROW(UsageError, "--transport " << tname << " on " << devName << ": " << why);
  }
  for (const auto& a : opt.algos)
    if (std::string why = findAllreduce("--algos", a).unsupported(device); !why.empty())
      TPB_THROW(UsageError, "--algos: " << a << " cannot run on " << devName << ": " << why);
  std::unique_ptr<ResultsFile> results;
  std::unique_ptr<OutLock> outLock;  // held until the last save
  if (!opt.out.empty()) {
    checkWritable("--out", opt.out);
    outLock = std::make_unique<OutLock>("--out", opt.out);
    results = std::make_unique<ResultsFile>(ResultsFile::create(opt.out, collectMeta(opt.command)));
  }

  installInterruptHandlers();
  const std::string tmp = makeTempDir();
  const std::size_t total = opt.algos.size() * opt.nGpus.size();
  std::size_t done = 0, failedPoints = 0;
  const auto start = clock_type::now();
  int rc = 0;

  for (const auto& algo : opt.algos) {
    for (const auto nLL : opt.nGpus) {
      if (interruptRequested()) break;
      const int n = static_cast<int>(nLL);
      const std::string transport = opt.transport.empty() ? defaultTransport(device, n, n) : opt.transport;
      const std::string jobPath = tmp + "/job.json", resultPath = tmp + "/result.json";
      std::remove(resultPath.c_str());
      json job = {{"kind", "allreduce"}, {"algo", algo},         {"transport", transport},
                  {"device", devName},    {"bytes", opt.bytes},  {"iters", opt.iters},
                  {"warmup", opt.warmup}, {"check", opt.check},  {"result_path", resultPath},
                  {"comm_timeout_ms", std::chrono::duration_cast<std::chrono::milliseconds>(opt.timeout).count()}};
      writeFileAtomic(jobPath, job.dump());

      const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
      std::fprintf(stderr, "[%zu/%zu] allreduce %s N=%d over %s", done + 1, total, algo.c_str(), n,
                   transport.c_str());
      if (done > 0) std::fprintf(stderr, " (ETA %.0f s)", elapsed / done * (total - done));
      std::fprintf(stderr, "\n");

      LaunchSpec spec;
      spec.nprocPerNode = n;
      spec.workerArgs = {"worker", "--job", jobPath};
      spec.timeout = opt.timeout;
      spec.cleanup = [](const std::string& runId, int world) { ShmTransport::removeSegments(runId, world); };
      const LaunchResult lr = launch(spec);

      json got = json::object();
      if (access(resultPath.c_str(), R_OK) == 0) got = readJsonFile(resultPath);
      const JsonIn in(got, resultPath);
      const auto points = in.find("points");
      const std::size_t measured = points ? points->size() : 0;

      printHeader(std::cout, algo, n, transport, devName);
      for (std::size_t k = 0; k < opt.bytes.size(); ++k) {
        CollectiveRecord rec;
        if (k < measured) {
          rec = CollectiveRecord::fromJson((*points)[k]);
          printRow(std::cout, rec);
          if (rec.wrong && *rec.wrong != 0) {
            rec.status = "failed";
            rec.error = "verification found " + std::to_string(*rec.wrong) + " wrong elements";
            rc = 1;
          }
        } else {
          rec.algo = algo;
          rec.transport = transport;
          rec.device = devName;
          rec.nGpus = n;
          rec.iters = opt.iters;
          rec.warmup = opt.warmup;
          rec.bytes = opt.bytes[k] / sizeof(float) * sizeof(float);
          rec.count = rec.bytes / sizeof(float);
          rec.status = "failed";
          rec.error = lr.ok ? std::string("worker wrote no result") : lr.error;
          std::cout << "  " << formatBytes(rec.bytes) << "  FAILED: " << *rec.error << "\n";
          rc = 1;
        }
        rec.entry = entryRecordOf(findAllreduce("--algos", algo));
        if (results) results->addCollective(rec);
      }
      std::cout.flush();
      if (!lr.ok) {
        ++failedPoints;
        std::fprintf(stderr, "allreduce %s N=%d failed: %s\n", algo.c_str(), n, lr.error.c_str());
      }
      if (results) results->save();
      ++done;
      if (lr.interrupted) break;
    }
    if (interruptRequested()) break;
  }

  if (opt.memcpyReference && !interruptRequested()) {
    json ref = json::array();
    std::cout << "\n# reference: single-thread memcpy on this host\n";
    for (std::size_t bytes : {std::size_t(1) << 20, std::size_t(16) << 20, std::size_t(64) << 20}) {
      const double gbps = memcpyGBps(bytes);
      ref.push_back({{"bytes", bytes}, {"gbps", gbps}});
      char line[128];
      std::snprintf(line, sizeof line, "  memcpy %6s: %8.2f GB/s\n", formatBytes(bytes).c_str(), gbps);
      std::cout << line;
    }
    if (results) {
      results->extra()["reference"]["memcpy"] = ref;
      results->save();
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  if (results) std::fprintf(stderr, "results written to %s\n", opt.out.c_str());
  if (interruptRequested()) {
    std::fprintf(stderr, "interrupted: %zu of %zu points finished and saved\n", done, total);
    return 130;
  }
  if (failedPoints) std::fprintf(stderr, "%zu of %zu points failed\n", failedPoints, total);
  return rc;
}

}  // namespace tpb
