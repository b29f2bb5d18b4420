// algorithms/chunked.h — what the from-scratch collectives share: posting a buffer as a sequence
// of chunk-sized messages, their common state, and their registry entry.
//
// Chunks bound how much one message holds (a transport streams each
// through its buffers) and make the message count a closed form: ceil(count / chunk) per buffer,
// none for an empty one (a zero-byte message is a no-op and is not counted).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "core/collective.h"
#include "algorithms/allreduce_ring.h"

namespace tpb {

using Requests = std::vector<std::unique_ptr<Request>>;

// Floats per chunk for `chunkBytes` (0: the ring allreduce's default for the device).
inline std::size_t chunkFloatsFor(Device device, std::size_t chunkBytes) {
  const std::size_t bytes = chunkBytes ? chunkBytes : RingAllreduce::defaultChunkBytes(device);
  return std::max<std::size_t>(1, bytes / sizeof(float));
}

inline void postSend(Transport& t, int peer, const float* p, std::size_t count, std::size_t chunk, Requests& reqs) {
  for (std::size_t off = 0; off < count; off += chunk)
    reqs.push_back(t.isend(peer, p + off, std::min(chunk, count - off) * sizeof(float)));
}

inline void postRecv(Transport& t, int peer, float* p, std::size_t count, std::size_t chunk, Requests& reqs) {
  for (std::size_t off = 0; off < count; off += chunk)
    reqs.push_back(t.irecv(peer, p + off, std::min(chunk, count - off) * sizeof(float)));
}

// Adds what arrives into p.
inline void postRecvReduce(Transport& t, int peer, float* p, std::size_t count, std::size_t chunk, Requests& reqs) {
  for (std::size_t off = 0; off < count; off += chunk)
    reqs.push_back(t.irecvReduce(peer, p + off, std::min(chunk, count - off)));
}

inline void waitAll(Requests& reqs) {
  for (auto& r : reqs) r->wait();
  reqs.clear();
}

// How the power-of-two algorithms (halving_doubling, recursive_doubling) take any N: with p the
// largest power of two <= N and rem = N - p, the 2*rem lowest ranks pair up and each even one
// hands its whole buffer to the odd one above it, which adds it in ("fold"); the p ranks left
// are renumbered q = 0..p-1, run the algorithm, and each odd folded rank returns the result to
// its even partner ("unfold"). That adds 2 (alpha + S beta) for the folded pairs.
class PowerOfTwoFold {
 public:
  PowerOfTwoFold(int n, int rank) : rank_(rank) {
    while (p_ * 2 <= n) p_ *= 2;
    rem_ = n - p_;
  }
  int p() const { return p_; }
  bool exact() const { return rem_ == 0; }
  bool paired() const { return rank_ < 2 * rem_; }    // in a fold pair
  bool sitsOut() const { return paired() && rank_ % 2 == 0; }
  int q() const { return paired() ? rank_ / 2 : rank_ - rem_; }  // number among the p
  int real(int q) const { return q < rem_ ? 2 * q + 1 : q + rem_; }  // the rank numbered q

  // Before the algorithm: a rank that sits out hands its buffer over, waits for the result and
  // returns false; its partner adds the buffer in; the others do nothing. True: run the algorithm.
  bool foldIn(Transport& t, float* buf, std::size_t count, std::size_t chunk, Requests& reqs) const {
    if (sitsOut()) {
      postSend(t, rank_ + 1, buf, count, chunk, reqs);
      waitAll(reqs);
      postRecv(t, rank_ + 1, buf, count, chunk, reqs);
      waitAll(reqs);
      return false;
    }
    if (paired()) {
      postRecvReduce(t, rank_ - 1, buf, count, chunk, reqs);
      waitAll(reqs);
    }
    return true;
  }
  // After it: a paired rank returns the result to the one that sat out.
  void unfold(Transport& t, float* buf, std::size_t count, std::size_t chunk, Requests& reqs) const {
    if (!paired()) return;
    postSend(t, rank_ - 1, buf, count, chunk, reqs);
    waitAll(reqs);
  }

