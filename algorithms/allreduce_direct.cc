// Direct allreduce over symmetric shared memory, from scratch: one copy, no messages.
//
// Every rank's buffer lies in a block of symmetric memory (Transport::allocateSymmetric: shm
// maps every rank's block into every rank's process), so a rank can load and store its peers'
// buffers as its own. The buffer is cut into N blocks on 64-byte lines; rank r owns block r:
// after a barrier (every rank's input is in place), it adds block r of every peer's buffer into
// its own, slice by slice while the slice is in its L1 cache, and stores each finished slice
// into every peer's buffer. A second barrier keeps any rank from reusing its buffer while a
// peer may still be reading or writing it. Only rank r ever touches block r, so the owners
// never race.
//
// Bytes: each rank loads (N-1)/N * S of its peers' and 1/N * S of its own and stores S, as one
// memcpy of S does, where a ring through channels copies every byte into and out of a channel
// (twice memcpy's traffic). What limits it is the caches' and memory's bandwidth across cores.
// Cost: two barriers (2 ceil(log2 N) one-byte messages, the only traffic the transport counts)
// and the copy. Like MPI's shared-memory windows, it needs the buffer to be allocated in
// symmetric memory: `tpbench allreduce`/`collective` do so for it, on the shm transport only.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/chunked.h"
#include "comm/reduce.h"
#include "common/error.h"
#include "core/registry.h"

namespace tpb {

namespace {

constexpr std::size_t kSliceBytes = 8 << 10;  // the sum of a slice stays in L1 while it is stored N-1 times
constexpr std::size_t kLineFloats = 16;

class DirectAllreduce final : public Allreduce {
 public:
  // Slices of `sliceBytes` (whole 64-byte lines, at least one).
  DirectAllreduce(CommContext& ctx, float* buf, std::size_t count, std::size_t sliceBytes)
      : t_(ctx.transport), buf_(buf), slice_(std::max(kLineFloats, sliceBytes / sizeof(float) / kLineFloats * kLineFloats)) {
    const int n = t_.size(), r = t_.rank();
    peers_.resize(n);
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      peers_[q] = static_cast<float*>(t_.peerAddress(q, buf));
      TPB_CHECK(peers_[q] != nullptr && (count == 0 || t_.peerAddress(q, buf + count - 1) != nullptr),
                "direct allreduce: the buffer is not in symmetric memory on transport "
                    << t_.name() << " (only tpbench allreduce/collective over shm allocate it there)");
    }
    const std::size_t per = (count + n - 1) / n;
    const std::size_t block = (per + kLineFloats - 1) / kLineFloats * kLineFloats;
    lo_ = std::min(count, static_cast<std::size_t>(r) * block);
    hi_ = std::min(count, lo_ + block);
  }

  void run() override {
    const int n = t_.size(), r = t_.rank();
    if (n == 1) return;
    t_.barrier();  // every rank's input is in place
    for (std::size_t at = lo_; at < hi_; at += slice_) {
      const std::size_t len = std::min(slice_, hi_ - at);
      float* mine = buf_ + at;
      for (int q = 0; q < n; ++q)
        if (q != r) reduceSum(mine, peers_[q] + at, len);
      for (int q = 0; q < n; ++q)
        if (q != r) std::memcpy(peers_[q] + at, mine, len * sizeof(float));
    }
    t_.barrier();  // every block is in every buffer, and no rank reads a peer's any more
  }

 private:
  Transport& t_;
  float* buf_;
  std::size_t slice_;
  std::vector<float*> peers_;
  std::size_t lo_ = 0, hi_ = 0;
};

// Two dissemination barriers: ceil(log2 N) rounds of one byte each way per barrier.
Traffic directTraffic(int n, int, int, std::size_t, std::size_t) {
  Traffic t;
  if (n == 1) return t;
  int rounds = 0;
  for (int d = 1; d < n; d *= 2) ++rounds;
  t.bytesSent = t.bytesRecv = t.msgsSent = t.msgsRecv = 2 * static_cast<std::uint64_t>(rounds);
  return t;
}

// Two barriers' latencies and one copy of S; the α-β fit reads the copy as its β.
Cost directCost(int n) { return {2.0 * ceilLog2(n), 1.0}; }

AllreduceAlgo directAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "direct";
  a.origin = Origin::FromScratch;
  a.description = "one copy through symmetric shared memory: each rank sums its 1/N of every rank's buffer "
                  "and stores it into all of them, between two barriers (shm only)";
  a.order = 3;
  a.color = "#393b79";
  a.unsupported = [](Device d) { return d == Device::Cpu ? std::string() : std::string("needs the shm transport (host memory)"); };
  a.needsSymmetricMemory = true;
  a.cost = CostFormula{"2·ceil(log2 N)·α + S·β", "", directCost};
  a.traffic = directTraffic;
  a.makeChunked = [](CommContext& ctx, float* buf, std::size_t count, std::size_t sliceBytes) {
    return std::make_unique<DirectAllreduce>(ctx, buf, count, sliceBytes);
  };
  a.make = [](CommContext& ctx, float* buf, std::size_t count) {
    return std::make_unique<DirectAllreduce>(ctx, buf, count, kSliceBytes);
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(directAllreduceAlgo);

}  // namespace tpb
