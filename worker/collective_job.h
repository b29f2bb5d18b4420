// worker/collective_job.h — the worker side of one `tpbench allreduce` / `tpbench collective`
// point (op, algorithm, N): for every size in job["bytes"] and every placement in
// job["in_place"] the algorithm is set up (untimed), warmed up, timed over job["iters"]
// iterations with the transport's timer — each iteration starts from a barrier and its time is
// the slowest rank's; the traffic of the last one is counted — and verified in an untimed pass
// against the op's exact expected values (core/collective.h). Rank 0 writes the points so far to
// the job's result file ({"points": [...]}) after every one.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

namespace tpb {

struct Worker;

// Job kinds "collective" and "allreduce" (op defaults to "allreduce").
void collectiveJob(Worker& w, const nlohmann::json& job);

// Host memcpy bandwidth of `bytes` (bytes copied / second, median of repetitions): the
// reference the shm transport is judged against. Run by the launcher, on the buffers the
// benchmark uses.
double memcpyGBps(std::size_t bytes);

}  // namespace tpb
