#include "worker/allreduce_job.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fault.h"
#include "common/format_bytes.h"
#include "core/registry.h"
#include "record/records.h"
#include "record/results.h"
#include "record/stats.h"
#include "worker/worker.h"

#ifdef TPB_HAVE_CUDA
#include "comm/cuda/cuda_check.h"
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
  // The transport's timer: the steady clock on CPU; on GPUs, CUDA events on the stream where the
  // nccl transport queues every operation of an iteration (nccl-tests' method).
  const std::unique_ptr<IntervalTimer> timer = t.makeTimer();
  proto.timer = timer->method();

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
      timer->start();
      ar->run();
      mine[i] = timer->stopUs();
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

}  // namespace tpb
