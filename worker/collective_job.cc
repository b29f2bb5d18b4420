#include "worker/collective_job.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "comm/cuda/devices.h"
#include "common/cores.h"
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
#include "comm/mpi/thread_level.h"
#endif

namespace tpb {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

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
  // With `symmetric`, the host buffer is a block of its symmetric memory (collective: every rank
  // makes the same buffers in the same order), for algorithms that reach into their peers' buffers.
  BenchBuffer(Device device, int cudaDevice, std::size_t maxCount, Transport* symmetric = nullptr) {
    if (symmetric && device == Device::Cpu) {
      const std::size_t bytes = std::max<std::size_t>(64, (maxCount * sizeof(float) + 63) / 64 * 64);
      sym_ = static_cast<float*>(symmetric->allocateSymmetric(bytes));
      TPB_CHECK(sym_, "this algorithm needs symmetric memory, which transport " << symmetric->name()
                                                                               << " does not have (use shm)");
      symT_ = symmetric;
      return;
    }
    host_ = allocFloats(maxCount);
    if (device == Device::Cpu) return;
#ifdef TPB_HAVE_CUDA
    // The GPU the nccl transport drives (set per thread, so set it here too).
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
    if (sym_) symT_->freeSymmetric(sym_);
#ifdef TPB_HAVE_CUDA
    if (dev_) cudaFree(dev_);
#endif
  }
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;

  float* data() { return dev_ ? dev_ : host(); }
  float* host() { return sym_ ? sym_ : host_.get(); }
  void zero(std::size_t count) {
#ifdef TPB_HAVE_CUDA
    if (dev_) {
      TPB_CUDA_CHECK(cudaMemset(dev_, 0, count * sizeof(float)));
      return;
    }
#endif
    std::fill(host(), host() + count, 0.0f);
  }
  void upload(std::size_t count) {
#ifdef TPB_HAVE_CUDA
    if (dev_) TPB_CUDA_CHECK(cudaMemcpy(dev_, host(), count * sizeof(float), cudaMemcpyHostToDevice));
#endif
    (void)count;
  }
  void download(std::size_t count) {
#ifdef TPB_HAVE_CUDA
    if (dev_) TPB_CUDA_CHECK(cudaMemcpy(host(), dev_, count * sizeof(float), cudaMemcpyDeviceToHost));
#endif
    (void)count;
  }

 private:
  FloatBuffer host_;
  float* sym_ = nullptr;  // in symT_'s symmetric memory instead of host_
  Transport* symT_ = nullptr;
  float* dev_ = nullptr;
};

// Every Collective::run() returns with its result in place; on CUDA this also makes sure no
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

// One point's buffers. In place (nccl-tests' aliasing, core/collective.h) both live in one
// buffer of `count` floats: a smaller input or output is this rank's block of it. Out of place,
// input and output are two buffers.
struct PointBuffers {
  BenchBuffer* in;   // holds the input
  BenchBuffer* out;  // holds the output (== in when in place)
  std::size_t sendOffset = 0, recvOffset = 0, sendCount = 0, recvCount = 0;
  CollectiveArgs args(std::size_t count, int root) {
    CollectiveArgs a;
    a.send = in->data() + sendOffset;
    a.recv = out->data() + recvOffset;
    a.count = count;
    a.root = root;
    return a;
  }
};

PointBuffers pointBuffers(const CollectiveOp& op, bool inPlace, int n, int rank, std::size_t count,
                          BenchBuffer& a, BenchBuffer& b) {
  PointBuffers p{&a, inPlace ? &a : &b};
  p.sendCount = op.sendCount(count, n);
  p.recvCount = op.recvCount(count, n);
  if (inPlace) {
    if (p.sendCount < count) p.sendOffset = static_cast<std::size_t>(rank) * p.sendCount;
    if (p.recvCount < count) p.recvOffset = static_cast<std::size_t>(rank) * p.recvCount;
  }
  return p;
}

// A point's timed iterations on this rank: one time per iteration (µs), or one mean over all of
// them where they ran back to back; and what the timed stretch moved over the transport.
struct Timing {
  std::vector<double> us;
  Traffic moved;
};

