// comm/cuda/stream_clock.h — how long the GPU spent between two points of a step, read once per
// epoch instead of stopping the host at every point. mark() records a timing event on the legacy
// default stream (where LibTorch queues its kernels); once the host has waited for that stream
// (the epoch's end does), seconds(a, b) is the stream's own time from mark a to mark b. So a
// training step splits its compute from its communication on the GPU without a host
// synchronisation inside the step, which would make the figures measure launch latency (a small
// model's kernels take microseconds; a host round trip per step costs tens of them).
//
// Compiled in every build: with device < 0, or without CUDA, the clock is inert and every
// reading is 0 (CPU runs time with the host clock instead).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace tpb {

class StreamClock {
 public:
  explicit StreamClock(int device);
  ~StreamClock();
  StreamClock(const StreamClock&) = delete;
  StreamClock& operator=(const StreamClock&) = delete;

  bool active() const { return device_ >= 0; }
  // Records where the default stream has got to; returns the mark's index in this epoch.
  std::size_t mark();
  // Seconds of the stream's time from mark a to mark b (b after a), once the host has waited for
  // the stream to pass b. Throws tpb::Error on a CUDA error.
  double seconds(std::size_t a, std::size_t b) const;
  // Forgets this epoch's marks and spans; their events are reused by the next epoch's.
  void restart() {
    used_ = 0;
    spans_.clear();
  }
  // Spans: marks the end of one that began at mark `from`, and remembers it.
  void closeSpan(std::size_t from);
  // The seconds of every span since the last restart, added up; then restarts.
  double takeSpansS();

 private:
  std::vector<std::pair<std::size_t, std::size_t>> spans_;
  int device_;
  std::vector<void*> events_;  // cudaEvent_t, created as needed and kept
  std::size_t used_ = 0;
};

}  // namespace tpb