 private:
  int rank_, p_ = 1, rem_ = 0;
};

// The state of a from-scratch collective: its transport, arguments, chunk (in floats), block
// (count / N: the blocked ops' unit) and the posts of the current step.
class P2PCollective : public Collective {
 public:
  P2PCollective(CommContext& ctx, const CollectiveArgs& a)
      : t_(ctx.transport), a_(a), chunk_(chunkFloatsFor(ctx.device(), a.chunkBytes)),
        m_(a.count / static_cast<std::size_t>(ctx.size())) {}

 protected:
  Transport& t_;
  CollectiveArgs a_;
  std::size_t chunk_, m_;
  Requests reqs_;
};

// ---- closed-form traffic (core/algo_cost.h's ExactTraffic), written from each algorithm's
// description rather than from its code: floats moved in chunks of chunkBytes (at least one
// float) are ceil(floats / chunk) messages, none for nothing.
namespace exact {

inline std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
inline std::size_t messages(std::size_t floats, std::size_t chunkBytes) {
  return ceilDiv(floats, std::max<std::size_t>(1, chunkBytes / sizeof(float)));
}
inline void addSend(Traffic& t, std::size_t floats, std::size_t msgs) {
  t.bytesSent += floats * sizeof(float);
  t.msgsSent += msgs;
}
inline void addRecv(Traffic& t, std::size_t floats, std::size_t msgs) {
  t.bytesRecv += floats * sizeof(float);
  t.msgsRecv += msgs;
}
// `sent` floats out and `received` in, each in chunks.
inline void exchange(Traffic& t, std::size_t sent, std::size_t received, std::size_t chunkBytes) {
  addSend(t, sent, messages(sent, chunkBytes));
  addRecv(t, received, messages(received, chunkBytes));
}

// N-1 exchanges of one block m = count/N each way: (N-1)/N * S (ring allgather and
// reduce-scatter, pairwise alltoall).
inline Traffic blockStepsTraffic(int n, int, int, std::size_t count, std::size_t chunkBytes) {
  Traffic t;
  const std::size_t m = count / static_cast<std::size_t>(n);
  for (int s = 1; s < n; ++s) exchange(t, m, m, chunkBytes);
  return t;
}

// A binomial tree's broadcast: over v = (rank - root) mod N, S in from the parent (not at the
// root) and S out to each child, v's children being v + 2^k for each 2^k below v's lowest set
// bit (below the first power of two >= N at the root) with v + 2^k < N. A reduce is it reversed.
inline Traffic binomialTreeTraffic(int n, int rank, int root, std::size_t count, std::size_t chunkBytes) {
  const int v = (rank - root + n) % n;
  int low = 1;
  std::size_t children = 0;
  while (low < n && !(v & low)) low <<= 1;
  for (int mask = low >> 1; mask > 0; mask >>= 1) children += v + mask < n;
  Traffic t;
  addSend(t, children * count, children * messages(count, chunkBytes));
  if (v != 0) addRecv(t, count, messages(count, chunkBytes));
  return t;
}
inline Traffic reversed(const Traffic& t) { return {t.bytesRecv, t.bytesSent, t.msgsRecv, t.msgsSent}; }

}  // namespace exact

// The registry entry of from-scratch collective `Impl` (constructed from (ctx, args)), with its
// α-β formula and exact traffic.
template <typename Impl>
CollectiveAlgo fromScratchCollective(const char* op, const char* name, const char* description, int order,
                                     const char* color, CostFormula cost, ExactTraffic traffic) {
  CollectiveAlgo a;
  a.op = op;
  a.name = name;
  a.origin = Origin::FromScratch;
  a.description = description;
  a.order = order;
  a.color = color;
  a.cost = std::move(cost);
  a.traffic = traffic;
  a.make = [](CommContext& ctx, const CollectiveArgs& args) -> std::unique_ptr<Collective> {
    return std::make_unique<Impl>(ctx, args);
  };
  return a;
}

}  // namespace tpb