// Each call timed on its own. Per call (--timing per_call): every rank starts it together (a
// barrier: MPI_Barrier for mpi's collectives, as OSU, else the transport's) and the timer
// brackets it, so the spread of the barrier's exit lands in the slowest rank's time. Back to back (--timing back_to_back, as IMB times): one barrier, then the calls
// follow each other as in a training loop; a rank's call runs from the end of its previous one,
// and no barrier's exit is counted. On a GPU the events also count the host's launch of the
// iteration's work (between the start event on the idle stream and the first kernel) and its
// polling for the end.
Timing timeEachIteration(Transport& t, Collective& coll, IntervalTimer& timer, int iters, bool barrierEach) {
  Timing out;
  if (!barrierEach) t.barrier();
  for (int i = 0; i < iters; ++i) {
    // Every iteration starts together, after the library's own barrier for a library's
    // collective (MPI_Barrier, as OSU), else the transport's; its time is the slowest rank's.
    if (barrierEach && !coll.barrier()) t.barrier();
    const Traffic before = t.traffic();
    timer.start();
    coll.run();
    out.us.push_back(timer.stopUs());
    out.moved = t.traffic() - before;  // by the last iteration: one call, barriers not included
    faultPoint(t.rank());
  }
  return out;
}

// nccl-tests' method, for a collective that queues on the GPU (Collective::queuesOnDevice: the
// library ones, in place for allreduce): `iters` launches queued back to back
// on the stream between the timer's two events, the host waiting (under the transport's timeout)
// for the last one only; the mean per launch. The host's launch work overlaps the GPU's instead
// of adding to every iteration.
Timing timeBackToBack(Transport& t, Collective& coll, IntervalTimer& timer, int iters) {
  Timing out;
  t.barrier();
  const Traffic before = t.traffic();
  timer.start();
  std::unique_ptr<Request> last;
  for (int i = 0; i < iters; ++i) {
    last = coll.start();
    faultPoint(t.rank());
  }
  timer.queueStop();  // right behind the last launch: the host's wait below is not counted
  last->wait();       // under the transport's timeout, which a wait on the stop event lacks
  out.us.push_back(timer.stopUs() / iters);
  out.moved = t.traffic() - before;
  return out;
}

