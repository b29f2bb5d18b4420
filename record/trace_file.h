// record/trace_file.h — the file `--trace FILE` writes: Chrome's trace-event JSON, which Perfetto
// (ui.perfetto.dev, "Open trace file") and chrome://tracing open as they are.
//
//   {"traceEvents": [...], "displayTimeUnit": "ms",
//    "tpbench": {"schema": "tpbench.trace/1", "meta": {...},
//                "points": [{"pid", "label", "config", "ranks": [{"rank", "host",
//                            "clock_offset_ns", "clock_error_ns"}]}]}}
//
// Each traced point (one run of a sweep) is one process in the viewer (pid 1, 2, ... in the
// order they ran, named by `label`), each of its ranks one thread: tid 2r is rank r's host
// thread, tid 2r+1 its communication track (work that runs beside the host thread, such as
// ddp's bucket allreduces on Gloo's threads). Spans are complete events ("ph": "X", ts and dur
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

// tid of rank r's track in the file: 2r (host), 2r+1 (comm).
inline int traceTid(int rank, bool commTrack) { return 2 * rank + (commTrack ? 1 : 0); }

}  // namespace tpb
