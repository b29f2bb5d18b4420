// comm/cuda/gpu_trace.h — spans of GPU work for `--trace`, timed with CUDA events.
//
// On CUDA the host spans of common/trace.h time kernel launches, not kernels: forward() returns
// once its kernels are queued. A GpuSpan brackets what the host queues on one stream with two
// events, so the span shows when the stream ran that work. Nothing waits while training: the
// events are read at flushGpu(), which the training loop calls at the end of each epoch (after
// its own wait for the GPU) and the worker before it gathers the rank's spans.
//
// Host clock: flushGpu() waits for the device, then records an anchor event on it and reads the
// host clock on both sides of the anchor's completion; each span's begin and end are the anchor's
// host time minus cudaEventElapsedTime(event, anchor). The anchor is taken at every flush, so
// the float milliseconds of cudaEventElapsedTime span at most an epoch (about 8 µs of rounding
// at 100 s) and GPU and host clocks cannot drift apart across epochs. The anchor's own error
// (half the host time around its completion) is not written to the file.
//
// Streams: `stream` is a cudaStream_t passed as void* (this header is included by code that
// does not include CUDA's); nullptr is the legacy default stream, where LibTorch queues the
// model's kernels unless told otherwise. Spans on a build without CUDA, with `device` < 0, or
// while tracing is off are not recorded (the span costs one flag test).
//
// Threads: unlike host spans (common/trace.h), a GpuSpan is queued from any thread while
// tracing is on: DDP's bucket hooks run on LibTorch's autograd thread and launch their allreduce
// from there, and what the GPU did is the same whichever thread queued it. A thread that runs the
// rank's work a second time on another GPU (data_parallel's replica threads) opts out with
// NoGpuSpansOnThisThread. flushGpu() runs on the thread that turned tracing on.
#pragma once

#include <cstdint>

#include "common/trace.h"

namespace tpb::trace {

class GpuSpan {
 public:
  // Records the begin event on `stream` of `device` now (when tracing is on, device >= 0 and
  // this thread has not opted out).
  GpuSpan(const char* name, Category cat, Track track, int device, void* stream, const char* argKey = nullptr,
          std::int64_t arg = 0);
  // Records the end event; the span waits in a queue until flushGpu().
  ~GpuSpan();
  GpuSpan(const GpuSpan&) = delete;
  GpuSpan& operator=(const GpuSpan&) = delete;

 private:
  int slot_ = -1;  // the queued span, or -1 when not recorded
  std::uint64_t flush_ = 0;  // the flush count it was queued under
  void* stream_ = nullptr;
};

// While it lives, GpuSpans made on this thread are not recorded: data_parallel's replicas 1..N-1
// run forward and backward on their own GPUs, and the rank's GPU track draws replica 0 only.
class NoGpuSpansOnThisThread {
 public:
  NoGpuSpansOnThisThread();
  ~NoGpuSpansOnThisThread();
  NoGpuSpansOnThisThread(const NoGpuSpansOnThisThread&) = delete;
  NoGpuSpansOnThisThread& operator=(const NoGpuSpansOnThisThread&) = delete;

 private:
  bool previous_;
};

// Turns every queued GPU span into a span on the host clock (trace::record). Waits for each
// device that has queued spans to finish its work; returns at once when none are queued (every
// CPU run). Call only where the host waits for the GPU anyway. Spans queued before the last
// trace::enable(), or flushed while recording is off, are dropped; a span still open at a flush
// is dropped too. Call it on the thread that turned tracing on.
void flushGpu();

// GPU spans queued and not yet flushed (tests).
std::size_t pendingGpuSpans();

// The arithmetic of flushGpu(), exposed for tests: the host time of an event that completed
// `msBeforeAnchor` milliseconds (cudaEventElapsedTime(event, anchor)) before an anchor whose
// completion the host saw between `hostBeforeNs` and `hostAfterNs`.
std::int64_t gpuEventHostNs(std::int64_t hostBeforeNs, std::int64_t hostAfterNs, float msBeforeAnchor);

}  // namespace tpb::trace
