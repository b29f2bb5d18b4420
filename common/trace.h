// common/trace.h — the per-rank timeline recorder behind `--trace FILE`.
//
// Each rank process holds one recorder. It is off unless the job asks for a trace, and then
// keeps one Event per span in memory: what ran (a static name), when (steady clock, ns), on
// which track of the rank (the host thread that drives the work, or the library thread that
// completes an asynchronous collective), and one small integer argument (micro-batch, bucket,
// peer, step). Nothing is written while the rank trains; the worker gathers every rank's events
// on rank 0 after the run (worker/trace_gather.h), which aligns the clocks and writes them out.
//
// Cost: when off, a span is one load of a global flag. When on, two clock reads and one append
// to a vector that grows by doubling; docs/timelines.md gives the measured overhead ("Tracing
// overhead").
//
// Only the thread that turned recording on records; spans closed on other threads are dropped.
// Work that completes on another thread (Gloo's bucket allreduce) hands its end time back, and
// the main thread records the span (trace::record with an explicit interval). GPU spans
// (comm/cuda/gpu_trace.h) are queued from any thread and recorded here by the main thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tpb::trace {

// What a span is, for colours and for the overlap figure (comm spans against compute spans).
enum class Category : std::uint8_t { Step, Compute, Comm, Wait, Optimizer, Eval };
const char* categoryName(Category c);

// Where a span is drawn: the rank's host thread; its communication track (work that runs
// beside the host thread, e.g. a bucket allreduce on the library's threads); and on CUDA its two
// GPU streams, timed with CUDA events (comm/cuda/gpu_trace.h): LibTorch's stream, where the
// model's kernels run, and the nccl transport's stream.
enum class Track : std::uint8_t { Host = 0, Comm = 1, Gpu = 2, GpuComm = 3 };
constexpr int kTracks = 4;
// "host", "comm", "gpu", "gpu_comm": the names trace fragments and files use.
const char* trackName(Track t);

struct Event {
  const char* name;    // static string: "forward", "backward", "allreduce", "send", ...
  const char* argKey;  // static string naming `arg` ("micro", "bucket", "peer", "step"), or null
  std::int64_t beginNs, endNs;  // steady clock of this process
  std::int64_t arg;
  Category cat;
  Track track;
};

using clock_type = std::chrono::steady_clock;

namespace detail {
extern bool gEnabled;
}

// Whether spans are recorded (a plain flag: the rank's main thread sets it before training).
inline bool enabled() { return detail::gEnabled; }
// Turns recording on or off; turning it on clears what was recorded.
void enable(bool on);
// Counts the calls of enable(): work queued under an earlier count (GPU spans waiting for their
// events, comm/cuda/gpu_trace.h) belongs to a recording that has ended and is dropped.
std::uint64_t generation();
// Whether this thread's spans are recorded: enabled, and this is the thread that enabled it.
bool recording();

inline std::int64_t toNs(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
inline std::int64_t nowNs() { return toNs(clock_type::now()); }

// Records a finished span (when enabled).
void record(const char* name, Category cat, std::int64_t beginNs, std::int64_t endNs,
            const char* argKey = nullptr, std::int64_t arg = 0, Track track = Track::Host);

// Closes a span that began at `begin`: records it (when enabled) and returns its length in
// seconds, so that code which already adds up compute and communication time reads the clock
// once for both: `compute += trace::close("forward", Category::Compute, c0);`.
double close(const char* name, Category cat, clock_type::time_point begin, const char* argKey = nullptr,
             std::int64_t arg = 0);

// A scoped span on the host track.
class Span {
 public:
  Span(const char* name, Category cat, const char* argKey = nullptr, std::int64_t arg = 0)
      : name_(name), argKey_(argKey), arg_(arg), cat_(cat), beginNs_(enabled() ? nowNs() : 0) {}
  ~Span() {
    if (beginNs_ != 0 && enabled()) record(name_, cat_, beginNs_, nowNs(), argKey_, arg_);
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  const char* argKey_;
  std::int64_t arg_;
  Category cat_;
  std::int64_t beginNs_;
};

// Everything recorded so far, in recording order (spans close inner first); clears the buffer.
std::vector<Event> take();
// How many events are held now.
std::size_t size();

}  // namespace tpb::trace
