// core/collective.h — the collectives beyond allreduce, nccl-tests' way: a small table per op
// (its buffer sizes, bandwidth factor and exact expected result) and one interface that every
// algorithm of every op implements, from scratch or library-backed (algorithms/<op>_<algo>.cc).
//
// Sizes follow nccl-tests: a point of `count` elements means
//   allreduce, broadcast, reduce, sendrecv: count in, count out on every rank;
//   allgather:      count/N in, count out (the gathered whole);
//   reduce_scatter: count in, count/N out;
//   alltoall:       count in, count out, in N blocks of count/N (block b goes to rank b).
// Ops with N blocks take count rounded down to a multiple of N (CollectiveOp::roundCount).
// busbw = algbw x busFactor(N): allreduce 2(N-1)/N; allgather, reduce_scatter, alltoall (N-1)/N;
// broadcast, reduce, sendrecv 1 (0 at N = 1 where nothing moves).
//
// In place means nccl-tests' aliasing: allreduce, broadcast and reduce read and write one buffer;
// allgather's input is the rank's block of the output, reduce_scatter's output the rank's block
// of the input. alltoall and sendrecv have no in-place form.
//
// Every allreduce algorithm (core/allreduce.h) is also the collective of op "allreduce": the
// registry adapts it, so an allreduce is registered once.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/algo_cost.h"
#include "core/comm_context.h"
#include "core/entry.h"

namespace tpb {

struct CollectiveOp {
  std::string name;
  std::string description;
  bool rooted = false;         // broadcast and reduce take --root
  bool hasInPlace = true;
  bool blocked = false;        // counts are per-rank blocks: rounded down to a multiple of N
  double (*busFactor)(int n) = nullptr;
  std::size_t (*sendCount)(std::size_t count, int n) = nullptr;
  std::size_t (*recvCount)(std::size_t count, int n) = nullptr;
  // The exact value of recv[i] on `rank` when every rank's send[j] holds input(rank, j); nullopt
  // where the op leaves it undefined (reduce off the root, sendrecv's unpaired rank).
  std::function<std::optional<float>(int rank, int n, int root, std::size_t count, std::size_t i,
                                     const std::function<float(int, std::size_t)>& input)>
      expected;
  bool sums = false;  // the console header says " sum" (a reduction: allreduce, reduce, reduce_scatter)
  // What a reader must know to compare it with nccl-tests, appended to the console header.
  const char* caveat = "";

  std::size_t roundCount(std::size_t count, int n) const {
    return blocked ? count / static_cast<std::size_t>(n) * static_cast<std::size_t>(n) : count;
  }
};

// The ops, in nccl-tests' order; findOp throws UsageError naming `flag` and the choices.
const std::vector<CollectiveOp>& collectiveOps();
const CollectiveOp& findOp(const std::string& flag, const std::string& name);
std::vector<std::string> opNames();

struct CollectiveArgs {
  const float* send = nullptr;  // sendCount elements (may alias recv: in place)
  float* recv = nullptr;        // recvCount elements
  std::size_t count = 0;        // the op's count (see above), already rounded
  int root = 0;                 // rooted ops
  std::size_t chunkBytes = 0;   // pipelining granularity where an algorithm has one; 0: its default
};

// As Allreduce: the constructor does all setup (untimed), run() is the hot loop.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual void run() = 0;
  // As Allreduce::start() and queuesOnDevice(): a run queued on a device stream (the library
  // collectives on GPUs), and a request that waits for it; the default runs it to the end.
  virtual std::unique_ptr<Request> start() {
    run();
    return std::make_unique<DoneRequest>();
  }
  virtual bool queuesOnDevice() const { return false; }
  // As Allreduce::barrier(): the library's own barrier, or false.
  virtual bool barrier() { return false; }
};

using CollectiveFactory = std::function<std::unique_ptr<Collective>(CommContext& ctx, const CollectiveArgs& a)>;

struct CollectiveAlgo : EntryInfo {
  std::string op;  // a CollectiveOp name; (op, name) is unique
  std::function<std::string(Device)> unsupported = [](Device) { return std::string(); };
  CollectiveFactory make;
  // As in AllreduceAlgo: ranks must be processes an MPI launcher started (mpi); and, for an entry
  // that stands for another on each device (allreduce's library), that entry's name.
  bool needsMpiLauncher = false;
  // Its buffers must lie in the transport's symmetric memory (core/allreduce.h says more).
  bool needsSymmetricMemory = false;
  std::function<std::string(Device)> standsFor;
  // As in AllreduceAlgo: its α-β formula, and a from-scratch algorithm's exact traffic.
  std::optional<CostFormula> cost;
  ExactTraffic traffic = nullptr;
};

// `count` floats of scratch memory on `device` (host memory on the CPU), for algorithms that
// keep partial results apart from their buffers. Allocated in setup, never in run().
class FloatScratch {
 public:
  FloatScratch(Device device, std::size_t count);
  ~FloatScratch();
  FloatScratch(const FloatScratch&) = delete;
  FloatScratch& operator=(const FloatScratch&) = delete;
  float* data() { return dev_ ? dev_ : host_.data(); }

 private:
  std::vector<float> host_;
  float* dev_ = nullptr;
};

// Copies `count` floats on `device` (a no-op when dst == src): the out-of-place algorithms
// start by placing their own input where the result goes.
void copyFloats(Device device, float* dst, const float* src, std::size_t count);

}  // namespace tpb