// The `timer` a point records: how the transport's timer was used.
std::string timerLabel(const IntervalTimer& timer, Device device, bool queuedBackToBack, bool barrierEach) {
  if (device != Device::Cuda) return std::string(timer.method()) + (barrierEach ? "" : "_back_to_back");
  if (queuedBackToBack) return std::string(timer.method()) + "_back_to_back";
  return std::string(timer.method()) + (barrierEach ? "_with_host" : "_with_host_back_to_back");
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

void collectiveJob(Worker& w, const json& job) {
  Transport& t = *w.transport;
  const std::string opName = job.value("op", std::string("allreduce"));
  const CollectiveOp& op = findOp("--op", opName);
  const CollectiveAlgo& algo = findCollective("--algos", opName, job.at("algo").get<std::string>());
  const auto sizes = job.at("bytes").get<std::vector<std::size_t>>();
  const int iters = job.at("iters").get<int>();
  const int warmup = job.at("warmup").get<int>();
  const bool check = job.at("check").get<bool>();
  const int root = job.value("root", 0);
  const std::string timing = job.value("timing", std::string(kPerCallTiming));
  if (!isTimingMethod(timing))
    TPB_THROW(Error, "job: unknown timing '" << timing << "'");
  const bool barrierEach = timing == kPerCallTiming;
  const std::vector<bool> placements = job.value("in_place", std::vector<bool>{true});
  const std::string resultPath = job.at("result_path").get<std::string>();
  const int n = t.size(), rank = t.rank();
  // Every point's record but its size and measurements: what the launcher records as it is.
  CollectiveRecord proto;
  proto.op = opName;
  proto.algo = job.at("algo").get<std::string>();  // as the user named it, as before
  proto.transport = job.at("transport").get<std::string>();
  proto.device = job.at("device").get<std::string>();
  proto.nGpus = n;
  proto.iters = iters;
  proto.warmup = warmup;
  proto.timing = timing;
  if (op.rooted) proto.root = root;

  std::size_t maxCount = 0;
  for (auto b : sizes) maxCount = std::max(maxCount, op.roundCount(b / sizeof(float), n));
  const Device device = t.device();
  bool anyOutOfPlace = false;
  for (bool p : placements) anyOutOfPlace = anyOutOfPlace || !p;
  const int gpu = device == Device::Cuda ? rankCudaDevice(w.env.localRank, visibleCudaDevices()) : -1;
  Transport* symmetric = algo.needsSymmetricMemory ? &t : nullptr;
  BenchBuffer bufA(device, gpu, maxCount, symmetric), bufB(device, gpu, anyOutOfPlace ? maxCount : 0, symmetric);
  // The transport's timer: the steady clock on CPU; on GPUs, CUDA events on the stream where the
  // nccl transport queues every operation of an iteration. Library collectives on GPUs are timed
  // back to back (nccl-tests' method); the others iteration by iteration, host time included.
  const std::unique_ptr<IntervalTimer> timer = t.makeTimer();
  const std::function<float(int, std::size_t)> input = checkValue;

  json points = json::array();
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t count = op.roundCount(sizes[k] / sizeof(float), n);
    const std::size_t bytes = count * sizeof(float);
    for (const bool inPlace : placements) {
      PointBuffers pb = pointBuffers(op, inPlace, n, rank, count, bufA, bufB);
      bufA.zero(count);
      if (!inPlace) bufB.zero(count);
      std::unique_ptr<Collective> coll = algo.make(*w.comm, pb.args(count, root));  // setup: untimed

      for (int i = 0; i < warmup; ++i) {
        t.barrier();
        coll->run();
      }
      finishDeviceWork(device);
      const bool queued = device == Device::Cuda && coll->queuesOnDevice();
      const Timing timing = queued ? timeBackToBack(t, *coll, *timer, iters)
                                   : timeEachIteration(t, *coll, *timer, iters, barrierEach);
      std::vector<double> mine = timing.us;
      const Traffic moved = timing.moved;
      const int samples = static_cast<int>(mine.size());  // alike on every rank: same algorithm
      double wrong = -1;
      if (check) {
        float* h = pb.in->host();
        for (std::size_t i = 0; i < pb.sendCount; ++i) h[pb.sendOffset + i] = input(rank, i);
        pb.in->upload(count);
        t.barrier();  // no rank's input changes while another still runs the last timed call
        coll->run();
        finishDeviceWork(device);
        pb.out->download(count);
        if (faultCorrupts(rank) && pb.recvCount > 0) pb.out->host()[pb.recvOffset] += 1.0f;  // TPB_FAULT=R:corrupt
        const float* got = pb.out->host() + pb.recvOffset;
        wrong = 0;
        for (std::size_t i = 0; i < pb.recvCount; ++i) {
          const std::optional<float> want = op.expected(rank, n, root, count, i, input);
          if (want && got[i] != *want) ++wrong;
        }
      }
      coll.reset();

      // Gather every rank's iteration times, error count and traffic on rank 0 (over the
      // transport; counts are exact in a double up to 2^53).
      mine.push_back(wrong);
      for (std::uint64_t v : {moved.bytesSent, moved.bytesRecv, moved.msgsSent, moved.msgsRecv})
        mine.push_back(static_cast<double>(v));
      mine.push_back(boundCpu());
      if (rank != 0) {
        t.sendHost(0, mine.data(), mine.size() * sizeof(double));
        continue;
      }
      std::vector<double> slowest(mine.begin(), mine.begin() + samples);
      double wrongTotal = wrong;
      TrafficRecord traffic;
      auto addTraffic = [&](const std::vector<double>& v) {
        const double* c = v.data() + samples + 1;
        traffic.add(static_cast<std::uint64_t>(c[0]), static_cast<std::uint64_t>(c[1]),
                    static_cast<std::uint64_t>(c[2]), static_cast<std::uint64_t>(c[3]));
      };
      addTraffic(mine);
      std::vector<double> theirs(mine.size());
      // Each rank's own times, and which rank each iteration's slowest was (a tie: the lowest).
      std::vector<Summary> rankSummaries{summarize(std::vector<double>(mine.begin(), mine.begin() + samples))};
      // Each rank's mean per call, as IMB (t_avg, t_max) and OSU (its average) report a point:
      // their mean over the ranks and the largest.
      auto meanOf = [&](const std::vector<double>& v) {
        return std::accumulate(v.begin(), v.begin() + samples, 0.0) / std::max(1, samples);
      };
      double rankMeanSum = meanOf(mine), rankMeanMax = rankMeanSum;
      std::vector<long long> slowestIn(n, 0), cpus{static_cast<long long>(mine.back())};
      std::vector<int> slowestRank(samples, 0);
      for (int r = 1; r < n; ++r) {
        t.recvHost(r, theirs.data(), theirs.size() * sizeof(double));
        for (int i = 0; i < samples; ++i) {
          if (theirs[i] > slowest[i]) slowestRank[i] = r;
          slowest[i] = std::max(slowest[i], theirs[i]);
        }
        rankSummaries.push_back(summarize(std::vector<double>(theirs.begin(), theirs.begin() + samples)));
        rankMeanSum += meanOf(theirs);
        rankMeanMax = std::max(rankMeanMax, meanOf(theirs));
        if (check) wrongTotal += theirs[samples];
        addTraffic(theirs);
        cpus.push_back(static_cast<long long>(theirs.back()));
      }
      const Summary s = summarize(slowest);
      // Iterations over ten times the median: a rank that lost its core (another process, too
      // many ranks) or a page fault, not the algorithm. Counted and said, never dropped.
      const auto outliers = std::count_if(slowest.begin(), slowest.end(), [&](double us) { return us > 10 * s.median; });
      const double algbw = s.median > 0 ? static_cast<double>(bytes) / (s.median * 1e-6) / 1e9 : 0.0;
      CollectiveRecord p = proto;
      if (const char* level = mpiThreadProvided()) p.mpiThread = level;  // MPI ran in this rank
      p.bytes = bytes;
      p.count = count;
      p.inPlace = inPlace;
      p.measured = true;
      p.timer = timerLabel(*timer, device, queued, barrierEach);
      p.timeMedianUs = s.median;
      p.timeMinUs = s.min;
      p.timeMaxUs = s.max;
      p.algbwGbps = algbw;
      p.busbwGbps = algbw * op.busFactor(n);
      if (check) p.wrong = static_cast<long long>(wrongTotal);
      if (samples >= 2) {  // each iteration timed on its own, not a mean of queued launches
        p.spread = IterationSpread::of(slowest, s);
        p.timeExtra["rank_mean"] = rankMeanSum / n;
        p.timeExtra["rank_mean_max"] = rankMeanMax;
        if (n >= 2) {
          CollectiveRanks ranks;
          for (const Summary& rs : rankSummaries) ranks.medianUs.push_back(rs.median);
          for (int who : slowestRank) ++slowestIn[who];
          ranks.slowestIn = std::move(slowestIn);
          ranks.cpu = std::move(cpus);
          p.ranks = std::move(ranks);
        }
      }
      if (outliers > 0) {
        p.timeExtra["outliers"] = outliers;
        std::fprintf(stderr, "warning: %s %s N=%d %s: %ld of %d iterations took over 10x the median (%.1f us; longest %.1f us)\n",
                     opName.c_str(), algo.name.c_str(), n, formatBytes(bytes).c_str(), static_cast<long>(outliers),
                     samples, s.median, s.max);
      }
      // A library's collective does not go through the transport: its traffic is not observed.
      if (algo.origin == Origin::FromScratch) p.traffic = std::move(traffic);
      points.push_back(p.toJson());
      writeFileAtomic(resultPath, json{{"points", points}}.dump());
      std::fprintf(stderr, "%s %s N=%d: %s %s done (%zu/%zu)\n", opName.c_str(), algo.name.c_str(), n,
                   formatBytes(bytes).c_str(), inPlace ? "in place" : "out of place", k + 1, sizes.size());
    }
  }
  t.barrier();
}

}  // namespace tpb
