// Recursive halving-doubling allreduce (Rabenseifner's), from scratch, over Transport P2P only.
//
// Any N folds onto p, the largest power of two <= N (PowerOfTwoFold, algorithms/chunked.h); the
// p ranks left, numbered q = 0..p-1, cut the buffer into p blocks. Reduce-scatter by
// recursive halving: for d = p/2, p/4, ..., 1, rank q exchanges with q xor d, sending the half
// of its current block range that the partner keeps and adding in the half it keeps; q ends with
// the sum of block q. All-gather by recursive doubling walks back up: for d = 1, 2, ..., p/2 the
// two partners swap their ranges. Finally the folded ranks get the result back ("unfold").
//
// Cost for N a power of two: 2 log2 N steps, each rank sends and receives 2(N-1)/N * S bytes:
// T = 2 log2 N * alpha + 2(N-1)/N * S * beta — the ring's bandwidth in log2 N instead of N-1
// latencies, so it wins on small messages and the ring (one neighbour, pipelined) on large ones.
// Otherwise the fold and unfold add 2 * (alpha + S * beta) for the folded ranks.
#include <vector>

#include "core/registry.h"
#include "algorithms/chunked.h"

namespace tpb {

namespace {

class HalvingDoublingAllreduce final : public Allreduce {
 public:
  HalvingDoublingAllreduce(CommContext& ctx, float* buf, std::size_t count, std::size_t chunkBytes)
      : t_(ctx.transport), buf_(buf), count_(count), chunk_(chunkFloatsFor(ctx.device(), chunkBytes)),
        fold_(t_.size(), t_.rank()), p_(fold_.p()) {}

  void run() override {
    if (t_.size() == 1 || !fold_.foldIn(t_, buf_, count_, chunk_, reqs_)) return;
    const int q = fold_.q();
    auto real = [&](int x) { return fold_.real(x); };
    auto at = [&](int b) { return static_cast<std::size_t>(b) * count_ / static_cast<std::size_t>(p_); };
    int lo = 0, hi = p_;  // the blocks this rank is responsible for
    for (int d = p_ / 2; d >= 1; d /= 2) {
      const int mid = (lo + hi) / 2;
      const bool upper = q & d;
      const int keepLo = upper ? mid : lo, keepHi = upper ? hi : mid;
      const int giveLo = upper ? lo : mid, giveHi = upper ? mid : hi;
      postRecvReduce(t_, real(q ^ d), buf_ + at(keepLo), at(keepHi) - at(keepLo), chunk_, reqs_);
      postSend(t_, real(q ^ d), buf_ + at(giveLo), at(giveHi) - at(giveLo), chunk_, reqs_);
      waitAll(reqs_);
      lo = keepLo;
      hi = keepHi;
    }
    for (int d = 1; d < p_; d *= 2) {
      const int size = hi - lo;
      const int theirLo = (q & d) ? lo - size : hi, theirHi = theirLo + size;
      postRecv(t_, real(q ^ d), buf_ + at(theirLo), at(theirHi) - at(theirLo), chunk_, reqs_);
      postSend(t_, real(q ^ d), buf_ + at(lo), at(hi) - at(lo), chunk_, reqs_);
      waitAll(reqs_);
      lo = std::min(lo, theirLo);
      hi = std::max(hi, theirHi);
    }
    fold_.unfold(t_, buf_, count_, chunk_, reqs_);
  }

 private:
  Transport& t_;
  float* buf_;
  std::size_t count_, chunk_;
  PowerOfTwoFold fold_;
  int p_;
  Requests reqs_;
};

// Power-of-two part p: 2 log2 p steps of the ring's bytes; the ranks beyond p add a fold and an
// unfold of the whole buffer.
Cost halvingDoublingCost(int n) {
  const PowerOfTwoFold fold(n, 0);
  const int p = fold.p();
  const double extra = fold.exact() ? 0 : 2;
  return {2.0 * ceilLog2(p) + extra, 2.0 * (p - 1) / p + extra};
}

// From the description above: the even ranks below 2*rem hand over the whole buffer and get it
// back; the others (q = 0..p-1) exchange, in the halving steps d = p/2..1, the half of their
// aligned range of 2d blocks they give away (sent) against the half they keep (received), and
// in the doubling steps d = 1..p/2 their aligned range of d blocks against the partner's; block b
// starts at b*count/p. For equal blocks that is 2(p-1)/p * S each way in 2 log2 p exchanges.
Traffic halvingDoublingTraffic(int n, int r, int, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  if (n == 1) return t;
  const PowerOfTwoFold fold(n, r);
  const int p = fold.p(), q = fold.q();
  if (fold.paired()) exact::exchange(t, count, count, chunkBytes);  // the fold and the unfold
  if (fold.sitsOut()) return t;
  auto floats = [&](int lo, int size) {
    return (static_cast<std::size_t>(lo + size) * count) / p - (static_cast<std::size_t>(lo) * count) / p;
  };
  for (int d = p / 2; d >= 1; d /= 2) exact::exchange(t, floats((q ^ d) / d * d, d), floats(q / d * d, d), chunkBytes);
  for (int d = 1; d < p; d *= 2) exact::exchange(t, floats(q / d * d, d), floats((q ^ d) / d * d, d), chunkBytes);
  return t;
}

AllreduceAlgo halvingDoublingAllreduceAlgo() {
  AllreduceAlgo a;
  a.name = "halving_doubling";
  a.origin = Origin::FromScratch;
  a.description = "recursive halving-doubling (Rabenseifner): 2 log2 N steps, the ring's bytes";
  a.order = 3;
  a.color = "#ff7f0e";
  a.cost = CostFormula{"2·log2 N·α + 2(N-1)/N·S·β (N a power of two)", "", halvingDoublingCost};
  a.traffic = halvingDoublingTraffic;
  a.makeChunked = [](CommContext& ctx, float* buf, std::size_t count, std::size_t chunkBytes) {
    return std::make_unique<HalvingDoublingAllreduce>(ctx, buf, count, chunkBytes);
  };
  a.make = [](CommContext& ctx, float* buf, std::size_t count) {
    return std::make_unique<HalvingDoublingAllreduce>(ctx, buf, count, 0);
  };
  return a;
}

}  // namespace

TPB_REGISTER_ALLREDUCE(halvingDoublingAllreduceAlgo);

}  // namespace tpb
