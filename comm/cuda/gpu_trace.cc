#include "comm/cuda/gpu_trace.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#ifdef TPB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "comm/cuda/cuda_check.h"
#endif

namespace tpb::trace {

namespace {
// Set by NoGpuSpansOnThisThread; plain thread_local, so it costs no lock.
thread_local bool tQuiet = false;
}  // namespace

NoGpuSpansOnThisThread::NoGpuSpansOnThisThread() : previous_(tQuiet) { tQuiet = true; }
NoGpuSpansOnThisThread::~NoGpuSpansOnThisThread() { tQuiet = previous_; }

std::int64_t gpuEventHostNs(std::int64_t hostBeforeNs, std::int64_t hostAfterNs, float msBeforeAnchor) {
  const std::int64_t anchorNs = hostBeforeNs + (hostAfterNs - hostBeforeNs) / 2;
  return anchorNs - static_cast<std::int64_t>(std::llround(static_cast<double>(msBeforeAnchor) * 1e6));
}

#ifdef TPB_HAVE_CUDA

namespace {

struct Queued {
  const char* name;
  const char* argKey;
  std::int64_t arg;
  Category cat;
  Track track;
  int device;
  std::uint64_t generation;  // trace::generation() when it was queued
  cudaEvent_t begin, end;
  // Its end event was recorded. A span still open at a flush has an end event from the pool
  // that may hold an old recording, which cudaEventElapsedTime would read without complaint.
  bool ended = false;
};

// The queue and the pool of events per device. Spans are queued from any thread (DDP's bucket
// hooks run on LibTorch's autograd thread and launch their allreduce there), so `mu` guards
// both; flushGpu runs on the recording thread only, at points where no other thread queues.
struct State {
  std::mutex mu;
  std::vector<Queued> queued;
  std::uint64_t flushes = 0;  // a span still open across a flush has lost its slot
  std::vector<std::vector<cudaEvent_t>> freeEvents;  // per device
};

State& state() {
  static State s;
  return s;
}

// Makes `device` current for the scope and restores the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    TPB_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) TPB_CUDA_CHECK(cudaSetDevice(device));
    device_ = device;
  }
  ~DeviceScope() {
    if (previous_ != device_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0, device_ = 0;
};

// Called with state().mu held.
cudaEvent_t takeEvent(int device) {
  State& s = state();
  if (s.freeEvents.size() <= static_cast<std::size_t>(device)) s.freeEvents.resize(device + 1);
  std::vector<cudaEvent_t>& pool = s.freeEvents[device];
  if (!pool.empty()) {
    cudaEvent_t e = pool.back();
    pool.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  TPB_CUDA_CHECK(cudaEventCreate(&e));  // timing on: these events exist to be timed
  return e;
}

}  // namespace

GpuSpan::GpuSpan(const char* name, Category cat, Track track, int device, void* stream, const char* argKey,
                 std::int64_t arg) {
  if (device < 0 || !enabled() || tQuiet) return;
  State& st = state();
  const std::lock_guard<std::mutex> lock(st.mu);
  DeviceScope scope(device);
  Queued q{name, argKey, arg, cat, track, device, generation(), takeEvent(device), takeEvent(device)};
  TPB_CUDA_CHECK(cudaEventRecord(q.begin, static_cast<cudaStream_t>(stream)));
  st.queued.push_back(q);
  slot_ = static_cast<int>(st.queued.size()) - 1;
  flush_ = st.flushes;
  stream_ = stream;
}

GpuSpan::~GpuSpan() {
  if (slot_ < 0) return;
  State& st = state();
  const std::lock_guard<std::mutex> lock(st.mu);
  // Flushed while open: flushGpu() dropped it, and its slot may hold another span now.
  if (flush_ != st.flushes) return;
  Queued& q = st.queued[static_cast<std::size_t>(slot_)];
  DeviceScope scope(q.device);
  // A destructor does not throw: a failed record leaves the span unended, and it is dropped.
  q.ended = cudaEventRecord(q.end, static_cast<cudaStream_t>(stream_)) == cudaSuccess;
}

void flushGpu() {
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mu);
  if (s.queued.empty()) return;
  // Spans queued under an earlier trace::enable() belong to a recording that has ended (a
  // failed run whose epoch never flushed): their events go back to the pool, unread.
  const bool live = recording();
  const std::uint64_t current = generation();
  auto wanted = [&](const Queued& q) { return live && q.generation == current; };
  std::vector<int> devices;
  for (const Queued& q : s.queued)
    if (wanted(q) && std::find(devices.begin(), devices.end(), q.device) == devices.end()) devices.push_back(q.device);
  for (const int device : devices) {
    DeviceScope scope(device);
    TPB_CUDA_CHECK(cudaDeviceSynchronize());
    cudaEvent_t anchor = takeEvent(device);
    const std::int64_t before = nowNs();
    TPB_CUDA_CHECK(cudaEventRecord(anchor, nullptr));
    TPB_CUDA_CHECK(cudaEventSynchronize(anchor));
    const std::int64_t after = nowNs();
    for (const Queued& q : s.queued) {
      // A span still open, or whose end record failed, is dropped, not made up.
      if (q.device != device || !wanted(q) || !q.ended) continue;
      float beginMs = 0, endMs = 0;
      if (cudaEventElapsedTime(&beginMs, q.begin, anchor) == cudaSuccess &&
          cudaEventElapsedTime(&endMs, q.end, anchor) == cudaSuccess) {
        record(q.name, q.cat, gpuEventHostNs(before, after, beginMs), gpuEventHostNs(before, after, endMs), q.argKey,
               q.arg, q.track);
      } else {
        cudaGetLastError();  // clear it, so that the next checked call does not report it
      }
    }
    s.freeEvents[device].push_back(anchor);
  }
  // Every queued span's events are reusable now: a span that was read has completed, and an
  // event that is recorded again later simply takes the new point in its stream.
  for (const Queued& q : s.queued) {
    s.freeEvents[q.device].push_back(q.begin);
    s.freeEvents[q.device].push_back(q.end);
  }
  s.queued.clear();
  ++s.flushes;
}

std::size_t pendingGpuSpans() {
  const std::lock_guard<std::mutex> lock(state().mu);
  return state().queued.size();
}

#else  // no CUDA: nothing is ever queued

GpuSpan::GpuSpan(const char*, Category, Track, int, void*, const char*, std::int64_t) {}
GpuSpan::~GpuSpan() {}
void flushGpu() {}
std::size_t pendingGpuSpans() { return 0; }

#endif

}  // namespace tpb::trace
