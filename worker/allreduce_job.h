// worker/allreduce_job.h — the worker side of one `tpbench allreduce` point (algorithm, N): for
// every size in job["bytes"] the algorithm is set up (untimed), warmed up, timed over
// job["iters"] iterations with the transport's timer — each iteration starts from a barrier and
// its time is the slowest rank's — and verified in an untimed pass against exact sums. Rank 0
// writes the points so far to the job's result file ({"points": [...]}) after every size.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

namespace tpb {

struct Worker;

void allreduceJob(Worker& w, const nlohmann::json& job);

// busbw = algbw * 2(N-1)/N: the bandwidth each rank's link needs for a ring allreduce,
// comparable across N (nccl-tests' convention). 0 for N = 1.
double busBandwidthFactor(int n);

// Host memcpy bandwidth of `bytes` (bytes copied / second, median of repetitions): the
// reference the shm transport is judged against. Run by the launcher, on the buffers the
// benchmark uses.
double memcpyGBps(std::size_t bytes);

}  // namespace tpb
