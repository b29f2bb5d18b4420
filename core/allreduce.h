// core/allreduce.h — the interface every allreduce algorithm implements, from-scratch and
// library-backed alike (algorithms/allreduce_<algo>.cc), and the entry that registers one.
//
// As in gloo, the constructor does all setup (buffers, process groups, handshakes) and is not
// timed; run() is the hot loop that benchmarks time and training steps call.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/algo_cost.h"
#include "core/comm_context.h"
#include "core/entry.h"

namespace tpb {

class Allreduce {
 public:
  virtual ~Allreduce() = default;
  // In place: afterwards buf[i] on every rank holds the sum of buf[i] over all ranks.
  virtual void run() = 0;
  // run() with the waiting left to the request. Where queuesOnDevice(), start() only queues the
  // work on a device stream and returns at once (a library collective on a GPU: ncclAllReduce),
  // and the benchmark times runs launched back to back, as nccl-tests does. The default runs
  // to the end.
  virtual std::unique_ptr<Request> start() {
    run();
    return std::make_unique<DoneRequest>();
  }
  virtual bool queuesOnDevice() const { return false; }
  // Waits until every rank has reached it, by the library's own barrier where the algorithm is
  // a library's (mpi: MPI_Barrier, before each call timed per call, as OSU times); false where
  // it has none, and the caller uses the transport's.
  virtual bool barrier() { return false; }
};

using AllreduceFactory =
    std::function<std::unique_ptr<Allreduce>(CommContext& ctx, float* buf, std::size_t count)>;
using ChunkedAllreduceFactory = std::function<std::unique_ptr<Allreduce>(
    CommContext& ctx, float* buf, std::size_t count, std::size_t chunkBytes)>;

struct AllreduceAlgo : EntryInfo {
  // Empty string when the algorithm can run on this device in this build, else the reason.
  std::function<std::string(Device)> unsupported = [](Device) { return std::string(); };
  AllreduceFactory make;
  // For algorithms that pipeline in chunks: the same algorithm with an explicit chunk size, so
  // the tests reach the multi-chunk paths on small buffers. Empty for the others.
  ChunkedAllreduceFactory makeChunked;
  // True when its ranks must be processes an MPI launcher started (mpi): the launcher then
  // starts them through mpirun, and refuses up front where it cannot.
  bool needsMpiLauncher = false;
  // True when its buffer must lie in the transport's symmetric memory (direct): the collective
  // benchmarks allocate it there (Transport::allocateSymmetric); elsewhere it cannot run.
  bool needsSymmetricMemory = false;
  // For an entry that stands for another one on each device (library: gloo on cpu, nccl on
  // cuda): that entry's name. Empty for the others. `--algos all` leaves such entries out, so
  // nothing runs twice.
  std::function<std::string(Device)> standsFor;
  // Its α-β formula (core/algo_cost.h); none: `tpbench model` fits it but predicts nothing.
  std::optional<CostFormula> cost;
  // A from-scratch algorithm's exact traffic (root unused); tests/traffic_test.cc requires it.
  ExactTraffic traffic = nullptr;
};

}  // namespace tpb
