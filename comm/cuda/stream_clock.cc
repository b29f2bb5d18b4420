#include "comm/cuda/stream_clock.h"

#ifdef TPB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "comm/cuda/cuda_check.h"
#endif
#include "common/error.h"

namespace tpb {

#ifdef TPB_HAVE_CUDA

StreamClock::StreamClock(int device) : device_(device) {}

StreamClock::~StreamClock() {
  for (void* e : events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

std::size_t StreamClock::mark() {
  if (!active()) return 0;
  int current = -1;
  TPB_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_) TPB_CUDA_CHECK(cudaSetDevice(device_));
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    TPB_CUDA_CHECK(cudaEventCreate(&e));  // with timing: these are read
    events_.push_back(e);
  }
  TPB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[used_]), cudaStreamLegacy));
  if (current != device_) TPB_CUDA_CHECK(cudaSetDevice(current));
  return used_++;
}

double StreamClock::seconds(std::size_t a, std::size_t b) const {
  if (!active()) return 0;
  TPB_CHECK(a < used_ && b < used_, "stream clock: marks " << a << " and " << b << " of " << used_);
  float ms = 0;
  TPB_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(events_[a]), static_cast<cudaEvent_t>(events_[b])));
  return static_cast<double>(ms) / 1000.0;
}

#else

StreamClock::StreamClock(int) : device_(-1) {}
StreamClock::~StreamClock() = default;
std::size_t StreamClock::mark() { return 0; }
double StreamClock::seconds(std::size_t, std::size_t) const { return 0; }

#endif

void StreamClock::closeSpan(std::size_t from) {
  if (active()) spans_.emplace_back(from, mark());
}

double StreamClock::takeSpansS() {
  double total = 0;
  for (const auto& [from, to] : spans_) total += seconds(from, to);
  restart();
  return total;
}

}  // namespace tpb
