// Recursive-doubling allreduce, from scratch, over Transport P2P only: the small-message
// algorithm of MPI libraries (Thakur, Rabenseifner and Gropp, 2005).
//
// Any N folds onto p, the largest power of two <= N, as halving-doubling does (PowerOfTwoFold,
// algorithms/chunked.h). Then for d = 1, 2, ..., p/2 rank q of those p swaps its whole
// buffer with q xor d and adds in the partner's: after step d each holds the sum over an aligned
// group of 2d ranks, after log2 p steps over all. The folded ranks get the result back at the end.
// What is sent is copied aside first, because the partner's data is added into the buffer while
// the send may still be reading it. Partners add the same two sums in either order, which IEEE
// addition does not tell apart, so every rank ends with the same bits. The copy is a host
// memcpy, so it runs on the CPU only (on GPUs, NCCL picks its own small-message algorithm).
//
// Cost for N a power of two: log2 N steps of the whole buffer each way,
// T = log2 N * alpha + log2 N * S * beta — half halving-doubling's latencies for log2 N / (2(N-1)/N)
// times its bytes: the algorithm for messages whose time is latency (at N = 2 one exchange, where
// the ring and halving-doubling take two).
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/chunked.h"
#include "core/registry.h"

namespace tpb {

namespace {

class RecursiveDoublingAllreduce final : public Allreduce {
 public:
  RecursiveDoublingAllreduce(CommContext& ctx, float* buf, std::size_t count, std::size_t chunkBytes)
      : t_(ctx.transport), buf_(buf), count_(count), chunk_(chunkFloatsFor(ctx.device(), chunkBytes)),
        aside_(count), fold_(t_.size(), t_.rank()) {}

  void run() override {
    if (t_.size() == 1 || !fold_.foldIn(t_, buf_, count_, chunk_, reqs_)) return;
    for (int d = 1; d < fold_.p(); d *= 2) {
      const int partner = fold_.real(fold_.q() ^ d);
      if (count_) std::memcpy(aside_.data(), buf_, count_ * sizeof(float));
      postRecvReduce(t_, partner, buf_, count_, chunk_, reqs_);
      postSend(t_, partner, aside_.data(), count_, chunk_, reqs_);
      waitAll(reqs_);
    }
    fold_.unfold(t_, buf_, count_, chunk_, reqs_);
  }

 private:
  Transport& t_;
  float* buf_;
  std::size_t count_, chunk_;
  std::vector<float> aside_;  // this step's outgoing copy of the buffer
  PowerOfTwoFold fold_;
  Requests reqs_;
};

// log2 p exchanges of the whole buffer; the ranks beyond p add a fold and an unfold.
Cost recursiveDoublingCost(int n) {
  const PowerOfTwoFold fold(n, 0);
  const double steps = ceilLog2(fold.p()) + (fold.exact() ? 0 : 2);
  return {steps, steps};
}

// From the description above: the even ranks below 2*rem send the whole buffer and receive it
// back; the odd ones among them receive it and send it back; the p ranks left swap the whole
// buffer with one partner per step, log2 p times.
Traffic recursiveDoublingTraffic(int n, int r, int, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if (n == 1) return t;
  const PowerOfTwoFold fold(n, r);
  if (fold.paired()) exact::exchange(t, count, count, chunkBytes);  // the fold and the unfold
  if (fold.sitsOut()) return t;
  for (int d = 1; d < fold.p(); d *= 2) exact::exchange(t, count, count, chunkBytes);
  return t;
}

AllreduceAlgo recursiveDoublingAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "recursive_doubling";
  a.origin = Origin::FromScratch;
  a.description = "recursive doubling: log2 N swaps of the whole buffer (the small-message allreduce of MPI libraries)";
  a.order = 3;
  a.color = "#bcbd22";
  a.unsupported = [](Device d) {
    return d == Device::Cpu ? std::string() : std::string("copies its buffer aside in host memory (CPU only)");
  };
  a.cost = CostFormula{"log2 N·α + log2 N·S·β (N a power of two)", "", recursiveDoublingCost};
  a.traffic = recursiveDoublingTraffic;
  a.makeChunked = [](CommContext& ctx, float* buf, std::size_t count, std::size_t chunkBytes) {
    return std::make_unique<RecursiveDoublingAllreduce>(ctx, buf, count, chunkBytes);
  };
  a.make = [](CommContext& ctx, float* buf, std::size_t count) {
    return std::make_unique<RecursiveDoublingAllreduce>(ctx, buf, count, 0);
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(recursiveDoublingAllreduceAlgo);

}  // namespace tpb
