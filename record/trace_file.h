// record/trace_file.h — the file `--trace FILE` writes: Chrome's trace-event JSON, which Perfetto
// (ui.perfetto.dev, "Open trace file") and chrome://tracing open as they are.
//
//   {"traceEvents": [...], "displayTimeUnit": "ms",
//    "tpbench": {"schema": "tpbench.trace/1", "meta": {...},
//                "points": [{"pid", "label", "config", "ranks": [{"rank", "host",
//                            "clock_offset_ns", "clock_error_ns"}]}]}}
//
// Each traced point (one run of a sweep) is one process in the viewer (pid 1, 2, ... in the
// order they ran, named by `label`), each of its ranks up to four threads: tid 4r is rank r's
// host thread, 4r+1 its communication track (work that runs beside the host thread, such as
// ddp's bucket allreduces on Gloo's threads), and on CUDA 4r+2 LibTorch's GPU stream and 4r+3
// the nccl transport's stream, whose spans CUDA events timed (comm/cuda/gpu_trace.h). Spans are complete events ("ph": "X", ts and dur
// in µs since the file's origin: the moment the command started tracing, on node 0's steady
// clock, which rank 0 shares) with cat one of step, compute, comm, wait, optimizer, eval, and
// their argument (micro, bucket, peer, step) in args. The "tpbench" block is what
// `tpbench report` reads besides the events; viewers ignore it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace tpb {

// A trace file being written: rewritten whole, atomically, after every point, so an interrupted
// sweep leaves the points that finished.
class TraceFile {
 public:
  // `originNs`: node 0's steady clock (ns) that ts = 0 stands for. `meta`: the results meta.
  TraceFile(std::string path, std::int64_t originNs, nlohmann::json meta);
  // Continues the trace at `path` (a resumed sweep): its points and events stay, new points get
  // the next pids and begin 1 ms after its last event (`nowNs` on the new run's clock). Throws
  // tpb::UsageError naming the file when it is not a tpbench trace.
  static TraceFile resume(const std::string& path, std::int64_t nowNs);
  // Adds one point's fragment (worker/trace_gather.h: {"ranks": [...]}, every time on rank 0's
  // steady clock) and rewrites the file. Throws tpb::Error when the fragment is malformed or the
  // file cannot be written.
  void add(const std::string& label, const nlohmann::json& config, const nlohmann::json& fragment);
  std::size_t points() const { return doc_.at("tpbench").at("points").size(); }

 private:
  std::string path_;
  std::int64_t originNs_;
  nlohmann::json doc_;
};

// The latest time (µs from the trace's origin) a reader accepts in a trace file, about 31
// years: a span beyond it is not a measurement, and sums over spans stay finite below it.
inline constexpr double kMaxTraceUs = 1e15;

// A rank's tracks, in the order their threads are drawn: the host thread, the communication
// track, LibTorch's GPU stream, the nccl transport's GPU stream (common/trace.h's Track).
inline constexpr int kTraceTracks = 4;
inline constexpr const char* kTraceTrackNames[kTraceTracks] = {"host", "comm", "gpu", "gpu_comm"};
// tid of rank r's track `track` (0..3) in the file: 4r + track.
inline int traceTid(int rank, int track) { return kTraceTracks * rank + track; }

}  // namespace tpb
